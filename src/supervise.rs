//! The only place that spawns, waits for, kills and drains processes: the
//! docker client of a sandboxed run, and the short docker control commands.
//!
//! A run's client is killed (SIGKILL) on timeout, on an output limit and on
//! SIGINT/SIGTERM, reaped, and then its container is removed by name: the
//! docker client proxies SIGTERM to a PID 1 that ignores it, and killing the
//! client leaves the container running.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use wait_timeout::ChildExt;

use crate::docker;
use crate::error::{Error, Result};
use crate::signals;

/// How often the wait loop looks at signals and output limits.
const POLL: Duration = Duration::from_millis(50);
/// How long a reader may take to see EOF once the client is gone.
const READER_GRACE: Duration = Duration::from_secs(5);
/// How long a control command (`rm -f`, `image inspect`, ...) may take.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the program's stdin comes from.
#[derive(Debug, Clone)]
pub enum StdinSource {
    /// `/dev/null` (and no `-i` in the argv).
    Null,
    /// sbx's own stdin, handed to the client as is.
    Inherit,
    /// These bytes, written from a thread and then closed (EOF).
    Bytes(Arc<[u8]>),
}

/// Where the program's stdout and stderr go.
#[derive(Debug, Clone, Copy)]
pub enum OutputSink {
    /// Straight through to sbx's own stdout and stderr.
    Inherit,
    /// Read concurrently from the start; at most `max` bytes of each stream
    /// are kept, and exceeding it stops the run (`Ended::OutputLimit`).
    Capture { max: usize },
}

/// One sandboxed run for the supervisor.
#[derive(Debug)]
pub struct Job<'a> {
    pub docker: &'a OsStr,
    /// The arguments after the docker program (see `docker::run_args`).
    pub args: Vec<OsString>,
    /// The container's name, to remove it whatever happens.
    pub container: &'a str,
    pub stdin: StdinSource,
    pub output: OutputSink,
    pub timeout: Duration,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
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
pub struct Captured {
    /// The first bytes of the stream, at most the capture limit.
    pub bytes: Vec<u8>,
    /// Bytes the stream carried in all (kept or not).
    pub total: u64,
}

impl Captured {
    pub fn truncated(&self) -> bool {
        self.total > self.bytes.len() as u64
    }
}

/// The result of a supervised run.
#[derive(Debug, Clone)]
pub struct Finished {
    pub ended: Ended,
    pub stdout: Captured,
    pub stderr: Captured,
    /// When the client was started (for `docker events --since`).
    pub started: SystemTime,
    /// From start to the client's exit (or kill).
    pub duration: Duration,
}

/// Owns the docker client of a run: on every exit path (including panics and
/// early returns) the client is killed and reaped, and the container is
/// removed by name unless the client's own exit shows `--rm` did it.
struct ClientGuard<'a> {
    child: Child,
    docker: &'a OsStr,
    container: &'a str,
    reaped: Option<ExitStatus>,
}

impl ClientGuard<'_> {
    fn kill_and_reap(&mut self) {
        if self.reaped.is_none() {
            // The client may have exited just now; kill then fails harmlessly.
            let _ = self.child.kill();
            self.reaped = self.child.wait().ok();
        }
    }

    /// Whether the container may outlive the client: the client was killed
    /// (by sbx or anyone else), or docker reported a start failure, which
    /// can leave a container in `Created` that `--rm` never removes.
    fn container_may_remain(status: Option<ExitStatus>) -> bool {
        match status.and_then(|s| s.code()) {
            None => true,
            Some(code) => (125..=127).contains(&code),
        }
    }
}

impl Drop for ClientGuard<'_> {
    fn drop(&mut self) {
        let exited_by_itself = self.reaped;
        self.kill_and_reap();
        if Self::container_may_remain(exited_by_itself) {
            remove_containers(self.docker, &[self.container.to_string()]);
        }
    }
}

