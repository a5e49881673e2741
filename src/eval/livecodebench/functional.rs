//! A functional (LeetCode) problem: all of its tests run in one process
//! (one `Solution` instance, as LiveCodeBench calls it), through
//! `call.py`. The process gets the arguments only; each value it returns
//! comes back as plain data after the run's token and is compared here,
//! with Python's `==` (`pyvalue`), against the expected value, which never
//! enters the candidate's process.

use serde_json::Value as Json;

use crate::eval::sealed::check_message::value_repr;
use crate::eval::sealed::pyvalue::{Int, ReadError, Reader, Value};

/// How a functional sample failed, written into the result's `diff` (and
/// read back from it for LiveCodeBench's per-test list, `results`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Test `k` (1-based) failed with LiveCodeBench's code (-2, -3, -4).
    Test { k: usize, code: i8, message: String },
    /// Before any test: the program, `Solution()` or the method failed
    /// (LiveCodeBench: `[-4]`).
    Setup(String),
}

/// The prefixes of `Failure`'s text, which `parse` reads back.
const TEST: &str = "test ";
const SETUP: &str = "before the tests: ";

impl Failure {
    pub(crate) fn text(&self) -> String {
        match self {
            Failure::Test { k, code, message } => {
                let what = match code {
                    -2 => "Wrong Answer",
                    -3 => "Time Limit Exceeded",
                    _ => "Runtime Error",
                };
                format!("{TEST}{k}: {what}: {message}")
            }
            Failure::Setup(message) => format!("{SETUP}Runtime Error: {message}"),
        }
    }

    /// A `diff` this module wrote, read back.
    pub(crate) fn parse(diff: &str) -> Option<Failure> {
        if let Some(message) = diff.strip_prefix(SETUP) {
            return Some(Failure::Setup(message.to_string()));
        }
        let rest = diff.strip_prefix(TEST)?;
        let (k, rest) = rest.split_once(": ")?;
        let (what, message) = rest.split_once(": ").unwrap_or((rest, ""));
        let code = match what {
            "Wrong Answer" => -2,
            "Time Limit Exceeded" => -3,
            "Runtime Error" => -4,
            _ => return None,
        };
        Some(Failure::Test {
            k: k.parse().ok()?,
            code,
            message: message.to_string(),
        })
    }
}

/// The process's stdin: the token, the function's name, the inputs.
pub(crate) fn stdin(token: &str, func_name: &str, inputs: &[String]) -> Vec<u8> {
    let mut out = format!("{token}\n{func_name}\n").into_bytes();
    out.extend(serde_json::to_vec(inputs).expect("strings serialize"));
    out
}

/// An expected value: LiveCodeBench's `json.loads(output)`.
pub(crate) fn expected(output: &str) -> Result<Value, String> {
    let json: Json = serde_json::from_str(output)
        .map_err(|e| format!("an expected output that is not JSON: {e}"))?;
    Ok(plain(&json))
}

/// JSON as Python's `json` reads it. An integer beyond 64 bits reaches
/// serde_json as a float, and is compared as one.
fn plain(json: &Json) -> Value {
    match json {
        Json::Null => Value::None,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(Int::from_i64(i)),
            (None, Some(u)) => {
                Value::Int(Int::from_hex(format!("{u:x}").as_bytes()).expect("hex digits"))
            }
            (None, None) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::Str(s.as_bytes().to_vec()),
        Json::Array(items) => Value::List(items.iter().map(plain).collect()),
        Json::Object(map) => Value::Dict(
            map.iter()
                .map(|(k, v)| (Value::Str(k.as_bytes().to_vec()), plain(v)))
                .collect(),
        ),
    }
}

