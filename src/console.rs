//! sbx's own stdout and stderr. Writes never panic: a closed stderr
//! (`sbx run f 2>&1 | head`) or a full disk must not turn a documented exit
//! code into a panic, and a closed stdout (`sbx eval | head`) ends quietly.

use std::io::{self, Write};

use crate::error::{Error, Result};

/// Writes one line to stderr; failures are ignored (there is nowhere left
/// to report them).
pub(crate) fn note(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Writes text to stderr as is (progress lines); failures are ignored.
pub(crate) fn progress(text: &str) {
    let mut err = io::stderr().lock();
    let _ = write!(err, "{text}").and_then(|()| err.flush());
}

/// Writes `text` to stdout. A closed stdout is not an error; any other
/// failure is, naming `what` was being written.
pub(crate) fn out(text: &str, what: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(source) => Err(Error::Write {
            what: what.to_string(),
            source,
        }),
    }
}

/// How many characters of a quoted value an error line shows.
pub(crate) const QUOTE_MAX: usize = 80;

/// `value` for one line of a message: escaped (`escape_debug`), in
/// backquotes, and cut after [`QUOTE_MAX`] characters with the full length
/// noted, so a huge id or field never fills the terminal.
pub(crate) fn quote(value: &str) -> String {
    let mut chars = value.chars();
    let shown: String = chars.by_ref().take(QUOTE_MAX).collect();
    if chars.next().is_none() {
        format!("`{}`", shown.escape_debug())
    } else {
        format!(
            "`{}`... ({} bytes in all)",
            shown.escape_debug(),
            value.len()
        )
    }
}

/// The width of the terminal on stdout, in columns: what the terminal
/// says, else `COLUMNS`, else 80. Text at a terminal is wrapped to it, so
/// that the terminal never cuts a number in two.
pub(crate) fn width() -> usize {
    let asked = rustix::termios::tcgetwinsize(io::stdout())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|&cols| cols > 0);
    asked
        .or_else(|| {
            std::env::var("COLUMNS")
                .ok()
                .and_then(|v| v.trim().parse().ok())
        })
        .filter(|&cols: &usize| cols >= 20)
        .unwrap_or(80)
}

/// `text` cut into lines of at most `width` characters at its `; `
/// separators (or, within a part, at spaces): one line stays one line
/// when it fits. A word longer than the width stays whole.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let parts: Vec<&str> = text.split("; ").collect();
    let last = parts.len().saturating_sub(1);
    for (i, part) in parts.iter().enumerate() {
        let part = if i < last {
            format!("{part};")
        } else {
            (*part).to_string()
        };
        for word in part.split(' ') {
            let used = line.chars().count();
            let wanted = word.chars().count() + usize::from(used > 0);
            if used > 0 && used + wanted > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        // A part that does not fit on the line it starts ends it.
        if i < last {
            let next = parts[i + 1].chars().count() + 2;
            if line.chars().count() + next > width {
                lines.push(std::mem::take(&mut line));
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod width_tests {
    use super::wrap;

    #[test]
    fn wraps_at_separators_and_never_inside_a_number() {
        let text = "3 passed, 1 failed in 2.0 s; mean pass@1 0.700 over 4 tasks; mean pass@5 1.000 over 4 tasks";
        assert_eq!(wrap(text, 200), [text]);
        let lines = wrap(text, 40);
        assert_eq!(
            lines,
            [
                "3 passed, 1 failed in 2.0 s;",
                "mean pass@1 0.700 over 4 tasks;",
                "mean pass@5 1.000 over 4 tasks"
            ]
        );
        assert!(wrap("averyveryverylongword", 5) == ["averyveryverylongword"]);
    }
}
