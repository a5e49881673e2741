//! The only place that spawns, waits for, kills and drains processes: the
//! attached docker client of a sandboxed run (`docker start -a`), the short
//! docker control commands, and the long-lived event streams (`Stream`).
//!
//! Every client runs in a process group of its own (a terminal's Ctrl-C
//! reaches sbx only; sbx polls `signals::received()` and decides), and a
//! kill reaches the whole group: the client and whatever it started. A
//! run's client is killed (SIGKILL) on timeout, on an output limit and on
//! any of the signals sbx handles (SIGINT, SIGTERM, SIGHUP, SIGQUIT), and
//! reaped; a `ContainerGuard` then removes the container
//! by name: the docker client proxies SIGTERM to a PID 1 that ignores it, and
//! killing the client leaves the container running.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

use crate::docker::{argv, Docker};
use crate::error::{Error, Result};
use crate::signals;

/// How often the wait loop looks at signals and output limits.
const POLL: Duration = Duration::from_millis(50);
/// How long a reader may take to see EOF once the client is gone.
const READER_GRACE: Duration = Duration::from_secs(5);
/// How long a control command (`rm -f`, `image inspect`, ...) may take.
pub(crate) const CONTROL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the program's stdin comes from.
#[derive(Debug, Clone)]
pub(crate) enum StdinSource {
    /// `/dev/null` (and no `-i` in the argv).
    Null,
    /// sbx's own stdin, handed to the client as is.
    Inherit,
    /// These bytes, written from a thread and then closed (EOF).
    Bytes(Arc<[u8]>),
}

/// How much of a streamed stderr is kept to recognise docker's own errors.
const STREAM_HEAD: usize = 4096;

/// Where the program's stdout and stderr go.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OutputSink {
    /// Straight through to sbx's own stdout and stderr, as they come; the
    /// first bytes of stderr are also kept, to tell docker's failures apart.
    Stream,
    /// Read concurrently from the start; at most `max` bytes of each stream
    /// are kept, and exceeding it stops the run (`Ended::OutputLimit`).
    Capture { max: usize },
    /// [`OutputSink::Capture`] with a limit of each stream's own: a
    /// compile's stdout carries its build, its stderr only the compiler's
    /// words.
    CaptureEach { stdout: usize, stderr: usize },
}

impl OutputSink {
    /// The most kept of stdout and of stderr, when captured.
    fn limits(self) -> Option<(usize, usize)> {
        match self {
            OutputSink::Stream => None,
            OutputSink::Capture { max } => Some((max, max)),
            OutputSink::CaptureEach { stdout, stderr } => Some((stdout, stderr)),
        }
    }
}

/// One attached run of an already created container.
#[derive(Debug)]
pub(crate) struct AttachedRun<'a> {
    pub docker: &'a Docker,
    /// `docker start -a [-i] -- NAME` (see `argv::start_args`).
    pub args: Vec<OsString>,
    pub stdin: StdinSource,
    pub output: OutputSink,
    pub timeout: Duration,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The docker client exited by itself with this status.
    Exited(ExitStatus),
    /// The timeout expired; sbx killed the run.
    TimedOut,
    /// A stream went past the capture limit; sbx killed the run.
    OutputLimit,
    /// sbx received this signal; the run was killed.
    Interrupted(i32),
}

/// What was kept of one output stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Captured {
    /// The first bytes of the stream, at most the capture limit.
    pub bytes: Vec<u8>,
    /// Bytes the stream carried in all (kept or not).
    pub total: u64,
}

/// The result of a supervised run.
#[derive(Debug, Clone)]
pub(crate) struct Finished {
    pub ended: Ended,
    pub stdout: Captured,
    pub stderr: Captured,
    /// From start to the client's exit (or kill).
    pub duration: Duration,
}

/// Owns the attached docker client of a run: on every exit path (including
/// panics and early returns) the client is killed and reaped.
struct ClientGuard {
    child: Child,
    reaped: bool,
}

impl ClientGuard {
    fn kill_and_reap(&mut self) {
        if !self.reaped {
            // The client may have exited just now; kill then fails harmlessly.
            kill_group(&self.child);
            let _ = self.child.wait();
            self.reaped = true;
        }
    }
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// Removes a created container by name when dropped, whatever happened,
/// unless `settle` saw it end in a way that lets `--rm` remove it.
#[derive(Debug)]
pub(crate) struct ContainerGuard<'a> {
    docker: &'a Docker,
    name: &'a str,
    armed: bool,
}

