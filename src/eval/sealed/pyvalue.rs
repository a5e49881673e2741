//! Plain Python data as the sealed harness (`harness`) sends it, read with
//! bounds ([`Reader`]) into what Python itself would hold for the builtin
//! value (a set or dict whose members are not distinct is refused), and
//! Python's own `==`, hashing, truthiness and numeric semantics on it
//! (`pyint`: exact int arithmetic, correctly rounded int-to-float), so that
//! a sealed check is compared outside the candidate's process.
//!
//! Pure: no I/O.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::Value as Json;

pub(crate) use super::pyint::Int;
use super::pyint::Overflow;

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
#[derive(Debug, Clone, PartialEq)]
enum Number<'a> {
    Int(std::borrow::Cow<'a, Int>),
    Float(f64),
}

/// Why a value cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// Not the harness's form at all.
    Malformed(&'static str),
    /// The form, but not what a builtin value could be (a set of members
    /// that are not distinct), or past the reader's bounds.
    NotPlain(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Malformed(what) => f.write_str(what),
            ReadError::NotPlain(what) => f.write_str(what),
        }
    }
}

/// Most values (each item, key and value counts one) in one returned
/// value, and deepest nesting: the harness refuses deeper than 100.
pub(crate) const MAX_NODES: usize = 1 << 20;
pub(crate) const MAX_DEPTH: usize = 128;

/// The three kinds of set members and dict keys, as Python hashes them.
enum Hashed {
    /// Hashable, equal to the values of the same hash that `==` says.
    Key(u64),
    /// Hashable, and equal to no other value here (holds a `nan`: Python
    /// finds a `nan` only by identity, and no two values here are the same
    /// object).
    Unique,
    /// `hash()` raises: a list, dict or set, or a tuple holding one.
    Unhashable,
}

/// The kind of container whose members are checked for distinctness.
#[derive(Clone, Copy)]
enum Members {
    Set,
    FrozenSet,
    Dict,
}

impl Value {
    /// Reads the harness's JSON form (see `codec.py`) from a parsed tree
    /// (the prepare step's trusted values).
    pub(crate) fn from_json(json: &Json) -> Result<Value, String> {
        Value::read(json, 0).map_err(|e| e.to_string())
    }

    fn read(json: &Json, depth: usize) -> Result<Value, ReadError> {
        if depth > 200 {
            return Err(ReadError::Malformed("nested too deep"));
        }
        let list = |items: &Json| -> Result<Vec<Value>, ReadError> {
            match items {
                Json::Array(items) => items.iter().map(|i| Value::read(i, depth + 1)).collect(),
                _ => Err(ReadError::Malformed("a container that is not a list")),
            }
        };
        let hex = |text: &Json| -> Result<Vec<u8>, ReadError> {
            let text = text
                .as_str()
                .ok_or(ReadError::Malformed("hex that is not a string"))?;
            unhex(text.as_bytes())
        };
        match json {
            Json::Null => Ok(Value::None),
            Json::Bool(b) => Ok(Value::Bool(*b)),
            Json::Object(map) if map.len() == 1 => {
                let (tag, inner) = map.iter().next().expect("one entry");
                let text = || {
                    inner
                        .as_str()
                        .map(str::as_bytes)
                        .ok_or(ReadError::Malformed("a number that is not a string"))
                };
                match tag.as_str() {
                    "i" => Value::int(text()?),
                    "f" => Value::float(text()?),
                    "u" => hex(inner).map(Value::Str),
                    "y" => hex(inner).map(Value::Bytes),
                    "l" => list(inner).map(Value::List),
                    "t" => list(inner).map(Value::Tuple),
                    "s" => Value::set(list(inner)?, Members::Set),
                    "z" => Value::set(list(inner)?, Members::FrozenSet),
                    "d" => {
                        let Json::Array(pairs) = inner else {
                            return Err(ReadError::Malformed("a dict that is not a list"));
                        };
                        let pairs = pairs
                            .iter()
                            .map(|pair| match pair {
                                Json::Array(kv) if kv.len() == 2 => Ok((
                                    Value::read(&kv[0], depth + 1)?,
                                    Value::read(&kv[1], depth + 1)?,
                                )),
                                _ => Err(ReadError::Malformed("a dict item that is not a pair")),
                            })
                            .collect::<Result<_, _>>()?;
                        Value::dict(pairs)
                    }
                    _ => Err(ReadError::Malformed("an unknown tag")),
                }
            }
            _ => Err(ReadError::Malformed("not a sealed value")),
        }
    }

