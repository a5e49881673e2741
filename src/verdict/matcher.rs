//! Output comparison modes: pure functions from expected and actual output
//! to a verdict, with a short description of the first difference.

use crate::spec::CompareMode as Mode;

/// Tolerances of `Mode::Float`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tolerance {
    pub rel: f64,
    pub abs: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            rel: 1e-6,
            abs: 1e-9,
        }
    }
}

/// A comparison ready to run: for `regex`, the compiled pattern.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    Exact(String),
    Trim(String),
    Tokens(String),
    Float(String, Tolerance),
    Regex(WholeMatch),
    /// A rule given by the caller (LiveCodeBench's, `eval::livecodebench`).
    External(External),
}

/// A comparison of an output: `None` when it passes, else what differs.
pub(crate) type Check = std::sync::Arc<dyn Fn(&[u8]) -> Option<String> + Send + Sync>;

/// A comparison given as a function. `name` says what it compares (its
/// `Debug` form).
#[derive(Clone)]
pub(crate) struct External {
    pub name: String,
    pub check: Check,
}

impl std::fmt::Debug for External {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("External").field(&self.name).finish()
    }
}

/// A regex that must match the whole output. The pattern is parsed on its
/// own, then anchored at both ends in the engine's syntax tree (never by
/// wrapping its text, which a pattern could escape by closing the group).
/// It matches bytes: `(?-u)` lets a pattern match bytes that are not UTF-8.
#[derive(Clone)]
pub(crate) struct WholeMatch {
    pattern: String,
    regex: regex_automata::meta::Regex,
}

/// The pattern alone: the cache key is built from a matcher's `Debug`
/// form, which must name what is matched, not the engine's internals.
impl std::fmt::Debug for WholeMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("WholeMatch").field(&self.pattern).finish()
    }
}

impl WholeMatch {
    fn new(pattern: &str) -> Result<WholeMatch, String> {
        use regex_automata::meta;
        use regex_syntax::hir::{Hir, Look};
        let invalid =
            |e: &dyn std::fmt::Display| format!("invalid regex: {}", first_line(&e.to_string()));
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .map_err(|e| invalid(&e))?;
        let whole = Hir::concat(vec![Hir::look(Look::Start), hir, Hir::look(Look::End)]);
        let regex = meta::Builder::new()
            .configure(
                meta::Config::new()
                    .nfa_size_limit(Some(10 << 20))
                    .utf8_empty(false),
            )
            .build_from_hir(&whole)
            .map_err(|e| invalid(&e))?;
        Ok(WholeMatch {
            pattern: pattern.to_string(),
            regex,
        })
    }

    fn is_match(&self, actual: &[u8]) -> bool {
        self.regex.is_match(actual)
    }
}

impl Matcher {
    /// Builds the matcher; an invalid regex is an error naming the problem.
    pub(crate) fn new(mode: Mode, expect: &str, tolerance: Tolerance) -> Result<Matcher, String> {
        Ok(match mode {
            Mode::Exact => Matcher::Exact(expect.to_string()),
            Mode::Trim => Matcher::Trim(expect.to_string()),
            Mode::Tokens => Matcher::Tokens(expect.to_string()),
            Mode::Float => Matcher::Float(expect.to_string(), tolerance),
            Mode::Regex => Matcher::Regex(WholeMatch::new(expect)?),
        })
    }

