//! Exit codes: the one table of them, shared by every subcommand.
//!
//! `sbx run` keeps the seed script's contract (the program's code passes
//! through, 124 on timeout, 64 for a missing file); `sbx eval` exits 0 when
//! every task passed, 1 when any did not, 2 for usage or setup errors;
//! `sbx diff` exits 0 without regressions, 1 with, 2 for unreadable input.

/// Everything passed (eval) or the program exited 0 (run).
pub(crate) const SUCCESS: i32 = 0;
/// `eval`: at least one task failed or had no candidate.
pub(crate) const NOT_ALL_PASSED: i32 = 1;
/// `diff`: NEW has at least one pass→fail regression.
pub(crate) const REGRESSED: i32 = 1;
/// Usage error: bad arguments, bad tasks file, invalid image reference;
/// for `eval` also any task that sbx could not judge (status `error`).
pub(crate) const USAGE: i32 = 2;
/// `run`: FILE is not a regular file (the seed script's code).
pub(crate) const NO_SUCH_FILE: i32 = 64;
/// `run`: the program hit the timeout and was killed (GNU timeout's code).
pub(crate) const TIMEOUT: i32 = 124;
/// The engine could not run the container: daemon unreachable, image
/// missing, docker refused the request.
pub(crate) const ENGINE: i32 = 125;
/// `run`: TIMEOUT is one GNU `timeout` refuses (its own code, as the seed
/// script exits); the same number as [`ENGINE`].
pub(crate) const TIMEOUT_REFUSED: i32 = 125;
/// The command in the container could not be executed.
pub(crate) const CANNOT_EXECUTE: i32 = 126;
/// The docker CLI itself was not found (or the command in the container).
pub(crate) const NOT_FOUND: i32 = 127;
// SIGINT and SIGTERM are named for the table; `for_signal` computes them.
/// Interrupted by SIGINT, after cleanup.
#[allow(dead_code)]
pub(crate) const SIGINT: i32 = 130;
/// Interrupted by SIGTERM, after cleanup.
#[allow(dead_code)]
pub(crate) const SIGTERM: i32 = 143;

/// The exit code for a process that was stopped by `signal`.
pub(crate) fn for_signal(signal: i32) -> i32 {
    128 + signal
}
