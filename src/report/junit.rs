//! The JUnit XML report (`--junit`): one testcase per task.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::result::{Status, TaskResult};
use crate::error::{Error, Result};
use crate::{escape, files};

/// JUnit XML: one testcase per task; `fail` and `missing` are failures,
/// `error` is an error.
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
                    Some(d) => format!("{reason}: {}", xml_text(d)),
                    None => reason,
                });
                if !r.stderr_tail.is_empty() {
                    status.set_description(xml_text(&r.stderr_tail));
                }
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

    #[test]
    fn junit_text_keeps_only_characters_xml_allows() {
        assert_eq!(xml_text("a\tb\r\nc é 😀"), "a\tb\r\nc é 😀");
        assert_eq!(
            xml_text("a\u{ffff}b\u{fffe}c\u{1}d\u{fffd}"),
            "a\\u{ffff}b\\u{fffe}c\\u{1}d\u{fffd}"
        );
    }

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