impl<'a> ContainerGuard<'a> {
    /// Call right after `docker create` succeeded.
    pub(crate) fn new(docker: &'a Docker, name: &'a str) -> ContainerGuard<'a> {
        ContainerGuard {
            docker,
            name,
            armed: true,
        }
    }

    /// After the run: a program that exited 0 on its own was removed by
    /// `--rm`; anything else (killed, failed, docker error) is removed by
    /// name when the guard drops.
    pub(crate) fn settle(&mut self, finished: &Finished) {
        if let Ended::Exited(status) = finished.ended {
            if status.code() == Some(0) {
                self.armed = false;
            }
        }
    }
}

impl Drop for ContainerGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            remove_containers(self.docker, &[self.name.to_string()]);
        }
    }
}

impl Finished {
    /// A run that never started because sbx was interrupted first.
    pub(crate) fn interrupted_before_start(signal: i32) -> Finished {
        Finished {
            ended: Ended::Interrupted(signal),
            stdout: Captured::default(),
            stderr: Captured::default(),
            duration: Duration::ZERO,
        }
    }
}

/// Runs one attached client to its end and returns what happened. The
/// client is killed and reaped when this returns, whatever happened; the
/// caller's `ContainerGuard` removes the container.
pub(crate) fn supervise(job: AttachedRun<'_>) -> Result<Finished> {
    let mut cmd = Command::new(job.docker.program());
    cmd.args(job.docker.argv(&job.args));
    // Its own process group: a terminal's Ctrl-C reaches sbx only, and sbx
    // decides how the run ends.
    cmd.process_group(0);
    cmd.stdin(match job.stdin {
        StdinSource::Null => Stdio::null(),
        StdinSource::Inherit => Stdio::inherit(),
        StdinSource::Bytes(_) => Stdio::piped(),
    });
    match job.output {
        OutputSink::Stream => {
            cmd.stdout(Stdio::inherit()).stderr(Stdio::piped());
        }
        OutputSink::Capture { .. } | OutputSink::CaptureEach { .. } => {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
    }

    let clock = Instant::now();
    let child = spawn(&mut cmd, job.docker)?;
    let mut guard = ClientGuard {
        child,
        reaped: false,
    };

    if let (StdinSource::Bytes(bytes), Some(mut pipe)) = (&job.stdin, guard.child.stdin.take()) {
        let bytes = Arc::clone(bytes);
        // EPIPE is normal (the program ignored its input and exited); the
        // thread ends when the client's end of the pipe closes.
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }

    let over_limit = Arc::new(AtomicBool::new(false));
    let readers = match job.output.limits() {
        None => Readers::start(
            None,
            guard.child.stderr.take(),
            (Keep::Forward, Keep::Forward),
            &over_limit,
        ),
        Some((out, err)) => Readers::start(
            guard.child.stdout.take(),
            guard.child.stderr.take(),
            (Keep::Limit(out), Keep::Limit(err)),
            &over_limit,
        ),
    };

    let deadline = clock + job.timeout;
    let ended = loop {
        if let Some(signal) = signals::received() {
            break Ended::Interrupted(signal);
        }
        if over_limit.load(Ordering::SeqCst) {
            break Ended::OutputLimit;
        }
        let now = Instant::now();
        if now >= deadline {
            break Ended::TimedOut;
        }
        let slice = POLL.min(deadline - now);
        match guard.child.wait_timeout(slice) {
            Ok(Some(status)) => {
                guard.reaped = true;
                break Ended::Exited(status);
            }
            Ok(None) => {}
            Err(source) => {
                return Err(Error::Setup {
                    what: "wait for the docker client".into(),
                    source,
                })
            }
        }
    };
    let duration = clock.elapsed();
    // Kills and reaps the client if it is still running.
    drop(guard);
    let (stdout, stderr) = readers.finish();
    // A client that exited within the same poll as the limit was crossed
    // still went past it: what was kept is cut, and must not be judged.
    let ended = match (ended, job.output.limits()) {
        (Ended::Exited(_), Some((out, err)))
            if stdout.total > out as u64 || stderr.total > err as u64 =>
        {
            Ended::OutputLimit
        }
        (ended, _) => ended,
    };
    Ok(Finished {
        ended,
        stdout,
        stderr,
        duration,
    })
}

fn spawn(cmd: &mut Command, docker: &Docker) -> Result<Child> {
    cmd.spawn().map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            Error::DockerNotFound(docker.program().to_os_string())
        } else {
            Error::DockerSpawn {
                docker: docker.program().to_os_string(),
                source,
            }
        }
    })
}

