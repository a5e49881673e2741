//! What a failed function test says, as pytest says it: the call, the
//! value it returned and the value expected (`` `add(2, 3)` returned `6`,
//! expected `5` ``), or the exception it raised; a crash named by its
//! exception (`SyntaxError: expected ':'`) rather than by its exit code;
//! tracebacks without sbx's own harness frames; saved output without the
//! harness's result frame. Every message is built here, on the host, after
//! the candidate's process has ended: the expected values are never in
//! the candidate's reach. Values are shown as Python's `repr` shows them,
//! each cut at [`VALUE_MAX`] characters and the whole at [`MESSAGE_MAX`].

use serde_json::Value as Json;

use super::pyvalue::Value;

use crate::report::{Status, TaskResult};

/// Longest value shown, in characters.
pub(crate) const VALUE_MAX: usize = 80;
/// Longest message, in characters.
pub(crate) const MESSAGE_MAX: usize = 400;

/// A check whose value was wrong: `` check 2: `add(-1, 1)` returned `1`,
/// expected `0` ``. `actual` is the value the harness sent and `check` the
/// check as the prepare step wrote it (both in the codec's JSON form).
pub(crate) fn wrong_answer(
    n: usize,
    call: Option<&Json>,
    actual: &Value,
    check: Option<&Json>,
) -> String {
    let returned = shown(&value_repr(actual));
    let field = |key: &str| check.and_then(|c| c.get(key));
    let expected = || {
        field("expected")
            .map(|e| shown(&repr(e)))
            .unwrap_or_else(|| "?".into())
    };
    let number = |key: &str| field(key).map(repr).unwrap_or_else(|| "?".into());
    let op = field("op").and_then(Json::as_str).unwrap_or("");
    let wanted = match op {
        "eq" => format!("expected {}", expected()),
        "ne" => format!("expected anything but {}", expected()),
        "tol" => {
            let strict = field("strict").and_then(Json::as_bool).unwrap_or(true);
            format!(
                "expected {} within {} {}",
                expected(),
                if strict { "<" } else { "<=" },
                number("tol")
            )
        }
        "isclose" => format!(
            "expected close to {} (rel_tol {}, abs_tol {})",
            expected(),
            number("rel_tol"),
            number("abs_tol")
        ),
        "truthy" => "expected a true value".into(),
        "falsy" => "expected a false value".into(),
        "is" | "is_not" => {
            let target = field("value").and_then(Json::as_str).unwrap_or("?");
            let target = crate::escape::line(target);
            if op == "is" {
                format!("expected `{target}`")
            } else {
                format!("expected anything but `{target}`")
            }
        }
        _ => "the check failed".into(),
    };
    bounded(format!(
        "check {n}: {} returned {returned}, {wanted}",
        called(call)
    ))
}

/// A check whose call raised: `` check 1: `add(2, 3)` raised ValueError: bad ``.
pub(crate) fn raised(n: usize, call: Option<&Json>, what: &str) -> String {
    bounded(format!("check {n}: {} raised {what}", called(call)))
}

/// The call as Python source, in backquotes: `` `add(2, 'a', key=1)` ``
/// (the harness's form: `[name, {"l": args}, {"d": [[key, value]...]}]`).
fn called(call: Option<&Json>) -> String {
    let Some(Json::Array(parts)) = call else {
        return "the call".into();
    };
    let name = parts.first().and_then(Json::as_str).unwrap_or("?");
    let mut words: Vec<String> = Vec::new();
    if let Some(Json::Array(args)) = parts.get(1).and_then(|a| a.get("l")) {
        words.extend(args.iter().map(|a| cut(&repr(a))));
    }
    if let Some(Json::Array(pairs)) = parts.get(2).and_then(|d| d.get("d")) {
        for pair in pairs {
            if let Some([key, value]) = pair.as_array().map(Vec::as_slice) {
                let key = match key.get("u").and_then(Json::as_str).and_then(unhex) {
                    Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    None => repr(key),
                };
                words.push(format!("{key}={}", cut(&repr(value))));
            }
        }
    }
    format!("`{}({})`", crate::escape::line(name), words.join(", "))
}

/// A value in backquotes, cut at [`VALUE_MAX`].
fn shown(text: &str) -> String {
    format!("`{}`", cut(text))
}

fn cut(text: &str) -> String {
    let count = text.chars().count();
    if count <= VALUE_MAX {
        return crate::escape::line(text);
    }
    let head: String = text.chars().take(VALUE_MAX).collect();
    format!("{}... ({count} characters)", crate::escape::line(&head))
}

