//! The JSON report, for machines: a pretty list, as the original printed
//! it, on stdout (unless it is a terminal) and in the `-o` file.

use std::io::Write;
use std::path::Path;

use super::result::TaskResult;
use crate::console;
use crate::error::{Error, Result};
use crate::{escape, files};

/// The report as the original printed it: a pretty JSON list.
pub(crate) fn to_json(results: &[TaskResult]) -> String {
    serde_json::to_string_pretty(results).expect("results serialize")
}

/// Writes the JSON report to stdout. A closed stdout (`sbx eval | head`)
/// ends quietly.
pub(crate) fn write_json(results: &[TaskResult]) -> Result<()> {
    console::out(&format!("{}\n", to_json(results)), "the report to stdout")
}

/// Writes the JSON report, exactly as stdout would get it, to `path`,
/// whole: a temporary file renamed into place (a symlink at `path` is
/// replaced, never written through).
pub(crate) fn write_json_file(path: &Path, results: &[TaskResult]) -> Result<()> {
    let text = format!("{}\n", to_json(results));
    files::write_whole(path, |w| Ok(w.write_all(text.as_bytes())?)).map_err(|stop| Error::Write {
        what: format!("the JSON report `{}`", escape::path(path)),
        source: files::stop_error(stop),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result::failing;
    use serde_json::json;

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
}
