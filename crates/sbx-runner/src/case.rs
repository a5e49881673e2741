//! Running one case: the program spawned as the candidate with fresh
//! pipes, its stdin written and its output drained on the runner's worker
//! threads, its limits applied and watched, and its record decided.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{prlimit, Pid, Resource, Rlimit};
use wait4::Wait4;

use super::account::{self, Meter, Over, Usage};
use super::candidate::Loaded;
use super::identity::{as_real_identity, Identity};
use super::kernel_file;
use super::protocol::{Case, CaseResult, CaseStatus, TimeRule, STDERR_TAIL};
use super::reset::{self, Spare};
use super::zygote::{self, Reaped, Slot};

/// How often the case loop looks at the output flag and the clock.
const POLL: Duration = Duration::from_millis(5);
/// How long a killed child may take to be reaped, and readers to see EOF.
const GRACE: Duration = Duration::from_secs(5);

/// The runner's own OOM score.
const OOM_SCORE_SELF: &str = "/proc/self/oom_score_adj";

/// The memory cgroup's OOM-kill counter file, if this container can read it.
fn oom_counter_path() -> Option<PathBuf> {
    [
        "/sys/fs/cgroup/memory/memory.oom_control",
        "/sys/fs/cgroup/memory.events",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| read_oom_kills(p).is_some())
}

/// The `oom_kill N` counter of a cgroup v1 `memory.oom_control` or v2
/// `memory.events` file.
fn read_oom_kills(path: &Path) -> Option<u64> {
    parse_oom_kills(&String::from_utf8_lossy(&kernel_file::read(path).ok()?))
}

fn parse_oom_kills(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse().ok())
}

/// What every case runs with, set up once when the runner starts.
pub(crate) struct Setup {
    /// The candidates' uid and gid.
    identity: Identity,
    lanes: Lanes,
    /// The memory cgroup's OOM-kill counter file, if it can be read.
    oom_counter: Option<PathBuf>,
    /// The container's CPU usage file, if it can be read.
    usage: Option<Usage>,
}

impl Setup {
    /// Starts the worker threads and finds the container's counters.
    pub(crate) fn start(identity: Identity) -> io::Result<Setup> {
        Ok(Setup {
            identity,
            lanes: Lanes::start()?,
            oom_counter: oom_counter_path(),
            usage: Usage::find(),
        })
    }

    pub(crate) fn identity(&self) -> Identity {
        self.identity
    }

    /// Whether a case can tell an OOM kill (the runner's `Hello` says so).
    pub(crate) fn reads_oom_kills(&self) -> bool {
        self.oom_counter.is_some()
    }
}

/// A job for a worker thread.
type Job = Box<dyn FnOnce() + Send>;

/// The runner's worker threads, started once: one writes a case's stdin,
/// two drain its stdout and stderr, one waits for the program.
struct Lanes {
    stdin: mpsc::Sender<Job>,
    stdout: mpsc::Sender<Job>,
    stderr: mpsc::Sender<Job>,
    waiter: mpsc::Sender<Job>,
}

impl Lanes {
    fn start() -> io::Result<Lanes> {
        fn lane(name: &str) -> io::Result<mpsc::Sender<Job>> {
            let (tx, rx) = mpsc::channel::<Job>();
            thread::Builder::new().name(name.into()).spawn(move || {
                for job in rx {
                    job();
                }
            })?;
            Ok(tx)
        }
        Ok(Lanes {
            stdin: lane("stdin")?,
            stdout: lane("stdout")?,
            stderr: lane("stderr")?,
            waiter: lane("waiter")?,
        })
    }
}

fn submit(lane: &mpsc::Sender<Job>, job: Job) -> Result<(), String> {
    lane.send(job)
        .map_err(|_| "a worker thread of the runner died".to_string())
}

/// How the runner saw the case end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Exited,
    TimedOut,
    /// `TimeRule::Cpu`'s backstop, while the candidate was mostly not
    /// computing.
    WallTimedOut,
    OutputLimit,
}

/// What the readers keep of one stream.
#[derive(Debug, Default)]
struct Kept {
    bytes: Vec<u8>,
    total: u64,
}