fn bounded(message: String) -> String {
    let count = message.chars().count();
    if count <= MESSAGE_MAX {
        return message;
    }
    let head: String = message.chars().take(MESSAGE_MAX).collect();
    format!("{head}... ({count} characters in all)")
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Python's `repr` of a value in the codec's JSON form (`codec.py`): ints
/// in decimal, floats as Python wrote them, str and bytes quoted as Python
/// quotes them, containers in the order held. Anything unreadable is `?`.
pub(crate) fn repr(json: &Json) -> String {
    let mut out = String::new();
    write_repr(json, &mut out, 0);
    out
}

/// Deeper than this, or longer than a few values, `...`.
const DEPTH_MAX: usize = 20;

fn write_repr(json: &Json, out: &mut String, depth: usize) {
    if depth > DEPTH_MAX || out.len() > 4 * VALUE_MAX {
        out.push_str("...");
        return;
    }
    let items = |out: &mut String, items: Option<&Vec<Json>>| {
        for (i, item) in items.into_iter().flatten().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_repr(item, out, depth + 1);
        }
    };
    let (tag, inner) = match json {
        Json::Null => return out.push_str("None"),
        Json::Bool(true) => return out.push_str("True"),
        Json::Bool(false) => return out.push_str("False"),
        Json::Object(map) if map.len() == 1 => map.iter().next().expect("one entry"),
        _ => return out.push('?'),
    };
    let text = inner.as_str().unwrap_or("");
    let list = inner.as_array();
    match tag.as_str() {
        "i" => out.push_str(&decimal(text).unwrap_or_else(|| "?".into())),
        "f" => out.push_str(&crate::escape::line(text)),
        "u" => match unhex(text) {
            Some(bytes) => out.push_str(&str_repr(&String::from_utf8_lossy(&bytes))),
            None => out.push('?'),
        },
        "y" => match unhex(text) {
            Some(bytes) => out.push_str(&bytes_repr(&bytes)),
            None => out.push('?'),
        },
        "l" => {
            out.push('[');
            items(out, list);
            out.push(']');
        }
        "t" => {
            out.push('(');
            items(out, list);
            if list.is_some_and(|l| l.len() == 1) {
                out.push(',');
            }
            out.push(')');
        }
        "s" if list.is_none_or(Vec::is_empty) => out.push_str("set()"),
        "s" => {
            out.push('{');
            items(out, list);
            out.push('}');
        }
        "z" => {
            out.push_str("frozenset(");
            if list.is_some_and(|l| !l.is_empty()) {
                out.push('{');
                items(out, list);
                out.push('}');
            }
            out.push(')');
        }
        "d" => {
            out.push('{');
            for (i, pair) in list.into_iter().flatten().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match pair.as_array().map(Vec::as_slice) {
                    Some([key, value]) => {
                        write_repr(key, out, depth + 1);
                        out.push_str(": ");
                        write_repr(value, out, depth + 1);
                    }
                    _ => out.push('?'),
                }
            }
            out.push('}');
        }
        _ => out.push('?'),
    }
}

/// Python's `repr` of a value the candidate returned, as the sealed reader
/// holds it; bounded as [`repr`] is.
pub(crate) fn value_repr(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out, 0);
    out
}

fn write_value(value: &Value, out: &mut String, depth: usize) {
    if depth > DEPTH_MAX || out.len() > 4 * VALUE_MAX {
        out.push_str("...");
        return;
    }
    let items = |out: &mut String, items: &[Value]| {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            if out.len() > 4 * VALUE_MAX {
                out.push_str("...");
                break;
            }
            write_value(item, out, depth + 1);
        }
    };
    match value {
        Value::None => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Int(i) => {
            out.push_str(&decimal(&i.describe()).unwrap_or_else(|| "<a large int>".into()))
        }
        Value::Float(f) => out.push_str(&float_repr(*f)),
        Value::Str(bytes) => out.push_str(&str_repr(&String::from_utf8_lossy(bytes))),
        Value::Bytes(bytes) => out.push_str(&bytes_repr(bytes)),
        Value::List(list) => {
            out.push('[');
            items(out, list);
            out.push(']');
        }
        Value::Tuple(list) => {
            out.push('(');
            items(out, list);
            if list.len() == 1 {
                out.push(',');
            }
            out.push(')');
        }
        Value::Set(list) if list.is_empty() => out.push_str("set()"),
        Value::Set(list) => {
            out.push('{');
            items(out, list);
            out.push('}');
        }
        Value::FrozenSet(list) => {
            out.push_str("frozenset(");
            if !list.is_empty() {
                out.push('{');
                items(out, list);
                out.push('}');
            }
            out.push(')');
        }
        Value::Dict(pairs) => {
            out.push('{');
            for (i, (key, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if out.len() > 4 * VALUE_MAX {
                    out.push_str("...");
                    break;
                }
                write_value(key, out, depth + 1);
                out.push_str(": ");
                write_value(value, out, depth + 1);
            }
            out.push('}');
        }
    }
}

