//! Results out: the per-task result record, the JSON report (a superset of
//! eval_loop.py's), JUnit XML, and the one-line summary.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use serde::{Deserialize, Serialize};

use crate::console;
use crate::docker::process::{Ended, Finished};
use crate::error::{Error, Result};
use crate::exit;

/// How many characters of stderr the report keeps (the original's 300).
pub const STDERR_TAIL_CHARS: usize = 300;

/// A task's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
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
    pub fn from_name(name: &str) -> Option<Status> {
        match name {
            "pass" => Some(Status::Pass),
            "fail" => Some(Status::Fail),
            "missing" => Some(Status::Missing),
            "error" => Some(Status::Error),
            _ => None,
        }
    }

    /// The word a report uses for this status.
    pub fn name(self) -> &'static str {
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
pub struct TaskResult {
    pub id: String,
    pub status: Status,
    pub stderr_tail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Multi-case tasks only: the first failing case (1-based), whose
    /// details the entry carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<usize>,
    /// Multi-case tasks only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cases_passed: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cases_total: Option<usize>,
    /// A sample's entry (inside `samples`): its file name in `gen/<id>/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<String>,
    /// Multi-sample tasks only: samples judged (`error` ones excluded) ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
    /// ... of which passed ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c: Option<usize>,
    /// ... and samples sbx could not judge (not in `n`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<usize>,
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
}

/// One move of a task away from an engine that stopped answering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requeue {
    pub engine: String,
    pub reason: String,
}

/// The unbiased pass@k estimator, 1 - C(n-c, k) / C(n, k), in the
/// numerically stable product form; `None` when k is 0 or more than n.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    // C(n-c, k) / C(n, k) = prod_{i = n-c+1}^{n} (1 - k / i)
    let fail_all: f64 = (n - c + 1..=n).map(|i| 1.0 - k as f64 / i as f64).product();
    Some(1.0 - fail_all)
}

