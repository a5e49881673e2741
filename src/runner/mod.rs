//! The in-container runner: sbx itself, run as the container's PID 1 by the
//! hidden subcommand `sbx __runner`, judging many cases (and candidates) in
//! one container with a full reset between them.
//!
//! - `protocol`: the framed messages between sbx and the runner;
//! - `pid1`: the runner (`sbx __runner`);
//! - `posture`: the runner's limits and scheduling, which children inherit;
//! - `reset`: killing, emptying and verifying between cases;
//! - `shebang`: the `#!` line, read by the runner (`/tmp` is noexec);
//! - `host`: sbx's side, `RunnerSession`.

pub mod host;
pub mod pid1;
pub mod posture;
pub mod protocol;
pub mod reset;
pub mod shebang;