/// Python's `repr` of a float: the shortest digits that read back, in
/// positional form for exponents from -4 to 15 and `1e+16` form outside.
fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let text = format!("{f}");
        if text.contains('.') {
            text
        } else {
            format!("{text}.0")
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// An int of Python's `format(v, 'x')` (`-1f`) in decimal, any size.
fn decimal(hex: &str) -> Option<String> {
    let (sign, digits) = match hex.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", hex),
    };
    if digits.is_empty() || digits.len() > 4096 {
        return None;
    }
    // Base 10^9 limbs, least significant first.
    let mut limbs: Vec<u64> = vec![0];
    for c in digits.chars() {
        let mut carry = u64::from(c.to_digit(16)?);
        for limb in &mut limbs {
            let v = *limb * 16 + carry;
            *limb = v % 1_000_000_000;
            carry = v / 1_000_000_000;
        }
        while carry > 0 {
            limbs.push(carry % 1_000_000_000);
            carry /= 1_000_000_000;
        }
    }
    let mut out = String::from(sign);
    let mut rev = limbs.iter().rev();
    out.push_str(&rev.next().copied().unwrap_or(0).to_string());
    for limb in rev {
        out.push_str(&format!("{limb:09}"));
    }
    if out == "-0" {
        out = "0".into();
    }
    Some(out)
}

