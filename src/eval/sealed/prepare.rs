//! The sealed prepare step: a test that is a list of checks "call the
//! candidate with these arguments, compare with this value" is judged
//! without its expected values ever entering the candidate's process
//! (`harness`). `prepare.py` runs once per image, before judging, in a
//! container of that image (trusted code only: the tests'). It parses each
//! test with Python's `ast`, recognises the shape, evaluates arguments and
//! expected values, and says for each test its plan (`Sealed`) or why it
//! runs in-process.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;
use sha2::{Digest, Sha256};

use super::harness::{Sealed, ValueCheck, HARNESS};
use super::pyvalue::Value;
use crate::docker::process::{Ended, OutputSink, StdinSource};
use crate::docker::Docker;
use crate::session::Session;

/// Longest compiled harness passed as an argument (Linux takes 128 KiB per
/// argument); a longer one is compiled in each run as before.
const LOADER_MAX_ARGUMENT: usize = 120 << 10;

/// The code of the trusted prepare step, run as `python3 -c PREPARE`.
pub(crate) const PREPARE: &str = concat!(include_str!("codec.py"), include_str!("prepare.py"));

/// One test, as the prepare step reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TestShape<'a> {
    /// `def check(candidate): ...` called with the entry point.
    Check { test: &'a str, entry_point: &'a str },
    /// MBPP: imports, setup code, assertions at top level.
    Asserts {
        imports: &'a [String],
        setup: &'a str,
        asserts: &'a [String],
    },
    /// A tasks file's test without an entry point: top-level assertions.
    Module { test: &'a str },
}

impl TestShape<'_> {
    fn to_json(&self) -> Json {
        match self {
            TestShape::Check { test, entry_point } => {
                serde_json::json!({"kind": "check", "test": test, "entry_point": entry_point})
            }
            TestShape::Asserts {
                imports,
                setup,
                asserts,
            } => {
                serde_json::json!({"kind": "asserts", "imports": imports, "setup": setup, "asserts": asserts})
            }
            TestShape::Module { test } => serde_json::json!({"kind": "module", "test": test}),
        }
    }
}

