//! A command under a pseudo-terminal: `script` runs it, so that its stdout
//! and stderr are one terminal, as a user at a shell sees them.

#![expect(unreachable_pub, reason = "`pub` here means for the test modules")]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

/// `script -q -e -c CMD /dev/null` for `cmd`, with its directory and its
/// environment changes: what `script` writes to its stdout is what the
/// terminal showed (with `\r\n` line ends), and its exit code is `cmd`'s
/// (`-e`). Every word of `cmd` must be UTF-8 without a `'`.
pub fn under_script(cmd: &Command) -> Command {
    let quote = |word: &OsStr| {
        let text = std::str::from_utf8(word.as_bytes()).expect("UTF-8 argument");
        assert!(!text.contains('\''), "no quote in {text}");
        format!("'{text}'")
    };
    let mut line = quote(cmd.get_program());
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    let mut script = Command::new("script");
    script.args(["-q", "-e", "-c", &line, "/dev/null"]);
    if let Some(dir) = cmd.get_current_dir() {
        script.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => script.env(key, value),
            None => script.env_remove(key),
        };
    }
    script
}
