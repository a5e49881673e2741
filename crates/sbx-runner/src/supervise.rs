//! The case container's supervisor (`--isolate case` in `sbx eval`): `sbx
//! __runner --supervise UID:GID LIMIT_MS PROGRAM ARGS...` as the
//! container's PID 1 judges time by the runner modes' rule (see
//! `account`): the candidate's CPU time over all its processes, with the
//! wall-clock backstop that does not count waits for a CPU.
//!
//! It is root with the runner's three capabilities (`SETUID`, `SETGID`,
//! `KILL`), as a runner is, and the program runs under the candidates'
//! `UID:GID` with no group and no capability (std's `uid`/`gid`: in the
//! child, `setgroups(0)`, `setgid`, `setuid`, then `exec`). So the program
//! cannot signal, trace, renice, reschedule or `prlimit` its supervisor:
//! the kernel refuses each across uids. The supervisor makes itself
//! non-dumpable, installs the seccomp filter (which the program inherits),
//! and spawns the program with the container's stdin, stdout and stderr
//! (nothing is copied). It samples the candidate as the runner does and
//! reaps every process that ends. When the program ends, or its time is
//! up, it kills every other process of the container (`kill(-1)`, with
//! `KILL`) and reaps them, then writes its one line to stderr and exits:
//! with the program's exit code (128+N for signal N), or with [`STOPPED`]
//! when it stopped the program.
//!
//! Its line is the last of stderr, on a line of its own (a newline
//! first): `sbx runner: TOKEN: end WHY cpu_ms=N wait_ms=N`, `WHY` one of
//! `exit`, `timeout`, `wall_timeout`; its own failure before the program
//! ran is `sbx runner: TOKEN: MESSAGE` with exit 125-127, as `--exec`'s.
//! `TOKEN` is the host's secret, fresh for the container, given in the
//! environment variable [`TOKEN_ENV`], which the program's environment
//! does not get; PID 1 is not dumpable, so its `/proc/1/environ` is not
//! the program's to read, and its argv holds no token. A program cannot
//! write the line, nor the start failure, that the host believes.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rustix::process::{wait, WaitOptions};

use crate::account::{self, Meter, Over, Usage};
use crate::identity::Identity;

/// The argument that makes the runner a supervisor.
pub const SUPERVISE: &str = "--supervise";

/// The environment variable that carries the host's secret token.
pub const TOKEN_ENV: &str = "SBX_RUNNER_TOKEN";

/// The supervisor's exit code when it stopped the program for time.
pub const STOPPED: i32 = 124;

/// How often the supervisor looks for ended processes.
const POLL: Duration = Duration::from_millis(2);

/// How a supervised program ended, as its line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// It exited (or was killed by a signal) on its own.
    Exit,
    /// Its CPU time reached the limit, or the backstop while computing.
    Timeout,
    /// The backstop, while mostly not computing.
    WallTimeout,
}

impl Why {
    /// The word of the line (and the report's reason for a stop).
    pub fn word(self) -> &'static str {
        match self {
            Why::Exit => "exit",
            Why::Timeout => "timeout",
            Why::WallTimeout => "wall_timeout",
        }
    }
}

/// The supervisor's last line, read by the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct End {
    pub why: Why,
    pub cpu_ms: u64,
    pub wait_ms: u64,
}

/// The line the supervisor writes (without its leading newline).
pub fn end_line(token: &str, end: &End) -> String {
    format!(
        "sbx runner: {token}: end {} cpu_ms={} wait_ms={}\n",
        end.why.word(),
        end.cpu_ms,
        end.wait_ms
    )
}

/// The supervisor's line at the very end of `stderr`, if it is there with
/// `token`: the line, and the length of `stderr` without it (and without
/// the newline written before it).
pub fn parse_end(stderr: &[u8], token: &str) -> Option<(End, usize)> {
    let body = stderr.strip_suffix(b"\n")?;
    let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = std::str::from_utf8(&body[start..]).ok()?;
    let rest = line.strip_prefix(&format!("sbx runner: {token}: end "))?;
    let mut words = rest.split(' ');
    let why = match words.next()? {
        "exit" => Why::Exit,
        "timeout" => Why::Timeout,
        "wall_timeout" => Why::WallTimeout,
        _ => return None,
    };
    let cpu_ms = words.next()?.strip_prefix("cpu_ms=")?.parse().ok()?;
    let wait_ms = words.next()?.strip_prefix("wait_ms=")?.parse().ok()?;
    if words.next().is_some() {
        return None;
    }
    // The newline the supervisor wrote first, when there is one.
    let kept = start.saturating_sub(1);
    Some((
        End {
            why,
            cpu_ms,
            wait_ms,
        },
        kept,
    ))
}