    fn int(text: &[u8]) -> Result<Value, ReadError> {
        Int::from_hex(text)
            .map(Value::Int)
            .ok_or(ReadError::Malformed("a bad int"))
    }

    fn float(text: &[u8]) -> Result<Value, ReadError> {
        std::str::from_utf8(text)
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .map(Value::Float)
            .ok_or(ReadError::Malformed("a bad float"))
    }

    /// A set or frozenset, if its members are what a builtin one could
    /// hold: hashable, and distinct as plain values.
    fn set(items: Vec<Value>, kind: Members) -> Result<Value, ReadError> {
        distinct(items.iter(), kind)?;
        Ok(match kind {
            Members::FrozenSet => Value::FrozenSet(items),
            _ => Value::Set(items),
        })
    }

    /// A dict, if its keys are what a builtin one could hold.
    fn dict(pairs: Vec<(Value, Value)>) -> Result<Value, ReadError> {
        distinct(pairs.iter().map(|(k, _)| k), Members::Dict)?;
        Ok(Value::Dict(pairs))
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
                    i.cmp_f64(f) == Some(std::cmp::Ordering::Equal)
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

    /// How Python would hash this value as a set member or dict key: a
    /// hash that agrees with `py_eq` (`1`, `1.0`, `True`, and `-0.0` with
    /// `0`), or why there is none.
    fn hashed(&self) -> Hashed {
        let mut h = DefaultHasher::new();
        match self.hash_into(&mut h) {
            None => Hashed::Key(h.finish()),
            Some(other) => other,
        }
    }

    /// `None` when hashable and not unique; else the worse of `Unique`
    /// and `Unhashable` found anywhere inside.
    fn hash_into(&self, h: &mut DefaultHasher) -> Option<Hashed> {
        match self {
            Value::None => h.write_u8(b'N'),
            Value::Bool(_) | Value::Int(_) | Value::Float(_) => match self.number()? {
                Number::Int(i) => {
                    h.write_u8(b'n');
                    i.hash(h);
                }
                Number::Float(f) if f.is_nan() => return Some(Hashed::Unique),
                Number::Float(f) => match Int::from_integral(f) {
                    Some(i) => {
                        h.write_u8(b'n');
                        i.hash(h);
                    }
                    None => {
                        h.write_u8(b'f');
                        h.write_u64(f.to_bits());
                    }
                },
            },
            Value::Str(s) => {
                h.write_u8(b'u');
                s.hash(h);
            }
            Value::Bytes(s) => {
                h.write_u8(b'y');
                s.hash(h);
            }
            Value::Tuple(items) => {
                h.write_u8(b't');
                h.write_usize(items.len());
                let mut unique = false;
                for item in items {
                    match item.hash_into(h) {
                        Some(Hashed::Unhashable) => return Some(Hashed::Unhashable),
                        Some(_) => unique = true,
                        None => {}
                    }
                }
                if unique {
                    return Some(Hashed::Unique);
                }
            }
            Value::FrozenSet(items) => {
                // Order-free: the sum of the members' own hashes.
                let mut sum = 0u64;
                for item in items {
                    match item.hashed() {
                        Hashed::Key(k) => sum = sum.wrapping_add(k),
                        other => return Some(other),
                    }
                }
                h.write_u8(b'z');
                h.write_usize(items.len());
                h.write_u64(sum);
            }
            Value::List(_) | Value::Dict(_) | Value::Set(_) => return Some(Hashed::Unhashable),
        }
        None
    }
}

/// Decodes the harness's lowercase or uppercase hex.
fn unhex(text: &[u8]) -> Result<Vec<u8>, ReadError> {
    if !text.len().is_multiple_of(2) {
        return Err(ReadError::Malformed("odd hex"));
    }
    text.chunks(2)
        .map(|pair| {
            let digit = |b: u8| char::from(b).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(hi), Some(lo)) => Ok((hi * 16 + lo) as u8),
                _ => Err(ReadError::Malformed("bad hex")),
            }
        })
        .collect()
}