    /// `None` when `actual` matches; otherwise a short description of the
    /// first difference, for the report. The output's bytes are compared
    /// (bytes that are not UTF-8 never equal U+FFFD); they are decoded only
    /// to be shown.
    pub(crate) fn mismatch(&self, actual: &[u8]) -> Option<String> {
        match self {
            Matcher::Exact(expect) => first_difference(
                expect.split_inclusive('\n'),
                actual.split_inclusive(|&b| b == b'\n'),
                |e, a| e.as_bytes() == a,
                |_| false,
            )
            .map(|d| describe("line", d)),
            Matcher::Trim(expect) => first_difference(
                trimmed_lines(expect),
                byte_lines(actual).map(trim_end_bytes),
                |e, a| e.as_bytes() == a,
                <[u8]>::is_empty,
            )
            .map(|d| describe("line", d)),
            Matcher::Tokens(expect) => first_difference(
                expect.split_whitespace(),
                byte_tokens(actual),
                |e, a| e.as_bytes() == a,
                |_| false,
            )
            .map(|d| describe("token", d)),
            Matcher::Float(expect, tol) => first_difference(
                expect.split_whitespace(),
                byte_tokens(actual),
                |e, a| std::str::from_utf8(a).is_ok_and(|a| floats_equal(e, a, *tol)),
                |_| false,
            )
            .map(|d| describe("token", d)),
            Matcher::External(external) => (external.check)(actual),
            Matcher::Regex(re) => {
                if re.is_match(actual) {
                    None
                } else {
                    Some(format!(
                        "output does not match /{}/; got {}",
                        excerpt(&re.pattern),
                        excerpt(&String::from_utf8_lossy(actual))
                    ))
                }
            }
        }
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The lines of `bytes` as `str::lines` cuts them (on `\n`, no empty last
/// line after a final `\n`), without decoding.
fn byte_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let none = bytes.is_empty();
    body.split(|&b| b == b'\n').filter(move |_| !none)
}

/// `bytes` without its trailing (Unicode) whitespace, as `str::trim_end`
/// would cut it; bytes that are not UTF-8 are never whitespace.
fn trim_end_bytes(bytes: &[u8]) -> &[u8] {
    match bytes.utf8_chunks().last() {
        Some(chunk) if chunk.invalid().is_empty() => {
            let valid = chunk.valid();
            &bytes[..bytes.len() - valid.len() + valid.trim_end().len()]
        }
        _ => bytes,
    }
}

/// The whitespace-separated tokens of `bytes`, as `str::split_whitespace`
/// cuts them; bytes that are not UTF-8 belong to the token they are in.
fn byte_tokens(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut at = 0;
    let mut breaks = Vec::new();
    for chunk in bytes.utf8_chunks() {
        for (i, c) in chunk.valid().char_indices() {
            if c.is_whitespace() {
                breaks.push((at + i, at + i + c.len_utf8()));
            }
        }
        at += chunk.valid().len() + chunk.invalid().len();
    }
    breaks.push((bytes.len(), bytes.len()));
    let mut start = 0;
    breaks.into_iter().filter_map(move |(ws, next)| {
        let token = &bytes[start..ws];
        start = next;
        (!token.is_empty()).then_some(token)
    })
}

/// Expected lines for `trim`: trailing whitespace and blank lines removed.
fn trimmed_lines(s: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = s.lines().map(str::trim_end).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// The index where two sequences differ and both items there (`None` past
/// an end).
type Difference<'e, 'a> = (usize, Option<&'e str>, Option<&'a [u8]>);

/// Where two sequences first differ: the index and both items there (`None`
/// past an end). Items of `actual` after the end of `expect` are allowed when
/// `ignorable`. Lazy on `actual`, so a huge output is never copied or split
/// into a list: memory stays what the capture holds.
fn first_difference<'e, 'a>(
    expect: impl IntoIterator<Item = &'e str>,
    actual: impl IntoIterator<Item = &'a [u8]>,
    eq: impl Fn(&str, &[u8]) -> bool,
    ignorable: impl Fn(&[u8]) -> bool,
) -> Option<Difference<'e, 'a>> {
    let mut actual = actual.into_iter();
    let mut i = 0;
    for e in expect {
        match actual.next() {
            Some(a) if eq(e, a) => i += 1,
            other => return Some((i, Some(e), other)),
        }
    }
    for a in actual {
        if !ignorable(a) {
            return Some((i, None, Some(a)));
        }
        i += 1;
    }
    None
}

/// "line 3: expected \"x\", got end of output".
fn describe(unit: &str, (i, e, a): Difference<'_, '_>) -> String {
    let end = || "end of output".to_string();
    let expected = e.map_or_else(end, excerpt);
    let got = a.map_or_else(end, |a| excerpt(&String::from_utf8_lossy(a)));
    format!("{unit} {}: expected {expected}, got {got}", i + 1)
}

/// Numbers are equal within the tolerance; other tokens must be identical.
/// A number is a token in the notation programs print numbers in (see
/// [`number`]): `Infinity`, `NaN` or `Nan` are words, not numbers.
fn floats_equal(expect: &str, actual: &str, tol: Tolerance) -> bool {
    if expect == actual {
        return true;
    }
    match (number(expect), number(actual)) {
        (Some(x), Some(y)) if x.is_finite() && y.is_finite() => {
            (x - y).abs() <= tol.abs.max(tol.rel * x.abs().max(y.abs()))
        }
        (Some(x), Some(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => false,
    }
}

/// The value of a token that is a number: an optional sign, digits with an
/// optional point (`1`, `-2.5`, `.5`, `3.`), an optional exponent (`1e-9`,
/// `2E+10`), or `inf`, `nan` (signed or not) spelled as Python and C print
/// them. Rust's own parser also takes `Infinity`, `NAN` and `iNf`, which
/// are words in a program's output.
fn number(token: &str) -> Option<f64> {
    let unsigned = token.strip_prefix(['+', '-']).unwrap_or(token);
    if matches!(unsigned, "inf" | "nan") {
        return token.parse().ok();
    }
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mantissa_ok =
        digits(whole) && digits(fraction) && !(whole.is_empty() && fraction.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    (mantissa_ok && exponent_ok)
        .then(|| token.parse().ok())
        .flatten()
}

/// A short, quoted, escaped piece of text for reports.
pub(crate) fn excerpt(s: &str) -> String {
    const MAX: usize = 80;
    let mut out: String = s.chars().take(MAX).collect();
    if s.chars().count() > MAX {
        out.push('…');
    }
    format!("{:?}", out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(mode: Mode, expect: &str, actual: &str) -> Option<String> {
        check_bytes(mode, expect, actual.as_bytes())
    }

    fn check_bytes(mode: Mode, expect: &str, actual: &[u8]) -> Option<String> {
        Matcher::new(mode, expect, Tolerance::default())
            .unwrap()
            .mismatch(actual)
    }

    #[test]
    fn exact_is_byte_for_byte() {
        assert!(check(Mode::Exact, "1\n2\n", "1\n2\n").is_none());
        assert!(check(Mode::Exact, "1\n2\n", "1\n2").is_some());
        assert!(check(Mode::Exact, "1\n2\n", "1 \n2\n").is_some());
        assert_eq!(
            check(Mode::Exact, "1\n2\n3\n", "1\n5\n3\n").unwrap(),
            r#"line 2: expected "2\n", got "5\n""#
        );
        assert_eq!(
            check(Mode::Exact, "a\n", "").unwrap(),
            r#"line 1: expected "a\n", got end of output"#
        );
    }

    #[test]
    fn trim_ignores_trailing_space_and_blank_lines() {
        assert!(check(Mode::Trim, "1\n2\n", "1  \n2\t\n\n\n").is_none());
        assert!(check(Mode::Trim, "1\n2", "1\n2\n").is_none());
        assert!(check(Mode::Trim, "1\n2\n", " 1\n2\n").is_some());
        assert!(check(Mode::Trim, "1\n\n2\n", "1\n2\n").is_some());
    }

    #[test]
    fn tokens_ignore_all_whitespace_layout() {
        assert!(check(Mode::Tokens, "1 2\n3", "1\n2   3\n").is_none());
        assert!(check(Mode::Tokens, "1 2 3", "1 2").is_some());
        assert_eq!(
            check(Mode::Tokens, "a b c", "a x c").unwrap(),
            r#"token 2: expected "b", got "x""#
        );
    }

    #[test]
    fn float_uses_tolerances() {
        assert!(check(Mode::Float, "0.3333333", "0.33333333333").is_none());
        assert!(check(Mode::Float, "1e9", "1000000000.5").is_none());
        assert!(check(Mode::Float, "0", "1e-12").is_none());
        assert!(check(Mode::Float, "0.5", "0.51").is_some());
        assert!(check(Mode::Float, "x 1.0", "x 1").is_none());
        assert!(check(Mode::Float, "x 1.0", "y 1").is_some());
        assert!(check(Mode::Float, "inf", "inf").is_none());
        assert!(check(Mode::Float, "inf", "1e308").is_some());
    }

    #[test]
    fn float_reads_only_numbers_as_numbers() {
        // Words that Rust's parser would take for numbers stay words.
        assert!(check(Mode::Float, "Hello Nan", "Hello NAN").is_some());
        assert!(check(Mode::Float, "Infinity", "1e999").is_some());
        assert!(check(Mode::Float, "inf", "Infinity").is_some());
        assert!(check(Mode::Float, "nan", "NaN").is_some());
        assert!(check(Mode::Float, "-inf", "-INF").is_some());
        // The notation programs print numbers in is still read as numbers.
        assert!(check(Mode::Float, "inf", "1e999").is_none());
        assert!(check(Mode::Float, "-inf", "-1e999").is_none());
        assert!(check(Mode::Float, "nan", "-nan").is_none());
        assert!(check(Mode::Float, "0.5", ".5").is_none());
        assert!(check(Mode::Float, "+3", "3.").is_none());
        assert!(check(Mode::Float, "2E+3", "2000").is_none());
        for word in ["1e", "e5", ".", "+", "1.2.3", "0x10", "1_000", "١"] {
            assert_eq!(number(word), None, "{word}");
        }
        assert_eq!(number("-1.5e-3"), Some(-0.0015));
    }

    #[test]
    fn regex_matches_the_whole_output() {
        assert!(check(Mode::Regex, r"hello \d+\n", "hello 42\n").is_none());
        assert!(check(Mode::Regex, r"hello", "hello world").is_some());
        assert!(check(Mode::Regex, r"a|b", "a").is_none());
        assert!(check(Mode::Regex, r"a|b", "ab").is_some());
        assert!(Matcher::new(Mode::Regex, "(", Tolerance::default()).is_err());
    }

    #[test]
    fn regex_cannot_escape_its_anchoring() {
        // The pattern is parsed on its own: it cannot close a group that
        // sbx opened around it, so this is not a pattern at all...
        assert!(Matcher::new(Mode::Regex, "expected)|(.*", Tolerance::default()).is_err());
        // ...and a top-level alternation is anchored as a whole.
        assert!(check(Mode::Regex, "x|.*wrong.*", "a completely wrong answer").is_none());
        assert!(check(Mode::Regex, "expected|y", "a completely wrong answer").is_some());
        assert!(check(Mode::Regex, "a|ab", "ab").is_none());
    }

    #[test]
    fn a_regex_matcher_shows_its_pattern_only() {
        let m = Matcher::new(Mode::Regex, "a+", Tolerance::default()).unwrap();
        assert_eq!(format!("{m:?}"), r#"Regex(WholeMatch("a+"))"#);
    }

    #[test]
    fn regex_in_verbose_mode_may_end_in_a_comment() {
        let pattern = "(?x) hello \\s \\d+ \\n # a greeting";
        assert!(check(Mode::Regex, pattern, "hello 42\n").is_none());
        assert!(check(Mode::Regex, pattern, "hello 42\nmore").is_some());
    }

    #[test]
    fn bytes_are_compared_not_their_lossy_decoding() {
        for mode in [Mode::Exact, Mode::Trim, Mode::Tokens, Mode::Float] {
            assert!(
                check_bytes(mode, "\u{fffd}\n", b"\xff\n").is_some(),
                "{mode:?}"
            );
            assert!(
                check_bytes(mode, "\u{fffd}\n", "\u{fffd}\n".as_bytes()).is_none(),
                "{mode:?}"
            );
        }
        assert!(check_bytes(Mode::Regex, "\u{fffd}\n", b"\xff\n").is_some());
        assert!(check_bytes(Mode::Regex, "(?s).*", b"\xff\n").is_some());
        assert!(check_bytes(Mode::Regex, "(?s-u).*", b"\xff\n").is_none());
        // Invalid bytes are shown lossily, for reading only.
        assert_eq!(
            check_bytes(Mode::Exact, "a\n", b"\xffa\n").unwrap(),
            "line 1: expected \"a\\n\", got \"\u{fffd}a\\n\""
        );
        assert_eq!(
            check_bytes(Mode::Tokens, "1 2", b"1 \xfe2").unwrap(),
            "token 2: expected \"2\", got \"\u{fffd}2\""
        );
        assert!(check_bytes(Mode::Trim, "a\n", b"a \t\r\n\n").is_none());
        assert!(check_bytes(Mode::Trim, "a\n", b"a\xff \n").is_some());
        assert!(check_bytes(Mode::Tokens, "a b", "a\u{a0}b".as_bytes()).is_none());
    }

    #[test]
    fn differences_past_the_end_of_expect() {
        assert_eq!(
            check(Mode::Exact, "a\n", "a\nb\n").unwrap(),
            r#"line 2: expected end of output, got "b\n""#
        );
        assert_eq!(
            check(Mode::Trim, "a\n", "a\n\n  \nb\n").unwrap(),
            r#"line 4: expected end of output, got "b""#
        );
        assert_eq!(
            check(Mode::Tokens, "a", "a b").unwrap(),
            r#"token 2: expected end of output, got "b""#
        );
    }

    #[test]
    fn excerpts_are_short_and_escaped() {
        assert_eq!(excerpt("a\"b\n"), r#""a\"b\n""#);
        assert_eq!(excerpt(&"x".repeat(200)).chars().count(), 83);
    }
}
