//! The report for people (`sbx eval` at a terminal, `--format text`): one
//! line per task in task order (status word, id, duration, reason), what
//! went wrong right under each failure (the diff excerpt of a wrong output,
//! the stderr tail of a crash), `case k/n` of multi-case tasks, `c/n` and
//! pass@k of samples, then the summary. Colour as cargo does it. Everything
//! a candidate wrote is shown with its control, bidi and separator
//! characters escaped, so that no output can move the cursor or recolour
//! the terminal; names (ids, sample file names, engines) have newlines and
//! tabs escaped too, so none can forge a line (`crate::escape`).

use std::ffi::OsStr;
use std::fmt::Write as _;

use super::result::{Status, TaskResult};
use crate::console;
use crate::error::Result;
use crate::spec::{ColorChoice, ReportFormat};

/// At most this many failing samples of a task are shown.
const SAMPLES_SHOWN: usize = 3;
/// Ids longer than this do not widen the id column.
const ID_WIDTH_MAX: usize = 32;
/// Width of the status column (`MISSING`).
const STATUS_WIDTH: usize = 7;

/// The report's form: the one asked for, else text at a terminal and JSON
/// otherwise (the drop-in contract: a pipe or a file always gets JSON).
pub(crate) fn format_for(asked: Option<ReportFormat>, stdout_is_terminal: bool) -> ReportFormat {
    match asked {
        Some(format) => format,
        None if stdout_is_terminal => ReportFormat::Text,
        None => ReportFormat::Json,
    }
}

/// Whether to colour, as cargo decides: `always` and `never` say so; `auto`
/// colours a terminal unless `NO_COLOR` is set to anything but "".
pub(crate) fn color_for(
    choice: ColorChoice,
    stdout_is_terminal: bool,
    no_color: Option<&OsStr>,
) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => stdout_is_terminal && no_color.is_none_or(|v| v.is_empty()),
    }
}

/// The ANSI styles used, or none.
#[derive(Debug, Clone, Copy)]
struct Paint {
    color: bool,
}

impl Paint {
    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// The status word, padded to the column, coloured as cargo colours
    /// its own words (green done, red error, yellow warning).
    fn status(self, status: Status, padded: bool) -> String {
        let (word, code) = match status {
            Status::Pass => ("PASS", "1;32"),
            Status::Fail => ("FAIL", "1;31"),
            Status::Missing => ("MISSING", "1;33"),
            Status::Error => ("ERROR", "1;35"),
        };
        let width = if padded { STATUS_WIDTH } else { 0 };
        self.paint(code, &format!("{word:<width$}"))
    }
}

/// A run of at least this many tasks without a candidate is one line at a
/// terminal.
pub(crate) const FOLD_MISSING: usize = 4;
/// The slowest tasks the recap at a terminal names.
const SLOWEST_SHOWN: usize = 3;

/// The text report: every task, then `summary` (the summary line).
#[cfg(test)]
pub(crate) fn to_text(results: &[TaskResult], summary: &str, color: bool) -> String {
    render(results, summary, color, false)
}

/// The text report; at a terminal (`terminal`), each run of
/// [`FOLD_MISSING`] or more `MISSING` tasks is folded into one line (how
/// many, the first and the last), and a recap comes before the summary:
/// the tasks that did not pass, and the slowest ones.
fn render(results: &[TaskResult], summary: &str, color: bool, terminal: bool) -> String {
    let paint = Paint { color };
    let width = results
        .iter()
        .map(|r| name(&r.id).chars().count())
        .filter(|&w| w <= ID_WIDTH_MAX)
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let mut i = 0;
    while i < results.len() {
        let run = results[i..]
            .iter()
            .take_while(|r| is_plain_missing(r))
            .count();
        if terminal && run >= FOLD_MISSING {
            folded(&mut out, &results[i..i + run], paint);
            i += run;
        } else {
            task(&mut out, &results[i], width, paint);
            i += 1;
        }
    }
    if terminal {
        recap(&mut out, results, paint, console::width());
    }
    if !results.is_empty() {
        out.push('\n');
    }
    summary_lines(&mut out, summary, paint, terminal.then(console::width));
    out
}

/// The summary, bold; at a terminal `width` columns wide, wrapped at its
/// `; ` separators, each line bold on its own (a style never runs across
/// a line end, and no number is cut in two by the terminal).
fn summary_lines(out: &mut String, summary: &str, paint: Paint, width: Option<usize>) {
    let lines = match width {
        Some(width) => console::wrap(summary, width),
        None => vec![summary.to_string()],
    };
    for line in lines {
        out.push_str(&paint.paint("1", &line));
        out.push('\n');
    }
}

