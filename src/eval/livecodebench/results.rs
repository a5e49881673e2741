//! LiveCodeBench's result files, as its `custom_evaluator` writes them
//! beside the samples file `X.json`: `X_codegeneration_output.json` (each
//! problem with its `code_list`), `X_codegeneration_output_eval.json`
//! (`[metrics, results, metadata]`: pass@k for each k that every problem
//! has samples for, with its per-problem detail; each sample's per-test
//! list, `true` or an error code; each sample's metadata as JSON text) and
//! `X_codegeneration_output_eval_all.json` (each problem with `graded_list`,
//! `pass@1` and `metadata`), which its `compute_scores` reads. Problems are
//! in `question_id` order, as it sorts them (those without samples left
//! out); indices are into that order. Written as Python's `json` writes
//! them (`indent=4`, ASCII only).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::compare::truncate;
use super::functional::Failure;
use crate::error::{Error, Result};
use crate::eval::input::livecodebench::{Files, Kind, Samples, KEPT};
use crate::eval::input::spool;
use crate::report::passk::{numpy_mean, pass_at_k};
use crate::report::{Status, TaskResult};

/// The k of LiveCodeBench's `codegen_metrics`.
const KS: [usize; 13] = [1, 5, 10, 20, 40, 50, 75, 100, 125, 150, 200, 500, 1000];

/// The three files' paths for samples file `X.json` (its last five
/// characters replaced, as LiveCodeBench does); a subset's (`--only`) end
/// `.only.json`, so that a rerun of a few problems never replaces the
/// whole run's files.
pub(crate) fn paths(samples: &Path, subset: bool) -> [PathBuf; 3] {
    let text = samples.as_os_str().to_string_lossy().into_owned();
    let stem = match text.char_indices().rev().nth(4) {
        Some((i, _)) => text[..i].to_string(),
        None => String::new(),
    };
    let only = if subset { ".only" } else { "" };
    ["", "_eval", "_eval_all"]
        .map(|suffix| PathBuf::from(format!("{stem}_codegeneration_output{suffix}{only}.json")))
}

/// One judged sample, as LiveCodeBench grades it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Graded {
    pub passed: bool,
    /// Per test: `true`, or -2 (wrong answer), -3 (time limit), -4
    /// (runtime error), -5 (sbx could not judge it); up to the first
    /// failure (every test with `--no-fail-fast` on a stdin problem).
    pub tests: Vec<Value>,
    pub metadata: Map<String, Value>,
}

/// LiveCodeBench's code for an sbx reason.
pub(crate) fn code_of(reason: &str) -> i64 {
    match reason {
        "wrong_output" => -2,
        "timeout" | "wall_timeout" | "cpu_limit" => -3,
        _ => -4,
    }
}

/// A sample's grade from its entry; `count` tests in the spool file `tests`.
pub(crate) fn grade(result: &TaskResult, kind: &Kind, count: usize, tests: &Path) -> Graded {
    let mut metadata = Map::new();
    if result.status == Status::Pass {
        metadata.insert(
            "execution time".into(),
            json!(result.duration_ms as f64 / 1000.0),
        );
        return Graded {
            passed: true,
            tests: vec![Value::Bool(true); count],
            metadata,
        };
    }
    let reason = result.reason.clone().unwrap_or_default();
    let (list, at, code, message) = failure(result, kind, &reason);
    if code != -5 {
        let test = spool::Reader::open(tests)
            .ok()
            .and_then(|mut r| r.nth(at))
            .and_then(std::result::Result::ok);
        if let Some((input, output)) = test {
            metadata.insert("inputs".into(), Value::String(truncate(&input)));
            metadata.insert("expected".into(), Value::String(truncate(&output)));
        }
    }
    match code {
        -3 => {
            metadata.insert("error".into(), json!("TimeoutException()"));
        }
        -4 => {
            if let Some(line) = crate::eval::humaneval::results::exception_line(&result.stderr_tail)
            {
                metadata.insert("error".into(), json!(line));
            }
        }
        _ => {}
    }
    metadata.insert("error_code".into(), json!(code));
    metadata.insert("error_message".into(), json!(message));
    metadata.insert("sbx_reason".into(), json!(reason));
    Graded {
        passed: false,
        tests: list,
        metadata,
    }
}