/// The members' hashes with their places, sorted by hash (16 bytes a
/// member, whatever the members hold); `None` if any is unhashable, and
/// members holding a `nan` left out, as equal to no other.
fn by_hash<'a>(members: impl Iterator<Item = &'a Value>) -> Option<Vec<(u64, u32)>> {
    let mut hashes = Vec::with_capacity(members.size_hint().0);
    for (i, member) in members.enumerate() {
        match member.hashed() {
            Hashed::Key(h) => hashes.push((h, i as u32)),
            Hashed::Unique => {}
            Hashed::Unhashable => return None,
        }
    }
    hashes.sort_unstable();
    Some(hashes)
}

/// Whether `members` could be a builtin set's members or dict's keys:
/// each hashable, no two equal (`{1, True}` is one member in Python, so a
/// set that sent both was not a builtin set's value). Members that hold a
/// `nan` are distinct from all others, as distinct `nan` objects are.
fn distinct<'a>(
    members: impl Iterator<Item = &'a Value> + Clone,
    kind: Members,
) -> Result<(), ReadError> {
    let (what, part) = match kind {
        Members::Set => ("set", "members"),
        Members::FrozenSet => ("frozenset", "members"),
        Members::Dict => ("dict", "keys"),
    };
    let Some(hashes) = by_hash(members.clone()) else {
        return Err(ReadError::NotPlain(format!(
            "a {what} whose {part} are not hashable (a list, dict or set)"
        )));
    };
    let all: Vec<&Value> = if hashes.windows(2).any(|w| w[0].0 == w[1].0) {
        members.collect()
    } else {
        return Ok(());
    };
    for run in hashes.chunk_by(|x, y| x.0 == y.0) {
        for (i, (_, x)) in run.iter().enumerate() {
            if run[i + 1..]
                .iter()
                .any(|(_, y)| all[*x as usize].py_eq(all[*y as usize]))
            {
                return Err(ReadError::NotPlain(format!(
                    "a {what} whose {part} are not distinct as plain values"
                )));
            }
        }
    }
    Ok(())
}

/// Finds in `b` (hashed by [`by_hash`]) the member equal to `v`.
fn find<'a, T>(
    v: &Value,
    hashes: &[(u64, u32)],
    b: &'a [T],
    key: impl Fn(&T) -> &Value,
) -> Option<&'a T> {
    let Hashed::Key(h) = v.hashed() else {
        return None;
    };
    let start = hashes.partition_point(|(x, _)| *x < h);
    hashes[start..]
        .iter()
        .take_while(|(x, _)| *x == h)
        .map(|(_, i)| &b[*i as usize])
        .find(|w| key(w).py_eq(v))
}

/// Python's dict equality: the same keys (each found by `==`), with equal
/// values, whatever the order. Keys are distinct on both sides (read so).
fn dict_eq(a: &[(Value, Value)], b: &[(Value, Value)]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let Some(hashes) = by_hash(b.iter().map(|(k, _)| k)) else {
        return false;
    };
    a.iter()
        .all(|(k, v)| find(k, &hashes, b, |(key, _)| key).is_some_and(|(_, w)| v.py_eq(w)))
}

/// Python's set equality (a `set` equals a `frozenset` of the same items).
/// Members are distinct on both sides (read so).
fn set_eq(a: &[Value], b: &[Value]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let Some(hashes) = by_hash(b.iter()) else {
        return false;
    };
    a.iter().all(|v| find(v, &hashes, b, |w| w).is_some())
}

/// What Python raised where it would not give a bool.
pub(crate) type Raised = String;

fn overflow(_: Overflow) -> Raised {
    "OverflowError: int too large to convert to float".into()
}

/// Python's `float(v)` of a number (`math.isclose`'s conversion).
fn to_f64(v: &Value) -> Result<f64, Raised> {
    match v.number() {
        Some(Number::Int(i)) => i.to_f64().map_err(overflow),
        Some(Number::Float(f)) => Ok(f),
        None => Err("TypeError: must be real number".into()),
    }
}