/// Writes the text report to stdout (the terminal's form when `terminal`);
/// a closed stdout ends quietly.
pub(crate) fn write_text(
    results: &[TaskResult],
    summary: &str,
    color: bool,
    terminal: bool,
) -> Result<()> {
    let text = render(results, summary, color, terminal);
    console::out(&text, "the report to stdout")
}

/// A task without a candidate, and nothing else to say about it.
fn is_plain_missing(r: &TaskResult) -> bool {
    r.status == Status::Missing && r.samples.is_none() && r.partition.is_none()
}

/// A run of `MISSING` tasks as one line: `MISSING  144 tasks, from A to B`.
fn folded(out: &mut String, run: &[TaskResult], paint: Paint) {
    let first = name(&run[0].id);
    let last = name(&run[run.len() - 1].id);
    let reason = run[0].reason.as_deref().map(name).unwrap_or_default();
    let _ = writeln!(
        out,
        "{}  {} tasks, from {first} to {last}  {reason}",
        paint.status(Status::Missing, true),
        run.len()
    );
}

/// The recap: each task that failed or could not be judged, one line
/// each, then the slowest tasks judged now (not from the cache), wrapped
/// to `width` columns between tasks (a task's name and time stay on one
/// line).
fn recap(out: &mut String, results: &[TaskResult], paint: Paint, width: usize) {
    let failed = not_passed(results);
    let mut timed: Vec<&TaskResult> = results
        .iter()
        .filter(|r| r.status != Status::Missing && r.cached != Some(true))
        .collect();
    if failed.is_empty() && timed.len() < 2 {
        return;
    }
    out.push('\n');
    if !failed.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            paint.paint("1", &format!("Not passed ({}):", failed.len()))
        );
        recap_lines(out, &failed, paint);
    }
    if timed.len() >= 2 {
        timed.sort_by_key(|r| std::cmp::Reverse(r.duration_ms));
        let slowest: Vec<String> = timed
            .iter()
            .take(SLOWEST_SHOWN)
            .map(|r| format!("{} {}", name(&r.id), seconds(r.duration_ms)))
            .collect();
        for line in slowest_lines(&slowest, width) {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// `Slowest: A 1.00s, B 0.50s, ...` in lines of at most `width` columns,
/// cut only between two tasks; the lines after the first are indented.
fn slowest_lines(slowest: &[String], width: usize) -> Vec<String> {
    let mut lines = vec![String::from("Slowest:")];
    for (i, item) in slowest.iter().enumerate() {
        let item = match i + 1 < slowest.len() {
            true => format!("{item},"),
            false => item.clone(),
        };
        let line = lines.last_mut().expect("one line at least");
        let used = line.chars().count();
        if used > "Slowest:".len() && used + 1 + item.chars().count() > width {
            lines.push(format!("  {item}"));
        } else {
            line.push(' ');
            line.push_str(&item);
        }
    }
    lines
}

/// The tasks the recap names: those that failed, had no candidate, or
/// could not be judged (each one a reason for the exit code).
fn not_passed(results: &[TaskResult]) -> Vec<&TaskResult> {
    results
        .iter()
        .filter(|r| matches!(r.status, Status::Fail | Status::Error | Status::Missing))
        .collect()
}

/// The recap's lines: one per task, a run of [`FOLD_MISSING`] or more
/// tasks without a candidate as one.
fn recap_lines(out: &mut String, failed: &[&TaskResult], paint: Paint) {
    let mut i = 0;
    while i < failed.len() {
        let run = failed[i..]
            .iter()
            .take_while(|r| is_plain_missing(r))
            .count();
        if run >= FOLD_MISSING {
            let run: Vec<TaskResult> = failed[i..i + run].iter().map(|r| (*r).clone()).collect();
            folded(out, &run, paint);
            i += run.len();
        } else {
            let _ = writeln!(out, "{}", live_line(failed[i], paint.color));
            i += 1;
        }
    }
}

/// A duration as the report shows it: `1.31s`.
fn seconds(ms: u64) -> String {
    format!("{:.2}s", ms as f64 / 1000.0)
}

/// One task (or sample) that did not pass, as printed the moment it is
/// judged at a terminal and in the recap, nextest's way: the status
/// (right-aligned), the time, the id (and sample), the reason.
pub(crate) fn live_line(r: &TaskResult, color: bool) -> String {
    let paint = Paint { color };
    let mut id = name(&r.id);
    if let Some(sample) = &r.sample {
        let _ = write!(id, " sample {}", name(sample));
    }
    let word = paint.status(r.status, false);
    let pad = 12usize.saturating_sub(r.status.name().len());
    let mut line = format!("{:pad$}{word} [{:>7}] {id}", "", seconds(r.duration_ms));
    let what = headline(r);
    if !what.is_empty() {
        let _ = write!(line, "  {what}");
    }
    line
}

/// One task: its line, then the details of what went wrong.
fn task(out: &mut String, r: &TaskResult, width: usize, paint: Paint) {
    let duration = match r.status {
        Status::Missing => String::new(),
        _ => format!("{:.2}s", r.duration_ms as f64 / 1000.0),
    };
    let _ = write!(
        out,
        "{}  {:<width$}  {duration:>7}",
        paint.status(r.status, true),
        name(&r.id)
    );
    let what = headline(r);
    if !what.is_empty() {
        let _ = write!(out, "  {what}");
    }
    out.push('\n');
    let indent = " ".repeat(STATUS_WIDTH + 2);
    match &r.samples {
        Some(samples) => {
            let failing: Vec<&TaskResult> = samples
                .iter()
                .filter(|s| s.status != Status::Pass)
                .collect();
            for s in failing.iter().take(SAMPLES_SHOWN) {
                let name = s.sample.as_deref().unwrap_or("?");
                let _ = writeln!(
                    out,
                    "{indent}sample {}: {}  {}",
                    self::name(name),
                    paint.status(s.status, false),
                    headline(s)
                );
                details(out, s, &format!("{indent}  "));
            }
            if failing.len() > SAMPLES_SHOWN {
                let _ = writeln!(
                    out,
                    "{indent}... and {} more samples that did not pass",
                    failing.len() - SAMPLES_SHOWN
                );
            }
        }
        None => details(out, r, &indent),
    }
}

/// What the task's line says after its duration: the reason (with the exit
/// code, the message of an error, the failing case), the cases or samples
/// that passed, pass@k, and where it came from.
fn headline(r: &TaskResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(n) = r.n {
        let mut counts = format!("{}/{n} samples passed", r.c.unwrap_or(0));
        if let Some(errors) = r.errors.filter(|&e| e > 0) {
            let _ = write!(counts, " ({errors} not judged)");
        }
        parts.push(counts);
        for (key, value) in &r.pass_at {
            parts.push(format!("{key} {value:.3}"));
        }
        // Unjudged samples: no pass@k reads as final, each is a range.
        if let Some(bounds) = r.pass_at_k_bounds.as_ref().filter(|b| !b.is_empty()) {
            let ranges: Vec<String> = bounds
                .iter()
                .map(|(key, b)| format!("{key} between {:.3} and {:.3}", b.lower, b.upper))
                .collect();
            parts.push(format!("not final: {}", ranges.join(", ")));
        } else if r.incomplete == Some(true) {
            parts.push("incomplete: pass@k withheld".into());
        }
    } else if r.status != Status::Pass {
        if let Some(reason) = &r.reason {
            let mut reason = self::name(reason);
            if reason == "exit_code" {
                if let Some(code) = r.exit_code {
                    let _ = write!(reason, " {code}");
                }
            }
            if let (Some(case), Some(total)) = (r.case, r.cases_total) {
                let _ = write!(reason, " in case {case}/{total}");
            }
            if let Some(message) = &r.message {
                let _ = write!(reason, ": {}", self::name(message));
            }
            parts.push(reason);
        }
        if let Some(cases) = case_counts(r) {
            parts.push(cases);
        }
    } else if let Some(total) = r.cases_total {
        parts.push(format!("{total} cases"));
    }
    if r.cached == Some(true) {
        parts.push("(cached)".into());
    }
    if let Some(engine) = &r.engine {
        parts.push(format!("on {}", name(engine)));
    }
    for moved in &r.requeued {
        parts.push(format!(
            "(moved off {}: {})",
            name(&moved.engine),
            name(&moved.reason)
        ));
    }
    parts.join("  ")
}

/// The cases of a multi-case task that did not pass: `(1 passed, 1
/// failed, 1 not run)`, or `(1/3 cases passed)` from a report that does
/// not say how many failed.
fn case_counts(r: &TaskResult) -> Option<String> {
    let (passed, total) = (r.cases_passed?, r.cases_total?);
    Some(match r.cases_failed {
        Some(failed) => {
            let not_run = total.saturating_sub(passed + failed);
            if not_run > 0 {
                format!("({passed} passed, {failed} failed, {not_run} not run)")
            } else {
                format!("({passed} passed, {failed} failed)")
            }
        }
        None => format!("({passed}/{total} cases passed)"),
    })
}

/// Under a wrong output, the diff excerpt; under any other failure (an
/// exit code, a crash, a timeout), the stderr tail, if any.
fn details(out: &mut String, r: &TaskResult, indent: &str) {
    if r.status != Status::Fail {
        return;
    }
    let text = match (&r.diff, r.reason.as_deref()) {
        (Some(diff), Some("wrong_output")) => diff.as_str().into(),
        _ => from_a_line_start(&r.stderr_tail),
    };
    for line in text.lines() {
        let _ = writeln!(out, "{indent}{}", shown(line));
    }
}

/// A stderr tail that was cut (it has the report's full length) shown from
/// its first whole line, after `...`: a traceback is never cut mid-line.
/// A tail of one cut line is shown as it is.
fn from_a_line_start(tail: &str) -> std::borrow::Cow<'_, str> {
    if tail.chars().count() < super::result::STDERR_TAIL_CHARS {
        return tail.into();
    }
    match tail.split_once('\n') {
        Some((_, rest)) if !rest.trim().is_empty() => format!("...\n{rest}").into(),
        _ => tail.into(),
    }
}

/// `text` with its control, bidi and separator characters escaped
/// (`\u{1b}`, `\u{202e}`), tabs and newlines aside: a candidate's output
/// must not drive the terminal.
fn shown(text: &str) -> String {
    crate::escape::block(text)
}

/// A name (a task id, a sample's file name, an engine) or a one-line
/// field: as [`shown`], newlines and tabs escaped too, so no name can
/// forge a line of the report or look like another.
fn name(text: &str) -> String {
    crate::escape::line(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_line_wraps_between_tasks_never_inside_one() {
        let slowest: Vec<String> = (0..5)
            .map(|i| format!("HumanEval/{i}{i}{i} 1{i}.25s"))
            .collect();
        let one = slowest_lines(&slowest, 200);
        assert_eq!(one, [format!("Slowest: {}", slowest.join(", "))]);
        let lines = slowest_lines(&slowest, 40);
        assert!(lines.len() > 1, "{lines:?}");
        for line in &lines {
            assert!(line.chars().count() <= 40, "{line:?}");
        }
        let joined = lines
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined, one[0]);
        // A task wider than the line stays whole, on a line of its own.
        let wide = vec!["x".repeat(50) + " 1.00s", "y 2.00s".into()];
        assert_eq!(
            slowest_lines(&wide, 20),
            [
                format!("Slowest: {},", "x".repeat(50) + " 1.00s"),
                "  y 2.00s".into()
            ]
        );
    }
    use crate::report::passk::samples_entry;

    fn fail(id: &str, reason: &str) -> TaskResult {
        TaskResult {
            reason: Some(reason.into()),
            exit_code: Some(0),
            duration_ms: 420,
            ..TaskResult::bare(id, Status::Fail)
        }
    }

    fn pass(id: &str) -> TaskResult {
        TaskResult {
            exit_code: Some(0),
            duration_ms: 1234,
            ..TaskResult::bare(id, Status::Pass)
        }
    }

    #[test]
    fn one_line_per_task_details_under_failures_then_the_summary() {
        let wrong = TaskResult {
            diff: Some("line 1: expected \"a\\n\", got \"b\\n\"".into()),
            stderr_tail: "ignored warning".into(),
            ..fail("wrong", "wrong_output")
        };
        let crash = TaskResult {
            exit_code: Some(3),
            stderr_tail: "Traceback\nValueError: x\n".into(),
            ..fail("crash", "exit_code")
        };
        let cases = TaskResult {
            diff: Some("line 1: expected \"c\", got \"b\"".into()),
            case: Some(2),
            cases_passed: Some(2),
            cases_total: Some(3),
            ..fail("upper", "wrong_output")
        };
        let all_cases = TaskResult {
            cases_passed: Some(3),
            cases_total: Some(3),
            ..pass("cased")
        };
        let text = to_text(
            &[
                pass("hello"),
                wrong,
                crash,
                fail("spin", "timeout"),
                TaskResult::missing("absent"),
                cases,
                all_cases,
                TaskResult::error("noimage", "image_missing", "no image".into()),
            ],
            "1 passed, 4 failed, 1 missing, 1 errors in 2.0 s",
            false,
        );
        let expected = "\
PASS     hello      1.23s
FAIL     wrong      0.42s  wrong_output
         line 1: expected \"a\\n\", got \"b\\n\"
FAIL     crash      0.42s  exit_code 3
         Traceback
         ValueError: x
FAIL     spin       0.42s  timeout
MISSING  absent            no_candidate
FAIL     upper      0.42s  wrong_output in case 2/3  (2/3 cases passed)
         line 1: expected \"c\", got \"b\"
PASS     cased      1.23s  3 cases
ERROR    noimage    0.00s  image_missing: no image

1 passed, 4 failed, 1 missing, 1 errors in 2.0 s
";
        assert_eq!(text, expected, "\n{text}");
    }

    #[test]
    fn samples_show_c_of_n_pass_at_k_and_the_failing_ones() {
        let sample = |name: &str, r: TaskResult| TaskResult {
            sample: Some(name.into()),
            ..r
        };
        let wrong = TaskResult {
            diff: Some("line 1: expected \"4\", got \"5\"".into()),
            ..fail("t", "wrong_output")
        };
        let mut samples = vec![sample("a.py", pass("t")), sample("b.py", wrong)];
        for i in 0..4 {
            samples.push(sample(&format!("c{i}.py"), fail("t", "timeout")));
        }
        samples.push(sample(
            "d.py",
            TaskResult::error("t", "start_failed", "boom".into()),
        ));
        let entry = samples_entry("t", samples, &[1, 2]);
        let text = to_text(&[entry], "summary", false);
        let expected = "\
FAIL     t    3.33s  1/6 samples passed (1 not judged)  not final: pass@1 between 0.143 and 0.286, pass@2 between 0.286 and 0.524
         sample b.py: FAIL  wrong_output
           line 1: expected \"4\", got \"5\"
         sample c0.py: FAIL  timeout
         sample c1.py: FAIL  timeout
         ... and 3 more samples that did not pass

summary
";
        assert_eq!(text, expected, "\n{text}");
    }

    #[test]
    fn a_cut_stderr_tail_starts_at_a_line() {
        let cut = format!(
            "{}\nTraceback (most recent call last):\nValueError: x\n",
            "y".repeat(400)
        );
        let tail = crate::report::result::tail(&cut, crate::report::result::STDERR_TAIL_CHARS);
        let crash = TaskResult {
            stderr_tail: tail,
            exit_code: Some(1),
            ..fail("crash", "exit_code")
        };
        let text = to_text(&[crash], "s", false);
        assert!(
            text.contains("exit_code 1\n         ...\n         Traceback (most recent call last):\n         ValueError: x\n"),
            "{text}"
        );
        assert!(!text.contains("yy"), "{text}");
        // An uncut tail is shown whole.
        let short = TaskResult {
            stderr_tail: "partial line\nValueError: x\n".into(),
            ..fail("short", "exit_code")
        };
        assert!(to_text(&[short], "s", false).contains("  partial line\n"));
    }

    #[test]
    fn candidate_output_cannot_drive_the_terminal() {
        let evil = TaskResult {
            stderr_tail: "\x1b[2J\x1b]0;owned\x07\rgone\n".into(),
            ..fail("evil", "exit_code")
        };
        let text = to_text(&[evil], "s", false);
        assert!(!text.contains('\x1b') && !text.contains('\r') && !text.contains('\x07'));
        assert!(text.contains("\\u{1b}[2J"), "{text}");
    }

    #[test]
    fn colour_only_when_asked_or_at_a_terminal_without_no_color() {
        let text = to_text(&[pass("a"), fail("b", "timeout")], "s", true);
        assert!(text.contains("\x1b[1;32mPASS   \x1b[0m"), "{text:?}");
        assert!(text.contains("\x1b[1;31mFAIL   \x1b[0m"), "{text:?}");
        assert!(!to_text(&[pass("a")], "s", false).contains('\x1b'));
        let no = Some(OsStr::new("1"));
        let empty = Some(OsStr::new(""));
        assert!(color_for(ColorChoice::Auto, true, None));
        assert!(color_for(ColorChoice::Auto, true, empty));
        assert!(!color_for(ColorChoice::Auto, true, no));
        assert!(!color_for(ColorChoice::Auto, false, None));
        assert!(color_for(ColorChoice::Always, false, no));
        assert!(!color_for(ColorChoice::Never, true, None));
    }

    #[test]
    fn json_unless_a_terminal_or_asked() {
        assert_eq!(format_for(None, false), ReportFormat::Json);
        assert_eq!(format_for(None, true), ReportFormat::Text);
        assert_eq!(
            format_for(Some(ReportFormat::Json), true),
            ReportFormat::Json
        );
        assert_eq!(
            format_for(Some(ReportFormat::Text), false),
            ReportFormat::Text
        );
    }
}
