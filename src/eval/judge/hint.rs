//! A hint for a candidate whose interpreter the image lacks: `gen/hello.js`
//! on a Python image failed as `start_failed: sbx runner: cannot execute
//! 'node'`. Such an entry becomes `toolchain_missing`, as a compiled
//! language's missing compiler is, naming the image, the language and the
//! polyglot image. Still an `error` (sbx could not judge it), never the
//! candidate's failure; the words matched are sbx's runner's and docker's,
//! never the candidate's output. Pure.

use crate::report::TaskResult;
use crate::spec::languages;

/// The program named by a start failure that could not find it: sbx's
/// runner's ``cannot execute `P`: ...``, docker's (runc's)
/// `exec: "P": executable file not found`, or gVisor's (runsc's)
/// `error finding executable "P" in PATH [...]: no such file or directory`.
fn missing_program(message: &str) -> Option<&str> {
    if let Some(rest) = message.split("sbx runner: cannot execute `").nth(1) {
        let (program, after) = rest.split_once('`')?;
        return (after.contains("No such file") || after.contains("not found")).then_some(program);
    }
    if let Some(rest) = message.split("error finding executable \"").nth(1) {
        let (program, after) = rest.split_once('"')?;
        return (after.starts_with(" in PATH") && after.contains("no such file or directory"))
            .then_some(program);
    }
    let rest = message.split("exec: \"").nth(1)?;
    let (program, after) = rest.split_once('"')?;
    after
        .starts_with(": executable file not found")
        .then_some(program)
}

/// Rewrites the `start_failed` result of a candidate run with
/// `interpreter` as `toolchain_missing`, with the hint, when the program
/// not found is that interpreter and it is an interpreted language's.
pub(crate) fn interpreter_missing(result: &mut TaskResult, image: &str, interpreter: &[String]) {
    if result.reason.as_deref() != Some("start_failed") {
        return;
    }
    let Some(program) = result.message.as_deref().and_then(missing_program) else {
        return;
    };
    if interpreter.first().map(String::as_str) != Some(program) {
        return;
    }
    let Some(language) = languages::table()
        .iter()
        .find(|l| !l.is_compiled() && l.run.first() == Some(&program))
    else {
        return;
    };
    result.reason = Some("toolchain_missing".into());
    result.message = Some(format!(
        "image `{image}` has no `{program}`, which {} (.{}) candidates need; use an image with it, such as sbx-polyglot:bookworm (`scripts/build-images.sh polyglot`)",
        language.name, language.extension
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;

    #[test]
    fn a_missing_interpreter_gets_the_hint() {
        for message in [
            "sbx runner: cannot execute `node`: No such file or directory (os error 2)",
            "Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"node\": executable file not found in $PATH: unknown",
            // gVisor's runsc (0.0~20221219), measured.
            "Error response from daemon: OCI runtime start failed: starting container: starting root container: starting sandbox: error finding executable \"node\" in PATH [/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin]: no such file or directory: unknown",
        ] {
            let mut r = TaskResult::error("hello", "start_failed", message.into());
            interpreter_missing(&mut r, "sbx-python:bookworm", &["node".to_string()]);
            assert_eq!(r.status, Status::Error);
            assert_eq!(r.reason.as_deref(), Some("toolchain_missing"), "{message}");
            let text = r.message.unwrap_or_default();
            assert!(text.starts_with("image `sbx-python:bookworm` has no `node`, which JavaScript (.js)"), "{text}");
            assert!(text.contains("sbx-polyglot:bookworm"), "{text}");
        }
    }

    #[test]
    fn other_failures_are_left_alone() {
        for (reason, message, interpreter) in [
            (
                "start_failed",
                "exec: \"/work/task\": permission denied: unknown",
                "node",
            ),
            (
                "start_failed",
                "sbx runner: cannot execute `frobnicate`: No such file",
                "frobnicate",
            ),
            (
                "start_failed",
                "failed to set up container networking",
                "node",
            ),
            (
                "image_missing",
                "exec: \"node\": executable file not found in $PATH",
                "node",
            ),
            (
                "start_failed",
                "error finding executable \"node\" in PATH [/bin]: permission denied",
                "node",
            ),
            // Not this candidate's interpreter.
            (
                "start_failed",
                "exec: \"node\": executable file not found in $PATH",
                "python3",
            ),
        ] {
            let mut r = TaskResult::error("t", reason, message.into());
            interpreter_missing(&mut r, "img", &[interpreter.to_string()]);
            assert_eq!(r.reason.as_deref(), Some(reason), "{message}");
            assert_eq!(r.message.as_deref(), Some(message));
        }
    }
}