/// `a - b` as Python computes it on numbers: exact for two ints, in
/// floats (the int converted, correctly rounded) otherwise.
fn minus(a: &Value, b: &Value) -> Result<Number<'static>, Raised> {
    let unsupported = || Raised::from("TypeError: unsupported operand type(s) for -");
    let (x, y) = (
        a.number().ok_or_else(unsupported)?,
        b.number().ok_or_else(unsupported)?,
    );
    Ok(match (x, y) {
        (Number::Int(x), Number::Int(y)) => Number::Int(std::borrow::Cow::Owned(x.sub(&y))),
        (Number::Float(x), Number::Float(y)) => Number::Float(x - y),
        (Number::Int(x), Number::Float(y)) => Number::Float(x.to_f64().map_err(overflow)? - y),
        (Number::Float(x), Number::Int(y)) => Number::Float(x - y.to_f64().map_err(overflow)?),
    })
}

/// Python's `a < b` (`a <= b` when not strict) on numbers: exact, also
/// between an int and a float.
fn less(a: &Number<'_>, b: &Number<'_>, strict: bool) -> bool {
    use std::cmp::Ordering::{Equal, Less};
    let order = match (a, b) {
        (Number::Int(x), Number::Int(y)) => Some(x.cmp(y)),
        (Number::Float(x), Number::Float(y)) => x.partial_cmp(y),
        (Number::Int(x), Number::Float(y)) => x.cmp_f64(*y),
        (Number::Float(x), Number::Int(y)) => y.cmp_f64(*x).map(std::cmp::Ordering::reverse),
    };
    matches!((order, strict), (Some(Less), _) | (Some(Equal), false))
}

/// `abs(actual - expected) < tol` (or `<=`), as Python computes it; `Err`
/// with what Python would raise (not numbers, an int too large for a
/// float where Python converts it).
pub(crate) fn within(
    actual: &Value,
    expected: &Value,
    tol: &Value,
    strict: bool,
) -> Result<bool, Raised> {
    let diff = match minus(actual, expected)? {
        Number::Int(i) => Number::Int(std::borrow::Cow::Owned(i.abs())),
        Number::Float(f) => Number::Float(f.abs()),
    };
    let tol = tol
        .number()
        .ok_or_else(|| Raised::from("TypeError: '<' not supported"))?;
    Ok(less(&diff, &tol, strict))
}

/// `math.isclose(actual, expected, rel_tol=, abs_tol=)`, as CPython
/// computes it: every argument converted to a float first; `Err` with what
/// Python would raise.
pub(crate) fn isclose(
    actual: &Value,
    expected: &Value,
    rel_tol: &Value,
    abs_tol: &Value,
) -> Result<bool, Raised> {
    let (a, b) = (to_f64(actual)?, to_f64(expected)?);
    let (rel_tol, abs_tol) = (to_f64(rel_tol)?, to_f64(abs_tol)?);
    if rel_tol < 0.0 || abs_tol < 0.0 {
        return Err("ValueError: tolerances must be non-negative".into());
    }
    if a == b {
        return Ok(true);
    }
    if a.is_infinite() || b.is_infinite() {
        return Ok(false);
    }
    let diff = (b - a).abs();
    Ok(diff <= (rel_tol * b).abs() || diff <= (rel_tol * a).abs() || diff <= abs_tol)
}