/// The OOM score every program starts with: the OOM killer's first choice.
const PROGRAM_OOM_SCORE: &str = "1000";

/// A started program: its pipes and how to wait for its end.
struct Started {
    stdin: Box<dyn Write + Send>,
    stdout: Box<dyn Read + Send>,
    stderr: Box<dyn Read + Send>,
    wait: Box<dyn FnOnce() -> Result<Reaped, Waited> + Send>,
}

/// Why the end of a program is unknown.
enum Waited {
    /// `wait4` on the runner's own child failed.
    Failed(String),
    /// The zygote that forked it is gone (the OOM killer's choice, for
    /// one): it may have been the case's doing only if memory ran out.
    ZygoteLost(String),
}

/// Runs `case` of the `loaded` candidate, whose file is written: forked
/// by the zygote if it runs this candidate's interpreter, spawned directly
/// otherwise (`zygote` is set back to `Idle` or `Unavailable` when it
/// fails). `Err` is the runner's own failure, never a verdict.
pub(crate) fn run_case(
    setup: &Setup,
    zygote: &mut Slot,
    loaded: &Loaded,
    case: &Case,
) -> Result<CaseResult, String> {
    let (identity, lanes) = (setup.identity, &setup.lanes);
    let (oom_counter, usage) = (setup.oom_counter.as_deref(), setup.usage.as_ref());
    let file = &loaded.path();
    let oom_before = oom_counter.and_then(read_oom_kills);
    // Counting starts before the program does: its start is its own.
    let mut meter = match case.rule {
        TimeRule::Cpu => Some(Meter::start(usage, zygote.pid())),
        TimeRule::Wall => None,
    };
    let forked = match (
        zygote::eligible(&loaded.interpreter, loaded.build.is_some(), &loaded.program),
        &mut *zygote,
    ) {
        (Some((program, form)), Slot::Running(z)) if z.program == program => {
            match z.spawn(identity, case.cpu_limit_s, form, file) {
                Ok(spawned) => Some(spawned),
                Err(_) => {
                    // Nothing of the candidate ran: spawn it directly, as
                    // every case in this container from now on.
                    *zygote = Slot::Unavailable;
                    reset::kill_others(None);
                    None
                }
            }
        }
        _ => None,
    };
    let spare = zygote.pid().map(|pid| Spare {
        zygote: pid,
        uid: identity.uid,
    });
    let was_forked = forked.is_some();
    let started = match forked {
        Some(spawned) => {
            let waiter = spawned.waiter;
            Started {
                stdin: Box::new(spawned.stdin),
                stdout: Box::new(spawned.stdout),
                stderr: Box::new(spawned.stderr),
                wait: Box::new(move || waiter.wait().map_err(Waited::ZygoteLost)),
            }
        }
        None => match spawn(identity, loaded, file, case, spare)? {
            Ok(started) => started,
            Err(not_started) => return Ok(not_started),
        },
    };
    let start = Instant::now();
    if let Some(meter) = &mut meter {
        meter.started(start);
    }
    let max = usize::try_from(case.max_output).unwrap_or(usize::MAX);
    let over = Arc::new(AtomicBool::new(false));
    let Started {
        stdin: mut stdin_pipe,
        stdout: stdout_pipe,
        stderr: stderr_pipe,
        wait,
    } = started;
    let stdin_bytes = case.stdin.clone();
    let (done_tx, done_rx) = mpsc::channel();
    let writer_done = done_tx.clone();
    let jobs = 3;
    let out = Arc::new(Mutex::new(Kept::default()));
    let err = Arc::new(Mutex::new(Kept::default()));
    let (wait_tx, waited) = mpsc::channel();
    let started = submit(
        &lanes.stdin,
        Box::new(move || {
            // EPIPE is normal: the program ignored its input.
            let _ = stdin_pipe.write_all(&stdin_bytes);
            drop(stdin_pipe);
            let _ = writer_done.send(());
        }),
    )
    .and_then(|()| {
        let job = reader(
            stdout_pipe,
            Keep::Head(max),
            max,
            &out,
            &over,
            done_tx.clone(),
        );
        submit(&lanes.stdout, job)
    })
    .and_then(|()| {
        let job = reader(
            stderr_pipe,
            Keep::Tail(STDERR_TAIL),
            max,
            &err,
            &over,
            done_tx,
        );
        submit(&lanes.stderr, job)
    })
    .and_then(|()| {
        // The wait blocks, so it runs on its own lane; the result comes
        // with the instant the program was reaped.
        submit(
            &lanes.waiter,
            Box::new(move || {
                let r = wait();
                let _ = wait_tx.send((r, Instant::now()));
            }),
        )
    });
    if let Err(e) = started {
        reset::kill_others(spare);
        if was_forked {
            // A wait may be pending on its socket: the zygote goes.
            *zygote = Slot::Idle;
        }
        return Err(e);
    }

    let limit = Duration::from_millis(case.wall_ms);
    let deadline = start.checked_add(limit);
    let mut next_sample = start + account::SAMPLE;
    let mut ended = Ended::Exited;
    let mut reaped = None;
    while reaped.is_none() {
        if over.load(Ordering::SeqCst) {
            ended = Ended::OutputLimit;
            break;
        }
        let now = Instant::now();
        let mut wait = POLL;
        match (&mut meter, deadline) {
            // CPU time, and the backstop: sampled from one `SAMPLE` in.
            (Some(meter), _) => {
                if now >= next_sample {
                    meter.sample(now);
                    next_sample = now + account::SAMPLE;
                    match meter.over(limit) {
                        Some(Over::Cpu) => ended = Ended::TimedOut,
                        Some(Over::Wall) => ended = Ended::WallTimedOut,
                        None => {}
                    }
                    if ended != Ended::Exited {
                        break;
                    }
                }
            }
            (None, Some(deadline)) => {
                if now >= deadline {
                    ended = Ended::TimedOut;
                    break;
                }
                wait = POLL.min(deadline - now);
            }
            (None, None) => {}
        }
        match waited.recv_timeout(wait) {
            Ok(r) => reaped = Some(r),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("the waiting thread died".into())
            }
        }
    }
    let end = match ended {
        Ended::Exited => None,
        _ => Some(Instant::now()),
    };
    // The fallbacks' last look at the candidate's tasks, before they die
    // (the cgroup needs none).
    if let Some(meter) = meter.as_mut().filter(|m| !m.by_cgroup()) {
        meter.sample(Instant::now());
    }
    // The case is over as the container would be when its program ends:
    // every other process dies, so stray writers close the pipes.
    reset::kill_others(spare);
    let (reaped, exited_at) = match reaped {
        Some(r) => r,
        None => match waited.recv_timeout(GRACE) {
            Ok(r) => r,
            Err(_) => {
                if was_forked {
                    *zygote = Slot::Idle;
                }
                // Every process was sent SIGKILL: what does not die is
                // the candidate's doing (see `CaseStatus::Outlived`).
                return Ok(outlived(start));
            }
        },
    };
    let reaped = match reaped {
        Ok(reaped) => Some(reaped),
        Err(Waited::Failed(e)) => return Err(format!("wait4: {e}")),
        Err(Waited::ZygoteLost(e)) => {
            // Its children are PID 1's now, and die as candidates do.
            *zygote = Slot::Idle;
            reset::kill_others(None);
            let oom_after = oom_counter.and_then(read_oom_kills);
            if !matches!((oom_before, oom_after), (Some(b), Some(a)) if a > b) {
                return Err(format!("the zygote was lost during the case: {e}"));
            }
            None
        }
    };
    let wall = end.unwrap_or(exited_at).saturating_duration_since(start);
    let grace_end = Instant::now() + GRACE;
    for _ in 0..jobs {
        let left = grace_end.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            // Only the candidate's processes held the pipes' write ends,
            // and every one was sent SIGKILL.
            return Ok(outlived(start));
        }
    }
    let oom_after = oom_counter.and_then(read_oom_kills);
    let take = |shared: &Arc<Mutex<Kept>>| match shared.lock() {
        Ok(mut guard) => std::mem::take(&mut *guard),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    };
    let (stdout, stderr) = (take(&out), take(&err));
    let over_limit = stdout.total > max as u64 || stderr.total > max as u64;
    let ended = if over_limit {
        Ended::OutputLimit
    } else {
        ended
    };
    let oom = matches!((oom_before, oom_after), (Some(b), Some(a)) if a > b);
    // The program's own CPU time decides RLIMIT_CPU (a limit per process);
    // the whole candidate's is reported.
    let own_cpu = reaped.as_ref().map_or(Duration::ZERO, |r| r.cpu);
    let exit_code = reaped.as_ref().and_then(|r| r.status.code());
    let signal = reaped.as_ref().and_then(|r| r.status.signal());
    let status = decide(ended, oom, exit_code, signal, case.cpu_limit_s, own_cpu);
    let cpu = meter.as_ref().map_or(own_cpu, |m| m.cpu(own_cpu));
    Ok(CaseResult {
        status,
        exit_code,
        signal,
        wall_ms: wall.as_millis() as u64,
        cpu_ms: cpu.as_millis() as u64,
        wait_ms: meter.as_ref().map_or(0, |m| m.waited().as_millis() as u64),
        max_rss_kib: reaped.as_ref().map_or(0, |r| r.max_rss_kib),
        oom,
        stdout_truncated: stdout.total > stdout.bytes.len() as u64,
        stdout: stdout.bytes,
        stderr_truncated: stderr.total > stderr.bytes.len() as u64,
        stderr_tail: stderr.bytes,
    })
}