/// The stdin of the prepare step for these tests.
pub(crate) fn prepare_input(tests: &[TestShape<'_>]) -> Vec<u8> {
    Json::Array(tests.iter().map(TestShape::to_json).collect())
        .to_string()
        .into_bytes()
}

/// Longest time the prepare step of one image may take.
pub(crate) const PREPARE_TIMEOUT: Duration = Duration::from_secs(120);

/// Most output the prepare step may write.
const PREPARE_MAX_OUTPUT: usize = 256 << 20;

/// Runs the prepare step for `tests` in one container of `image` on the
/// engine `docker` reaches, with `python` (the interpreter's words). An
/// `Err` says why no test of the image can be sealed.
pub(crate) fn run_prepare(
    session: &Session,
    docker: &Docker,
    image: &str,
    python: &[String],
    tests: &[TestShape<'_>],
) -> Result<Vec<Prepared>, String> {
    let mut words = python.to_vec();
    words.extend(["-c".to_string(), PREPARE.to_string(), HARNESS.to_string()]);
    let container = session.trusted_args(image, &words);
    let finished = session
        .execute(
            docker,
            container,
            StdinSource::Bytes(Arc::from(prepare_input(tests))),
            OutputSink::Capture {
                max: PREPARE_MAX_OUTPUT,
            },
            PREPARE_TIMEOUT,
        )
        .map_err(|e| e.to_string())?;
    match finished.ended {
        Ended::Exited(status) if status.success() => {}
        other => {
            let stderr = String::from_utf8_lossy(&finished.stderr.bytes);
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            return Err(format!("the prepare step ended with {other:?}: {last}"));
        }
    }
    read_prepared(&finished.stdout.bytes, tests.len())
}

/// Whether a test is sealed, and if not, why.
#[derive(Debug, Clone)]
pub(crate) enum Prepared {
    Sealed(Arc<Sealed>),
    /// Why (read by the tests; the result says only `in_process`).
    InProcess(#[allow(dead_code)] String),
}

/// Reads the prepare step's stdout: one answer per test, in order.
pub(crate) fn read_prepared(stdout: &[u8], count: usize) -> Result<Vec<Prepared>, String> {
    let json: Json = serde_json::from_slice(stdout)
        .map_err(|e| format!("the prepare step's output is not JSON: {e}"))?;
    let Some(Json::Array(items)) = json.get("answers") else {
        return Err("the prepare step's output holds no list of answers".into());
    };
    if items.len() != count {
        return Err(format!(
            "the prepare step answered for {} tests of {count}",
            items.len()
        ));
    }
    let harness: Option<Arc<str>> = match json.get("harness") {
        Some(Json::String(hex))
            if !hex.is_empty()
                && hex.len() % 2 == 0
                && hex.len() <= LOADER_MAX_ARGUMENT
                && hex.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            Some(Arc::from(hex.as_str()))
        }
        _ => None,
    };
    items
        .iter()
        .map(|item| read_one(item, harness.as_ref()))
        .collect()
}

fn read_one(item: &Json, harness: Option<&Arc<str>>) -> Result<Prepared, String> {
    if let Some(why) = item.get("in_process").and_then(Json::as_str) {
        return Ok(Prepared::InProcess(why.to_string()));
    }
    let sealed = item.get("sealed").ok_or("an answer without a plan")?;
    let input = sealed.get("input").ok_or("a plan without input")?;
    let calls = input
        .get("calls")
        .and_then(Json::as_array)
        .ok_or("a plan without calls")?;
    let checks: Vec<ValueCheck> = sealed
        .get("checks")
        .and_then(Json::as_array)
        .ok_or("a plan without checks")?
        .iter()
        .map(read_check)
        .collect::<Result<_, _>>()?;
    if checks.len() != calls.len() || checks.is_empty() {
        return Err("a plan whose calls and checks differ".into());
    }
    let input = plan_line(input);
    let mut hasher = Sha256::new();
    hasher.update(HARNESS.as_bytes());
    hasher.update(input.as_bytes());
    hasher.update(sealed["checks"].to_string().as_bytes());
    let mut digest = String::new();
    for b in hasher.finalize() {
        let _ = write!(digest, "{b:02x}");
    }
    let said = calls
        .iter()
        .cloned()
        .zip(sealed["checks"].as_array().into_iter().flatten().cloned())
        .collect();
    Ok(Prepared::Sealed(Arc::new(Sealed {
        input,
        checks,
        digest,
        harness: harness.cloned(),
        said,
    })))
}

/// Deepest nesting written as a Python literal: Python's parser refuses
/// about 200 nested brackets; deeper plans go as JSON.
const LITERAL_MAX_DEPTH: usize = 96;

/// The plan as the harness reads it: `P` and a Python literal, which the
/// harness reads with `eval` and no builtins (it is sbx's own text, staged
/// read-only, read before any candidate code runs), or `J` and JSON where
/// a literal would not say the same (floats, deep nesting). Importing
/// `json` is about as much CPU as the rest of the harness's start together.
pub(crate) fn plan_line(input: &Json) -> String {
    let mut literal = String::from("P");
    if python_literal(input, 0, &mut literal) {
        literal
    } else {
        format!("J{input}")
    }
}

/// Appends `json` as a Python literal of the same value (`None`, `True`,
/// `False`, ints, ASCII-only strings, lists and dicts); false where it
/// cannot (a float, nesting deeper than [`LITERAL_MAX_DEPTH`]).
fn python_literal(json: &Json, depth: usize, out: &mut String) -> bool {
    if depth > LITERAL_MAX_DEPTH {
        return false;
    }
    match json {
        Json::Null => out.push_str("None"),
        Json::Bool(true) => out.push_str("True"),
        Json::Bool(false) => out.push_str("False"),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => {
                let _ = write!(out, "{i}");
            }
            (None, Some(u)) => {
                let _ = write!(out, "{u}");
            }
            (None, None) => return false,
        },
        Json::String(s) => {
            out.push('\'');
            for c in s.chars() {
                match c {
                    ' '..='~' if c != '\\' && c != '\'' => out.push(c),
                    c if (c as u32) < 0x100 => {
                        let _ = write!(out, "\\x{:02x}", c as u32);
                    }
                    c if (c as u32) < 0x10000 => {
                        let _ = write!(out, "\\u{:04x}", c as u32);
                    }
                    c => {
                        let _ = write!(out, "\\U{:08x}", c as u32);
                    }
                }
            }
            out.push('\'');
        }
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !python_literal(item, depth + 1, out) {
                    return false;
                }
            }
            out.push(']');
        }
        Json::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                python_literal(&Json::String(key.clone()), depth + 1, out);
                out.push(':');
                if !python_literal(item, depth + 1, out) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    true
}

