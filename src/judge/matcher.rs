//! Output comparison modes: pure functions from expected and actual output
//! to a verdict, with a short description of the first difference.

use crate::spec::CompareMode as Mode;
use regex::Regex;

/// Tolerances of `Mode::Float`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
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
pub enum Matcher {
    Exact(String),
    Trim(String),
    Tokens(String),
    Float(String, Tolerance),
    Regex(Regex),
}

impl Matcher {
    /// Builds the matcher; an invalid regex is an error naming the problem.
    pub fn new(mode: Mode, expect: &str, tolerance: Tolerance) -> Result<Matcher, String> {
        Ok(match mode {
            Mode::Exact => Matcher::Exact(expect.to_string()),
            Mode::Trim => Matcher::Trim(expect.to_string()),
            Mode::Tokens => Matcher::Tokens(expect.to_string()),
            Mode::Float => Matcher::Float(expect.to_string(), tolerance),
            Mode::Regex => {
                let whole = format!(r"\A(?:{expect})\z");
                let re = regex::RegexBuilder::new(&whole)
                    .size_limit(10 << 20)
                    .build()
                    .map_err(|e| format!("invalid regex: {}", first_line(&e.to_string())))?;
                Matcher::Regex(re)
            }
        })
    }

    /// `None` when `actual` matches; otherwise a short description of the
    /// first difference, for the report.
    pub fn mismatch(&self, actual: &str) -> Option<String> {
        match self {
            Matcher::Exact(expect) => first_difference(
                expect.split_inclusive('\n'),
                actual.split_inclusive('\n'),
                |e, a| e == a,
                |_| false,
            )
            .map(|d| describe("line", d)),
            Matcher::Trim(expect) => first_difference(
                trimmed_lines(expect),
                actual.lines().map(str::trim_end),
                |e, a| e == a,
                str::is_empty,
            )
            .map(|d| describe("line", d)),
            Matcher::Tokens(expect) => first_difference(
                expect.split_whitespace(),
                actual.split_whitespace(),
                |e, a| e == a,
                |_| false,
            )
            .map(|d| describe("token", d)),
            Matcher::Float(expect, tol) => first_difference(
                expect.split_whitespace(),
                actual.split_whitespace(),
                |e, a| floats_equal(e, a, *tol),
                |_| false,
            )
            .map(|d| describe("token", d)),
            Matcher::Regex(re) => {
                if re.is_match(actual) {
                    None
                } else {
                    Some(format!(
                        "output does not match /{}/; got {}",
                        excerpt(
                            re.as_str()
                                .trim_start_matches(r"\A(?:")
                                .trim_end_matches(r")\z")
                        ),
                        excerpt(actual)
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

/// Expected lines for `trim`: trailing whitespace and blank lines removed.
fn trimmed_lines(s: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = s.lines().map(str::trim_end).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// Where two sequences first differ: the index and both items there (`None`
/// past an end). Items of `actual` after the end of `expect` are allowed when
/// `ignorable`. Lazy on `actual`, so a huge output is never copied or split
/// into a list: memory stays what the capture holds.
fn first_difference<'e, 'a>(
    expect: impl IntoIterator<Item = &'e str>,
    actual: impl IntoIterator<Item = &'a str>,
    eq: impl Fn(&str, &str) -> bool,
    ignorable: impl Fn(&str) -> bool,
) -> Option<(usize, Option<&'e str>, Option<&'a str>)> {
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
fn describe(unit: &str, (i, e, a): (usize, Option<&str>, Option<&str>)) -> String {
    let show = |item: Option<&str>| item.map_or_else(|| "end of output".to_string(), excerpt);
    format!("{unit} {}: expected {}, got {}", i + 1, show(e), show(a))
}

/// Numbers are equal within the tolerance; other tokens must be identical.
fn floats_equal(expect: &str, actual: &str, tol: Tolerance) -> bool {
    if expect == actual {
        return true;
    }
    match (expect.parse::<f64>(), actual.parse::<f64>()) {
        (Ok(x), Ok(y)) if x.is_finite() && y.is_finite() => {
            (x - y).abs() <= tol.abs.max(tol.rel * x.abs().max(y.abs()))
        }
        (Ok(x), Ok(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => false,
    }
}

/// A short, quoted, escaped piece of text for reports.
pub fn excerpt(s: &str) -> String {
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
    fn regex_matches_the_whole_output() {
        assert!(check(Mode::Regex, r"hello \d+\n", "hello 42\n").is_none());
        assert!(check(Mode::Regex, r"hello", "hello world").is_some());
        assert!(check(Mode::Regex, r"a|b", "a").is_none());
        assert!(check(Mode::Regex, r"a|b", "ab").is_some());
        assert!(Matcher::new(Mode::Regex, "(", Tolerance::default()).is_err());
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
