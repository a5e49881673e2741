//! Text that came from outside sbx (a candidate's output, a sample's file
//! name, a report's fields) made safe for a terminal: control characters,
//! the bidirectional controls that reorder what a line shows (U+202A to
//! U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C) and the line and
//! paragraph separators (U+2028, U+2029) are written as Rust escapes
//! (`\u{202e}`), so nothing can forge a line, move the cursor or make two
//! different names look alike. File names that are not UTF-8 keep their
//! bytes, escaped (`\xfe`), see [`os_name`].

use std::ffi::OsStr;

/// Whether `c` is shown escaped: a control character, a bidi control, or a
/// line or paragraph separator.
pub(crate) fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// `text` for one line of a terminal: every [`is_unsafe`] character
/// escaped, newlines and tabs included.
pub(crate) fn line(text: &str) -> String {
    escaped(text, |_| false)
}

/// [`line`], cut to `max` characters with `…` (a name or a reason quoted
/// in one line of a table).
pub(crate) fn cut(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (count, ch) in text.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        if is_unsafe(ch) {
            out.extend(ch.escape_default());
        } else {
            out.push(ch);
        }
    }
    out
}

/// `text` for a block of lines (a candidate's stderr tail): as [`line`],
/// but tabs and newlines are kept.
pub(crate) fn block(text: &str) -> String {
    escaped(text, |c| c == '\t' || c == '\n')
}

fn escaped(text: &str, keep: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_unsafe(c) && !keep(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A file name as sbx reports it (in JSON too): the name itself when it is
/// UTF-8; otherwise each byte that is not part of valid UTF-8 written
/// `\xHH` (`\xfe.py`), as Python's `backslashreplace` does, so two names
/// that differ in such bytes stay different and the form is stable.
pub(crate) fn os_name(name: &OsStr) -> String {
    let bytes = name.as_encoded_bytes();
    if let Ok(text) = std::str::from_utf8(bytes) {
        return text.to_string();
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// A path for one line of a message: [`os_name`] of its bytes, then
/// [`line`].
pub(crate) fn path(path: &std::path::Path) -> String {
    line(&os_name(path.as_os_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn cut_escapes_and_cuts() {
        assert_eq!(cut("a\nb\x1b", 10), "a\\nb\\u{1b}");
        assert_eq!(cut("abcdef", 3), "abc…");
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("ééé", 2), "éé…");
    }

    #[test]
    fn forged_lines_and_bidi_are_escaped() {
        assert_eq!(line("s\nPASS  fake.py"), "s\\nPASS  fake.py");
        assert_eq!(line("a\u{202e}yp.exe"), "a\\u{202e}yp.exe");
        assert_eq!(line("a\u{2028}b\u{2029}"), "a\\u{2028}b\\u{2029}");
        assert_eq!(
            line("\u{200e}\u{200f}\u{2066}\u{2069}"),
            "\\u{200e}\\u{200f}\\u{2066}\\u{2069}"
        );
        assert_eq!(line("\x1b[2J\t"), "\\u{1b}[2J\\t");
        assert_eq!(block("a\tb\nc\x1b\u{202e}"), "a\tb\nc\\u{1b}\\u{202e}");
        // Ordinary text, accents and other scripts pass as they are.
        assert_eq!(line("héllo wörld 日本"), "héllo wörld 日本");
    }

    #[test]
    fn names_that_are_not_utf8_keep_their_bytes() {
        let fe = os_name(OsStr::from_bytes(b"\xfe.py"));
        let ff = os_name(OsStr::from_bytes(b"\xff.py"));
        assert_eq!(fe, "\\xfe.py");
        assert_eq!(ff, "\\xff.py");
        assert_eq!(
            os_name(OsStr::from_bytes(b"caf\xc3\xa9\xc3.py")),
            "café\\xc3.py"
        );
        assert_eq!(os_name(OsStr::new("plain.py")), "plain.py");
        assert_eq!(path(std::path::Path::new("a/b\nc")), "a/b\\nc");
    }
}