fn read_check(json: &Json) -> Result<ValueCheck, String> {
    let value = |key: &str| {
        json.get(key)
            .ok_or_else(|| format!("a check without `{key}`"))
            .and_then(Value::from_json)
    };
    Ok(match json.get("op").and_then(Json::as_str).unwrap_or("") {
        "eq" => ValueCheck::Eq(value("expected")?),
        "ne" => ValueCheck::Ne(value("expected")?),
        "tol" => ValueCheck::Within {
            expected: value("expected")?,
            tol: value("tol")?,
            strict: json.get("strict").and_then(Json::as_bool).unwrap_or(true),
        },
        "isclose" => ValueCheck::IsClose {
            expected: value("expected")?,
            rel_tol: value("rel_tol")?,
            abs_tol: value("abs_tol")?,
        },
        "truthy" => ValueCheck::Truthy,
        "falsy" => ValueCheck::Falsy,
        op @ ("is" | "is_not") => {
            let target = match json.get("value").and_then(Json::as_str) {
                Some("True") => Value::Bool(true),
                Some("False") => Value::Bool(false),
                Some("None") => Value::None,
                _ => return Err("an `is` check of something else".into()),
            };
            ValueCheck::Is(target, op == "is")
        }
        other => return Err(format!("an unknown check `{other}`")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::sealed::harness::{harness_args, LOADER};

    #[test]
    fn a_plan_is_a_python_literal_of_the_same_value_or_json() {
        let input = serde_json::json!({
            "prelude": "import math\nx = '\\' + \"\u{e9}\u{1f600}\u{7f}\"",
            "calls": [["f", {"l": [{"i": "-1f"}, null, true, false]}, {"d": []}]],
            "n": [0, -3, 18446744073709551615u64]
        });
        let line = plan_line(&input);
        assert!(line.starts_with('P'), "{line}");
        assert!(line.is_ascii());
        // Python itself reads both forms back as the same value.
        let check = "import json, sys\n\
            line, want = sys.argv[1], json.loads(sys.argv[2])\n\
            got = eval(line[1:], {'__builtins__': {}}) if line[0] == 'P' else json.loads(line[1:])\n\
            sys.exit(0 if got == want else 1)";
        let mut deep = serde_json::json!([]);
        for _ in 0..150 {
            deep = serde_json::json!([deep]);
        }
        let float = serde_json::json!({"x": 0.5});
        for value in [&input, &deep, &float] {
            let line = plan_line(value);
            let status = std::process::Command::new("python3")
                .args(["-c", check, &line, &value.to_string()])
                .status()
                .expect("python3 on the host, to read the plan back");
            assert!(status.success(), "{line}");
        }
        assert!(plan_line(&deep).starts_with('J'));
        assert!(plan_line(&float).starts_with('J'));
    }

    #[test]
    fn prepared_answers_are_read_in_order() {
        let out = br#"{"answers": [{"in_process": "For in check"},
            {"sealed": {"input": {"prelude": "", "postlude": "", "calls": [["f", {"l": []}, {"d": []}]]},
                        "checks": [{"op": "tol", "expected": {"f": "0.5"}, "tol": {"f": "1e-06"}, "strict": true}]}}],
            "harness": "e3"}"#;
        let prepared = read_prepared(out, 2).unwrap();
        assert!(matches!(&prepared[0], Prepared::InProcess(why) if why == "For in check"));
        let Prepared::Sealed(plan) = &prepared[1] else {
            panic!()
        };
        assert_eq!(plan.harness.as_deref(), Some("e3"));
        assert_eq!(
            harness_args("tok", 9, plan, false),
            vec!["-c", LOADER, "e3", "tok", "9"]
        );
        // Forked by a zygote, which compiles a `-c` source once: the source.
        assert_eq!(
            harness_args("tok", 9, plan, true),
            vec!["-c", crate::eval::sealed::harness::HARNESS, "tok", "9"]
        );
        assert_eq!(
            plan.checks,
            vec![ValueCheck::Within {
                expected: Value::Float(0.5),
                tol: Value::Float(1e-6),
                strict: true
            }]
        );
        assert!(read_prepared(out, 3).is_err());
        assert!(read_prepared(b"oops", 1).is_err());
    }
}