/// Reads the harness's JSON form straight from bytes into values, within
/// [`MAX_NODES`] and [`MAX_DEPTH`] for each value read, so that what it
/// holds is bounded by what it reads whatever the bytes are. Accepts the
/// form the harness writes (no escapes in strings) and JSON whitespace.
pub(crate) struct Reader<'a> {
    text: &'a [u8],
    at: usize,
    nodes: usize,
    max_nodes: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(text: &'a [u8]) -> Reader<'a> {
        Reader::with_bound(text, MAX_NODES)
    }

    pub(crate) fn with_bound(text: &'a [u8], max_nodes: usize) -> Reader<'a> {
        Reader {
            text,
            at: 0,
            nodes: 0,
            max_nodes,
        }
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    /// Whether the next byte (after whitespace) is `b`; consumes it if so.
    pub(crate) fn eat(&mut self, b: u8) -> bool {
        self.skip_space();
        if self.text.get(self.at) == Some(&b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn expect(&mut self, b: u8) -> Result<(), ReadError> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(ReadError::Malformed("not the harness's JSON"))
        }
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.skip_space();
        self.at == self.text.len()
    }

    /// A string without escapes, as its bytes.
    pub(crate) fn string(&mut self) -> Result<&'a [u8], ReadError> {
        self.expect(b'"')?;
        let rest = &self.text[self.at..];
        let len = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .ok_or(ReadError::Malformed("an unterminated string"))?;
        if rest[len] != b'"' {
            return Err(ReadError::Malformed("a string with an escape"));
        }
        self.at += len + 1;
        Ok(&rest[..len])
    }

    /// A string of hex, decoded.
    pub(crate) fn hex(&mut self) -> Result<Vec<u8>, ReadError> {
        unhex(self.string()?)
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), ReadError> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(ReadError::Malformed("not the harness's JSON"))
        }
    }

    /// One value, its count of nodes starting afresh.
    pub(crate) fn value(&mut self) -> Result<Value, ReadError> {
        self.nodes = 0;
        self.read(0)
    }

    fn read(&mut self, depth: usize) -> Result<Value, ReadError> {
        if depth > MAX_DEPTH {
            return Err(ReadError::NotPlain(format!(
                "a value nested deeper than {MAX_DEPTH}"
            )));
        }
        self.nodes += 1;
        if self.nodes > self.max_nodes {
            return Err(ReadError::NotPlain(format!(
                "a value of more than {} parts",
                self.max_nodes
            )));
        }
        self.skip_space();
        match self.text.get(self.at) {
            Some(b'n') => self.literal(b"null").map(|()| Value::None),
            Some(b't') => self.literal(b"true").map(|()| Value::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|()| Value::Bool(false)),
            Some(b'{') => {
                self.at += 1;
                let tag = self.string()?;
                self.expect(b':')?;
                let value = match tag {
                    b"i" => Value::int(self.string()?)?,
                    b"f" => Value::float(self.string()?)?,
                    b"u" => Value::Str(self.hex()?),
                    b"y" => Value::Bytes(self.hex()?),
                    b"l" => Value::List(self.items(depth)?),
                    b"t" => Value::Tuple(self.items(depth)?),
                    b"s" => Value::set(self.items(depth)?, Members::Set)?,
                    b"z" => Value::set(self.items(depth)?, Members::FrozenSet)?,
                    b"d" => {
                        let mut pairs = Vec::new();
                        self.expect(b'[')?;
                        if !self.eat(b']') {
                            loop {
                                self.expect(b'[')?;
                                let key = self.read(depth + 1)?;
                                self.expect(b',')?;
                                let value = self.read(depth + 1)?;
                                self.expect(b']')?;
                                pairs.push((key, value));
                                if self.eat(b']') {
                                    break;
                                }
                                self.expect(b',')?;
                            }
                        }
                        Value::dict(pairs)?
                    }
                    _ => return Err(ReadError::Malformed("an unknown tag")),
                };
                self.expect(b'}')?;
                Ok(value)
            }
            _ => Err(ReadError::Malformed("not a sealed value")),
        }
    }

    /// `[v, ...]`, each one level deeper.
    fn items(&mut self, depth: usize) -> Result<Vec<Value>, ReadError> {
        let mut items = Vec::new();
        self.expect(b'[')?;
        if self.eat(b']') {
            return Ok(items);
        }
        loop {
            items.push(self.read(depth + 1)?);
            if self.eat(b']') {
                return Ok(items);
            }
            self.expect(b',')?;
        }
    }
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
        Value::Int(Int::from_hex(hex.as_bytes()).unwrap())
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
        let f = Value::Float;
        assert_eq!(within(&f(0.5000001), &f(0.5), &f(1e-6), true), Ok(true));
        assert_eq!(within(&f(0.6), &f(0.5), &f(1e-6), true), Ok(false));
        assert_eq!(within(&int(1), &f(1.0), &f(0.0), false), Ok(true));
        assert_eq!(within(&int(1), &f(1.0), &f(0.0), true), Ok(false));
        assert_eq!(within(&f(f64::NAN), &f(0.5), &f(1.0), true), Ok(false));
        assert!(within(&s("x"), &f(0.5), &f(1.0), true).is_err());
        // Huge ints one apart never pass a tolerance below 1.
        let a = big("10000000000000000000000000000000001");
        let b = big("10000000000000000000000000000000000");
        assert_eq!(within(&a, &b, &f(0.5), true), Ok(false));
        assert_eq!(within(&a, &b, &int(1), false), Ok(true));
        assert_eq!(
            isclose(&f(1.0), &f(1.0 + 1e-10), &f(1e-9), &f(0.0)),
            Ok(true)
        );
        assert_eq!(isclose(&f(1.0), &f(1.1), &f(1e-9), &f(0.0)), Ok(false));
        assert_eq!(isclose(&f(0.0), &f(1e-12), &f(1e-9), &f(1e-9)), Ok(true));
        let inf = f(f64::INFINITY);
        assert_eq!(isclose(&inf, &inf, &f(1e-9), &f(0.0)), Ok(true));
        assert_eq!(isclose(&inf, &f(1e308), &f(1.0), &f(0.0)), Ok(false));
        assert!(isclose(&f(1.0), &f(1.0), &f(-1.0), &f(0.0)).is_err());
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

    /// Runs `script` (after the codec) with the host's python3 and reads
    /// one JSON document a line from its stdout.
    fn python(script: &str) -> Vec<Json> {
        let code = [include_str!("codec.py"), script].concat();
        let out = std::process::Command::new("python3")
            .args(["-c", &code])
            .output()
            .expect("the host's python3 runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect()
    }

    /// A set or dict is read only if Python's builtin of the same members
    /// would hold them all: each case below is a list of members, which
    /// the host's python3 encodes member by member (as the harness does
    /// for a set of lying keys) and judges (`len(set(m)) == len(m)`,
    /// `TypeError` for an unhashable one).
    #[test]
    fn sets_and_dicts_are_read_only_with_distinct_members_as_python_holds_them() {
        let cases = [
            "[0, 2, 4]",
            "[0, 0]",
            "[1, True]",
            "[1, 1.0]",
            "[0, False, 0.0]",
            "[0.0, -0.0]",
            "[-0.0, 0]",
            "[float('nan'), float('nan')]",
            "[float('nan'), 1.0]",
            "[(float('nan'),), (float('nan'),)]",
            "[(1, float('nan')), (1, float('nan')), (1,)]",
            "[2**64, float(2**64)]",
            "[2**64 + 1, float(2**64)]",
            "[2**53 + 1, float(2**53)]",
            "[10**400, 10**400 + 1, 10**400 - 1]",
            "[-(2**63), -(2**63) + 1, 2**63]",
            "[-(2**63), float(-(2**63))]",
            "[1e300, int(1e300)]",
            "[1e300, int(1e300) + 1]",
            "[0.5, 1.5, 0.5000000000000001]",
            "['a', b'a', 'a']",
            "['', b'', ()]",
            "[(1, 2), (1.0, 2.0)]",
            "[(1, 2), (2, 1)]",
            "[frozenset({1, 2}), frozenset({2.0, 1.0})]",
            "[frozenset({1, 2}), frozenset({1, 3})]",
            "[frozenset(), ()]",
            "[frozenset({frozenset({1})}), frozenset({frozenset({True})})]",
            "[([1],)]",
            "[(1, [2])]",
            "[(1, [2], float('nan'))]",
            "[None, 0, False]",
            "[float('inf'), 2**1024, float('-inf')]",
        ];
        let script = format!(
            "import json\n\
             Refused, encode, decode, emit, hexed, name_of = _sbx_codec()\n\
             for members in [{}]:\n\
             \x20   try:\n\
             \x20       ok = len(set(members)) == len(members)\n\
             \x20   except TypeError:\n\
             \x20       ok = False\n\
             \x20   print(json.dumps([ok, [encode(m) for m in members]]))\n",
            cases.join(", ")
        );
        let answers = python(&script);
        assert_eq!(answers.len(), cases.len());
        for (case, answer) in cases.iter().zip(&answers) {
            let python_holds_all = answer[0].as_bool().expect("a bool");
            let members = answer[1].to_string();
            for form in [
                format!("{{\"s\":{members}}}"),
                format!("{{\"z\":{members}}}"),
            ] {
                let read = Reader::new(form.as_bytes()).value();
                assert_eq!(read.is_ok(), python_holds_all, "{case}: {read:?}");
                if let Err(e) = read {
                    assert!(matches!(e, ReadError::NotPlain(_)), "{case}: {e:?}");
                }
                // The same through the tree reader of the prepare step.
                let json: Json = serde_json::from_str(&form).expect("JSON");
                assert_eq!(Value::from_json(&json).is_ok(), python_holds_all, "{case}");
            }
            // The same members as a dict's keys.
            let pairs: Vec<Json> = answer[1]
                .as_array()
                .expect("members")
                .iter()
                .map(|k| serde_json::json!([k, null]))
                .collect();
            let form = serde_json::json!({ "d": pairs }).to_string();
            let read = Reader::new(form.as_bytes()).value();
            assert_eq!(read.is_ok(), python_holds_all, "dict keys {case}: {read:?}");
        }
        // Nested: a frozenset inside a set that holds two equal members.
        let inner = r#"{"s":[{"z":[{"i":"0"},{"i":"0"}]}]}"#;
        assert_eq!(
            Reader::new(inner.as_bytes()).value(),
            Err(ReadError::NotPlain(
                "a frozenset whose members are not distinct as plain values".into()
            ))
        );
        let keys = r#"{"l":[{"d":[[{"u":"61"},{"i":"1"}],[{"u":"61"},{"i":"1"}]]}]}"#;
        assert_eq!(
            Reader::new(keys.as_bytes()).value(),
            Err(ReadError::NotPlain(
                "a dict whose keys are not distinct as plain values".into()
            ))
        );
    }

    /// Tolerance checks against the host's python3: each case is `(a, b,
    /// tol)`, and python3 says what `abs(a - b) < tol`, `abs(a - b) <=
    /// tol` and `math.isclose(a, b, rel_tol=1e-9, abs_tol=tol)` give (or
    /// that they raise), with the values in the harness's form. Ints past
    /// 2**53 and past the largest float are where a float conversion that
    /// is not Python's, or unequal ints compared through floats, differ.
    #[test]
    fn tolerance_checks_on_big_ints_follow_python() {
        let cases = [
            "(2**53 + 1, 2**53, 1)",
            "(2**53 + 1, 2**53, 1.0)",
            "(2**53 + 1, float(2**53), 1)",
            "(2**53 + 1, 0, 9007199254740992.0)",
            "(2**53 + 1, 0, 9007199254740994.0)",
            "(2**64 + 1, 2**64, 0.5)",
            "(10**20 + 5, 10**20, 2)",
            "(10**20 + 5, 10**20, 6.0)",
            "(10**20, 10**20 + 1, 1e-9)",
            "(10**400 + 1, 10**400, 2)",
            "(10**400, 10**400, 0.0)",
            "(10**400, 1.0, 1e308)",
            "(1.0, 10**400, 10**401)",
            "(10**400, 10**400 + 10**300, 10**300)",
            "(2**1024 - 2**970, 0, 1e308)",
            "(2**1024 - 2**971, 0.0, float('inf'))",
            "(2**1024 - 2**971 - 1, 1.7976931348623157e308, 1)",
            "(2**54 + 1, 0.0, float(2**54))",
            "(2**54 + 3, 0.0, float(2**54 + 4))",
            "(-(2**63), 2**63, 2**64)",
            "(-(2**63), 2**63, 2**64 + 1)",
            "(True, 0, 1)",
            "(True, 0.5, 0.5)",
            "(3, 1, 2.0000000000000004)",
            "(0.1 + 0.2, 0.3, 1e-16)",
            "(float('nan'), 0, 1)",
            "(float('inf'), 10**300, float('inf'))",
            "(12345678901234567890123, 12345678901234567890123.0, 10**6)",
            "(-12345678901234567890123, -1.2345678901234568e22, 2**21)",
        ];
        // Ints of many sizes near float rounding boundaries, from a fixed
        // seed: each against its own float(), with no tolerance.
        let script = format!(
            "import json, math, random\n\
             Refused, encode, decode, emit, hexed, name_of = _sbx_codec()\n\
             def run(f):\n\
             \x20   try:\n\
             \x20       return f()\n\
             \x20   except (OverflowError, TypeError, ValueError) as e:\n\
             \x20       return type(e).__name__\n\
             rng = random.Random(36)\n\
             cases = [{}]\n\
             for bits in list(range(53, 70)) + [100, 200, 500, 1000, 1023, 1024]:\n\
             \x20   for _ in range(12):\n\
             \x20       x = rng.getrandbits(bits) | (1 << (bits - 1))\n\
             \x20       x |= rng.choice([0, 1, (1 << max(bits - 54, 0)) - 1])\n\
             \x20       if bits > 64 and rng.random() < 0.5:\n\
             \x20           # Halfway between two floats, or just past it.\n\
             \x20           x = x >> (bits - 53) << (bits - 53) | 1 << (bits - 54) | rng.choice([0, 1])\n\
             \x20       x *= rng.choice([1, -1])\n\
             \x20       f = run(lambda: float(x))\n\
             \x20       cases.append((x, f if isinstance(f, float) else 0.0, 0))\n\
             for a, b, tol in cases:\n\
             \x20   lt = run(lambda: abs(a - b) < tol)\n\
             \x20   le = run(lambda: abs(a - b) <= tol)\n\
             \x20   close = run(lambda: math.isclose(a, b, rel_tol=1e-9, abs_tol=tol))\n\
             \x20   print(json.dumps([encode(a), encode(b), encode(tol), lt, le, close]))\n",
            cases.join(", ")
        );
        let answers = python(&script);
        assert!(answers.len() > cases.len() + 100);
        let said = |got: Result<bool, Raised>| match got {
            Ok(b) => Json::Bool(b),
            Err(raised) => Json::String(raised.split(':').next().unwrap_or("").into()),
        };
        for answer in &answers {
            let value = |i: usize| Value::from_json(&answer[i]).expect("a value");
            let (a, b, tol) = (value(0), value(1), value(2));
            let ours = serde_json::json!([
                said(within(&a, &b, &tol, true)),
                said(within(&a, &b, &tol, false)),
                said(isclose(&a, &b, &Value::Float(1e-9), &tol)),
            ]);
            let python = answer
                .as_array()
                .map(|a| a[3..].to_vec())
                .unwrap_or_default();
            assert_eq!(ours, Json::Array(python), "{answer}");
        }
    }

    #[test]
    fn the_reader_bounds_nodes_and_depth() {
        let list = |n: usize| format!("{{\"l\":[{}]}}", vec!["null"; n].join(","));
        assert!(Reader::with_bound(list(9).as_bytes(), 10).value().is_ok());
        assert_eq!(
            Reader::with_bound(list(10).as_bytes(), 10).value(),
            Err(ReadError::NotPlain("a value of more than 10 parts".into()))
        );
        // A dict's keys and values count, and the count starts afresh for
        // each value read.
        let dict = r#"{"d":[[null,null],[{"i":"1"},null]]}"#;
        assert!(Reader::with_bound(dict.as_bytes(), 5).value().is_ok());
        assert!(Reader::with_bound(dict.as_bytes(), 4).value().is_err());
        let two = format!("{} {}", list(9), list(9));
        let mut reader = Reader::with_bound(two.as_bytes(), 10);
        assert!(reader.value().is_ok() && reader.value().is_ok() && reader.at_end());
        let nest = |n: usize| format!("{}null{}", "{\"l\":[".repeat(n), "]}".repeat(n));
        assert!(Reader::new(nest(MAX_DEPTH).as_bytes()).value().is_ok());
        assert_eq!(
            Reader::new(nest(MAX_DEPTH + 1).as_bytes()).value(),
            Err(ReadError::NotPlain(format!(
                "a value nested deeper than {MAX_DEPTH}"
            )))
        );
        // Far past the bound: refused at the bound, without a deep stack.
        assert!(Reader::new(nest(1 << 20).as_bytes()).value().is_err());
        // Long strings and ints are read as they are, without a tree.
        let int = format!("{{\"i\":\"-{}\"}}", "f".repeat(1 << 20));
        let Ok(Value::Int(big)) = Reader::new(int.as_bytes()).value() else {
            panic!("a big int")
        };
        assert_eq!(big.to_f64(), Err(Overflow));
        let text = format!("{{\"u\":\"{}\"}}", "61".repeat(1 << 20));
        assert!(
            matches!(Reader::new(text.as_bytes()).value(), Ok(Value::Str(s)) if s.len() == 1 << 20)
        );
        for bad in [
            "",
            "nul",
            "[]",
            "{}",
            r#"{"u":"6"}"#,
            r#"{"u":"6g"}"#,
            r#"{"u":"\u0061"}"#,
            r#"{"i":"1"]"#,
            r#"{"i":""}"#,
            r#"{"q":[]}"#,
            r#"{"l":[null,]}"#,
            r#"{"l":[null"#,
            r#"{"d":[[null]]}"#,
            r#"{"f":"one"}"#,
            "\"abc",
        ] {
            assert!(
                matches!(
                    Reader::new(bad.as_bytes()).value(),
                    Err(ReadError::Malformed(_))
                ),
                "{bad}"
            );
        }
    }
}