/// A failed sample's per-test list, its failing test (0-based), code and
/// message.
fn failure(result: &TaskResult, kind: &Kind, reason: &str) -> (Vec<Value>, usize, i64, String) {
    if result.status != Status::Fail {
        return (
            vec![json!(-5)],
            0,
            -5,
            format!("sbx could not judge it: {reason}"),
        );
    }
    let words = |code: i64| match code {
        -2 => "Wrong Answer",
        -3 => "Time Limit Exceeded",
        _ => "Runtime Error",
    };
    match kind {
        Kind::Stdin => {
            let reasons = match &result.case_reasons {
                Some(reasons) if !reasons.is_empty() => reasons.clone(),
                _ => vec![reason.to_string()],
            };
            let at = reasons.iter().position(|r| r != "pass").unwrap_or(0);
            let code = code_of(&reasons[at]);
            let list = reasons
                .iter()
                .map(|r| match r.as_str() {
                    "pass" => Value::Bool(true),
                    r => json!(code_of(r)),
                })
                .collect();
            let message = match (code, &result.diff) {
                (-2, Some(diff)) => diff.clone(),
                _ => words(code).to_string(),
            };
            (list, at, code, message)
        }
        Kind::Functional(_) => match result.diff.as_deref().and_then(Failure::parse) {
            Some(Failure::Test { k, code, message }) => {
                let code = i64::from(code);
                let mut list = vec![Value::Bool(true); k - 1];
                // A wrong value is `False` in LiveCodeBench's list (its
                // `==`'s result); its metadata still says -2.
                list.push(if code == -2 {
                    Value::Bool(false)
                } else {
                    json!(code)
                });
                (list, k - 1, code, format!("{}: {message}", words(code)))
            }
            Some(Failure::Setup(message)) => (
                vec![json!(-4)],
                0,
                -4,
                format!("Error during testing: {message}"),
            ),
            None => {
                let code = code_of(reason);
                (vec![json!(code)], 0, code, words(code).to_string())
            }
        },
    }
}

