//! The runner's exit codes: sbx's own values for the same cases (sbx's
//! `exit` module checks that they agree), kept here so that the runner
//! depends on nothing of sbx.

/// Bad arguments, or not run as a container's PID 1.
pub const USAGE: i32 = 2;
/// The runner could not start or its protocol stream broke: an
/// infrastructure failure, never a verdict.
pub const ENGINE: i32 = 125;