/// Judges a run that ended with status 0 from its stdout: `None` when
/// every test's value equals its expected value, in order.
pub(crate) fn judge(stdout: &[u8], token: &str, expected: &[Value]) -> Option<Failure> {
    let prefix = format!("{token} ");
    let mut frames = stdout
        .split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(prefix.as_bytes()));
    let broken = |why: &str| Some(Failure::Setup(format!("sbx: {why}")));
    let Some(frame) = frames.next() else {
        return broken("the program ended before its tests were all run");
    };
    if frames.next().is_some() {
        return broken("more than one result frame");
    }
    let mut reader = Reader::new(frame);
    if !reader.eat(b'[') {
        return broken("a result frame that is not the harness's");
    }
    let malformed = || broken("a result frame that is not the harness's");
    for k in 1..=expected.len() + 1 {
        let more = if k == 1 {
            !reader.eat(b']')
        } else {
            reader.eat(b',')
        };
        if !more {
            return broken(&format!("no result for test {k} of {}", expected.len()));
        }
        if reader.expect(b'{').is_err() {
            return malformed();
        }
        let Ok(key) = reader.string() else {
            return malformed();
        };
        let key = key.to_vec();
        if reader.expect(b':').is_err() {
            return malformed();
        }
        let said = |reader: &mut Reader<'_>| -> Option<String> {
            let bytes = reader.hex().ok()?;
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if text.len() > 400 {
                let mut end = 400;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                text.push('…');
            }
            Some(text)
        };
        let fail = |code: i8, message: String| Some(Failure::Test { k, code, message });
        match key.as_slice() {
            b"ok" => {
                let Some(want) = expected.get(k - 1) else {
                    return broken("more results than tests");
                };
                let got = match reader.value() {
                    Ok(value) => value,
                    Err(ReadError::NotPlain(what)) => return fail(-2, format!("returned {what}")),
                    Err(ReadError::Malformed(_)) => return malformed(),
                };
                if !got.py_eq(want) {
                    return fail(
                        -2,
                        format!(
                            "returned {}, expected {}",
                            short(&value_repr(&got)),
                            short(&value_repr(want))
                        ),
                    );
                }
            }
            b"timeout" => return fail(-3, said(&mut reader).unwrap_or_default()),
            b"raised" => return fail(-4, said(&mut reader).unwrap_or_default()),
            b"refused" => {
                return fail(
                    -2,
                    format!("returned {}", said(&mut reader).unwrap_or_default()),
                )
            }
            b"setup" => return Some(Failure::Setup(said(&mut reader).unwrap_or_default())),
            _ => return malformed(),
        }
        if reader.expect(b'}').is_err() {
            return malformed();
        }
        if k == expected.len() {
            break;
        }
    }
    if !reader.eat(b']') || !reader.at_end() {
        return broken("more results than tests");
    }
    None
}

/// A value's repr, cut as LiveCodeBench's `truncatefn` cuts it.
fn short(repr: &str) -> String {
    super::compare::truncate(repr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(token: &str, body: &str) -> Vec<u8> {
        format!("noise\n{token} {body}\n").into_bytes()
    }

    #[test]
    fn values_are_compared_with_pythons_eq() {
        let want = vec![
            expected("6").unwrap(),
            expected("[1, 2]").unwrap(),
            expected("true").unwrap(),
        ];
        // 6.0 == 6, [1, 2] == [1, 2], 1 == True.
        let ok = r#"[{"ok":{"f":"6.0"}},{"ok":{"l":[{"i":"1"},{"i":"2"}]}},{"ok":{"i":"1"}}]"#;
        assert_eq!(judge(&frame("T", ok), "T", &want), None);
        let wrong = r#"[{"ok":{"i":"6"}},{"ok":{"l":[{"i":"2"}]}}]"#;
        let failure = judge(&frame("T", wrong), "T", &want).unwrap();
        assert_eq!(
            failure,
            Failure::Test {
                k: 2,
                code: -2,
                message: "returned [2], expected [1, 2]".into()
            }
        );
        assert_eq!(Failure::parse(&failure.text()), Some(failure));
    }

    #[test]
    fn timeouts_errors_and_broken_frames() {
        let want = vec![expected("1").unwrap(), expected("2").unwrap()];
        let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
        let timeout = format!(
            r#"[{{"ok":{{"i":"1"}}}},{{"timeout":"{}"}}]"#,
            hex("TimeoutException()")
        );
        let got = judge(&frame("T", &timeout), "T", &want).unwrap();
        assert!(
            matches!(got, Failure::Test { k: 2, code: -3, .. }),
            "{got:?}"
        );
        let raised = format!(
            r#"[{{"raised":"{}"}}]"#,
            hex("ZeroDivisionError('division by zero')")
        );
        let got = judge(&frame("T", &raised), "T", &want).unwrap();
        assert_eq!(
            got.text(),
            "test 1: Runtime Error: ZeroDivisionError('division by zero')"
        );
        let setup = format!(
            r#"[{{"setup":"{}"}}]"#,
            hex("NameError(\"name 'Solution' is not defined\")")
        );
        assert!(matches!(
            judge(&frame("T", &setup), "T", &want),
            Some(Failure::Setup(_))
        ));
        for bad in [
            "",
            "[",
            r#"[{"ok":{"i":"1"}}]"#,
            r#"[{"ok":{"i":"1"}},{"ok":{"i":"2"}},{"ok":{"i":"3"}}]"#,
        ] {
            let got = judge(&frame("T", bad), "T", &want);
            assert!(
                matches!(got, Some(Failure::Setup(ref m)) if m.starts_with("sbx: ")),
                "{bad}: {got:?}"
            );
        }
        assert!(judge(b"no frame\n", "T", &want).is_some());
        let two = [frame("T", "[]"), frame("T", "[]")].concat();
        assert!(judge(&two, "T", &want).is_some());
    }
}