/// The stdout and stderr readers of one process.
struct Readers {
    stdout: Arc<Mutex<Captured>>,
    stderr: Arc<Mutex<Captured>>,
    done: mpsc::Receiver<()>,
    count: usize,
}

/// What a reader does with what it reads.
#[derive(Debug, Clone, Copy)]
enum Keep {
    /// Keep the first N bytes; past N, raise the over-limit flag.
    Limit(usize),
    /// Write everything to sbx's stderr as it comes, keep the first bytes.
    Forward,
}

impl Readers {
    fn start(
        stdout: Option<ChildStdout>,
        stderr: Option<ChildStderr>,
        (keep_out, keep_err): (Keep, Keep),
        over_limit: &Arc<AtomicBool>,
    ) -> Readers {
        let (tx, done) = mpsc::channel();
        let out = Arc::new(Mutex::new(Captured::default()));
        let err = Arc::new(Mutex::new(Captured::default()));
        let mut count = 0;
        if let Some(pipe) = stdout {
            spawn_reader(
                pipe,
                keep_out,
                Arc::clone(&out),
                Arc::clone(over_limit),
                tx.clone(),
            );
            count += 1;
        }
        if let Some(pipe) = stderr {
            spawn_reader(pipe, keep_err, Arc::clone(&err), Arc::clone(over_limit), tx);
            count += 1;
        }
        Readers {
            stdout: out,
            stderr: err,
            done,
            count,
        }
    }

