//! Plain Python data as the sealed harness (`sealed`) sends it, and
//! Python's own `==`, truthiness and tolerance semantics on it, so that a
//! sealed check is compared outside the candidate's process.
//!
//! Pure: no I/O.

use std::collections::HashMap;

use serde_json::Value as Json;

/// An integer of any size: its sign and its magnitude in lowercase hex
/// without leading zeros (`"0"` for zero, never negative).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Int {
    negative: bool,
    hex: String,
}

impl Int {
    /// From Python's `format(v, 'x')` (`-1f`, `0`).
    pub(crate) fn from_python_hex(text: &str) -> Option<Int> {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let hex = digits.to_ascii_lowercase();
        let hex = hex.trim_start_matches('0');
        let hex = if hex.is_empty() { "0" } else { hex };
        Some(Int {
            negative: negative && hex != "0",
            hex: hex.to_string(),
        })
    }

    pub(crate) fn from_i64(n: i64) -> Int {
        Int {
            negative: n < 0,
            hex: format!("{:x}", n.unsigned_abs()),
        }
    }

    /// The integer a finite, integral float holds exactly.
    fn from_integral(f: f64) -> Option<Int> {
        if !f.is_finite() || f.fract() != 0.0 {
            return None;
        }
        if f.abs() < 9.0e15 {
            return Some(Int::from_i64(f as i64));
        }
        // |f| = mantissa * 2^exp with exp > 0 here.
        let bits = f.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i64 - 1075;
        let mantissa = (bits & ((1 << 52) - 1)) | (1 << 52);
        let shift = u32::try_from(exp).ok()?;
        let head = u128::from(mantissa) << (shift % 4);
        let mut hex = format!("{head:x}");
        hex.extend(std::iter::repeat_n('0', (shift / 4) as usize));
        Some(Int {
            negative: f < 0.0,
            hex,
        })
    }

    fn is_zero(&self) -> bool {
        self.hex == "0"
    }

    /// The nearest float (Python would raise past `f64::MAX`; this is
    /// infinite there).
    fn to_f64(&self) -> f64 {
        let mut f = 0.0f64;
        for digit in self.hex.chars() {
            f = f * 16.0 + f64::from(digit.to_digit(16).unwrap_or(0));
        }
        if self.negative {
            -f
        } else {
            f
        }
    }
}

/// A plain Python value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    None,
    Bool(bool),
    Int(Int),
    Float(f64),
    /// A `str`, as its UTF-8 bytes (lone surrogates passed through).
    Str(Vec<u8>),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    Set(Vec<Value>),
    FrozenSet(Vec<Value>),
}

/// A number of Python's numeric tower that sbx reads: bool, int, float.
enum Number<'a> {
    Int(std::borrow::Cow<'a, Int>),
    Float(f64),
}

impl Value {
    /// Reads the harness's JSON form (see `codec.py`).
    pub(crate) fn from_json(json: &Json) -> Result<Value, String> {
        Value::read(json, 0)
    }