/// Writes the three files from the report's entries (one per problem, in
/// the problems' order).
pub(crate) fn write(files: &Files, entries: &[Option<TaskResult>]) -> Result<()> {
    let mut order: Vec<&Samples> = files
        .samples
        .iter()
        .filter(|s| !s.code_list.is_empty())
        .collect();
    order.sort_by(|a, b| a.question_id.cmp(&b.question_id));
    let mut outputs = Vec::new();
    let mut evals = Vec::new();
    let mut results = Map::new();
    let mut metadata = Vec::new();
    let (mut totals, mut corrects) = (Vec::new(), Vec::new());
    for (index, samples) in order.iter().enumerate() {
        let problem = &files.problems[samples.problem];
        let judged: Vec<Graded> = (0..samples.code_list.len())
            .map(|j| {
                let name = j.to_string();
                let result = entries[samples.problem]
                    .as_ref()
                    .and_then(|e| e.samples.as_ref())
                    .and_then(|s| s.iter().find(|r| r.sample.as_deref() == Some(&name)))
                    .expect("every sample of an unpartitioned run has its entry");
                grade(result, &problem.kind, problem.count, &problem.tests)
            })
            .collect();
        let mut output = Map::new();
        for key in KEPT {
            output.insert(
                key.into(),
                problem.kept.get(key).cloned().unwrap_or(Value::Null),
            );
        }
        let codes = json!(samples.code_list);
        output.insert("output_list".into(), codes.clone());
        output.insert("code_list".into(), codes);
        outputs.push(Value::Object(output.clone()));
        let graded: Vec<bool> = judged.iter().map(|g| g.passed).collect();
        let passed = graded.iter().filter(|&&p| p).count();
        let texts: Vec<Value> = judged
            .iter()
            .map(|g| Value::String(py_json(&Value::Object(g.metadata.clone()), None)))
            .collect();
        output.insert("graded_list".into(), json!(graded));
        output.insert("pass@1".into(), json!(passed as f64 / graded.len() as f64));
        output.insert("metadata".into(), Value::Array(texts.clone()));
        evals.push(Value::Object(output));
        results.insert(
            index.to_string(),
            Value::Array(judged.into_iter().map(|g| Value::Array(g.tests)).collect()),
        );
        metadata.push(Value::Array(texts));
        totals.push(graded.len());
        corrects.push(passed);
    }
    let mut metrics = Map::new();
    let mut detail = Map::new();
    for k in KS.into_iter().filter(|&k| totals.iter().all(|&n| n >= k)) {
        let values: Vec<f64> = totals
            .iter()
            .zip(&corrects)
            .map(|(&n, &c)| pass_at_k(n, c, k).unwrap_or(0.0))
            .collect();
        metrics.insert(format!("pass@{k}"), json!(numpy_mean(&values)));
        let per: Map<String, Value> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), json!(v)))
            .collect();
        detail.insert(format!("pass@{k}"), Value::Object(per));
    }
    metrics.insert("detail".into(), Value::Object(detail));
    let eval = json!([metrics, results, metadata]);
    let [output_path, eval_path, all_path] = paths(&files.samples_path, files.subset);
    if files.subset {
        crate::console::note(&format!(
            "sbx: --only: this subset's LiveCodeBench result files are `{}` and its two `_eval*.only.json` siblings; the whole run's are left as they were",
            crate::escape::path(&output_path)
        ));
    }
    for (path, value) in [
        (output_path, Value::Array(outputs)),
        (eval_path, eval),
        (all_path, Value::Array(evals)),
    ] {
        let text = py_json(&value, Some(4));
        let written = crate::files::write_whole(&path, |out| {
            out.write_all(text.as_bytes())?;
            Ok(())
        });
        match written {
            Ok(()) | Err(crate::files::WriteStop::Interrupted(_)) => {}
            Err(crate::files::WriteStop::Io(e)) => {
                return Err(Error::Write {
                    what: format!(
                        "LiveCodeBench's result file `{}`",
                        crate::escape::path(&path)
                    ),
                    source: e,
                })
            }
        }
    }
    Ok(())
}

/// `value` as Python's `json.dumps` writes it (ASCII only; `indent`
/// spaces a level, or `", "` and `": "` on one line).
pub(crate) fn py_json(value: &Value, indent: Option<usize>) -> String {
    let mut out = String::new();
    write_py(value, indent, 0, &mut out);
    out
}

fn write_py(value: &Value, indent: Option<usize>, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * depth));
        }
    };
    let separator = if indent.is_some() { "," } else { ", " };
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (None, Some(u), _) => out.push_str(&u.to_string()),
            (None, None, Some(f)) => out.push_str(&py_float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => py_string(s, out),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(separator);
                }
                newline(out, depth + 1);
                write_py(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(separator);
                }
                newline(out, depth + 1);
                py_string(key, out);
                out.push_str(": ");
                write_py(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
    }
}