/// Spawns the case's program as the runner's own child: as the candidate
/// (std's safe `uid`/`gid`: in the child, setgroups(0) (the runner is
/// root), setgid, setuid, then exec; root's capabilities are all gone after
/// the switch, and `no-new-privileges` keeps them gone), in a process group
/// of its own, with fresh pipes. `Ok(Err(record))` when the interpreter
/// itself could not be executed.
fn spawn(
    identity: Identity,
    loaded: &Loaded,
    file: &Path,
    case: &Case,
    spare: Option<Spare>,
) -> Result<Result<Started, CaseResult>, String> {
    let (program, args) = loaded
        .interpreter
        .split_first()
        .ok_or("empty interpreter")?;
    let mut cmd = Command::new(program);
    cmd.args(args);
    // A compiled candidate's command is whole; anything else runs its file.
    if loaded.build.is_none() {
        cmd.arg(file);
    }
    cmd.uid(identity.uid)
        .gid(identity.gid)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The program, not the runner, is the OOM killer's choice: it inherits
    // the score from its first instruction, and the runner takes its own
    // back right after the spawn (lowering it back needs no privilege down
    // to the engine's starting value, measured; the reset checks it). The
    // runner cannot write the program's own file: it belongs to the
    // candidate's uid.
    let own_score = kernel_file::read(OOM_SCORE_SELF)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let raised = own_score.is_some() && fs::write(OOM_SCORE_SELF, PROGRAM_OOM_SCORE).is_ok();
    let spawned = cmd.spawn();
    if let (true, Some(was)) = (raised, &own_score) {
        if let Err(e) = fs::write(OOM_SCORE_SELF, was.trim()) {
            if let Ok(mut child) = spawned {
                reset::kill_others(spare);
                let _ = child.wait();
            }
            return Err(format!("put back the runner's OOM score: {e}"));
        }
    }
    let mut child = match spawned {
        Ok(child) => child,
        // The interpreter is missing or not executable: `NotStarted`, with
        // the code a shell (and `docker run`) would answer, 127 or 126.
        // A failed fork or pipe (no memory, no pid, no fd) is the runner's.
        Err(e) => return cannot_execute(program, &e).map(Err),
    };
    if let Some(seconds) = case.cpu_limit_s {
        let limit = Rlimit {
            current: Some(seconds),
            maximum: Some(seconds.saturating_add(1)),
        };
        let pid = Pid::from_child(&child);
        if let Err(e) = as_real_identity(identity, || prlimit(Some(pid), Resource::Cpu, limit)) {
            reset::kill_others(spare);
            let _ = child.wait();
            return Err(format!("prlimit(RLIMIT_CPU) on the program: {e}"));
        }
    }
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        reset::kill_others(spare);
        let _ = child.wait();
        return Err("the program's pipes are missing".into());
    };
    Ok(Ok(Started {
        stdin: Box::new(stdin),
        stdout: Box::new(stdout),
        stderr: Box::new(stderr),
        wait: Box::new(move || {
            let mut child = child;
            child
                .wait4()
                .map(|r| Reaped {
                    status: r.status,
                    cpu: r.rusage.utime + r.rusage.stime,
                    max_rss_kib: r.rusage.maxrss / 1024,
                })
                .map_err(|e| Waited::Failed(e.to_string()))
        }),
    }))
}

