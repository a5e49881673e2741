//! The JUnit XML report (`--junit`): one testcase per task.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::result::{Status, TaskResult};
use crate::error::{Error, Result};
use crate::{escape, files};

/// JUnit XML: one testcase per task; `fail` and `missing` are failures,
/// `error` is an error. A failure's or an error's `type` is its reason and
/// its `message` the reason with its detail (one line, for lists); its body
/// ([`body`]) carries what CI viewers show when the case is opened: the
/// diff, the samples that did not pass, the exit code and the stderr tail.
///
/// `missing` is a failure, not a skip: sbx eval's exit code counts it as
/// not passed, and CI viewers show skips as green, so a generation step
/// that produced nothing for a task would pass unseen. (Tasks left out on
/// purpose, with `--only`, are not in the report at all.)
pub(crate) fn to_junit(results: &[TaskResult], elapsed: Duration) -> String {
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
                let reason = xml_text(r.reason.as_deref().unwrap_or_default());
                status.set_type(reason.clone());
                let detail = r.message.as_ref().or(r.diff.as_ref());
                status.set_message(match detail {
                    Some(d) => format!("{reason}: {}", xml_text(first_line(d))),
                    None => reason,
                });
                status.set_description(xml_text(&body(r)));
                status
            }
        };
        let mut case = TestCase::new(xml_text(&r.id), status);
        case.set_classname("sbx")
            .set_time(Duration::from_millis(r.duration_ms));
        suite.add_test_case(case);
    }
    suite.set_time(elapsed);
    let mut report = Report::new("sbx");
    report.add_test_suite(suite);
    report.to_string().expect("a JUnit report serializes")
}

/// The body of a failure or an error: what a CI viewer shows when the case
/// is opened. Each part on lines of its own, in this order, when there is
/// one: the status and reason, the message, the diff (the first differing
/// line), a multi-case task's failing case, a multi-sample task's counts
/// and each sample that did not pass, the exit code, and the stderr tail.
/// XML's own escaping (`<`, `&`) is the writer's; characters XML cannot
/// hold at all are escaped by [`xml_text`].
fn body(r: &TaskResult) -> String {
    let mut out = format!("status: {}", r.status.name());
    if let Some(reason) = &r.reason {
        out += &format!(" ({reason})");
    }
    out.push('\n');
    if r.status == Status::Missing {
        out += "no candidate was found for this task; counted as a failure, as in sbx eval's exit code\n";
    }
    if let Some(message) = &r.message {
        out += &format!("message: {message}\n");
    }
    if let Some(diff) = &r.diff {
        out += &format!("diff: {diff}\n");
    }
    if let (Some(case), Some(total)) = (r.case, r.cases_total) {
        out += &format!(
            "case {case} of {total} failed ({} passed)\n",
            r.cases_passed.unwrap_or(0)
        );
    }
    if let (Some(n), Some(c)) = (r.n, r.c) {
        out += &format!("samples: {c} of {n} judged passed");
        if let Some(errors) = r.errors.filter(|&e| e > 0) {
            out += &format!(", {errors} not judged");
        }
        for (k, p) in &r.pass_at {
            out += &format!(", {k} {p:.3}");
        }
        out.push('\n');
    }
    for sample in r.samples.iter().flatten() {
        if sample.status == Status::Pass {
            continue;
        }
        out += &format!(
            "  sample {}: {}",
            sample.sample.as_deref().unwrap_or("?"),
            sample.status.name()
        );
        if let Some(reason) = &sample.reason {
            out += &format!(", {reason}");
        }
        if let Some(detail) = sample.diff.as_ref().or(sample.message.as_ref()) {
            out += &format!(": {}", first_line(detail));
        }
        out.push('\n');
    }
    if let Some(code) = r.exit_code {
        out += &format!("exit code: {code}\n");
    }
    if !r.stderr_tail.is_empty() {
        out += "stderr (its last part):\n";
        out += &r.stderr_tail;
        if !r.stderr_tail.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The first line of `text` (a `message` attribute is one line).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// `text` with every character that XML 1.0 does not allow (C0 controls
/// but tab, newline and carriage return; U+FFFE and U+FFFF) written as a
/// visible escape such as `\u{ffff}`: a candidate's output can never make
/// the report unparsable. (Rust strings hold no surrogates.)
fn xml_text(text: &str) -> String {
    let allowed = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
            || c >= '\u{10000}'
    };
    if text.chars().all(allowed) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if allowed(c) {
                c.to_string()
            } else {
                c.escape_unicode().to_string()
            }
        })
        .collect()
}

/// Writes the JUnit report to `path` whole: a temporary file renamed into
/// place (a symlink at `path` is replaced, never written through).
pub(crate) fn write_junit(path: &Path, results: &[TaskResult], elapsed: Duration) -> Result<()> {
    let xml = to_junit(results, elapsed);
    files::write_whole(path, |w| Ok(w.write_all(xml.as_bytes())?)).map_err(|stop| Error::Write {
        what: format!("the JUnit report `{}`", escape::path(path)),
        source: files::stop_error(stop),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result::failing;

    #[test]
    fn junit_text_keeps_only_characters_xml_allows() {
        assert_eq!(xml_text("a\tb\r\nc é 😀"), "a\tb\r\nc é 😀");
        assert_eq!(
            xml_text("a\u{ffff}b\u{fffe}c\u{1}d\u{fffd}"),
            "a\\u{ffff}b\\u{fffe}c\\u{1}d\u{fffd}"
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

    #[test]
    fn the_body_carries_the_diff_and_the_stderr_tail_escaped() {
        let mut r = failing("a");
        r.diff = Some("line 1: expected \"<a>\", got \"&b\"".into());
        r.stderr_tail = "Traceback\n  raise E(\"]]> <x/>\")\nE\u{1}\n".into();
        let xml = to_junit(&[r, TaskResult::missing("gone")], Duration::from_secs(1));
        for want in [
            "status: fail (wrong_output)\ndiff: line 1: expected &quot;&lt;a&gt;&quot;, got &quot;&amp;b&quot;\nexit code: 0\nstderr (its last part):\nTraceback\n  raise E(&quot;]]&gt; &lt;x/&gt;&quot;)\nE\\u{1}\n",
            "status: missing (no_candidate)\nno candidate was found for this task",
        ] {
            assert!(xml.contains(want), "missing {want:?} in {xml}");
        }
        assert!(xml.contains("failures=\"2\""), "{xml}");
        assert!(!xml.contains("<skipped"), "{xml}");
    }

    #[test]
    fn the_body_lists_the_samples_that_did_not_pass() {
        let sample = |name: &str, status| TaskResult {
            sample: Some(name.into()),
            ..TaskResult::bare("t", status)
        };
        let mut bad = sample("s2.py", Status::Fail);
        bad.reason = Some("wrong_output".into());
        bad.diff = Some("line 1: expected \"1\", got \"2\"\nmore".into());
        let mut r = failing("t");
        r.n = Some(2);
        r.c = Some(1);
        r.pass_at.insert("pass@1".into(), 0.5);
        r.samples = Some(vec![sample("s1.py", Status::Pass), bad]);
        let text = body(&r);
        assert!(
            text.contains("samples: 1 of 2 judged passed, pass@1 0.500\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  sample s2.py: fail, wrong_output: line 1: expected \"1\", got \"2\"\n"
            ),
            "{text}"
        );
        assert!(!text.contains("s1.py"), "{text}");
    }
}
