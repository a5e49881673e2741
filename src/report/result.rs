//! The per-task result record (a superset of eval_loop.py's entry) and
//! its status.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How many characters of stderr the report keeps (the original's 300).
pub(crate) const STDERR_TAIL_CHARS: usize = 300;

/// A task's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// Exit 0 and the output matched.
    Pass,
    /// The candidate ran and did not pass: its own failure.
    Fail,
    /// No candidate file for the task.
    Missing,
    /// sbx could not judge the candidate; never the model's failure.
    Error,
}

impl Status {
    /// The status written as `name` in a report (any version of sbx, or
    /// eval_loop.py, whose reports use the same words).
    pub(crate) fn from_name(name: &str) -> Option<Status> {
        match name {
            "pass" => Some(Status::Pass),
            "fail" => Some(Status::Fail),
            "missing" => Some(Status::Missing),
            "error" => Some(Status::Error),
            _ => None,
        }
    }

    /// The word a report uses for this status.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Missing => "missing",
            Status::Error => "error",
        }
    }
}

/// One entry of the report. `id`, `status` and `stderr_tail` are the
/// original's fields; the rest say why and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TaskResult {
    pub id: String,
    pub status: Status,
    pub stderr_tail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// Compiled languages only: how long the compile step took (outside
    /// `duration_ms`, which is the runs').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Runner modes only: CPU time of the candidate, all its processes
    /// and threads (summed over the cases run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ms: Option<u64>,
    /// Runner modes only: how long the candidate's tasks waited for a CPU
    /// (run-queue wait, summed over its tasks and the cases run; 0 where
    /// the runtime does not report it): the machine's contention, which
    /// the verdict does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// Runner modes only: the program's peak resident set (the largest of
    /// the cases run), in KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<u64>,
    /// Multi-case tasks only: the first failing case (1-based), whose
    /// details the entry carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<usize>,
    /// Multi-case tasks only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cases_passed: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cases_total: Option<usize>,
    /// Multi-case tasks only: the cases that failed; those neither passed
    /// nor failed were not run (fail-fast stopped first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cases_failed: Option<usize>,
    /// Streamed cases only (LiveCodeBench's tests): each case run, in
    /// order, `pass` or its reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_reasons: Option<Vec<String>>,
    /// A sample's entry (inside `samples`): its file name in `gen/<id>/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<String>,
    /// A sample whose program is the same as an earlier sample's of its
    /// task (a twin): judged once, with that sample's result; this names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
    /// Multi-sample tasks only: samples judged (`error` ones excluded) ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
    /// ... of which passed ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c: Option<usize>,
    /// ... and samples sbx could not judge (not in `n`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<usize>,
    /// A multi-sample task with samples sbx could not judge (`errors` > 0
    /// and `n` > 0): never `pass`, and its pass@k is withheld.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<bool>,
    /// A multi-sample task with samples sbx could not judge: for each k
    /// (keys `pass@1`, ...), its pass@k with those samples counted as
    /// failures (`lower`) and as passes (`upper`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_at_k_bounds: Option<BTreeMap<String, PassAtBounds>>,
    /// `pass@k` for each k (keys `pass@1`, `pass@10`, ...).
    #[serde(flatten)]
    pub pass_at: BTreeMap<String, f64>,
    /// Multi-sample tasks only: every sample's own entry, in name order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<Vec<TaskResult>>,
    /// Served from the result cache (`--cache`) instead of run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
    /// With `--engine`: the engine that ran it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Engines that stopped answering while they ran it; it was run again
    /// elsewhere, and never judged on what a dying engine returned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requeued: Vec<Requeue>,
    /// Function tests only: how the test was judged, `sealed` (the
    /// candidate's return values compared outside its process) or
    /// `in_process` (the test ran beside the candidate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<String>,
    /// With `--partition` only: the share this entry is of, and what
    /// `sbx merge` needs to put the shares together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<super::share::Share>,
    /// With `--save-output` only: the files that hold this run's whole
    /// stdout and stderr (of the case the entry reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<SavedOutput>,
}

/// A pass@k that unjudged samples leave open: counted as failures, and
/// as passes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct PassAtBounds {
    pub lower: f64,
    pub upper: f64,
}

/// Where `--save-output` put one run's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SavedOutput {
    pub stdout: String,
    pub stderr: String,
}

/// One move of a task away from an engine that stopped answering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Requeue {
    pub engine: String,
    pub reason: String,
}

impl TaskResult {
    /// An entry with only its id and status: every other field empty.
    pub(crate) fn bare(id: &str, status: Status) -> TaskResult {
        TaskResult {
            id: id.to_string(),
            status,
            stderr_tail: String::new(),
            reason: None,
            message: None,
            exit_code: None,
            duration_ms: 0,
            compile_ms: None,
            diff: None,
            cpu_ms: None,
            wait_ms: None,
            max_rss_kib: None,
            case: None,
            cases_passed: None,
            cases_failed: None,
            case_reasons: None,
            cases_total: None,
            sample: None,
            same_as: None,
            n: None,
            c: None,
            errors: None,
            incomplete: None,
            pass_at_k_bounds: None,
            pass_at: BTreeMap::new(),
            samples: None,
            cached: None,
            engine: None,
            requeued: Vec::new(),
            judged: None,
            partition: None,
            output: None,
        }
    }

    /// No candidate was found.
    pub(crate) fn missing(id: &str) -> TaskResult {
        TaskResult {
            reason: Some("no_candidate".into()),
            ..TaskResult::bare(id, Status::Missing)
        }
    }

    /// sbx could not judge the candidate.
    pub(crate) fn error(id: &str, code: &str, message: String) -> TaskResult {
        TaskResult {
            reason: Some(code.to_string()),
            message: Some(message),
            ..TaskResult::bare(id, Status::Error)
        }
    }
}

/// The last `n` characters of `s`.
pub(crate) fn tail(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

/// A failing result as the report tests use it: wrong output, with a diff
/// and a stderr tail.
#[cfg(test)]
pub(crate) fn failing(id: &str) -> TaskResult {
    TaskResult {
        stderr_tail: "Traceback".into(),
        reason: Some("wrong_output".into()),
        exit_code: Some(0),
        duration_ms: 420,
        diff: Some("line 1: expected \"a\", got \"b\"".into()),
        ..TaskResult::bare(id, Status::Fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_counts_characters() {
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("ab", 3), "ab");
        assert_eq!(tail("ééé", 2), "éé");
    }
}