/// The status of a case from the facts. An output limit beats everything
/// (what was kept is cut); an OOM kill counted during the case beats the
/// rest, a timeout included (a process hanging after its child was
/// OOM-killed failed for memory); then the timeout, the CPU limit (SIGXCPU
/// at the soft limit, SIGKILL at the hard one), a signal, the exit code.
fn decide(
    ended: Ended,
    oom: bool,
    exit_code: Option<i32>,
    signal: Option<i32>,
    cpu_limit_s: Option<u64>,
    cpu: Duration,
) -> CaseStatus {
    const SIGKILL: i32 = 9;
    const SIGXCPU: i32 = 24;
    match ended {
        Ended::OutputLimit => return CaseStatus::OutputLimit,
        _ if oom => return CaseStatus::Oom,
        Ended::TimedOut => return CaseStatus::Timeout,
        Ended::WallTimedOut => return CaseStatus::WallTimeout,
        Ended::Exited => {}
    }
    if let (Some(limit), Some(sig)) = (cpu_limit_s, signal) {
        if sig == SIGXCPU || (sig == SIGKILL && cpu >= Duration::from_secs(limit)) {
            return CaseStatus::CpuLimit;
        }
    }
    match (signal, exit_code) {
        (Some(_), _) => CaseStatus::Signal,
        (None, Some(0)) => CaseStatus::Ok,
        _ => CaseStatus::RuntimeError,
    }
}