    /// Waits (bounded) for both readers to reach EOF, then takes what they
    /// kept. A reader that never sees EOF is left behind, not waited for.
    fn finish(self) -> (Captured, Captured) {
        let deadline = Instant::now() + READER_GRACE;
        for _ in 0..self.count {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.done.recv_timeout(left).is_err() {
                break;
            }
        }
        let take = |shared: &Arc<Mutex<Captured>>| match shared.lock() {
            Ok(mut guard) => std::mem::take(&mut *guard),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        (take(&self.stdout), take(&self.stderr))
    }
}

/// Drains `pipe` to EOF. With `Keep::Limit(max)` it keeps at most `max`
/// bytes, and past the limit raises `over_limit` and keeps draining, so the
/// writer never blocks. With `Keep::Forward` it copies to sbx's stderr.
fn spawn_reader(
    mut pipe: impl Read + Send + 'static,
    keep: Keep,
    into: Arc<Mutex<Captured>>,
    over_limit: Arc<AtomicBool>,
    done: mpsc::Sender<()>,
) {
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let max = match keep {
                        Keep::Limit(max) => max,
                        Keep::Forward => {
                            let _ = io::stderr().lock().write_all(&buf[..n]);
                            STREAM_HEAD
                        }
                    };
                    let mut kept = match into.lock() {
                        Ok(guard) => guard,
                        Err(poisoned) => poisoned.into_inner(),
                    };
                    kept.total += n as u64;
                    let take = n.min(max.saturating_sub(kept.bytes.len()));
                    // Grow by doubling, but never past the limit: the
                    // capacity, not just the length, stays within `max`.
                    if kept.bytes.capacity() - kept.bytes.len() < take {
                        let want = (kept.bytes.capacity() * 2)
                            .max(kept.bytes.len() + take)
                            .min(max);
                        let extra = want - kept.bytes.len();
                        kept.bytes.reserve_exact(extra);
                    }
                    kept.bytes.extend_from_slice(&buf[..take]);
                    if matches!(keep, Keep::Limit(_)) && kept.total > max as u64 {
                        over_limit.store(true, Ordering::SeqCst);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
}

/// Whether this machine can still start a process (`true`), for doctor's
/// fork-bomb check: the only process sbx starts that is not docker.
pub(crate) fn can_start_a_process() -> bool {
    Command::new("true").status().is_ok()
}

/// A long-lived docker command read as it runs (`docker events`): stdin
/// closed, stdout and stderr handed to the caller, in a process group of its
/// own. Dropping it kills the group and reaps the client.
#[derive(Debug)]
pub(crate) struct Stream {
    child: Child,
}

/// Starts a long-lived docker command (see `Stream`).
pub(crate) fn stream(
    docker: &Docker,
    args: &[OsString],
) -> Result<(Stream, ChildStdout, ChildStderr)> {
    let mut cmd = Command::new(docker.program());
    cmd.args(docker.argv(args))
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn(&mut cmd, docker)?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    Ok((Stream { child }, stdout, stderr))
}

impl Drop for Stream {
    fn drop(&mut self) {
        kill_group(&self.child);
        let _ = self.child.wait();
    }
}

/// SIGKILL to the process group of `child`, spawned with `process_group(0)`
/// (so its pid names the group): the docker client and whatever it started.
/// Called before the child is reaped, so the id cannot name another group.
fn kill_group(child: &Child) {
    use rustix::process::{kill_process_group, Pid, Signal};
    // Fails harmlessly when the group is already gone.
    let _ = kill_process_group(Pid::from_child(child), Signal::KILL);
}

/// The result of a docker control command.
#[derive(Debug, Clone)]
pub(crate) struct Control {
    /// The exit code; `None` if the command was killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Control {
    pub(crate) fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The first non-empty line of stderr, for one-line error messages.
    pub(crate) fn stderr_line(&self) -> String {
        self.stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no message")
            .to_string()
    }
}

/// Runs a short docker control command (`rm -f`, `events`, `ps`) with stdin
/// closed, both outputs captured, and a timeout. Signals do not stop it:
/// cleanup must finish after a Ctrl-C.
pub(crate) fn control(docker: &Docker, args: &[OsString], timeout: Duration) -> Result<Control> {
    run_control(docker, args, timeout, false)
}

/// Like `control`, for commands that come before any program runs (`image
/// inspect`, `pull`): SIGINT, SIGTERM, SIGHUP or SIGQUIT kills the command
/// and returns `Error::Interrupted` at once.
pub(crate) fn control_interruptible(
    docker: &Docker,
    args: &[OsString],
    timeout: Duration,
) -> Result<Control> {
    run_control(docker, args, timeout, true)
}

fn run_control(
    docker: &Docker,
    args: &[OsString],
    timeout: Duration,
    interruptible: bool,
) -> Result<Control> {
    let mut cmd = Command::new(docker.program());
    cmd.args(docker.argv(args))
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn(&mut cmd, docker)?;
    let never = Arc::new(AtomicBool::new(false));
    let readers = Readers::start(
        child.stdout.take(),
        child.stderr.take(),
        (Keep::Limit(1 << 20), Keep::Limit(1 << 20)),
        &never,
    );
    let deadline = Instant::now() + timeout;
    let stop = |child: &mut Child, error: Error| {
        kill_group(child);
        let _ = child.wait();
        Err(error)
    };
    let status = loop {
        if let Some(signal) = signals::received().filter(|_| interruptible) {
            return stop(&mut child, Error::Interrupted(signal));
        }
        let now = Instant::now();
        if now >= deadline {
            let words: Vec<String> = args
                .iter()
                .take(2)
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let what = format!(
                "`{} {}` took longer than {} s",
                docker.display(),
                words.join(" "),
                timeout.as_secs()
            );
            return stop(&mut child, Error::EngineTimeout(what));
        }
        match child.wait_timeout(POLL.min(deadline - now)) {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(source) => {
                let what = "wait for a docker control command".to_string();
                return stop(&mut child, Error::Setup { what, source });
            }
        }
    };
    let (stdout, stderr) = readers.finish();
    Ok(Control {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout.bytes).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.bytes).into_owned(),
    })
}

/// How long cleanup keeps trying to remove containers the engine refused to
/// remove (a fork bomb the engine takes seconds to kill: "tried to kill
/// container, but did not receive an exit event").
pub(crate) const REMOVE_PATIENCE: Duration = Duration::from_secs(30);
/// The first pause between removal attempts; it doubles up to
/// [`REMOVE_PAUSE_MAX`].
const REMOVE_PAUSE: Duration = Duration::from_millis(250);
const REMOVE_PAUSE_MAX: Duration = Duration::from_secs(4);

