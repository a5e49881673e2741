//! pass@k runs (every task scored from samples: human-eval's files, or
//! `gen/<id>/` folders) for people and for scripts: at a terminal, pass@k
//! is the headline, tasks are one compact table of `n`, `c` and pass@k
//! (the tasks whose samples all passed folded into one line), the live
//! lines are per task, and the recap names only what never passed. Their
//! exit code, when no `--min-pass-at` gates them, says whether the run was
//! scored, as human-eval's does: a model that is wrong sometimes is the
//! score, not a failure of the run.

use std::fmt::Write as _;
use std::time::Duration;

use super::result::{Status, TaskResult};
use super::summary::Summary;
use crate::console;
use crate::exit;

/// At most this many `error` tasks are named one by one at a terminal.
const ERRORS_SHOWN: usize = 10;
/// Spaces between two columns of the packed table.
const GUTTER: usize = 3;

/// Whether the run is a pass@k run: some task was scored from samples,
/// and every task was (or has no candidate at all).
pub(crate) fn is_pass_at_k_run(results: &[TaskResult]) -> bool {
    let scored = |r: &TaskResult| r.n.is_some();
    results.iter().any(scored)
        && results
            .iter()
            .all(|r| scored(r) || r.status == Status::Missing)
}

/// The exit code of an eval without `--min-pass-at`. A pass@k run exits 0
/// once every task was scored, failed samples or not (human-eval's
/// contract: a scripted run under `set -e` does not stop at every real
/// model); 1 when a task had no samples at all (the score does not cover
/// it); 2 when sbx could not judge some sample. Any other run keeps the
/// summary's code: 1 when something failed.
pub(crate) fn exit_code(summary: &Summary, results: &[TaskResult]) -> i32 {
    if summary.errors > 0 || !is_pass_at_k_run(results) {
        return summary.exit_code();
    }
    if summary.missing > 0 {
        exit::NOT_ALL_PASSED
    } else {
        exit::SUCCESS
    }
}

/// The headline of a pass@k run: the mean of each pass@k (over how many
/// tasks when not all have it), then the counts of tasks and samples, and
/// the time: `pass@1 0.715  pass@10 0.921; 164 tasks, 1640 samples: 1173
/// passed, 467 failed; in 61.2 s`.
pub(crate) fn headline(results: &[TaskResult], elapsed: Duration) -> String {
    let scored = results.iter().filter(|r| r.n.is_some_and(|n| n > 0));
    let judged = scored.clone().count();
    let mut parts: Vec<String> = Vec::new();
    let means: Vec<String> = super::passk::pass_at_k_means(results)
        .into_iter()
        .map(|(key, mean, tasks)| {
            if tasks == judged {
                format!("{key} {mean:.3}")
            } else {
                format!("{key} {mean:.3} (over {tasks} of {judged} tasks)")
            }
        })
        .collect();
    if means.is_empty() {
        parts.push("pass@k: none computed".into());
    } else {
        parts.push(means.join("  "));
    }
    let samples: usize = results.iter().map(|r| r.n.unwrap_or(0)).sum();
    let passed: usize = results.iter().map(|r| r.c.unwrap_or(0)).sum();
    let unjudged: usize = results.iter().map(|r| r.errors.unwrap_or(0)).sum();
    let mut counts = format!(
        "{} {}, {samples} samples: {passed} passed, {} failed",
        results.len(),
        plural(results.len(), "task", "tasks"),
        samples - passed
    );
    if unjudged > 0 {
        let _ = write!(counts, ", {unjudged} not judged");
    }
    parts.push(counts);
    let incomplete = results
        .iter()
        .filter(|r| r.incomplete == Some(true))
        .count();
    if incomplete > 0 {
        parts.push(format!(
            "{incomplete} incomplete {} (samples not judged): pass@k withheld",
            plural(incomplete, "task", "tasks")
        ));
    }
    let missing = results
        .iter()
        .filter(|r| r.status == Status::Missing)
        .count();
    if missing > 0 {
        parts.push(format!(
            "{missing} {} without samples",
            plural(missing, "task", "tasks")
        ));
    }
    let errors = results.iter().filter(|r| r.status == Status::Error).count();
    if errors > 0 {
        parts.push(format!(
            "{errors} {} not judged",
            plural(errors, "task", "tasks")
        ));
    }
    parts.push(format!("in {:.1} s", elapsed.as_secs_f64()));
    parts.join("; ")
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// The report of a pass@k run at a terminal `width` columns wide: the
/// table of the tasks that did not pass every sample, one line for those
/// that did, the tasks without samples and those not judged, the recap
/// of the tasks no sample passed, then `headline` (bold, wrapped to the
/// width, never a style across a line end).
pub(crate) fn render(results: &[TaskResult], headline: &str, color: bool, width: usize) -> String {
    let mut out = String::new();
    let imperfect: Vec<&TaskResult> = results
        .iter()
        .filter(|r| r.n.is_some_and(|n| n > 0) && r.status != Status::Pass)
        .collect();
    let perfect = results.iter().filter(|r| r.status == Status::Pass).count();
    if !imperfect.is_empty() {
        table(&mut out, &imperfect, width);
    }
    if perfect > 0 {
        let _ = writeln!(
            out,
            "{}  {perfect} {} passed every sample",
            paint(color, "1;32", "PASS"),
            plural(perfect, "task", "tasks")
        );
    }
    let missing: Vec<&TaskResult> = results
        .iter()
        .filter(|r| r.status == Status::Missing)
        .collect();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "{}  {} without samples: {}",
            paint(color, "1;33", "MISSING"),
            missing.len(),
            names(&missing)
        );
    }
    let errors: Vec<&TaskResult> = results
        .iter()
        .filter(|r| r.status == Status::Error)
        .collect();
    for r in errors.iter().take(ERRORS_SHOWN) {
        let why = r.message.as_deref().or(r.reason.as_deref()).unwrap_or("");
        let _ = writeln!(
            out,
            "{}  {}  {}",
            paint(color, "1;35", "ERROR"),
            crate::escape::line(&r.id),
            crate::escape::line(why)
        );
    }
    if errors.len() > ERRORS_SHOWN {
        let _ = writeln!(
            out,
            "       ... and {} more not judged",
            errors.len() - ERRORS_SHOWN
        );
    }
    let never: Vec<&TaskResult> = imperfect
        .iter()
        .copied()
        .filter(|r| r.c == Some(0))
        .collect();
    if !never.is_empty() || !missing.is_empty() {
        out.push('\n');
        let mut recap = format!("No sample passed ({}): {}", never.len(), names(&never));
        if never.is_empty() {
            recap = "Every task with samples had one that passed".into();
        }
        if !missing.is_empty() {
            let _ = write!(
                recap,
                "; without samples ({}): {}",
                missing.len(),
                names(&missing)
            );
        }
        for line in console::wrap(&recap, width) {
            let _ = writeln!(out, "{line}");
        }
    }
    if !imperfect.is_empty() {
        let _ = writeln!(
            out,
            "Each sample's verdict and output: -o FILE (JSON), or --format text into a file"
        );
    }
    if !out.is_empty() {
        out.push('\n');
    }
    for line in console::wrap(headline, width) {
        let _ = writeln!(out, "{}", paint(color, "1", &line));
    }
    out
}

