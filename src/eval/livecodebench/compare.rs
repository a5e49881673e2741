//! LiveCodeBench's rule for a stdin problem's output: the whole output and
//! each of its lines stripped of whitespace (Python's `str.strip`), as many
//! lines as expected, and each line equal as text or, failing that, as a
//! sequence of `Decimal` tokens (Python's `str.split`, each read by
//! `Decimal(token)` and compared by value, with no tolerance: `1e+20`
//! equals `100000000000000000000`, `0.10` equals `0.1`, `NaN` equals
//! nothing).

/// `None` when `actual` passes against `expected`; else LiveCodeBench's
/// `error_message` for it (`Wrong answer: mismatched output length`, or
/// `Wrong answer at output_line_idx=K: GOT != WANT`).
pub(crate) fn mismatch(expected: &str, actual: &[u8]) -> Option<String> {
    let actual = String::from_utf8_lossy(actual);
    let got = stripped_lines(&actual);
    let want = stripped_lines(expected);
    if got.len() != want.len() {
        return Some(format!(
            "Wrong answer: mismatched output length ({} lines, expected {})",
            got.len(),
            want.len()
        ));
    }
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        if g == w {
            continue;
        }
        let same = match (decimals(g), decimals(w)) {
            (Some(g), Some(w)) => g == w && g.iter().all(|d| *d != Decimal::NaN),
            _ => false,
        };
        if !same {
            return Some(format!(
                "Wrong answer at output_line_idx={k}: {} != {}",
                truncate(g),
                truncate(w)
            ));
        }
    }
    None
}

/// Python's `str.isspace` (Rust's whitespace and the separators U+001C
/// to U+001F).
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `[l.strip() for l in s.strip().split("\n")]`.
fn stripped_lines(s: &str) -> Vec<&str> {
    s.trim_matches(py_space)
        .split('\n')
        .map(|l| l.trim_matches(py_space))
        .collect()
}

/// LiveCodeBench's `truncatefn` (300 characters: the first and last 150).
pub(crate) fn truncate(s: &str) -> String {
    let n = s.chars().count();
    if n <= 300 {
        return s.to_string();
    }
    let head: String = s.chars().take(150).collect();
    let tail: String = s.chars().skip(n - 150).collect();
    format!("{head}...(truncated) ...{tail}")
}

/// A `Decimal`'s value, as equality sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decimal {
    /// Zero, whatever its sign and exponent.
    Zero,
    /// `-`, the coefficient's digits without leading or trailing zeros,
    /// and the exponent of its last digit.
    Finite(bool, String, i128),
    Infinity(bool),
    /// A quiet or signalling NaN: never equal (a signalling one makes
    /// Python's comparison raise, which fails the test too).
    NaN,
}

/// Each whitespace-separated token of `line` as a `Decimal`, or `None` if
/// one is not a number Python's `Decimal` reads.
fn decimals(line: &str) -> Option<Vec<Decimal>> {
    line.split(py_space)
        .filter(|t| !t.is_empty())
        .map(decimal)
        .collect()
}

/// The largest adjusted exponent, and the smallest exponent, that
/// Python's `Decimal` (libmpdec, 64-bit) reads from a string.
const MAX_ADJUSTED: i128 = 999_999_999_999_999_999;
const MIN_EXPONENT: i128 = -1_999_999_999_999_999_997;