/// The record of a case whose processes outlived the kill at its end.
fn outlived(start: Instant) -> CaseResult {
    CaseResult {
        status: CaseStatus::Outlived,
        exit_code: None,
        signal: None,
        wall_ms: start.elapsed().as_millis() as u64,
        cpu_ms: 0,
        wait_ms: 0,
        max_rss_kib: 0,
        oom: false,
        stdout: Vec::new(),
        stdout_truncated: false,
        stderr_tail: Vec::new(),
        stderr_truncated: false,
    }
}

/// The record of a program whose interpreter could not be started, when
/// the interpreter is at fault (exec failed: 127 for a missing one, 126
/// for one that cannot be run, as a shell says); any other failure to
/// spawn (`fork`, `pipe`: EAGAIN, ENOMEM, EMFILE...) is the runner's.
fn cannot_execute(program: &str, e: &io::Error) -> Result<CaseResult, String> {
    const ENOENT: i32 = 2;
    const ENOEXEC: i32 = 8;
    const EACCES: i32 = 13;
    const ENOTDIR: i32 = 20;
    const EISDIR: i32 = 21;
    const ETXTBSY: i32 = 26;
    const ELOOP: i32 = 40;
    const ENAMETOOLONG: i32 = 36;
    const ELIBBAD: i32 = 80;
    const EPERM: i32 = 1;
    let code = match e.raw_os_error() {
        Some(ENOENT | ENOTDIR | ELOOP | ENAMETOOLONG) => 127,
        Some(ENOEXEC | EACCES | EISDIR | ETXTBSY | ELIBBAD | EPERM) => 126,
        // A NUL byte in the `#!` line: the candidate's.
        None if e.kind() == io::ErrorKind::InvalidInput => 126,
        _ => return Err(format!("could not start `{program}`: {e}")),
    };
    Ok(CaseResult {
        status: CaseStatus::NotStarted,
        exit_code: Some(code),
        signal: None,
        wall_ms: 0,
        cpu_ms: 0,
        wait_ms: 0,
        max_rss_kib: 0,
        oom: false,
        stdout: Vec::new(),
        stdout_truncated: false,
        stderr_tail: format!("sbx runner: cannot execute `{program}`: {e}\n").into_bytes(),
        stderr_truncated: false,
    })
}

#[derive(Debug, Clone, Copy)]
enum Keep {
    /// The first N bytes.
    Head(usize),
    /// The last N bytes.
    Tail(usize),
}