/// Writes the report of a pass@k run to a terminal's stdout (see
/// [`render`]); a closed stdout ends quietly.
pub(crate) fn write_text(
    results: &[TaskResult],
    headline: &str,
    color: bool,
) -> crate::error::Result<()> {
    let text = render(results, headline, color, console::width());
    console::out(&text, "the report to stdout")
}

/// `A, B, C` (escaped), or `-` for none; long lists are cut after 12.
fn names(tasks: &[&TaskResult]) -> String {
    const SHOWN: usize = 12;
    if tasks.is_empty() {
        return "-".into();
    }
    let mut list: Vec<String> = tasks
        .iter()
        .take(SHOWN)
        .map(|r| crate::escape::line(&r.id))
        .collect();
    if tasks.len() > SHOWN {
        list.push(format!("and {} more", tasks.len() - SHOWN));
    }
    list.join(", ")
}

fn paint(color: bool, code: &str, text: &str) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The k of every pass@k the tasks have, in order (1 before 10).
fn keys(tasks: &[&TaskResult]) -> Vec<String> {
    let mut ks: Vec<usize> = tasks
        .iter()
        .flat_map(|r| r.pass_at.keys())
        .filter_map(|key| key.trim_start_matches("pass@").parse().ok())
        .collect();
    ks.sort_unstable();
    ks.dedup();
    ks.into_iter().map(|k| format!("pass@{k}")).collect()
}