/// `docker rm -f` the named containers until the engine confirms they are
/// gone: `rm -f` succeeded (a missing name is not an error for it), or
/// `ps -a` no longer lists a name. A refused removal is tried again, with a
/// pause that doubles from 0.25 s to 4 s, for [`REMOVE_PATIENCE`]; an
/// engine that cannot be reached at all is not waited for. Returns whether
/// the engine confirmed the removal of every name.
pub(crate) fn remove_containers(docker: &Docker, names: &[String]) -> bool {
    let mut left: Vec<String> = names.to_vec();
    let deadline = Instant::now() + REMOVE_PATIENCE;
    let mut pause = REMOVE_PAUSE;
    while !left.is_empty() {
        match control(docker, &argv::remove_args(&left), CONTROL_TIMEOUT) {
            Ok(c) if c.success() => return true,
            Ok(c) if unreachable(&c) => return false,
            _ => {}
        }
        left.retain(|name| !confirmed_gone(docker, name));
        if left.is_empty() || Instant::now() + pause > deadline {
            break;
        }
        thread::sleep(pause);
        pause = (pause * 2).min(REMOVE_PAUSE_MAX);
    }
    left.is_empty()
}

/// Whether the engine says no container has exactly this name.
fn confirmed_gone(docker: &Docker, name: &str) -> bool {
    matches!(
        control(docker, &argv::container_exists_args(name), CONTROL_TIMEOUT),
        Ok(c) if c.success() && c.stdout.trim().is_empty()
    )
}

/// Whether a failed control command says the engine cannot be reached at
/// all (as opposed to refusing this request).
fn unreachable(c: &Control) -> bool {
    c.stderr.contains("Cannot connect to the Docker daemon")
        || c.stderr.contains("error during connect")
}

/// A long-lived docker client whose stdin and stdout are a duplex channel
/// (the runner's protocol); its stderr is drained and the first bytes kept.
/// The client is killed and reaped when this drops.
#[derive(Debug)]
pub(crate) struct Duplex {
    guard: ClientGuard,
    readers: Option<Readers>,
}

impl std::fmt::Debug for ClientGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientGuard")
            .field("pid", &self.child.id())
            .field("reaped", &self.reaped)
            .finish()
    }
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readers")
            .field("count", &self.count)
            .finish()
    }
}

impl Duplex {
    /// Waits at most `timeout` for the client to exit by itself; true if it did.
    pub(crate) fn wait_exit(&mut self, timeout: Duration) -> bool {
        if self.guard.reaped {
            return true;
        }
        match self.guard.child.wait_timeout(timeout) {
            Ok(Some(_)) => {
                self.guard.reaped = true;
                true
            }
            _ => false,
        }
    }

    /// Waits at most `timeout` for the client to exit: whether it exited 0
    /// (a container of `--rm` whose program exited 0 is then gone).
    pub(crate) fn wait_success(&mut self, timeout: Duration) -> bool {
        if self.guard.reaped {
            return false;
        }
        match self.guard.child.wait_timeout(timeout) {
            Ok(Some(status)) => {
                self.guard.reaped = true;
                status.success()
            }
            _ => false,
        }
    }

    /// Kills and reaps the client, then takes the first bytes of its stderr.
    pub(crate) fn kill(&mut self) -> Captured {
        self.guard.kill_and_reap();
        match self.readers.take() {
            Some(readers) => readers.finish().1,
            None => Captured::default(),
        }
    }
}

/// Spawns `docker ARGS` (such as `start -a -i -- NAME`) as a long-lived
/// duplex child in its own process group: returns its stdin and stdout for
/// the caller to speak through, and drains its stderr, keeping at most
/// `max_stderr` bytes. The caller honours `signals::received()`.
pub(crate) fn spawn_duplex(
    docker: &Docker,
    args: &[OsString],
    max_stderr: usize,
) -> Result<(Duplex, std::process::ChildStdin, ChildStdout)> {
    let mut cmd = Command::new(docker.program());
    cmd.args(docker.argv(args))
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = spawn(&mut cmd, docker)?;
    let mut guard = ClientGuard {
        child,
        reaped: false,
    };
    let (Some(stdin), Some(stdout)) = (guard.child.stdin.take(), guard.child.stdout.take()) else {
        return Err(Error::Setup {
            what: "open the docker client's pipes".into(),
            source: io::Error::other("missing pipe"),
        });
    };
    let never = Arc::new(AtomicBool::new(false));
    let readers = Readers::start(
        None,
        guard.child.stderr.take(),
        (Keep::Limit(max_stderr), Keep::Limit(max_stderr)),
        &never,
    );
    Ok((
        Duplex {
            guard,
            readers: Some(readers),
        },
        stdin,
        stdout,
    ))
}