/// A job that drains `pipe` to EOF, keeping what `keep` says and counting
/// everything; past `limit` bytes in all it raises `over` and keeps
/// draining.
fn reader(
    mut pipe: impl Read + Send + 'static,
    keep: Keep,
    limit: usize,
    into: &Arc<Mutex<Kept>>,
    over: &Arc<AtomicBool>,
    done: mpsc::Sender<()>,
) -> Job {
    let into = Arc::clone(into);
    let over = Arc::clone(over);
    Box::new(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let mut kept = match into.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            kept.total += n as u64;
            match keep {
                Keep::Head(max) => {
                    let take = n.min(max.saturating_sub(kept.bytes.len()));
                    kept.bytes.extend_from_slice(&buf[..take]);
                }
                Keep::Tail(max) => {
                    kept.bytes.extend_from_slice(&buf[..n]);
                    let len = kept.bytes.len();
                    if len > max {
                        kept.bytes.drain(..len - max);
                    }
                }
            }
            if kept.total > limit as u64 {
                over.store(true, Ordering::SeqCst);
            }
        }
        let _ = done.send(());
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_counter_of_cgroup_v1_and_v2() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(parse_oom_kills(v1), Some(3));
        let v2 = "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\noom_group_kill 0\n";
        assert_eq!(parse_oom_kills(v2), Some(2));
        assert_eq!(parse_oom_kills("oom 1\n"), None);
    }

    #[test]
    fn status_precedence() {
        let s = Duration::from_secs;
        use Ended::*;
        assert_eq!(
            decide(OutputLimit, true, None, Some(9), None, s(0)),
            CaseStatus::OutputLimit
        );
        assert_eq!(
            decide(TimedOut, true, None, Some(9), None, s(0)),
            CaseStatus::Oom
        );
        assert_eq!(
            decide(Exited, true, Some(0), None, None, s(0)),
            CaseStatus::Oom
        );
        assert_eq!(
            decide(TimedOut, false, None, Some(9), None, s(0)),
            CaseStatus::Timeout
        );
        assert_eq!(
            decide(WallTimedOut, false, None, Some(9), None, s(0)),
            CaseStatus::WallTimeout
        );
        assert_eq!(
            decide(WallTimedOut, true, None, Some(9), None, s(0)),
            CaseStatus::Oom
        );
        assert_eq!(
            decide(Exited, false, None, Some(24), Some(1), s(1)),
            CaseStatus::CpuLimit
        );
        assert_eq!(
            decide(Exited, false, None, Some(9), Some(1), s(2)),
            CaseStatus::CpuLimit
        );
        // SIGKILL from elsewhere before the limit is a signal; 137 alone is no OOM.
        assert_eq!(
            decide(Exited, false, None, Some(9), Some(5), s(1)),
            CaseStatus::Signal
        );
        assert_eq!(
            decide(Exited, false, Some(137), None, None, s(0)),
            CaseStatus::RuntimeError
        );
        assert_eq!(
            decide(Exited, false, Some(0), None, None, s(0)),
            CaseStatus::Ok
        );
        assert_eq!(
            decide(Exited, false, Some(3), None, None, s(0)),
            CaseStatus::RuntimeError
        );
    }

    #[test]
    fn only_exec_failures_are_charged_to_the_candidate() {
        let code = |errno: i32| {
            cannot_execute("python3", &io::Error::from_raw_os_error(errno)).map(|r| r.exit_code)
        };
        assert_eq!(code(2), Ok(Some(127)), "ENOENT");
        assert_eq!(code(13), Ok(Some(126)), "EACCES (noexec /tmp)");
        assert_eq!(code(8), Ok(Some(126)), "ENOEXEC");
        let nul = io::Error::new(io::ErrorKind::InvalidInput, "nul byte found");
        assert_eq!(
            cannot_execute("sh", &nul).map(|r| r.exit_code),
            Ok(Some(126))
        );
        // fork or pipe failed: the runner's problem, never a verdict.
        for errno in [11, 12, 24, 23] {
            let e = code(errno).unwrap_err();
            assert!(e.contains("could not start"), "{errno}: {e}");
        }
    }
}