/// The tasks as a table of `task n c pass@k...`, packed into as many
/// columns as the width holds, read down then across (as `ls` does).
fn table(out: &mut String, tasks: &[&TaskResult], width: usize) {
    let keys = keys(tasks);
    let id_width = tasks
        .iter()
        .map(|r| crate::escape::line(&r.id).chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 32);
    let number_width = |key: &str| key.len().max(5);
    let cell = |id: &str, n: String, c: String, values: Vec<String>| {
        let mut line = format!("{id:<id_width$} {n:>3} {c:>3}");
        for (key, value) in keys.iter().zip(values) {
            let w = number_width(key);
            let _ = write!(line, " {value:>w$}");
        }
        line
    };
    let header = cell("task", "n".into(), "c".into(), keys.clone());
    let cell_width = header.chars().count();
    let columns = ((width + GUTTER) / (cell_width + GUTTER)).max(1);
    let rows = tasks.len().div_ceil(columns);
    let columns = tasks.len().div_ceil(rows);
    let cells: Vec<String> = tasks
        .iter()
        .map(|r| {
            let values = keys
                .iter()
                .map(|key| match r.pass_at.get(key) {
                    Some(p) => format!("{p:.3}"),
                    None => "-".into(),
                })
                .collect();
            let n = r.n.unwrap_or(0).to_string();
            let n = match r.errors.filter(|&e| e > 0) {
                Some(e) => format!("{n}+{e}"),
                None => n,
            };
            cell(
                &crate::escape::line(&r.id),
                n,
                r.c.unwrap_or(0).to_string(),
                values,
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "Not every sample passed ({} of the tasks):",
        tasks.len()
    );
    let gutter = " ".repeat(GUTTER);
    let head: Vec<&str> = (0..columns).map(|_| header.as_str()).collect();
    let _ = writeln!(out, "{}", head.join(&gutter).trim_end());
    for row in 0..rows {
        let line: Vec<String> = (0..columns)
            .filter_map(|col| cells.get(col * rows + row))
            .map(|c| format!("{c:<cell_width$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join(&gutter).trim_end());
    }
}

/// A task whose samples were all judged now, shown the moment its last
/// one is, when not every one passed: the status, the time its samples
/// took, the id, `c/n passed` (and how many were not judged).
pub(crate) fn live_line(
    id: &str,
    judged: (usize, usize, usize),
    duration_ms: u64,
    color: bool,
) -> String {
    let (n, c, errors) = judged;
    let status = if errors > 0 && c == n {
        Status::Error
    } else {
        Status::Fail
    };
    let (word, code) = match status {
        Status::Error => ("ERROR", "1;35"),
        _ => ("FAIL", "1;31"),
    };
    let pad = 12usize.saturating_sub(word.len());
    let mut line = format!(
        "{:pad$}{} [{:>7}] {}  {c}/{n} samples passed",
        "",
        paint(color, code, word),
        format!("{:.2}s", duration_ms as f64 / 1000.0),
        crate::escape::line(id)
    );
    if errors > 0 {
        let _ = write!(line, " ({errors} not judged)");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::passk::samples_entry;

    fn task(id: &str, n: usize, c: usize) -> TaskResult {
        let samples = (0..n)
            .map(|i| {
                let status = if i < c { Status::Pass } else { Status::Fail };
                TaskResult {
                    sample: Some(format!("{i}")),
                    reason: (status == Status::Fail).then(|| "wrong_output".into()),
                    ..TaskResult::bare(id, status)
                }
            })
            .collect();
        samples_entry(id, samples, &[1, 10])
    }

    #[test]
    fn a_pass_at_k_run_exits_0_once_scored() {
        let results = [task("a", 10, 9), task("b", 10, 0), task("c", 10, 10)];
        let summary = Summary::of(&results);
        assert_eq!(summary.exit_code(), exit::NOT_ALL_PASSED);
        assert_eq!(exit_code(&summary, &results), exit::SUCCESS);
        let with_missing = [task("a", 10, 9), TaskResult::missing("m")];
        let s = Summary::of(&with_missing);
        assert_eq!(exit_code(&s, &with_missing), exit::NOT_ALL_PASSED);
        let unjudged = [
            task("a", 10, 9),
            TaskResult::error("e", "no_engine", "down".into()),
        ];
        let s = Summary::of(&unjudged);
        assert_eq!(exit_code(&s, &unjudged), exit::USAGE);
        // A single-sample suite keeps exit 1.
        let single = [TaskResult::bare("x", Status::Fail)];
        assert_eq!(exit_code(&Summary::of(&single), &single), 1);
    }

    #[test]
    fn one_screen_table_recap_and_headline() {
        let results = vec![
            task("HumanEval/0", 10, 10),
            task("HumanEval/1", 10, 7),
            task("HumanEval/2", 10, 0),
            task("HumanEval/3", 10, 10),
            TaskResult::missing("HumanEval/4"),
        ];
        let line = headline(&results, Duration::from_millis(12_300));
        assert_eq!(
            line,
            "pass@1 0.675  pass@10 0.750; 5 tasks, 40 samples: 27 passed, 13 failed; 1 task without samples; in 12.3 s"
        );
        let text = render(&results, &line, false, 80);
        let expected = "\
Not every sample passed (2 of the tasks):
task          n   c pass@1 pass@10   task          n   c pass@1 pass@10
HumanEval/1  10   7  0.700   1.000   HumanEval/2  10   0  0.000   0.000
PASS  2 tasks passed every sample
MISSING  1 without samples: HumanEval/4

No sample passed (1): HumanEval/2; without samples (1): HumanEval/4
Each sample's verdict and output: -o FILE (JSON), or --format text into a file

pass@1 0.675  pass@10 0.750; 5 tasks, 40 samples: 27 passed, 13 failed;
1 task without samples; in 12.3 s
";
        assert_eq!(text, expected, "\n{text}");
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{line}");
        }
        // Bold is closed on every line.
        let bold = render(&results, &line, true, 80);
        for line in bold.lines().filter(|l| l.contains("\x1b[1m")) {
            assert!(line.ends_with("\x1b[0m"), "{line:?}");
        }
    }

    #[test]
    fn a_task_line_as_it_is_judged() {
        assert_eq!(
            live_line("HumanEval/3", (10, 7, 0), 3210, false),
            "        FAIL [  3.21s] HumanEval/3  7/10 samples passed"
        );
        assert_eq!(
            live_line("t", (2, 2, 1), 10, false),
            "       ERROR [  0.01s] t  2/2 samples passed (1 not judged)"
        );
    }
}
