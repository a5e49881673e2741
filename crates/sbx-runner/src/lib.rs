//! The in-container runner: sbx itself, run as the container's PID 1 by the
//! hidden subcommand `sbx __runner`, judging many cases (and candidates) in
//! one container with a full reset between them. This crate is all the code
//! that runs next to the candidate, and it depends on nothing of sbx: the
//! trust boundary, auditable alone.
//!
//! - `protocol`: the framed messages between sbx and the runner (public:
//!   the host's side, in sbx, speaks it too);
//! - `exit`: the runner's own exit codes (sbx's values);
//! - `filter`: the seccomp filter the runner (and the supervisor)
//!   installs on itself before any candidate (no anonymous memory files);
//! - `supervise`: the `--supervise` wrapper, `--isolate case`'s PID 1
//!   under the CPU-time rule (the filter, the program, `account`'s clock);
//! - `pid1`: the runner (`sbx __runner`): its arguments, its own safety
//!   and its message loop;
//! - `lifecycle`: the runner's state and its whole lifecycle (load, case,
//!   reset, unload, the zygote a reset spares);
//! - `identity`: the candidates' uid and gid;
//! - `kernel_file`: reading `/proc` and `/sys` files in one call;
//! - `candidate`: the loaded candidate's files: its file in `/work` and
//!   its build, written and checked;
//! - `case`: running one case (spawn, readers, limits, its status);
//! - `probe`: the identity probe `sbx doctor` runs as a candidate
//!   (`--probe`);
//! - `posture`: the runner's limits and scheduling, which children inherit;
//! - `reset`: killing, emptying and verifying between cases (and the
//!   `--wipe` helper run as the candidate's uid);
//! - `shebang`: the `#!` line, read by the runner (`/work` is noexec);
//! - `zygote`: the root-owned Python interpreter that forks each
//!   `python3 -c` case as the candidate.
//!
//! sbx's binary dispatches its hidden subcommand [`SUBCOMMAND`] to [`main`]
//! before anything else; the same static executable is bind-mounted into
//! every runner container.

// The workspace's lints forbid it too; said here for a reader of this
// crate alone.
#![forbid(unsafe_code)]

mod account;
mod candidate;
mod case;
pub mod exit;
mod filter;
mod identity;
mod kernel_file;
mod lifecycle;
mod pid1;
mod posture;
mod probe;
pub mod protocol;
mod reset;
mod shebang;
pub mod supervise;
mod zygote;

pub use lifecycle::MAX_OUTPUT;
pub use pid1::{main, CONTROL, NO_ZYGOTE, SUBCOMMAND};
pub use probe::PROBE;
pub use zygote::LIVECODEBENCH_BLOCK;

/// The runner's version, sent in its `Hello`: sbx's own (one workspace
/// version), which the host checks.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