/// Runs one sandboxed job to its end and returns what happened. The
/// container is gone when this returns, whatever happened.
pub fn supervise(job: Job<'_>) -> Result<Finished> {
    let mut cmd = Command::new(job.docker);
    cmd.args(&job.args);
    // Its own process group: a terminal's Ctrl-C reaches sbx only, and sbx
    // decides how the run ends.
    cmd.process_group(0);
    cmd.stdin(match job.stdin {
        StdinSource::Null => Stdio::null(),
        StdinSource::Inherit => Stdio::inherit(),
        StdinSource::Bytes(_) => Stdio::piped(),
    });
    match job.output {
        OutputSink::Inherit => {
            cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        }
        OutputSink::Capture { .. } => {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
    }

    let started = SystemTime::now();
    let clock = Instant::now();
    let child = spawn(&mut cmd, job.docker)?;
    let mut guard = ClientGuard {
        child,
        docker: job.docker,
        container: job.container,
        reaped: None,
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
    let readers = match job.output {
        OutputSink::Inherit => None,
        OutputSink::Capture { max } => Some(Readers::start(
            guard.child.stdout.take(),
            guard.child.stderr.take(),
            max,
            &over_limit,
        )),
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
                guard.reaped = Some(status);
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
    // Kills and reaps the client if it is still running, then removes the
    // container when it may have outlived the client.
    drop(guard);

    let (stdout, stderr) = match readers {
        Some(readers) => readers.finish(),
        None => (Captured::default(), Captured::default()),
    };
    Ok(Finished {
        ended,
        stdout,
        stderr,
        started,
        duration,
    })
}

fn spawn(cmd: &mut Command, docker: &OsStr) -> Result<Child> {
    cmd.spawn().map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            Error::DockerNotFound(docker.to_os_string())
        } else {
            Error::DockerSpawn {
                docker: docker.to_os_string(),
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

impl Readers {
    fn start(
        stdout: Option<ChildStdout>,
        stderr: Option<ChildStderr>,
        max: usize,
        over_limit: &Arc<AtomicBool>,
    ) -> Readers {
        let (tx, done) = mpsc::channel();
        let out = Arc::new(Mutex::new(Captured::default()));
        let err = Arc::new(Mutex::new(Captured::default()));
        let mut count = 0;
        if let Some(pipe) = stdout {
            spawn_reader(
                pipe,
                max,
                Arc::clone(&out),
                Arc::clone(over_limit),
                tx.clone(),
            );
            count += 1;
        }
        if let Some(pipe) = stderr {
            spawn_reader(pipe, max, Arc::clone(&err), Arc::clone(over_limit), tx);
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

/// Drains `pipe` to EOF, keeping at most `max` bytes. Past the limit it
/// raises `over_limit` and keeps draining, so the writer never blocks.
fn spawn_reader(
    mut pipe: impl Read + Send + 'static,
    max: usize,
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
                    let mut kept = match into.lock() {
                        Ok(guard) => guard,
                        Err(poisoned) => poisoned.into_inner(),
                    };
                    kept.total += n as u64;
                    let room = max.saturating_sub(kept.bytes.len());
                    kept.bytes.extend_from_slice(&buf[..n.min(room)]);
                    if kept.total > max as u64 {
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

/// The result of a docker control command.
#[derive(Debug, Clone)]
pub struct Control {
    /// The exit code; `None` if the command was killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Control {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The first non-empty line of stderr, for one-line error messages.
    pub fn stderr_line(&self) -> String {
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
pub fn control(docker: &OsStr, args: &[OsString], timeout: Duration) -> Result<Control> {
    run_control(docker, args, timeout, false)
}

/// Like `control`, for commands that come before any program runs (`image
/// inspect`, `pull`): SIGINT or SIGTERM kills the command and returns
/// `Error::Interrupted` at once.
pub fn control_interruptible(
    docker: &OsStr,
    args: &[OsString],
    timeout: Duration,
) -> Result<Control> {
    run_control(docker, args, timeout, true)
}

fn run_control(
    docker: &OsStr,
    args: &[OsString],
    timeout: Duration,
    interruptible: bool,
) -> Result<Control> {
    let mut cmd = Command::new(docker);
    cmd.args(args)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn(&mut cmd, docker)?;
    let never = Arc::new(AtomicBool::new(false));
    let readers = Readers::start(child.stdout.take(), child.stderr.take(), 1 << 20, &never);
    let deadline = Instant::now() + timeout;
    let stop = |child: &mut Child, error: Error| {
        let _ = child.kill();
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
                docker.to_string_lossy(),
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

/// `docker rm -f` the named containers; best effort (a missing name is not
/// an error for `rm -f`). Returns whether docker confirmed the removal.
pub fn remove_containers(docker: &OsStr, names: &[String]) -> bool {
    if names.is_empty() {
        return true;
    }
    matches!(control(docker, &docker::remove_args(names), CONTROL_TIMEOUT), Ok(c) if c.success())
}