fn bytes_repr(bytes: &[u8]) -> String {
    let mut out = String::from("b'");
    for &b in bytes {
        match b {
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
}

/// Python's `repr` of a `str`: single quotes unless the text holds one
/// and no double quote.
fn str_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A frame of sbx's own harness in a Python traceback: code run as
/// `python3 -c` is `File "<string>"`; the candidate's own code has its
/// path (`/work/task`), the test's `<test imports>`.
fn is_harness_frame(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("File \"<string>\", line ")
}

/// `stderr` without the harness's traceback frames.
pub(crate) fn without_harness_frames(stderr: &str) -> String {
    if !stderr.contains("File \"<string>\"") {
        return stderr.to_string();
    }
    stderr
        .split_inclusive('\n')
        .filter(|line| !is_harness_frame(line))
        .collect()
}

/// The exception a Python traceback ends with (`SyntaxError: expected
/// ':'`, `ValueError: bad`, `KeyboardInterrupt`), or `None` when the
/// stderr does not end with a traceback.
pub(crate) fn exception_of(stderr: &str) -> Option<String> {
    if !stderr.contains("Traceback (most recent call last):") && !stderr.contains("  File \"") {
        return None;
    }
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty())?;
    let name = last.split(':').next()?;
    let plain = !name.is_empty()
        && !name.starts_with(' ')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let known = [
        "Error",
        "Exception",
        "Interrupt",
        "Exit",
        "Iteration",
        "Warning",
    ]
    .iter()
    .any(|end| name.ends_with(end));
    (plain && known).then(|| bounded(crate::escape::line(last.trim_end())))
}

/// A function test's entry that failed on its exit code, made to say what
/// it raised: its `message` becomes the exception its traceback ends with
/// (the reason stays `exit_code`), and its stderr tail loses the harness's
/// frames. Anything else is left as it is.
pub(crate) fn name_the_exception(result: &mut TaskResult) {
    if result.judged.is_none() || result.status != Status::Fail {
        return;
    }
    result.stderr_tail = without_harness_frames(&result.stderr_tail);
    if result.reason.as_deref() == Some("exit_code") && result.message.is_none() {
        result.message = exception_of(&result.stderr_tail);
    }
}

/// A function test's saved stdout without the harness's result frame (the
/// line `sbx-done-<token> ...`, which is sbx's, not the candidate's).
pub(crate) fn without_result_frame(stdout: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let is_frame = |line: &[u8]| {
        let Some(rest) = line.strip_prefix(b"sbx-done-") else {
            return false;
        };
        rest.len() >= 32
            && rest[..32].iter().all(u8::is_ascii_hexdigit)
            && matches!(rest.get(32), None | Some(b' ' | b'\n'))
    };
    if !stdout.windows(9).any(|w| w == b"sbx-done-") {
        return stdout.into();
    }
    let mut out = Vec::with_capacity(stdout.len());
    for line in stdout.split_inclusive(|&b| b == b'\n') {
        if is_frame(line) {
            // The harness writes `\n` before its frame, so that the frame
            // starts a line: that newline is the harness's too.
            if out.last() == Some(&b'\n') {
                out.pop();
            }
        } else {
            out.extend_from_slice(line);
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::sealed::pyint::Int;
    use serde_json::json;

    #[test]
    fn python_reprs_of_returned_values() {
        let v = Value::List(vec![
            Value::Int(Int::from_i64(-31)),
            Value::Float(2.0),
            Value::Float(1e16),
            Value::Float(1.5e-5),
            Value::Float(0.0001),
            Value::Float(123456789012345.6),
            Value::Float(f64::NEG_INFINITY),
            Value::Str(b"it's ".to_vec()),
            Value::Tuple(vec![Value::None]),
            Value::Set(Vec::new()),
            Value::Bytes(b"a\0".to_vec()),
            Value::Dict(vec![(Value::Bool(true), Value::FrozenSet(Vec::new()))]),
        ]);
        // As python3 prints the same list.
        assert_eq!(
            value_repr(&v),
            "[-31, 2.0, 1e+16, 1.5e-05, 0.0001, 123456789012345.6, -inf, \"it's \", (None,), set(), b'a\\x00', {True: frozenset()}]"
        );
    }

    #[test]
    fn pytest_like_messages() {
        // add(2, 'a', key=1): 'a' is "61" in hex.
        let call = json!(["add", {"l": [{"i": "2"}, {"u": "61"}]}, {"d": [[{"u": "6b6579"}, {"i": "1"}]]}]);
        let msg = wrong_answer(
            2,
            Some(&call),
            &Value::Int(Int::from_i64(7)),
            Some(&json!({"op": "eq", "expected": {"i": "8"}})),
        );
        assert_eq!(
            msg,
            "check 2: `add(2, 'a', key=1)` returned `7`, expected `8`"
        );
        assert_eq!(
            raised(1, None, "ValueError: bad"),
            "check 1: the call raised ValueError: bad"
        );
        let long = Value::Str(b"x".repeat(1000));
        let msg = wrong_answer(1, None, &long, Some(&json!({"op": "truthy"})));
        assert!(msg.chars().count() < 200, "{msg}");
        assert!(msg.contains("... (1002 characters)"), "{msg}");
        let msg = wrong_answer(
            1,
            None,
            &Value::None,
            Some(&json!({"op": "is_not", "value": "None"})),
        );
        assert!(
            msg.ends_with("returned `None`, expected anything but `None`"),
            "{msg}"
        );
    }

    #[test]
    fn python_reprs() {
        let v = json!({"l": [
            {"i": "-1f"}, {"f": "2.0"}, {"u": "6974277320"}, {"t": [null]}, {"s": []},
            {"y": "6100"}, true, {"d": [[{"i": "1"}, {"z": []}]]},
            {"i": "56bc75e2d63100000"}
        ]});
        assert_eq!(
            repr(&v),
            "[-31, 2.0, \"it's \", (None,), set(), b'a\\x00', True, {1: frozenset()}, 100000000000000000000]"
        );
    }

    #[test]
    fn exceptions_named_and_harness_frames_dropped() {
        let tb = "Traceback (most recent call last):\n  File \"<string>\", line 2, in <module>\n  File \"<string>\", line 173, in _sbx_sealed\n  File \"/work/task\", line 1\n    def add(a, b)\n                 ^\nSyntaxError: expected ':'\n";
        let clean = without_harness_frames(tb);
        assert_eq!(
            clean,
            "Traceback (most recent call last):\n  File \"/work/task\", line 1\n    def add(a, b)\n                 ^\nSyntaxError: expected ':'\n"
        );
        assert_eq!(
            exception_of(&clean).as_deref(),
            Some("SyntaxError: expected ':'")
        );
        assert_eq!(exception_of("just a line\n"), None);
        assert_eq!(
            exception_of("Traceback (most recent call last):\n  File \"x\"\njson.decoder.JSONDecodeError: Expecting value\n")
                .as_deref(),
            Some("json.decoder.JSONDecodeError: Expecting value")
        );
    }

    #[test]
    fn the_result_frame_is_not_saved() {
        let token = format!("sbx-done-{}", "ab".repeat(16));
        let stdout = format!("hello\n\n{token} [{{\"ok\": 1}}]\n");
        assert_eq!(&*without_result_frame(stdout.as_bytes()), b"hello\n");
        let evidence = format!("hi\n{token}\n");
        assert_eq!(&*without_result_frame(evidence.as_bytes()), b"hi");
        let silent = format!("\n{token} []\n");
        assert_eq!(&*without_result_frame(silent.as_bytes()), b"");
        assert_eq!(&*without_result_frame(b"plain\n"), b"plain\n");
    }
}