fn py_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7f => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr` of a float.
fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` gives the shortest digits that read back the same, as
    // Python's repr does; only the layout differs.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exp: i32 = exp.parse().expect("an exponent");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let rest = if digits.len() > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{}{rest}e{esign}{:02}", &digits[..1], exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_python_writes_them() {
        for (x, want) in [
            (0.5, "0.5"),
            (1.0, "1.0"),
            (0.0, "0.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (-2.5e-7, "-2.5e-07"),
            (0.1 + 0.2, "0.30000000000000004"),
            (123.456, "123.456"),
        ] {
            assert_eq!(py_float(x), want, "{x}");
        }
    }

    #[test]
    fn json_reads_as_pythons_json_dumps() {
        let v = json!({"a": [1, 2.0, "é\n"], "b": {}, "c": []});
        assert_eq!(
            py_json(&v, None),
            r#"{"a": [1, 2.0, "\u00e9\n"], "b": {}, "c": []}"#
        );
        assert_eq!(
            py_json(&v, Some(4)),
            "{\n    \"a\": [\n        1,\n        2.0,\n        \"\\u00e9\\n\"\n    ],\n    \"b\": {},\n    \"c\": []\n}"
        );
        assert_eq!(py_json(&json!("😀"), None), r#""\ud83d\ude00""#);
    }

    #[test]
    fn result_paths_are_custom_evaluators() {
        let [a, b, c] = paths(Path::new("out/run.json"), false);
        assert_eq!(a, Path::new("out/run_codegeneration_output.json"));
        assert_eq!(b, Path::new("out/run_codegeneration_output_eval.json"));
        assert_eq!(c, Path::new("out/run_codegeneration_output_eval_all.json"));
        let [a, _, c] = paths(Path::new("out/run.json"), true);
        assert_eq!(a, Path::new("out/run_codegeneration_output.only.json"));
        assert_eq!(
            c,
            Path::new("out/run_codegeneration_output_eval_all.only.json")
        );
    }

    #[test]
    fn grades_follow_livecodebenchs_codes() {
        let dir = tempfile::tempdir().unwrap();
        let tests = dir.path().join("t");
        spool::write(&tests, [("1\n", "1\n"), ("2\n", "4\n"), ("3\n", "9\n")]).unwrap();
        let fail = |reasons: &[&str], reason: &str| TaskResult {
            reason: Some(reason.into()),
            case_reasons: Some(reasons.iter().map(|r| r.to_string()).collect()),
            diff: Some("Wrong answer at output_line_idx=0: 5 != 4".into()),
            ..TaskResult::bare("p", Status::Fail)
        };
        let g = grade(
            &fail(&["pass", "wrong_output"], "wrong_output"),
            &Kind::Stdin,
            3,
            &tests,
        );
        assert_eq!(g.tests, vec![json!(true), json!(-2)]);
        assert_eq!(g.metadata["error_code"], -2);
        assert_eq!(g.metadata["inputs"], "2\n");
        assert_eq!(g.metadata["expected"], "4\n");
        assert_eq!(
            g.metadata["error_message"],
            "Wrong answer at output_line_idx=0: 5 != 4"
        );
        let g = grade(&fail(&["timeout"], "timeout"), &Kind::Stdin, 3, &tests);
        assert_eq!(g.tests, vec![json!(-3)]);
        let g = grade(
            &fail(&["pass", "exit_code", "pass"], "exit_code"),
            &Kind::Stdin,
            3,
            &tests,
        );
        assert_eq!(
            g.tests,
            vec![json!(true), json!(-4), json!(true)],
            "--no-fail-fast"
        );
        let pass = TaskResult {
            duration_ms: 1500,
            ..TaskResult::bare("p", Status::Pass)
        };
        let g = grade(&pass, &Kind::Stdin, 3, &tests);
        assert_eq!(g.tests, vec![json!(true); 3]);
        assert_eq!(
            py_json(&Value::Object(g.metadata), None),
            r#"{"execution time": 1.5}"#
        );
        let functional = Kind::Functional("f".into());
        let wrong = TaskResult {
            reason: Some("wrong_output".into()),
            diff: Some(
                Failure::Test {
                    k: 3,
                    code: -2,
                    message: "returned 1, expected 9".into(),
                }
                .text(),
            ),
            ..TaskResult::bare("p", Status::Fail)
        };
        let g = grade(&wrong, &functional, 3, &tests);
        assert_eq!(g.tests, vec![json!(true), json!(true), json!(false)]);
        assert_eq!(g.metadata["error_code"], -2);
        assert_eq!(g.metadata["inputs"], "3\n");
        let crashed = TaskResult {
            reason: Some("exit_code".into()),
            ..TaskResult::bare("p", Status::Fail)
        };
        assert_eq!(
            grade(&crashed, &functional, 3, &tests).tests,
            vec![json!(-4)]
        );
        let error = TaskResult::error("p", "no_engine", "down".into());
        assert_eq!(grade(&error, &functional, 3, &tests).tests, vec![json!(-5)]);
    }
}
