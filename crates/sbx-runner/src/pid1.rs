//! The runner: `sbx __runner`, run as the container's PID 1 (never on a
//! host: it kills every other process of its pid namespace). It speaks the
//! protocol of `protocol` on its stdin and stdout and runs each case as a
//! fresh process. This file reads its arguments, puts its own safety in
//! place and passes each message to the `Runner` (`lifecycle`), which owns
//! every state between messages.
//!
//! Its own safety, before it reads anything:
//! - it refuses to run unless it is PID 1;
//! - it installs its seccomp filter (see `filter`): every process after it
//!   inherits it;
//! - `prctl(PR_SET_DUMPABLE, 0)`: a candidate running as the same user can
//!   then neither `ptrace` it nor open `/proc/1/fd/*` (its protocol pipes);
//! - it installs no signal handler (sbx's own handlers are installed only
//!   after this subcommand is dispatched), so signals sent to PID 1 from
//!   inside the container are dropped by the kernel;
//! - children get fresh pipes as fds 0, 1 and 2, and every other fd of the
//!   runner is close-on-exec (checked at start).

use crate::kernel_file;
use std::fs;
use std::io;

use rustix::process::{set_dumpable_behavior, DumpableBehavior, Pid};

use super::filter;
use super::identity::Identity;
use super::lifecycle::Runner;
use super::probe::{probe, PROBE};
use super::protocol::{read_message, write_message, Message};
use super::reset;
use super::zygote::Slot;

/// The hidden subcommand that makes sbx the runner.
pub const SUBCOMMAND: &str = "__runner";
/// The runner's option (after `UID:GID`) that keeps the zygote off: every
/// case is then spawned directly.
pub const NO_ZYGOTE: &str = "--no-zygote";
/// O_CLOEXEC as `/proc/self/fdinfo` prints it (octal flags).
const O_CLOEXEC: u32 = 0o2000000;

/// Runs the runner; returns the process's exit code.
pub fn main() -> i32 {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
    if args.first().is_some_and(|a| a == reset::WIPE) {
        return reset::wipe_main(&args[1..]);
    }
    if args.first().is_some_and(|a| a == PROBE) {
        print!("{}", probe());
        return 0;
    }
    if args
        .first()
        .is_some_and(|a| a == crate::supervise::SUPERVISE)
    {
        return crate::supervise::supervise_main(&args[1..]);
    }
    if rustix::process::getpid() != Pid::INIT {
        eprintln!(
            "sbx: `{SUBCOMMAND}` runs only as a container's PID 1 (it kills every other process)"
        );
        return crate::exit::USAGE;
    }
    let identity = match Identity::from_args(args.first().and_then(|a| a.to_str())) {
        Ok(identity) => identity,
        Err(e) => {
            eprintln!("sbx runner: {e}");
            return crate::exit::USAGE;
        }
    };
    let zygote = match args.get(1..).unwrap_or_default() {
        [] => Slot::Idle,
        [flag] if flag == NO_ZYGOTE => Slot::Unavailable,
        other => {
            eprintln!("sbx runner: unexpected arguments {other:?}");
            return crate::exit::USAGE;
        }
    };
    // Before anything is started: every process after it inherits it.
    if let Err(e) = filter::install() {
        eprintln!("sbx runner: {e}");
        return crate::exit::ENGINE;
    }
    if let Err(e) = set_dumpable_behavior(DumpableBehavior::NotDumpable) {
        eprintln!("sbx runner: prctl(PR_SET_DUMPABLE, 0) failed: {e}");
        return crate::exit::ENGINE;
    }
    let mut input = io::stdin().lock();
    let mut output = io::stdout().lock();
    if let Err(e) = inherited_fds_are_cloexec() {
        let _ = write_message(&mut output, &Message::Internal(e));
        return crate::exit::ENGINE;
    }
    let mut runner = match Runner::start(identity, zygote, SUBCOMMAND) {
        Ok(runner) => runner,
        Err(e) => {
            let _ = write_message(&mut output, &Message::Internal(e));
            return crate::exit::ENGINE;
        }
    };
    if write_message(&mut output, &runner.hello()).is_err() {
        return crate::exit::ENGINE;
    }
    loop {
        let message = match read_message(&mut input) {
            Ok(Some(message)) => message,
            // The host closed our stdin: nothing more to do.
            Ok(None) => return 0,
            Err(e) => {
                let _ = write_message(&mut output, &Message::Internal(format!("framing: {e}")));
                return crate::exit::ENGINE;
            }
        };
        let reply = match message {
            Message::Bye => return 0,
            Message::Load(candidate) => runner.load(candidate),
            Message::Case(case) => runner.case(&case),
            Message::Reset => runner.reset(),
            Message::Unload => runner.unload(),
            Message::Steps(steps) => runner.steps(steps),
            other => Message::Internal(format!("unexpected message {}", other.name())),
        };
        if write_message(&mut output, &reply).is_err() {
            return crate::exit::ENGINE;
        }
    }
}

/// Every fd above 2 must be close-on-exec, so that no child inherits the
/// runner's own files (Rust opens everything so; this checks what the
/// engine handed over).
fn inherited_fds_are_cloexec() -> Result<(), String> {
    let entries = fs::read_dir("/proc/self/fd").map_err(|e| format!("/proc/self/fd: {e}"))?;
    for entry in entries.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if fd <= 2 {
            continue;
        }
        // The directory being read is gone by the time fdinfo is asked.
        let Ok(info) = kernel_file::read(format!("/proc/self/fdinfo/{fd}")) else {
            continue;
        };
        let info = String::from_utf8_lossy(&info);
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            .unwrap_or(0);
        if flags & O_CLOEXEC == 0 {
            return Err(format!(
                "fd {fd} is inherited without close-on-exec; refusing to run candidates"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_to_run_unless_pid_1() {
        assert_ne!(rustix::process::getpid(), Pid::INIT);
        assert_eq!(main(), crate::exit::USAGE);
    }
}
