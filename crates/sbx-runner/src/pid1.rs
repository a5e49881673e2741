//! The runner: `sbx __runner`, run as the container's PID 1 (never on a
//! host: it kills every other process of its pid namespace). It speaks the
//! protocol of `protocol` on its stdin and stdout (or on the host's
//! control socket, see `CONTROL`) and runs each case as a
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

use std::ffi::OsString;
use std::fs;
use std::io::{self, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::process::{set_dumpable_behavior, DumpableBehavior, Pid};

use super::filter;
use super::identity::Identity;
use super::kernel_file;
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
/// The runner's option (after `UID:GID`) that names the host's control
/// socket: the protocol then runs over it, not over stdin and stdout.
pub const CONTROL: &str = "--control";
/// O_CLOEXEC as `/proc/self/fdinfo` prints it (octal flags).
const O_CLOEXEC: u32 = 0o2000000;

/// Runs the runner; returns the process's exit code.
pub fn main() -> i32 {
    let args: Vec<OsString> = std::env::args_os().skip(2).collect();
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
    let (zygote, control) = match options(args.get(1..).unwrap_or_default()) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("sbx runner: {e}");
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
    if let Err(e) = inherited_fds_are_cloexec() {
        let _ = write_message(&mut io::stdout().lock(), &Message::Internal(e));
        return crate::exit::ENGINE;
    }
    // The control socket when the host offers one and takes this
    // connection (close-on-exec, as every fd Rust opens); stdin and stdout
    // otherwise, which the host reads meanwhile.
    let (mut input, mut output): (Box<dyn Read>, Box<dyn Write>) =
        match control.and_then(|path| connect(&path)) {
            Some((reader, writer)) => (Box::new(BufReader::new(reader)), Box::new(writer)),
            None => (Box::new(io::stdin().lock()), Box::new(io::stdout().lock())),
        };
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

/// The host's answer that takes a connection to its control socket.
const TAKEN: u8 = b'1';
/// How long the runner waits for that answer.
const TAKEN_WAIT: Duration = Duration::from_secs(10);

/// The control socket at `path`, once the host took the connection (its
/// one byte); `None` when it cannot be reached or the host closed it.
fn connect(path: &Path) -> Option<(UnixStream, UnixStream)> {
    let stream = UnixStream::connect(path).ok()?;
    stream.set_read_timeout(Some(TAKEN_WAIT)).ok()?;
    let mut answer = [0u8; 1];
    (&stream).read_exact(&mut answer).ok()?;
    stream.set_read_timeout(None).ok()?;
    let reader = stream.try_clone().ok()?;
    (answer[0] == TAKEN).then_some((reader, stream))
}

/// The runner's options after `UID:GID`, each at most once: `--no-zygote`,
/// and `--control PATH`, the host's control socket.
fn options(args: &[OsString]) -> Result<(Slot, Option<PathBuf>), String> {
    let mut zygote = Slot::Idle;
    let mut control = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == NO_ZYGOTE && matches!(zygote, Slot::Idle) {
            zygote = Slot::Unavailable;
        } else if arg == CONTROL && control.is_none() {
            let path = rest.next().ok_or("--control needs a path")?;
            control = Some(PathBuf::from(path));
        } else {
            return Err(format!("unexpected arguments {args:?}"));
        }
    }
    Ok((zygote, control))
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

    #[test]
    fn options_are_no_zygote_and_one_control_path() {
        let os = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        let (zygote, control) = options(&[]).unwrap();
        assert!(matches!(zygote, Slot::Idle) && control.is_none());
        let (zygote, control) = options(&os(&[CONTROL, "/c/s", NO_ZYGOTE])).unwrap();
        assert!(matches!(zygote, Slot::Unavailable));
        assert_eq!(control, Some(PathBuf::from("/c/s")));
        for bad in [
            &[CONTROL][..],
            &[CONTROL, "/a", CONTROL, "/b"],
            &[NO_ZYGOTE, NO_ZYGOTE],
            &["--other"],
        ] {
            assert!(options(&os(bad)).is_err(), "{bad:?}");
        }
    }
}