/// The k values reported for a task with `n` samples: the requested ones
/// (default 1, plus 10 where n >= 10) that do not exceed n.
pub fn ks_for(requested: &[usize], n: usize) -> Vec<usize> {
    let defaults = [1, 10];
    let ks: &[usize] = if requested.is_empty() {
        &defaults
    } else {
        requested
    };
    let mut ks: Vec<usize> = ks.iter().copied().filter(|&k| k >= 1 && k <= n).collect();
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// One entry for a multi-sample task from its samples' entries: `n` judged
/// samples (`error` ones excluded and counted apart), `c` that passed, and
/// pass@k. The task passes when every judged sample passed.
pub fn samples_entry(id: &str, samples: Vec<TaskResult>, requested_ks: &[usize]) -> TaskResult {
    let errors = samples.iter().filter(|s| s.status == Status::Error).count();
    let n = samples.len() - errors;
    let c = samples.iter().filter(|s| s.status == Status::Pass).count();
    let mut entry = if samples.is_empty() {
        TaskResult::missing(id)
    } else if n == 0 {
        let first = &samples[0];
        TaskResult::error(
            id,
            "all_samples_error",
            format!(
                "no sample could be judged; first: {}",
                first.message.clone().unwrap_or_default()
            ),
        )
    } else {
        let failing = samples
            .iter()
            .find(|s| s.status != Status::Pass && s.status != Status::Error);
        TaskResult {
            status: if failing.is_some() {
                Status::Fail
            } else {
                Status::Pass
            },
            reason: failing.and_then(|s| s.reason.clone()),
            ..TaskResult::bare(id, Status::Pass)
        }
    };
    entry.duration_ms = samples.iter().map(|s| s.duration_ms).sum();
    if entry.status == Status::Pass {
        entry.reason = None;
    }
    for k in ks_for(requested_ks, n) {
        if let Some(p) = pass_at_k(n, c, k) {
            entry.pass_at.insert(format!("pass@{k}"), p);
        }
    }
    entry.n = Some(n);
    entry.c = Some(c);
    entry.errors = Some(errors);
    entry.samples = Some(samples);
    entry
}

/// The mean of each `pass@k` over the entries that have it: (key, mean, tasks).
pub fn pass_at_k_means(results: &[TaskResult]) -> Vec<(String, f64, usize)> {
    let mut sums: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
    for r in results {
        for (key, value) in &r.pass_at {
            let slot = sums.entry(key).or_default();
            slot.0 += value;
            slot.1 += 1;
        }
    }
    let mut means: Vec<(String, f64, usize)> = sums
        .into_iter()
        .map(|(key, (sum, count))| (key.to_string(), sum / count as f64, count))
        .collect();
    // pass@1 before pass@10.
    means.sort_by_key(|(key, _, _)| {
        key.trim_start_matches("pass@")
            .parse::<usize>()
            .unwrap_or(usize::MAX)
    });
    means
}

impl TaskResult {
    /// An entry with only its id and status: every other field empty.
    pub fn bare(id: &str, status: Status) -> TaskResult {
        TaskResult {
            id: id.to_string(),
            status,
            stderr_tail: String::new(),
            reason: None,
            message: None,
            exit_code: None,
            duration_ms: 0,
            diff: None,
            case: None,
            cases_passed: None,
            cases_total: None,
            sample: None,
            n: None,
            c: None,
            errors: None,
            pass_at: BTreeMap::new(),
            samples: None,
            cached: None,
            engine: None,
            requeued: Vec::new(),
        }
    }

    /// A result filled from a run; the caller sets status and reason.
    pub fn from_run(id: &str, finished: &Finished) -> TaskResult {
        let exit_code = match finished.ended {
            Ended::Exited(status) => status.code(),
            _ => None,
        };
        TaskResult {
            stderr_tail: tail(
                &String::from_utf8_lossy(&finished.stderr.bytes),
                STDERR_TAIL_CHARS,
            ),
            exit_code,
            duration_ms: u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
            ..TaskResult::bare(id, Status::Fail)
        }
    }

    /// No candidate was found.
    pub fn missing(id: &str) -> TaskResult {
        TaskResult {
            reason: Some("no_candidate".into()),
            ..TaskResult::bare(id, Status::Missing)
        }
    }

    /// sbx could not judge the candidate.
    pub fn error(id: &str, code: &str, message: String) -> TaskResult {
        TaskResult {
            reason: Some(code.to_string()),
            message: Some(message),
            ..TaskResult::bare(id, Status::Error)
        }
    }
}

/// The last `n` characters of `s`.
pub fn tail(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

/// Counts per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub missing: usize,
    pub errors: usize,
}

impl Summary {
    pub fn of(results: &[TaskResult]) -> Summary {
        let mut s = Summary::default();
        for r in results {
            match r.status {
                Status::Pass => s.passed += 1,
                Status::Fail => s.failed += 1,
                Status::Missing => s.missing += 1,
                Status::Error => s.errors += 1,
            }
            // Samples sbx could not judge count as errors too (the task's
            // own status covers only the judged ones), unless the task is
            // itself an error already.
            if r.status != Status::Error {
                s.errors += r.errors.unwrap_or(0);
            }
        }
        s
    }

    /// `N passed, N failed, N missing, N errors in T s`.
    pub fn line(&self, elapsed: Duration) -> String {
        format!(
            "{} passed, {} failed, {} missing, {} errors in {:.1} s",
            self.passed,
            self.failed,
            self.missing,
            self.errors,
            elapsed.as_secs_f64()
        )
    }

    /// 0 when everything passed; 2 when sbx could not judge some task (an
    /// infrastructure problem, not the model's); 1 when any task failed or
    /// had no candidate.
    pub fn exit_code(&self) -> i32 {
        if self.errors > 0 {
            exit::USAGE
        } else if self.failed + self.missing > 0 {
            exit::NOT_ALL_PASSED
        } else {
            exit::SUCCESS
        }
    }
}

/// The report as the original printed it: a pretty JSON list.
pub fn to_json(results: &[TaskResult]) -> String {
    serde_json::to_string_pretty(results).expect("results serialize")
}

/// Writes the JSON report to stdout. A closed stdout (`sbx eval | head`)
/// ends quietly.
pub fn write_json(results: &[TaskResult]) -> Result<()> {
    console::out(&format!("{}\n", to_json(results)), "the report to stdout")
}

/// JUnit XML: one testcase per task; `fail` and `missing` are failures,
/// `error` is an error.
pub fn to_junit(results: &[TaskResult], elapsed: Duration) -> String {
    let mut suite = TestSuite::new("sbx eval");
    for r in results {
        let status = match r.status {
            Status::Pass => TestCaseStatus::success(),
            Status::Fail | Status::Missing | Status::Error => {
                let kind = if r.status == Status::Error {
                    NonSuccessKind::Error
                } else {
                    NonSuccessKind::Failure
                };
                let mut status = TestCaseStatus::non_success(kind);
                let reason = r.reason.clone().unwrap_or_default();
                status.set_type(reason.clone());
                let detail = r.message.as_ref().or(r.diff.as_ref());
                status.set_message(match detail {
                    Some(d) => format!("{reason}: {d}"),
                    None => reason,
                });
                if !r.stderr_tail.is_empty() {
                    status.set_description(r.stderr_tail.clone());
                }
                status
            }
        };
        let mut case = TestCase::new(r.id.clone(), status);
        case.set_classname("sbx")
            .set_time(Duration::from_millis(r.duration_ms));
        suite.add_test_case(case);
    }
    suite.set_time(elapsed);
    let mut report = Report::new("sbx");
    report.add_test_suite(suite);
    report.to_string().expect("a JUnit report serializes")
}

pub fn write_junit(path: &Path, results: &[TaskResult], elapsed: Duration) -> Result<()> {
    fs::write(path, to_junit(results, elapsed)).map_err(|source| Error::Write {
        what: format!("the JUnit report `{}`", path.display()),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn failing(id: &str) -> TaskResult {
        TaskResult {
            stderr_tail: "Traceback".into(),
            reason: Some("wrong_output".into()),
            exit_code: Some(0),
            duration_ms: 420,
            diff: Some("line 1: expected \"a\", got \"b\"".into()),
            ..TaskResult::bare(id, Status::Fail)
        }
    }

    #[test]
    fn json_shape_extends_the_original() {
        let value: serde_json::Value = serde_json::from_str(&to_json(&[
            failing("a"),
            TaskResult::missing("b"),
            TaskResult::error("c", "image_missing", "no image".into()),
        ]))
        .unwrap();
        assert_eq!(
            value,
            json!([
                {"id": "a", "status": "fail", "stderr_tail": "Traceback", "reason": "wrong_output",
                 "exit_code": 0, "duration_ms": 420, "diff": "line 1: expected \"a\", got \"b\""},
                {"id": "b", "status": "missing", "stderr_tail": "", "reason": "no_candidate",
                 "exit_code": null, "duration_ms": 0},
                {"id": "c", "status": "error", "stderr_tail": "", "reason": "image_missing",
                 "message": "no image", "exit_code": null, "duration_ms": 0}
            ])
        );
        // Pretty, two-space indented like json.dumps(indent=2).
        assert!(to_json(&[TaskResult::missing("b")]).starts_with("[\n  {\n    \"id\": \"b\""));
    }

    #[test]
    fn pass_at_k_matches_known_values() {
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(close(pass_at_k(10, 0, 1), 0.0));
        assert!(close(pass_at_k(10, 10, 1), 1.0));
        assert!(close(pass_at_k(10, 3, 1), 0.3));
        // 1 - C(7,2)/C(10,2) = 1 - 21/45
        assert!(close(pass_at_k(10, 3, 2), 1.0 - 21.0 / 45.0));
        // 1 - C(5,5)/C(10,5) = 1 - 1/252
        assert!(close(pass_at_k(10, 5, 5), 1.0 - 1.0 / 252.0));
        // n - c < k: every draw of k holds a pass.
        assert!(close(pass_at_k(10, 8, 3), 1.0));
        assert!(close(pass_at_k(200, 1, 100), 0.5));
        assert_eq!(pass_at_k(3, 1, 5), None);
        assert_eq!(pass_at_k(3, 1, 0), None);
        // Stable for large n: no overflow, no NaN.
        let p = pass_at_k(100_000, 17, 1000).unwrap();
        assert!(p.is_finite() && p > 0.15 && p < 0.16, "{p}");
    }

    #[test]
    fn ks_default_to_1_and_10_when_there_are_enough_samples() {
        assert_eq!(ks_for(&[], 5), [1]);
        assert_eq!(ks_for(&[], 10), [1, 10]);
        assert_eq!(ks_for(&[5, 1, 5, 20], 10), [1, 5]);
        assert!(ks_for(&[], 0).is_empty());
    }

    #[test]
    fn samples_make_one_entry() {
        let pass = |name: &str| TaskResult {
            status: Status::Pass,
            reason: None,
            diff: None,
            sample: Some(name.into()),
            ..failing("t")
        };
        let fail = |name: &str| TaskResult {
            sample: Some(name.into()),
            ..failing("t")
        };
        let err = |name: &str| TaskResult {
            sample: Some(name.into()),
            ..TaskResult::error("t", "start_failed", "boom".into())
        };
        let e = samples_entry(
            "t",
            vec![pass("a.py"), fail("b.py"), err("c.py"), pass("d.py")],
            &[],
        );
        assert_eq!((e.n, e.c, e.errors), (Some(3), Some(2), Some(1)));
        assert_eq!(e.status, Status::Fail);
        assert_eq!(e.reason.as_deref(), Some("wrong_output"));
        assert!((e.pass_at["pass@1"] - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(e.duration_ms, 420 * 3);
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["pass@1"], serde_json::json!(2.0 / 3.0));
        assert_eq!(json["samples"][1]["sample"], "b.py");
        let all = samples_entry("t", vec![pass("a"), pass("b")], &[1, 2]);
        assert_eq!(all.status, Status::Pass);
        assert!(all.reason.is_none());
        assert_eq!(all.pass_at.keys().collect::<Vec<_>>(), ["pass@1", "pass@2"]);
        assert_eq!(samples_entry("t", vec![], &[]).status, Status::Missing);
        let errored = samples_entry("t", vec![err("a")], &[]);
        assert_eq!(errored.status, Status::Error);
        assert_eq!(errored.n, Some(0));
        let means = pass_at_k_means(&[e, all]);
        assert_eq!(means[0].0, "pass@1");
        assert!((means[0].1 - (2.0 / 3.0 + 1.0) / 2.0).abs() < 1e-12);
        assert_eq!(means[0].2, 2);
    }

    #[test]
    fn tail_counts_characters() {
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("ab", 3), "ab");
        assert_eq!(tail("ééé", 2), "éé");
    }

    #[test]
    fn summary_and_exit_codes() {
        let pass = TaskResult {
            status: Status::Pass,
            ..failing("p")
        };
        let s = Summary::of(&[pass.clone(), failing("f"), TaskResult::missing("m")]);
        assert_eq!(
            s,
            Summary {
                passed: 1,
                failed: 1,
                missing: 1,
                errors: 0
            }
        );
        assert_eq!(
            s.line(Duration::from_millis(4200)),
            "1 passed, 1 failed, 1 missing, 0 errors in 4.2 s"
        );
        assert_eq!(s.exit_code(), 1);
        assert_eq!(Summary::of(std::slice::from_ref(&pass)).exit_code(), 0);
        assert_eq!(Summary::of(&[]).exit_code(), 0);
        assert_eq!(
            Summary::of(&[pass, TaskResult::error("e", "x", "y".into())]).exit_code(),
            2
        );
    }

    #[test]
    fn junit_distinguishes_failures_and_errors() {
        let xml = to_junit(
            &[
                failing("a"),
                TaskResult::error("c", "image_missing", "no image".into()),
            ],
            Duration::from_secs(1),
        );
        assert!(xml.contains("<failure"), "{xml}");
        assert!(xml.contains("<error"), "{xml}");
        assert!(xml.contains("tests=\"2\""), "{xml}");
        assert!(xml.contains("failures=\"1\""), "{xml}");
        assert!(xml.contains("errors=\"1\""), "{xml}");
    }
}