    fn read(json: &Json, depth: usize) -> Result<Value, String> {
        if depth > 200 {
            return Err("nested too deep".into());
        }
        let list = |items: &Json| -> Result<Vec<Value>, String> {
            match items {
                Json::Array(items) => items.iter().map(|i| Value::read(i, depth + 1)).collect(),
                _ => Err("a container that is not a list".into()),
            }
        };
        let hex = |text: &Json| -> Result<Vec<u8>, String> {
            let text = text.as_str().ok_or("hex that is not a string")?;
            if text.len() % 2 != 0 {
                return Err("odd hex".into());
            }
            (0..text.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|_| "bad hex".into()))
                .collect()
        };
        match json {
            Json::Null => Ok(Value::None),
            Json::Bool(b) => Ok(Value::Bool(*b)),
            Json::Object(map) if map.len() == 1 => {
                let (tag, inner) = map.iter().next().expect("one entry");
                match tag.as_str() {
                    "i" => inner
                        .as_str()
                        .and_then(Int::from_python_hex)
                        .map(Value::Int)
                        .ok_or_else(|| "a bad int".into()),
                    "f" => inner
                        .as_str()
                        .and_then(|s| s.parse::<f64>().ok())
                        .map(Value::Float)
                        .ok_or_else(|| "a bad float".into()),
                    "u" => hex(inner).map(Value::Str),
                    "y" => hex(inner).map(Value::Bytes),
                    "l" => list(inner).map(Value::List),
                    "t" => list(inner).map(Value::Tuple),
                    "s" => list(inner).map(Value::Set),
                    "z" => list(inner).map(Value::FrozenSet),
                    "d" => {
                        let Json::Array(pairs) = inner else {
                            return Err("a dict that is not a list".into());
                        };
                        pairs
                            .iter()
                            .map(|pair| match pair {
                                Json::Array(kv) if kv.len() == 2 => Ok((
                                    Value::read(&kv[0], depth + 1)?,
                                    Value::read(&kv[1], depth + 1)?,
                                )),
                                _ => Err("a dict item that is not a pair".into()),
                            })
                            .collect::<Result<_, String>>()
                            .map(Value::Dict)
                    }
                    other => Err(format!("unknown tag `{other}`")),
                }
            }
            _ => Err("not a sealed value".into()),
        }
    }

    fn number(&self) -> Option<Number<'_>> {
        match self {
            Value::Bool(b) => Some(Number::Int(std::borrow::Cow::Owned(Int::from_i64(
                i64::from(*b),
            )))),
            Value::Int(i) => Some(Number::Int(std::borrow::Cow::Borrowed(i))),
            Value::Float(f) => Some(Number::Float(*f)),
            _ => None,
        }
    }

    /// The value as a float, as Python's arithmetic would read it.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self.number()? {
            Number::Int(i) => Some(i.to_f64()),
            Number::Float(f) => Some(f),
        }
    }

    /// Python's `bool(v)`.
    pub(crate) fn truthy(&self) -> bool {
        match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => !i.is_zero(),
            Value::Float(f) => *f != 0.0,
            Value::Str(s) | Value::Bytes(s) => !s.is_empty(),
            Value::List(v) | Value::Tuple(v) | Value::Set(v) | Value::FrozenSet(v) => !v.is_empty(),
            Value::Dict(v) => !v.is_empty(),
        }
    }

    /// Python's `a == b` on plain data (no object is ever the same object
    /// as another here, so a `nan` equals nothing, not even inside a list).
    pub(crate) fn py_eq(&self, other: &Value) -> bool {
        if let (Some(a), Some(b)) = (self.number(), other.number()) {
            return match (a, b) {
                (Number::Int(a), Number::Int(b)) => a == b,
                (Number::Float(a), Number::Float(b)) => a == b,
                (Number::Int(i), Number::Float(f)) | (Number::Float(f), Number::Int(i)) => {
                    Int::from_integral(f).is_some_and(|g| *i == g)
                }
            };
        }
        match (self, other) {
            (Value::None, Value::None) => true,
            (Value::Str(a), Value::Str(b)) | (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::List(a), Value::List(b)) | (Value::Tuple(a), Value::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.py_eq(y))
            }
            (Value::Dict(a), Value::Dict(b)) => dict_eq(a, b),
            (Value::Set(a) | Value::FrozenSet(a), Value::Set(b) | Value::FrozenSet(b)) => {
                set_eq(a, b)
            }
            _ => false,
        }
    }

    /// A key equal for two hashable values exactly when Python's `==`
    /// holds between them (`None` for a value no other equals: a `nan`,
    /// or an unhashable one).
    fn key(&self) -> Option<String> {
        Some(match self {
            Value::None => "n".into(),
            Value::Bool(_) | Value::Int(_) | Value::Float(_) => match self.number()? {
                Number::Int(i) => format!("i{}{}", if i.negative { "-" } else { "" }, i.hex),
                Number::Float(f) => match Int::from_integral(f) {
                    Some(i) => format!("i{}{}", if i.negative { "-" } else { "" }, i.hex),
                    None if f.is_nan() => return None,
                    None => format!("f{:x}", f.to_bits()),
                },
            },
            Value::Str(s) => format!("u{}", hex(s)),
            Value::Bytes(s) => format!("y{}", hex(s)),
            Value::Tuple(items) => {
                let keys: Option<Vec<String>> = items.iter().map(Value::key).collect();
                format!("t[{}]", keys?.join(","))
            }
            Value::FrozenSet(items) => {
                let mut keys: Vec<String> = items.iter().map(Value::key).collect::<Option<_>>()?;
                keys.sort();
                format!("z[{}]", keys.join(","))
            }
            Value::List(_) | Value::Dict(_) | Value::Set(_) => return None,
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Python's dict equality: the same keys (each found by `==`), with equal
/// values, whatever the order.
fn dict_eq(a: &[(Value, Value)], b: &[(Value, Value)]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut index: HashMap<String, &Value> = HashMap::with_capacity(b.len());
    for (k, v) in b {
        match k.key() {
            Some(key) => {
                index.insert(key, v);
            }
            None => return false,
        }
    }
    a.iter().all(|(k, v)| {
        k.key()
            .and_then(|key| index.get(&key))
            .is_some_and(|w| v.py_eq(w))
    })
}

/// Python's set equality (a `set` equals a `frozenset` of the same items).
fn set_eq(a: &[Value], b: &[Value]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let keys: Option<std::collections::HashSet<String>> = b.iter().map(Value::key).collect();
    let Some(keys) = keys else { return false };
    a.iter()
        .all(|v| v.key().is_some_and(|key| keys.contains(&key)))
}

/// `abs(actual - expected) < tol` (or `<=`), as Python computes it on
/// numbers; `None` when Python would raise (not numbers).
pub(crate) fn within(actual: &Value, expected: &Value, tol: f64, strict: bool) -> Option<bool> {
    let diff = match (actual.number()?, expected.number()?) {
        // Exact for ints: unequal ints are at least 1 apart.
        (Number::Int(a), Number::Int(b)) if a == b => 0.0,
        (Number::Int(a), Number::Int(b)) => (a.to_f64() - b.to_f64()).abs().max(1.0),
        _ => (actual.as_f64()? - expected.as_f64()?).abs(),
    };
    Some(if strict { diff < tol } else { diff <= tol })
}

/// `math.isclose(actual, expected, rel_tol=, abs_tol=)`; `None` when Python
/// would raise (not numbers).
pub(crate) fn isclose(
    actual: &Value,
    expected: &Value,
    rel_tol: f64,
    abs_tol: f64,
) -> Option<bool> {
    let (a, b) = (actual.as_f64()?, expected.as_f64()?);
    if a == b {
        return Some(true);
    }
    if a.is_infinite() || b.is_infinite() {
        return Some(false);
    }
    let diff = (b - a).abs();
    Some(diff <= (rel_tol * b).abs() || diff <= (rel_tol * a).abs() || diff <= abs_tol)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(n: i64) -> Value {
        Value::Int(Int::from_i64(n))
    }
    fn s(text: &str) -> Value {
        Value::Str(text.as_bytes().to_vec())
    }
    fn big(hex: &str) -> Value {
        Value::Int(Int::from_python_hex(hex).unwrap())
    }

    #[test]
    fn ints_floats_and_bools_are_equal_as_in_python() {
        assert!(int(1).py_eq(&Value::Float(1.0)));
        assert!(Value::Float(1.0).py_eq(&Value::Bool(true)));
        assert!(Value::Bool(true).py_eq(&int(1)));
        assert!(Value::Bool(false).py_eq(&int(0)));
        assert!(Value::Float(-0.0).py_eq(&int(0)));
        assert!(Value::Float(-0.0).py_eq(&Value::Float(0.0)));
        assert!(!int(1).py_eq(&Value::Float(1.5)));
        assert!(!Value::Bool(true).py_eq(&int(2)));
        assert!(!int(1).py_eq(&s("1")));
        assert!(!Value::None.py_eq(&Value::Bool(false)));
        assert!(!Value::Float(f64::INFINITY).py_eq(&big("ffff")));
    }

    #[test]
    fn nan_equals_nothing() {
        let nan = Value::Float(f64::NAN);
        assert!(!nan.py_eq(&nan));
        assert!(!Value::List(vec![nan.clone()]).py_eq(&Value::List(vec![nan.clone()])));
        assert!(!Value::Set(vec![nan.clone()]).py_eq(&Value::Set(vec![nan.clone()])));
        assert!(nan.truthy());
    }

    #[test]
    fn big_ints_compare_exactly_with_floats() {
        // 2**64 and 2**64 + 1.
        let two_64 = big("10000000000000000");
        let plus_one = big("10000000000000001");
        let f = Value::Float(18446744073709551616.0);
        assert!(two_64.py_eq(&f));
        assert!(!plus_one.py_eq(&f), "2**64 + 1 != float(2**64) in Python");
        assert!(!two_64.py_eq(&plus_one));
        assert!(big("-0").py_eq(&int(0)));
        assert!(big("-ff").py_eq(&int(-255)));
        assert!(Value::Float(1e300).py_eq(&Value::Int(Int::from_integral(1e300).unwrap())));
        assert!(!big("1").py_eq(&Value::Float(1e300)));
    }

    #[test]
    fn lists_and_tuples_differ_and_nest() {
        let list = Value::List(vec![int(1)]);
        let tuple = Value::Tuple(vec![int(1)]);
        assert!(!list.py_eq(&tuple));
        assert!(list.py_eq(&Value::List(vec![Value::Float(1.0)])));
        let nested = |x: Value| {
            Value::List(vec![Value::Tuple(vec![
                s("a"),
                Value::Dict(vec![(int(1), x)]),
            ])])
        };
        assert!(nested(Value::List(vec![])).py_eq(&nested(Value::List(vec![]))));
        assert!(!nested(Value::List(vec![])).py_eq(&nested(Value::Tuple(vec![]))));
        assert!(!Value::List(vec![int(1), int(2)]).py_eq(&Value::List(vec![int(2), int(1)])));
    }

    #[test]
    fn dicts_ignore_order_and_find_keys_by_equality() {
        let a = Value::Dict(vec![(s("x"), int(1)), (s("y"), int(2))]);
        let b = Value::Dict(vec![(s("y"), int(2)), (s("x"), int(1))]);
        assert!(a.py_eq(&b));
        assert!(!a.py_eq(&Value::Dict(vec![(s("x"), int(1))])));
        assert!(!a.py_eq(&Value::Dict(vec![(s("x"), int(1)), (s("y"), int(3))])));
        // {1: 'a'} == {1.0: 'a'} == {True: 'a'}
        let one = Value::Dict(vec![(int(1), s("a"))]);
        assert!(one.py_eq(&Value::Dict(vec![(Value::Float(1.0), s("a"))])));
        assert!(one.py_eq(&Value::Dict(vec![(Value::Bool(true), s("a"))])));
        let tuple_key = |x: Value| Value::Dict(vec![(Value::Tuple(vec![x]), Value::None)]);
        assert!(tuple_key(int(2)).py_eq(&tuple_key(Value::Float(2.0))));
    }

    #[test]
    fn sets_compare_as_sets() {
        let a = Value::Set(vec![int(1), int(2)]);
        assert!(a.py_eq(&Value::Set(vec![int(2), int(1)])));
        assert!(a.py_eq(&Value::FrozenSet(vec![Value::Float(2.0), int(1)])));
        assert!(!a.py_eq(&Value::Set(vec![int(1), int(3)])));
        assert!(!a.py_eq(&Value::List(vec![int(1), int(2)])));
        let fs = |items| Value::Set(vec![Value::FrozenSet(items)]);
        assert!(fs(vec![int(1), int(2)]).py_eq(&fs(vec![int(2), int(1)])));
    }

    #[test]
    fn strings_and_bytes_are_apart() {
        assert!(s("é").py_eq(&s("é")));
        assert!(!s("a").py_eq(&Value::Bytes(b"a".to_vec())));
        assert!(!s("").truthy() && s(" ").truthy());
    }

    #[test]
    fn truthiness_is_pythons() {
        assert!(!Value::None.truthy());
        assert!(!int(0).truthy() && int(-1).truthy() && big("-0").py_eq(&int(0)));
        assert!(!Value::Float(0.0).truthy() && !Value::Float(-0.0).truthy());
        assert!(!Value::List(vec![]).truthy() && Value::List(vec![Value::None]).truthy());
        assert!(!Value::Dict(vec![]).truthy());
    }

    #[test]
    fn tolerances_and_isclose() {
        assert_eq!(
            within(&Value::Float(0.5000001), &Value::Float(0.5), 1e-6, true),
            Some(true)
        );
        assert_eq!(
            within(&Value::Float(0.6), &Value::Float(0.5), 1e-6, true),
            Some(false)
        );
        assert_eq!(within(&int(1), &Value::Float(1.0), 0.0, false), Some(true));
        assert_eq!(within(&int(1), &Value::Float(1.0), 0.0, true), Some(false));
        assert_eq!(
            within(&Value::Float(f64::NAN), &Value::Float(0.5), 1.0, true),
            Some(false)
        );
        assert_eq!(within(&s("x"), &Value::Float(0.5), 1.0, true), None);
        // Huge ints one apart never pass a tolerance below 1.
        let a = big("10000000000000000000000000000000001");
        let b = big("10000000000000000000000000000000000");
        assert_eq!(within(&a, &b, 0.5, true), Some(false));
        assert_eq!(
            isclose(&Value::Float(1.0), &Value::Float(1.0 + 1e-10), 1e-9, 0.0),
            Some(true)
        );
        assert_eq!(
            isclose(&Value::Float(1.0), &Value::Float(1.1), 1e-9, 0.0),
            Some(false)
        );
        assert_eq!(
            isclose(&Value::Float(0.0), &Value::Float(1e-12), 1e-9, 1e-9),
            Some(true)
        );
        let inf = Value::Float(f64::INFINITY);
        assert_eq!(isclose(&inf, &inf, 1e-9, 0.0), Some(true));
        assert_eq!(isclose(&inf, &Value::Float(1e308), 1.0, 0.0), Some(false));
    }

    #[test]
    fn the_json_form_is_read_strictly() {
        let json = serde_json::json!({"l": [null, true, {"i": "-ff"}, {"f": "-0.0"}, {"f": "nan"},
            {"u": "c3a9"}, {"y": "00"}, {"t": []}, {"d": [[{"u": "61"}, {"z": []}]]}, {"s": []}]});
        let v = Value::from_json(&json).unwrap();
        let Value::List(items) = v else { panic!() };
        assert_eq!(items[2], int(-255));
        assert!(matches!(items[3], Value::Float(f) if f == 0.0 && f.is_sign_negative()));
        assert!(matches!(items[4], Value::Float(f) if f.is_nan()));
        assert_eq!(items[5], s("é"));
        for bad in [
            serde_json::json!(1),
            serde_json::json!("a"),
            serde_json::json!({"i": "12g"}),
            serde_json::json!({"q": 1}),
            serde_json::json!({"u": "abc"}),
            serde_json::json!({"i": "1", "f": "1"}),
        ] {
            assert!(Value::from_json(&bad).is_err(), "{bad}");
        }
    }
}