/// The supervisor: returns its exit code.
pub(crate) fn supervise_main(args: &[OsString]) -> i32 {
    let Some(token) = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()) else {
        eprintln!("sbx runner: {SUPERVISE} needs its token in {TOKEN_ENV}");
        return crate::exit::USAGE;
    };
    let [identity, limit_ms, program, rest @ ..] = args else {
        eprintln!("sbx runner: {token}: {SUPERVISE} needs UID:GID, a limit and a program");
        return crate::exit::USAGE;
    };
    let identity = match Identity::from_args(identity.to_str()) {
        Ok(identity) => identity,
        Err(e) => {
            eprintln!("sbx runner: {token}: {SUPERVISE}: {e}");
            return crate::exit::USAGE;
        }
    };
    let Some(limit) = limit_ms
        .to_str()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
    else {
        eprintln!("sbx runner: {token}: {SUPERVISE}: not a limit in ms");
        return crate::exit::USAGE;
    };
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        eprintln!("sbx runner: {token}: cannot make the supervisor non-dumpable: {e}");
        return crate::exit::ENGINE;
    }
    if let Err(e) = crate::filter::install() {
        eprintln!("sbx runner: {token}: {e}");
        return crate::exit::ENGINE;
    }
    let usage = Usage::find();
    let mut meter = Meter::start(usage.as_ref(), None);
    let child = match Command::new(program)
        .args(rest)
        .env_remove(TOKEN_ENV)
        .uid(identity.uid)
        .gid(identity.gid)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "sbx runner: {token}: cannot execute `{}`: {e}",
                program.to_string_lossy()
            );
            return match e.kind() {
                std::io::ErrorKind::NotFound => 127,
                _ => 126,
            };
        }
    };
    let start = Instant::now();
    meter.started(start);
    let pid = child.id();
    // Reaped below, by any-child waits: never `child.wait()`.
    drop(child);
    let mut next_sample = start + account::SAMPLE;
    let mut why = Why::Exit;
    let mut status: Option<ExitStatus> = None;
    while status.is_none() {
        status = reap(pid);
        if status.is_some() {
            break;
        }
        let now = Instant::now();
        if now >= next_sample {
            meter.sample(now);
            next_sample = now + account::SAMPLE;
            match meter.over(limit) {
                Some(Over::Cpu) => why = Why::Timeout,
                Some(Over::Wall) => why = Why::WallTimeout,
                None => {}
            }
            if why != Why::Exit {
                break;
            }
        }
        thread::sleep(POLL);
    }
    // The fallbacks' last look before the others die (the cgroup needs
    // none).
    if !meter.by_cgroup() {
        meter.sample(Instant::now());
    }
    let cpu = meter.cpu(Duration::ZERO);
    let why = at_exit(why, meter.cgroup_lost(), cpu, limit);
    kill_all(pid, &mut status);
    let end = End {
        why,
        cpu_ms: millis(cpu),
        wait_ms: millis(meter.waited()),
    };
    eprint!("\n{}", end_line(&token, &end));
    match (why, status) {
        (Why::Exit, Some(status)) => exit_code(status),
        _ => STOPPED,
    }
}

/// What the program gets once it ended or was stopped: a count the
/// supervisor can no longer read is `timeout`, and so is a CPU time past
/// the limit by more than `EXIT_SLACK` that samples a supervisor kept
/// from the CPU (by the program's own processes, in its cgroup) missed.
fn at_exit(why: Why, lost: bool, cpu: Duration, limit: Duration) -> Why {
    match why {
        Why::Exit if lost || cpu >= limit.saturating_add(EXIT_SLACK) => Why::Timeout,
        other => other,
    }
}