/// `Decimal(token)`: `[sign] (digits [. [digits]] | . digits) [e [sign]
/// digits] | [sign] inf[inity] | [sign] [s]nan[digits]`, case-insensitive,
/// with underscores ignored (as Python does). ASCII digits only (Python
/// also reads other scripts' digits).
fn decimal(token: &str) -> Option<Decimal> {
    let cleaned: String = token.chars().filter(|&c| c != '_').collect();
    let (negative, body) = match cleaned.as_bytes().first()? {
        b'-' => (true, &cleaned[1..]),
        b'+' => (false, &cleaned[1..]),
        _ => (false, &cleaned[..]),
    };
    let lower = body.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(Decimal::Infinity(negative));
    }
    for prefix in ["snan", "nan"] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            return rest
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then_some(Decimal::NaN);
        }
    }
    let (mantissa, exponent) = match lower.find('e') {
        Some(i) => (&lower[..i], Some(&lower[i + 1..])),
        None => (&lower[..], None),
    };
    let (whole, fraction) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || (whole.is_empty() && fraction.is_empty()) {
        return None;
    }
    let stated: i128 = match exponent {
        None => 0,
        Some(e) => {
            let (minus, e) = match e.as_bytes().first()? {
                b'-' => (true, &e[1..]),
                b'+' => (false, &e[1..]),
                _ => (false, e),
            };
            if e.is_empty() || !digits(e) {
                return None;
            }
            let e = e.trim_start_matches('0');
            // Beyond any exponent Python reads: refused below.
            let value: i128 = if e.len() > 30 {
                10i128.pow(30)
            } else {
                e.parse().unwrap_or(0)
            };
            if minus {
                -value
            } else {
                value
            }
        }
    };
    let exponent = stated - fraction.len() as i128;
    let all = format!("{whole}{fraction}");
    let significant = all.trim_start_matches('0');
    let length = significant.len().max(1) as i128;
    if exponent + length - 1 > MAX_ADJUSTED || exponent < MIN_EXPONENT {
        return None;
    }
    if significant.is_empty() {
        return Some(Decimal::Zero);
    }
    let coefficient = significant.trim_end_matches('0');
    let exponent = exponent + (significant.len() - coefficient.len()) as i128;
    Some(Decimal::Finite(negative, coefficient.to_string(), exponent))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(expected: &str, actual: &str) -> bool {
        mismatch(expected, actual.as_bytes()).is_none()
    }

    #[test]
    fn whole_output_and_each_line_are_stripped() {
        assert!(passes("1 2\n3\n", "  1 2  \r\n3\t\n\n\n"));
        assert!(passes("a\nb", "a\nb"));
        assert!(!passes("a\nb", "a\n\nb"), "a blank line inside counts");
        assert!(passes("x", "\u{1f}x\u{3000}"), "Python's whitespace");
    }

    #[test]
    fn line_counts_must_match() {
        let why = mismatch("1\n2", b"1\n2\n3").unwrap();
        assert!(
            why.starts_with("Wrong answer: mismatched output length"),
            "{why}"
        );
        assert!(!passes("", "0"));
        assert!(passes("", "  \n "));
    }

    #[test]
    fn numbers_compare_as_decimals_without_tolerance() {
        assert!(passes("100000000000000000000", "1e+20"));
        assert!(passes("0.1", "0.10"));
        assert!(passes("-0", "0.000"));
        assert!(passes("1 2 3", "1  2\t3"));
        assert!(
            passes("1_000", "1000"),
            "underscores are dropped, as Python does"
        );
        assert!(passes("Infinity", "inf"));
        assert!(!passes("inf", "-inf"));
        assert!(passes("nan", "nan"), "equal as text");
        assert!(!passes("nan", "NaN"), "NaN equals nothing as a Decimal");
        assert!(!passes("0.3333333333", "0.33333333333"), "more digits fail");
        assert!(!passes("1 2", "1 2 0"));
        assert!(!passes("abc", "ABC"));
        assert!(passes("abc", "abc"));
        assert!(!passes("1.0 x", "1 x"), "a word makes the line text");
        assert!(!passes("0x10", "16"));
        assert!(!passes("1", "1e"));
        assert!(passes("5.", "5"));
        assert!(passes(".5", "0.5"));
        assert!(!passes("0", "."));
    }

    #[test]
    fn exponents_python_cannot_read_are_not_numbers() {
        assert_eq!(decimal("1e1000000000000000000"), None);
        assert!(decimal("1e999999999999999999").is_some());
        assert!(decimal("1e-1999999999999999997").is_some());
        assert_eq!(decimal("1e-1999999999999999998"), None);
        assert_eq!(decimal("0e1000000000000000000"), None);
        assert!(decimal("0.0001e1000000000000000000").is_some());
        assert_eq!(decimal("1e99999999999999999999999999999999999999999"), None);
        assert_eq!(decimal("."), None);
        assert_eq!(decimal("+"), None);
        assert_eq!(decimal("1e+"), None);
    }

    #[test]
    fn messages_are_livecodebenchs() {
        assert_eq!(
            mismatch("1\n2", b"1\n3").unwrap(),
            "Wrong answer at output_line_idx=1: 3 != 2"
        );
        let long = "x".repeat(400);
        let shown = truncate(&long);
        assert_eq!(shown.chars().count(), 300 + "...(truncated) ...".len());
    }
}
