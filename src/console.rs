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