/// See `at_exit`: a few samples' worth, so that a program that ends just
/// past its limit between two samples is judged as the runner judges it.
const EXIT_SLACK: Duration = Duration::from_millis(100);

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Reaps every ended child without blocking; the program's status if it
/// was among them.
fn reap(program: u32) -> Option<ExitStatus> {
    let mut found = None;
    loop {
        match wait(WaitOptions::NOHANG) {
            // A stop of a program traced by PID 1 (`PTRACE_TRACEME` needs
            // no privilege) is reported to this wait too: a stop is never
            // its end.
            Ok(Some((_, status))) if status.stopped() => {}
            Ok(Some((pid, status))) => {
                if pid.as_raw_nonzero().get().unsigned_abs() == program {
                    found = Some(ExitStatus::from_raw(status.as_raw()));
                }
            }
            Err(e) if e == rustix::io::Errno::INTR => {}
            // None: children left, none ended; ECHILD: none left.
            _ => return found,
        }
    }
}

/// Kills every other process of the container and reaps them all, as the
/// end of a container's program would; records the program's status if
/// it is reaped here.
fn kill_all(program: u32, status: &mut Option<ExitStatus>) {
    loop {
        // ESRCH: nobody left. From PID 1, -1 is every other process.
        let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
        loop {
            match wait(WaitOptions::empty()) {
                // A traced program's stop; the kill ends it next.
                Ok(Some((_, s))) if s.stopped() => {}
                Ok(Some((pid, s))) => {
                    if pid.as_raw_nonzero().get().unsigned_abs() == program {
                        *status = Some(ExitStatus::from_raw(s.as_raw()));
                    }
                }
                Err(e) if e == rustix::io::Errno::INTR => {}
                Err(_) => return,
                // (A blocking wait returns a child or an error.)
                Ok(None) => break,
            }
            // A fork that raced the kill is killed on the next round.
            let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
        }
    }
}

/// A container's exit code for a program's status: its code, or 128+N
/// for signal N.
fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => crate::exit::ENGINE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_line_round_trips_and_only_with_its_token_at_the_end() {
        let end = End {
            why: Why::WallTimeout,
            cpu_ms: 12,
            wait_ms: 3400,
        };
        let line = end_line("tok", &end);
        assert_eq!(
            line,
            "sbx runner: tok: end wall_timeout cpu_ms=12 wait_ms=3400\n"
        );
        // After output that ended its line, and after output that did not.
        let stderr = format!("oops\n\n{line}");
        assert_eq!(parse_end(stderr.as_bytes(), "tok"), Some((end, 5)));
        assert_eq!(&stderr[..5], "oops\n");
        let stderr = format!("oops\n{line}");
        assert_eq!(parse_end(stderr.as_bytes(), "tok"), Some((end, 4)));
        let stderr = format!("\n{line}");
        assert_eq!(parse_end(stderr.as_bytes(), "tok"), Some((end, 0)));
        assert_eq!(parse_end(line.as_bytes(), "tok"), Some((end, 0)));
        // Another token, a line that is not the last, a cut line, junk.
        assert_eq!(parse_end(stderr.as_bytes(), "other"), None);
        assert_eq!(parse_end(format!("{line}more\n").as_bytes(), "tok"), None);
        assert_eq!(parse_end(line.trim_end().as_bytes(), "tok"), None);
        for bad in [
            "sbx runner: tok: end slow cpu_ms=1 wait_ms=2\n",
            "sbx runner: tok: end exit cpu_ms=1\n",
            "sbx runner: tok: end exit cpu_ms=1 wait_ms=2 x\n",
            "sbx runner: tok: end exit cpu_ms=-1 wait_ms=2\n",
            "sbx runner: tok: cannot execute `x`\n",
        ] {
            assert_eq!(parse_end(bad.as_bytes(), "tok"), None, "{bad}");
        }
        for why in [Why::Exit, Why::Timeout] {
            let end = End { why, ..end };
            let line = end_line("t", &end);
            assert_eq!(parse_end(line.as_bytes(), "t"), Some((end, 0)));
        }
    }

    #[test]
    fn a_hindered_supervisor_still_judges_at_exit() {
        let ms = Duration::from_millis;
        let t = ms(2000);
        assert_eq!(at_exit(Why::Exit, false, ms(1900), t), Why::Exit);
        assert_eq!(at_exit(Why::Exit, false, ms(2050), t), Why::Exit);
        assert_eq!(at_exit(Why::Exit, false, ms(2100), t), Why::Timeout);
        assert_eq!(at_exit(Why::Exit, true, ms(10), t), Why::Timeout);
        let wall = Why::WallTimeout;
        assert_eq!(at_exit(wall, true, ms(10), t), wall);
    }

    #[test]
    fn exit_codes_are_a_containers() {
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
        assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
    }
}
