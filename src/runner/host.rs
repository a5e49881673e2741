//! The host side of the runner: a `RunnerSession` owns one runner container
//! (created, started attached with `-i`, removed by name on every path) and
//! speaks the protocol with it. Every wait has a watchdog and honours
//! `signals::received()`: a stopped, hung or dead runner, a framing error or
//! an internal error of the runner is a `RunnerError`, an infrastructure
//! error that is never the candidate's verdict; the caller drops the
//! session (which removes the container) and uses a fresh one.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::{self, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use sbx_runner::protocol::{
    read_message, write_message, Candidate, Case, CaseResult, FrameError, Message, TimeRule,
};
use sbx_runner::MAX_OUTPUT;

use crate::docker::process::{self, Duplex, CONTROL_TIMEOUT};
use crate::docker::{self, Docker};
use crate::error::Error;
use crate::signals;

/// How long the runner may take to say hello after `docker start`.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// Added to a case's wall limit before the host gives up on the runner.
/// The runner kills the program at the wall limit and answers in
/// milliseconds; no answer by then is the candidate's `timeout` on an
/// engine that still answers (see `eval::judge::isolate`).
pub const CASE_GRACE: Duration = Duration::from_secs(5);
/// Under `TimeRule::Cpu` the runner stops a case by the candidate's CPU
/// time and its wall clock minus its waits for a CPU, which a busy machine
/// stretches in real time: a starved candidate that is right must not
/// become a `timeout` here. The host then waits this many limits plus
/// `CPU_RULE_GRACE`, an infrastructure guard only (a runner kept from
/// running by the candidate's own processes), never the rule that judges.
/// Measured: 4 forked burners at `-j 5` with 16 busy sessions on 2 cores
/// took more than 90 s of wall clock to use 1.5 s of CPU (about 1/60 of a
/// core each container), so the guard allows a hundred limits.
pub const CPU_RULE_FACTOR: u32 = 100;
/// See `CPU_RULE_FACTOR`.
pub const CPU_RULE_GRACE: Duration = Duration::from_secs(120);

/// How long the host waits for a case's answer (see `CASE_GRACE` and
/// `CPU_RULE_FACTOR`).
pub fn case_wait(case: &Case) -> Duration {
    let limit = Duration::from_millis(case.wall_ms);
    match case.rule {
        TimeRule::Wall => limit.saturating_add(CASE_GRACE),
        TimeRule::Cpu => limit
            .saturating_mul(CPU_RULE_FACTOR)
            .saturating_add(CPU_RULE_GRACE),
    }
}
/// How long a load or a reset may take.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often waits look at signals.
const POLL: Duration = Duration::from_millis(50);
/// How long a client whose runner closed the stream may take to exit.
const CLIENT_GRACE: Duration = Duration::from_secs(3);
/// Bytes of the docker client's stderr kept for messages.
const CLIENT_STDERR: usize = 16 << 10;

/// Why a runner session cannot go on. Always an infrastructure error.
#[derive(Debug)]
pub enum RunnerError {
    /// docker could not create or start the container.
    Engine(Error),
    /// The stream of frames broke: garbage, a frame cut short, a bad length.
    Frame(FrameError),
    /// The runner's stdout ended (the runner or the client died); the
    /// client's first stderr line, if any.
    Closed(String),
    /// The runner did not answer in time (stopped, hung, or the engine).
    Timeout(&'static str),
    /// The runner reported an internal error (isolate's XX).
    Internal(String),
    /// The runner answered with a message that does not fit.
    Unexpected(&'static str),
    /// A request sbx must not send (a limit the protocol cannot carry).
    Request(String),
    /// sbx received this signal while waiting.
    Interrupted(i32),
}

impl fmt::Display for RunnerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunnerError::Engine(e) => write!(f, "{e}"),
            RunnerError::Frame(e) => write!(f, "runner protocol: {e}"),
            RunnerError::Closed(line) if line.is_empty() => write!(f, "the runner went away"),
            RunnerError::Closed(line) => write!(f, "the runner went away: {line}"),
            RunnerError::Timeout(what) => write!(f, "the runner did not answer in time ({what})"),
            RunnerError::Internal(m) => write!(f, "runner internal error: {m}"),
            RunnerError::Unexpected(name) => write!(f, "unexpected runner message {name}"),
            RunnerError::Request(m) => write!(f, "{m}"),
            RunnerError::Interrupted(s) => write!(f, "interrupted by signal {s}"),
        }
    }
}

impl std::error::Error for RunnerError {}

/// How a `load` went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadOutcome {
    Ready,
    /// The candidate cannot be run (no `#!` line and no interpreter): the
    /// candidate's fault, not the runner's.
    Refused(String),
}

/// How a `reset` went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResetOutcome {
    Clean,
    /// Something remained; the container must be discarded.
    Dirty(String),
}

/// What a round trip does before its case (`run_after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Before {
    /// The container is fresh: nothing.
    Nothing,
    /// A case of this candidate ran: a reset, the candidate kept.
    Reset,
    /// Another candidate ran: a reset that also drops it (`unload`).
    Unload,
}

/// How a `run_after` round trip went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stepped {
    /// The case ran.
    Ran(CaseResult),
    /// The reset before it left something: the case did not run, and the
    /// container must be discarded (the results so far stand).
    Dirty(String),
    /// The runner refused the candidate loaded before it (no `#!` line it
    /// can follow): the case did not run.
    Refused(String),
}

/// What the reader thread hands over: a message, a clean end, or a broken stream.
type Received = Result<Option<Message>, FrameError>;

/// The container behind a session.
#[derive(Debug)]
struct Owned {
    docker: Docker,
    name: String,
    client: Option<Duplex>,
    removed: bool,
    /// The control socket's directory, bound into the container; removed
    /// after the container.
    _control: Option<tempfile::TempDir>,
}

/// What carries the protocol: the docker client's stdin and stdout, or the
/// control socket (no docker process on the way: see `Control`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Socket,
}

/// The transport a runner is offered: `Socket` with a private directory
/// (mode 0700, sbx's) to make its socket in, or `Stdio`.
#[derive(Debug, Clone, Copy)]
pub enum Offer<'a> {
    Stdio,
    Socket(&'a Path),
}

/// A control socket offered to one runner: a listening Unix socket in a
/// fresh directory that the container binds read-only at
/// `argv::CONTROL_DIR`. That directory is inside a private one (mode 0700,
/// sbx's): on the host only sbx's uid and root can reach the socket; the
/// engine binds its directory directly. The runner connects to it before
/// it says hello; sbx takes the first connection whose peer is root (or
/// sbx's own uid, for a rootless engine), answers it with one byte, and
/// then removes the socket: nothing can connect after that, and no
/// candidate runs before it. A runner that cannot connect, or is refused,
/// speaks on stdout as before.
#[derive(Debug)]
struct Control {
    listener: UnixListener,
    socket: PathBuf,
}

/// The one byte that tells the runner its connection is taken.
const CONTROL_TAKEN: u8 = b'1';

impl Control {
    /// The directory to bind (a fresh one in `private`), and the socket
    /// listening in it.
    fn open(private: &Path) -> io::Result<(tempfile::TempDir, Control)> {
        let dir = tempfile::Builder::new().prefix("c").tempdir_in(private)?;
        // The runner is root without CAP_DAC_OVERRIDE: it may pass through
        // (not list) the directory and write the socket, whoever runs sbx.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o711))?;
        let path = dir.path().join(docker::argv::CONTROL_NAME);
        let listener = UnixListener::bind(&path)?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o777))?;
        listener.set_nonblocking(true)?;
        Ok((
            dir,
            Control {
                listener,
                socket: path,
            },
        ))
    }

    /// The next connection if one is waiting: taken when its peer is root
    /// or this uid, closed otherwise.
    fn take(&self) -> io::Result<Option<UnixStream>> {
        loop {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let peer = rustix::net::sockopt::socket_peercred(&stream)?;
            let me = rustix::process::geteuid();
            if !(peer.uid.is_root() || peer.uid == me) {
                continue;
            }
            stream.set_nonblocking(false)?;
            (&stream).write_all(&[CONTROL_TAKEN])?;
            return Ok(Some(stream));
        }
    }
}

/// The write half of the control socket: shut down when dropped, so that
/// the runner reads its end of stream (the reader holds a clone).
#[derive(Debug)]
struct SocketWriter(UnixStream);

impl Write for SocketWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Drop for SocketWriter {
    fn drop(&mut self) {
        let _ = self.0.shutdown(std::net::Shutdown::Write);
    }
}

/// One runner container and the protocol with it.
#[derive(Debug)]
pub struct RunnerSession {
    to_runner: Option<Box<dyn WriteDebug>>,
    from_runner: mpsc::Receiver<Received>,
    owned: Option<Owned>,
    /// The runner's sbx version and whether it can read the OOM counter.
    pub sbx_version: String,
    pub oom_counter: bool,
    broken: bool,
    /// Bytes read from the runner's stream, and how many of them made whole
    /// messages: more read than framed means a frame started and stopped.
    bytes: Arc<Bytes>,
    /// What the runner said on stdout while sbx waited for it on the
    /// control socket: its first message, read again by `receive`.
    pending: Option<Received>,
    transport: Transport,
}

#[derive(Debug, Default)]
struct Bytes {
    read: AtomicU64,
    framed: AtomicU64,
}

/// Counts what it reads into `Bytes::read`.
struct Counting<R> {
    inner: R,
    bytes: Arc<Bytes>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.read.fetch_add(n as u64, Ordering::SeqCst);
        Ok(n)
    }
}

/// `Write + Send` that can be shown in `Debug` output.
trait WriteDebug: Write + Send + fmt::Debug {}
impl<T: Write + Send + fmt::Debug> WriteDebug for T {}

impl RunnerSession {
    /// Creates the container (`create`: see `docker::runner_create_args`),
    /// starts it attached with `-i` through the one spawner in `docker::process`,
    /// and waits for the runner's hello. On any error the container is
    /// removed before this returns.
    pub fn start(
        docker: &Docker,
        create: &[OsString],
        name: &str,
    ) -> Result<RunnerSession, RunnerError> {
        RunnerSession::start_with(docker, create, name, Offer::Stdio)
    }

    /// `start`, the protocol over a control socket when `offer` is
    /// `Socket` and the socket can be made and reached (`Control`); over
    /// the client's stdin and stdout otherwise. `create` is
    /// `runner_create_args`' vector.
    pub fn start_with(
        docker: &Docker,
        create: &[OsString],
        name: &str,
        offer: Offer<'_>,
    ) -> Result<RunnerSession, RunnerError> {
        if let Some(signal) = signals::received() {
            return Err(RunnerError::Interrupted(signal));
        }
        let (dir, control) = match offer {
            Offer::Socket(private) => Control::open(private).ok().unzip(),
            Offer::Stdio => (None, None),
        };
        let create = match &dir {
            Some(dir) => docker::argv::with_control(create, dir.path()),
            None => create.to_vec(),
        };
        let mut owned = Owned {
            docker: docker.clone(),
            name: name.to_string(),
            client: None,
            removed: false,
            _control: dir,
        };
        let created =
            process::control(docker, &create, CONTROL_TIMEOUT).map_err(RunnerError::Engine)?;
        if !created.success() {
            // Nothing to remove if docker refused, but a timeout may have
            // left it half-made: `owned` drops and removes it by name.
            drop(owned);
            return Err(RunnerError::Engine(Error::CreateFailed(
                created.stderr_line(),
            )));
        }
        let (client, stdin, stdout) =
            process::spawn_duplex(docker, &docker::argv::start_args(name, true), CLIENT_STDERR)
                .map_err(RunnerError::Engine)?;
        owned.client = Some(client);
        let mut session = RunnerSession::over(stdout, stdin);
        session.owned = Some(owned);
        // One wait for the hello, the socket's included.
        let deadline = Instant::now() + HELLO_TIMEOUT;
        if let Some(control) = control {
            session.take_control(control, deadline)?;
        }
        session.hello_by(deadline)?;
        Ok(session)
    }

    /// What carries this session's protocol.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// A session over any pair of streams, without a container (the fake
    /// runner of the tests). Call `hello` next.
    pub(crate) fn over(
        from: impl Read + Send + 'static,
        to: impl Write + Send + fmt::Debug + 'static,
    ) -> RunnerSession {
        let (from_runner, bytes) = RunnerSession::reader(from);
        RunnerSession {
            to_runner: Some(Box::new(to)),
            from_runner,
            owned: None,
            sbx_version: String::new(),
            oom_counter: false,
            broken: false,
            bytes,
            pending: None,
            transport: Transport::Stdio,
        }
    }

    /// The protocol over `from` and `to` from now on; the streams before
    /// them are let go (the writer dropped: a client's stdin closes).
    fn attach(
        &mut self,
        from: impl Read + Send + 'static,
        to: impl Write + Send + fmt::Debug + 'static,
    ) {
        let (from_runner, bytes) = RunnerSession::reader(from);
        self.from_runner = from_runner;
        self.bytes = bytes;
        self.to_runner = Some(Box::new(to));
    }

    /// A thread reading messages from `from` into a channel, and its byte
    /// counts.
    fn reader(from: impl Read + Send + 'static) -> (mpsc::Receiver<Received>, Arc<Bytes>) {
        let (tx, rx) = mpsc::channel();
        let bytes = Arc::new(Bytes::default());
        let counted = Arc::clone(&bytes);
        thread::spawn(move || {
            let mut from = BufReader::new(Counting {
                inner: from,
                bytes: Arc::clone(&counted),
            });
            loop {
                let event = read_message(&mut from);
                // What was read minus what waits in the buffer: the bytes
                // of whole messages so far.
                let read = counted.read.load(Ordering::SeqCst);
                counted
                    .framed
                    .store(read - from.buffer().len() as u64, Ordering::SeqCst);
                let last = !matches!(event, Ok(Some(_)));
                if tx.send(event).is_err() || last {
                    break;
                }
            }
        });
        (rx, bytes)
    }

    /// `hello_by` within `HELLO_TIMEOUT` (the fake runner's tests).
    #[cfg(test)]
    pub(crate) fn hello(&mut self) -> Result<(), RunnerError> {
        self.hello_by(Instant::now() + HELLO_TIMEOUT)
    }

    /// Waits until `deadline` for the runner's first message, which must
    /// be `Hello` from this very version of sbx.
    fn hello_by(&mut self, deadline: Instant) -> Result<(), RunnerError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.receive(left, "hello")? {
            Message::Hello {
                sbx_version,
                oom_counter,
            } => {
                if sbx_version != env!("CARGO_PKG_VERSION") {
                    self.broken = true;
                    return Err(RunnerError::Internal(format!(
                        "the runner is sbx {sbx_version}, not {}",
                        env!("CARGO_PKG_VERSION")
                    )));
                }
                self.sbx_version = sbx_version;
                self.oom_counter = oom_counter;
                Ok(())
            }
            other => self.unexpected(&other),
        }
    }

    /// Waits for the runner to connect to `control` (then the protocol runs
    /// over the socket) or to speak on stdout (then it stays there),
    /// whichever comes first, until `deadline`. The socket is removed
    /// either way.
    fn take_control(&mut self, control: Control, deadline: Instant) -> Result<(), RunnerError> {
        let taken = loop {
            if let Some(signal) = signals::received() {
                break Err(RunnerError::Interrupted(signal));
            }
            match control.take() {
                Ok(Some(stream)) => break Ok(Some(stream)),
                Ok(None) => {}
                // The runner speaks on stdout if it was not answered.
                Err(_) => break Ok(None),
            }
            match self.from_runner.try_recv() {
                Ok(event) => {
                    self.pending = Some(event);
                    break Ok(None);
                }
                Err(mpsc::TryRecvError::Disconnected) => break Ok(None),
                Err(mpsc::TryRecvError::Empty) => {}
            }
            if Instant::now() >= deadline {
                // `hello` waits no more and says so.
                break Ok(None);
            }
            thread::sleep(Duration::from_millis(1));
        };
        let _ = fs::remove_file(&control.socket);
        drop(control);
        match taken {
            Ok(Some(stream)) => {
                let reader = stream.try_clone().map_err(|e| {
                    self.broken = true;
                    RunnerError::Closed(format!("clone the control socket: {e}"))
                })?;
                self.attach(reader, SocketWriter(stream));
                self.transport = Transport::Socket;
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    /// The container's name (for messages; it is removed on drop).
    pub fn name(&self) -> Option<&str> {
        self.owned.as_ref().map(|o| o.name.as_str())
    }

    /// Sends a candidate; the runner keeps it for the cases that follow.
    pub fn load(&mut self, candidate: &Candidate) -> Result<LoadOutcome, RunnerError> {
        self.send(&Message::Load(candidate.clone()))?;
        match self.receive(STEP_TIMEOUT, "load")? {
            Message::Loaded => Ok(LoadOutcome::Ready),
            Message::Refused(message) => Ok(LoadOutcome::Refused(message)),
            other => self.unexpected(&other),
        }
    }

    /// Runs one case of the loaded candidate (a reset must come between two
    /// cases). Waits at most `case_wait`.
    pub fn run_case(&mut self, case: &Case) -> Result<CaseResult, RunnerError> {
        if case.max_output > MAX_OUTPUT {
            return Err(RunnerError::Request(format!(
                "--max-output above {MAX_OUTPUT} bytes is not supported by the runner"
            )));
        }
        self.send(&Message::Case(case.clone()))?;
        let timeout = case_wait(case);
        match self.receive(timeout, "case")? {
            Message::Result(result) => Ok(result),
            other => self.unexpected(&other),
        }
    }

    /// One case in one round trip (a `Steps` message): the reset or unload
    /// `before` it, the candidate loaded if `load` is given, then the
    /// case. The runner checks each step as if it came alone. Waits at
    /// most `case_wait` and `STEP_TIMEOUT` for each step before the case.
    pub fn run_after(
        &mut self,
        before: Before,
        load: Option<&Candidate>,
        case: &Case,
    ) -> Result<Stepped, RunnerError> {
        if case.max_output > MAX_OUTPUT {
            return Err(RunnerError::Request(format!(
                "--max-output above {MAX_OUTPUT} bytes is not supported by the runner"
            )));
        }
        let mut steps = Vec::with_capacity(3);
        match before {
            Before::Nothing => {}
            Before::Reset => steps.push(Message::Reset),
            Before::Unload => steps.push(Message::Unload),
        }
        if let Some(candidate) = load {
            steps.push(Message::Load(candidate.clone()));
        }
        steps.push(Message::Case(case.clone()));
        let timeout = case_wait(case).saturating_add(STEP_TIMEOUT * (steps.len() as u32 - 1));
        self.send(&Message::Steps(steps))?;
        match self.receive(timeout, "case")? {
            Message::Result(result) => Ok(Stepped::Ran(result)),
            Message::ResetDone {
                clean: false,
                message,
            } if before != Before::Nothing => {
                self.broken = true;
                Ok(Stepped::Dirty(message))
            }
            Message::Refused(message) if load.is_some() => Ok(Stepped::Refused(message)),
            other => self.unexpected(&other),
        }
    }

    /// Kills everything but the runner, empties the writable directories
    /// and verifies; `Dirty` means the container must be discarded.
    pub fn reset(&mut self) -> Result<ResetOutcome, RunnerError> {
        self.reset_with(Message::Reset)
    }

    /// A reset between candidates: the same, and the candidate's file and
    /// build are removed too (verified gone).
    pub fn unload(&mut self) -> Result<ResetOutcome, RunnerError> {
        self.reset_with(Message::Unload)
    }

    fn reset_with(&mut self, message: Message) -> Result<ResetOutcome, RunnerError> {
        self.send(&message)?;
        match self.receive(STEP_TIMEOUT, "reset")? {
            Message::ResetDone { clean: true, .. } => Ok(ResetOutcome::Clean),
            Message::ResetDone {
                clean: false,
                message,
            } => {
                self.broken = true;
                Ok(ResetOutcome::Dirty(message))
            }
            other => self.unexpected(&other),
        }
    }

    /// Says goodbye, waits briefly for the runner to exit, and removes the
    /// container (also done on drop, on every path).
    pub fn close(mut self) {
        if !self.broken {
            let _ = self.send(&Message::Bye);
        }
        self.to_runner = None;
        if let Some(owned) = self.owned.as_mut() {
            if let Some(client) = owned.client.as_mut() {
                // The runner exited 0 after `Bye`: `--rm` removed the
                // container, as for a program that exits 0 in `case` mode.
                if !self.broken && client.wait_success(Duration::from_secs(5)) {
                    owned.removed = true;
                }
            }
        }
        // Drop kills what is left and removes the container by name.
    }

    fn send(&mut self, message: &Message) -> Result<(), RunnerError> {
        if self.broken {
            return Err(RunnerError::Request(
                "this runner session failed before; use a fresh one".into(),
            ));
        }
        let Some(to) = self.to_runner.as_mut() else {
            return Err(RunnerError::Closed(String::new()));
        };
        if let Err(e) = write_message(to, message) {
            self.broken = true;
            // A runner that died mid-frame: its broken frame says more.
            if let Ok(Err(frame)) = self.from_runner.recv_timeout(Duration::from_millis(200)) {
                return Err(RunnerError::Frame(frame));
            }
            // A runner that died closes its stdin: say what the client said.
            let line = self.client_line();
            return Err(match e {
                FrameError::Io(ref io) if io.kind() == io::ErrorKind::BrokenPipe => {
                    RunnerError::Closed(line)
                }
                e => RunnerError::Frame(e),
            });
        }
        Ok(())
    }

    fn receive(&mut self, timeout: Duration, what: &'static str) -> Result<Message, RunnerError> {
        let deadline = Instant::now() + timeout;
        // A frame begun and not finished, since when: the runner writes a
        // frame at once, so one that stays unfinished for `CASE_GRACE` is
        // a broken stream, whatever the case's own (long) guard.
        let mut stalled: Option<(u64, Instant)> = None;
        let result = loop {
            if let Some(signal) = signals::received() {
                break Err(RunnerError::Interrupted(signal));
            }
            let now = Instant::now();
            let read = self.bytes.read.load(Ordering::SeqCst);
            if read > self.bytes.framed.load(Ordering::SeqCst) {
                match stalled {
                    Some((at, since)) if at == read => {
                        if now.saturating_duration_since(since) >= CASE_GRACE {
                            break Err(RunnerError::Closed(format!(
                                "the stream stopped inside a frame ({what})"
                            )));
                        }
                    }
                    _ => stalled = Some((read, now)),
                }
            } else {
                stalled = None;
            }
            if now >= deadline {
                // Bytes of a frame that never completed: the runner did
                // answer and the stream broke (not a runner kept from
                // running, which sends nothing).
                let read = self.bytes.read.load(Ordering::SeqCst);
                if read > self.bytes.framed.load(Ordering::SeqCst) {
                    break Err(RunnerError::Closed(format!(
                        "the stream stopped inside a frame ({what})"
                    )));
                }
                break Err(RunnerError::Timeout(what));
            }
            let event = match self.pending.take() {
                Some(event) => Ok(event),
                None => self.from_runner.recv_timeout(POLL.min(deadline - now)),
            };
            match event {
                Ok(Ok(Some(Message::Internal(message)))) => {
                    break Err(RunnerError::Internal(message))
                }
                Ok(Ok(Some(message))) => return Ok(message),
                Ok(Ok(None)) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(RunnerError::Closed(self.client_line()))
                }
                Ok(Err(e)) => break Err(RunnerError::Frame(e)),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        };
        self.broken = true;
        result
    }

    fn unexpected<T>(&mut self, message: &Message) -> Result<T, RunnerError> {
        self.broken = true;
        Err(RunnerError::Unexpected(message.name()))
    }

    /// The first line of the client's stderr, once the client is gone: the
    /// runner's end of the stream is closed, so the client is about to exit
    /// and may still be writing why; it gets `CLIENT_GRACE` to do so before
    /// it is killed.
    fn client_line(&mut self) -> String {
        let Some(client) = self.owned.as_mut().and_then(|o| o.client.as_mut()) else {
            return String::new();
        };
        client.wait_exit(CLIENT_GRACE);
        let stderr = client.kill();
        String::from_utf8_lossy(&stderr.bytes)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string()
    }
}

impl Drop for RunnerSession {
    fn drop(&mut self) {
        // Closing the runner's stdin first lets it exit by itself; then
        // `Owned` kills the client and removes the container by name.
        self.to_runner = None;
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        drop(self.client.take());
        if !self.removed {
            process::remove_containers(&self.docker, std::slice::from_ref(&self.name));
            self.removed = true;
        }
    }
}

/// Copies the running sbx into `dir` (sbx's private staging directory) as
/// the runner that containers bind read-only; returns its path. A copy, so
/// that rebuilding sbx during a run cannot change what containers run.
pub fn stage_runner(dir: &Path) -> io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = dir.join("sbx-runner");
    fs::copy(&exe, &path)?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// Why this sbx cannot be the runner on `docker`'s engine, or `None` when
/// it can: it must be a static executable of the engine's architecture.
/// (Falling back to `case` mode, and saying so, is the caller's decision.)
pub fn runner_unsupported(docker: &Docker) -> Option<String> {
    let mut head = Vec::new();
    let read = std::env::current_exe()
        .and_then(fs::File::open)
        .and_then(|f| f.take(64 << 10).read_to_end(&mut head));
    if let Err(e) = read {
        return Some(format!("cannot read sbx's own executable: {e}"));
    }
    if let Some(problem) = elf_problem(&head) {
        return Some(problem);
    }
    let args: Vec<OsString> = ["version", "--format", "{{.Server.Arch}}"]
        .iter()
        .map(OsString::from)
        .collect();
    match process::control(docker, &args, CONTROL_TIMEOUT) {
        Ok(c) if c.success() => arch_problem(elf_arch(&head), c.stdout.trim()),
        Ok(c) => Some(format!(
            "cannot ask the engine's architecture: {}",
            c.stderr_line()
        )),
        Err(e) => Some(format!("cannot ask the engine's architecture: {e}")),
    }
}

const PT_INTERP: u32 = 3;

/// Why the ELF image starting with `elf` cannot run in an arbitrary image:
/// not a 64-bit little-endian ELF, or dynamically linked (it has an
/// interpreter, `PT_INTERP`). A static-pie has none.
pub fn elf_problem(elf: &[u8]) -> Option<String> {
    if elf.len() < 64 || elf[..4] != *b"\x7fELF" || elf[4] != 2 || elf[5] != 1 {
        return Some("sbx is not a 64-bit little-endian ELF executable".into());
    }
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
    let mut phoff = [0u8; 8];
    phoff.copy_from_slice(&elf[32..40]);
    let phoff = u64::from_le_bytes(phoff) as usize;
    let (size, count) = (u16_at(54), u16_at(56));
    for i in 0..count {
        let at = phoff.saturating_add(i.saturating_mul(size));
        let Some(p) = elf.get(at..at + 4) else {
            return Some("sbx's program headers are past its first 64 KiB".into());
        };
        if u32::from_le_bytes([p[0], p[1], p[2], p[3]]) == PT_INTERP {
            return Some(
                "sbx is dynamically linked; build it with the project's cargo configuration (crt-static)"
                    .into(),
            );
        }
    }
    None
}

/// The docker architecture name of the ELF's machine (`amd64`, `arm64`).
fn elf_arch(elf: &[u8]) -> &'static str {
    match elf.get(18..20).map(|m| u16::from_le_bytes([m[0], m[1]])) {
        Some(62) => "amd64",
        Some(183) => "arm64",
        _ => "unknown",
    }
}

/// Why a runner built for `ours` cannot run on an engine of `engine`
/// (`docker version`'s `Server.Arch`).
pub fn arch_problem(ours: &str, engine: &str) -> Option<String> {
    let engine_norm = match engine {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    (ours != engine_norm).then(|| format!("sbx is built for {ours}, the engine runs {engine}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_socket_takes_root_or_this_uid_and_closes_other_users() {
        use std::os::unix::process::CommandExt;
        // A connection is taken after the peer check; as root, a
        // connection from another uid is made first, and must be closed
        // without the byte (it reads an end of stream) while the next one
        // is taken. (Run as root, as CI runs every lane; said loudly
        // otherwise.)
        assert!(
            rustix::process::geteuid().is_root(),
            "this test connects as another uid, which needs root"
        );
        let private = tempfile::tempdir().unwrap();
        let (dir, control) = Control::open(private.path()).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir.path().parent(), Some(private.path()));
        assert_eq!(mode(dir.path()), 0o711);
        assert_eq!(mode(&control.socket), 0o777);
        assert!(control.take().unwrap().is_none(), "nobody connected yet");
        let connect = "import socket,sys\n\
            s=socket.socket(socket.AF_UNIX)\n\
            s.connect(sys.argv[1])\n\
            sys.stdout.write(repr(s.recv(1)))";
        let mut other = std::process::Command::new("python3")
            .args(["-c", connect])
            .arg(&control.socket)
            .uid(65534)
            .gid(65534)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let own = std::process::Command::new("python3")
            .args(["-c", connect])
            .arg(&control.socket)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Whichever connects first: take until our own is taken and the
        // other user's client has ended (closed by a later `take`).
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut taken = None;
        while taken.is_none() || other.try_wait().unwrap().is_none() {
            if let Some(stream) = control.take().unwrap() {
                assert!(taken.is_none(), "only one connection is ours");
                taken = Some(stream);
            }
            assert!(
                Instant::now() < deadline,
                "the connections were not handled"
            );
            thread::sleep(Duration::from_millis(5));
        }
        let taken = taken.unwrap();
        let own = own.wait_with_output().unwrap();
        let other = other.wait_with_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&own.stdout), "b'1'");
        assert_eq!(String::from_utf8_lossy(&other.stdout), "b''");
        let peer = rustix::net::sockopt::socket_peercred(&taken).unwrap();
        assert!(peer.uid.is_root());
    }

    #[test]
    fn the_no_zygote_and_control_options_are_the_runners() {
        assert_eq!(crate::docker::argv::RUNNER_NO_ZYGOTE, sbx_runner::NO_ZYGOTE);
        assert_eq!(crate::docker::argv::RUNNER_CONTROL, sbx_runner::CONTROL);
    }
    use crate::docker::argv::{runner_create_args, seed_create, strings, Container, Mount};
    use crate::spec::{Hardening, Limits};
    use sbx_runner::protocol::CaseStatus;
    use sbx_runner::SUBCOMMAND;
    use std::sync::{Arc, Mutex};

    #[test]
    fn the_build_is_where_the_runner_writes_it_and_the_compile_reads_it() {
        use crate::docker::argv::{BUILD_DIR, BUILD_TMPFS};
        use sbx_runner::protocol;
        assert_eq!(BUILD_DIR, protocol::BUILD_DIR);
        assert!(BUILD_TMPFS.starts_with(&format!("{}:", protocol::BUILD_MOUNT)));
        assert!(protocol::BUILD_DIR.starts_with(&format!("{}/", protocol::BUILD_MOUNT)));
    }

    #[test]
    fn runner_argv_is_create_args_plus_sysctls_mount_and_entrypoint() {
        let limits = Limits::default();
        let c = Container {
            name: "sbx-abc-0",
            run_id: "abc",
            interactive: false,
            mount: Mount::Bind(Path::new("/tmp/sbx-x/sbx-runner")),
            image: "sbx-python:bookworm",
            limits: &limits,
            hardening: &Hardening::default(),
            interpreter: &["python3".to_string()],
        };
        assert_eq!(
            strings(&runner_create_args(&c, SUBCOMMAND)),
            seed_create(
                "sbx-abc-0",
                "abc",
                true,
                "/tmp:rw,noexec,nosuid,size=64m,uid=65534,gid=65534",
                "256m",
                &[
                    "--user",
                    "0:0",
                    "--cap-add",
                    "SETUID",
                    "--cap-add",
                    "SETGID",
                    "--cap-add",
                    "KILL",
                    "--tmpfs",
                    "/work:rw,noexec,nosuid,nodev,size=64m,mode=0755,uid=0,gid=0",
                    "--tmpfs",
                    "/sbx:rw,exec,nosuid,nodev,size=64m,mode=0755,uid=0,gid=0",
                    "--sysctl",
                    "kernel.shmmni=0",
                    "--sysctl",
                    "kernel.msgmni=0",
                    "--sysctl",
                    "kernel.sem=0 0 0 0",
                    "--sysctl",
                    "fs.mqueue.queues_max=0",
                    "--sysctl",
                    "net.ipv4.tcp_max_tw_buckets=0",
                    "--ulimit",
                    "core=0:0",
                    "-v",
                    "/tmp/sbx-x/sbx-runner:/.sbx/sbx:ro",
                    "--entrypoint",
                    "/.sbx/sbx",
                    "--",
                    "sbx-python:bookworm",
                    "__runner",
                    "65534:65534",
                ],
            )
        );
        let baked = Container {
            mount: Mount::InImage("/.sbx/sbx"),
            ..c
        };
        let args = strings(&runner_create_args(&baked, SUBCOMMAND));
        assert!(!args.contains(&"-v".to_string()));
        assert_eq!(
            args[args.len() - 6..],
            [
                "--entrypoint",
                "/.sbx/sbx",
                "--",
                "sbx-python:bookworm",
                "__runner",
                "65534:65534"
            ]
        );
    }

    #[test]
    fn elf_checks() {
        let exe = fs::read(std::env::current_exe().unwrap()).unwrap();
        // This very test binary is built by the project's configuration.
        assert_eq!(elf_problem(&exe), None);
        assert_eq!(elf_arch(&exe), "amd64");
        assert!(elf_problem(b"#!/bin/sh\n").is_some());
        // A dynamic executable of this machine has PT_INTERP.
        let dynamic = fs::read("/bin/sh").unwrap();
        assert!(elf_problem(&dynamic)
            .unwrap()
            .contains("dynamically linked"));
        assert_eq!(arch_problem("amd64", "amd64"), None);
        assert_eq!(arch_problem("amd64", "x86_64"), None);
        assert!(arch_problem("amd64", "arm64").is_some());
    }

    /// A writer that records what the host sent.
    #[derive(Debug, Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A stream that never ends and never speaks (a stopped runner).
    #[derive(Debug)]
    struct Silent;
    impl Read for Silent {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            thread::sleep(Duration::from_secs(3600));
            Ok(0)
        }
    }

    fn frames(messages: &[Message]) -> Vec<u8> {
        let mut buf = Vec::new();
        for m in messages {
            write_message(&mut buf, m).unwrap();
        }
        buf
    }

    /// The runner's `Hello` carries the runner crate's version, which the
    /// host compares with its own: one workspace version for both.
    #[test]
    fn the_runner_crate_has_this_sbx_version() {
        assert_eq!(sbx_runner::VERSION, env!("CARGO_PKG_VERSION"));
    }

    /// The runner crate keeps its own exit codes (it depends on nothing of
    /// sbx); they must be sbx's for the same cases.
    #[test]
    fn the_runner_crate_exits_with_sbx_codes() {
        assert_eq!(sbx_runner::exit::USAGE, crate::exit::USAGE);
        assert_eq!(sbx_runner::exit::ENGINE, crate::exit::ENGINE);
    }

    fn hello() -> Message {
        Message::Hello {
            sbx_version: env!("CARGO_PKG_VERSION").into(),
            oom_counter: true,
        }
    }

    fn case() -> Case {
        Case {
            stdin: b"in".to_vec(),
            wall_ms: 100,
            max_output: 1024,
            cpu_limit_s: None,
            rule: TimeRule::Cpu,
        }
    }

    #[test]
    fn a_runner_that_dies_mid_frame_is_an_infrastructure_error() {
        let result = Message::Result(CaseResult {
            status: CaseStatus::Ok,
            exit_code: Some(0),
            signal: None,
            wall_ms: 1,
            cpu_ms: 1,
            wait_ms: 0,
            max_rss_kib: 1,
            oom: false,
            stdout: b"a forged pass".to_vec(),
            stdout_truncated: false,
            stderr_tail: Vec::new(),
            stderr_truncated: false,
        });
        let mut stream = frames(&[hello(), Message::Loaded]);
        let whole = frames(&[result]);
        stream.extend_from_slice(&whole[..whole.len() - 3]);
        let mut s = RunnerSession::over(io::Cursor::new(stream), Sink::default());
        s.hello().unwrap();
        let candidate = Candidate {
            file_name: "t.py".into(),
            program: b"print(1)".to_vec(),
            interpreter: Some(vec!["python3".into()]),
            build: None,
        };
        assert_eq!(s.load(&candidate).unwrap(), LoadOutcome::Ready);
        let err = s.run_case(&case()).unwrap_err();
        assert!(
            matches!(err, RunnerError::Frame(FrameError::Truncated)),
            "{err}"
        );
        // The session is finished: nothing more is sent.
        assert!(s.reset().is_err());
    }

    /// One round trip: the steps sent as one `Steps` frame, in order; the
    /// one answer read as the step it can belong to. An answer that only
    /// lets a step go on (`Loaded`, a clean `ResetDone`), or one that
    /// belongs to no step sent, is the runner's error.
    #[test]
    fn a_round_trip_sends_its_steps_and_reads_the_one_answer() {
        let candidate = Candidate {
            file_name: "t.py".into(),
            program: b"print(1)".to_vec(),
            interpreter: Some(vec!["python3".into()]),
            build: None,
        };
        let ran = CaseResult {
            status: CaseStatus::Ok,
            exit_code: Some(0),
            signal: None,
            wall_ms: 1,
            cpu_ms: 1,
            wait_ms: 0,
            max_rss_kib: 1,
            oom: false,
            stdout: b"1\n".to_vec(),
            stdout_truncated: false,
            stderr_tail: Vec::new(),
            stderr_truncated: false,
        };
        let dirty = Message::ResetDone {
            clean: false,
            message: "pid 9 left".into(),
        };
        let clean = Message::ResetDone {
            clean: true,
            message: String::new(),
        };
        let refused = Message::Refused("no #! line".into());
        let cases: Vec<(Before, bool, Message, Option<Stepped>)> = vec![
            (
                Before::Unload,
                true,
                Message::Result(ran.clone()),
                Some(Stepped::Ran(ran.clone())),
            ),
            (
                Before::Reset,
                false,
                dirty.clone(),
                Some(Stepped::Dirty("pid 9 left".into())),
            ),
            (
                Before::Unload,
                true,
                refused.clone(),
                Some(Stepped::Refused("no #! line".into())),
            ),
            // Answers that belong to no step sent, or only let one go on.
            (Before::Nothing, false, dirty, None),
            (Before::Reset, false, refused, None),
            (Before::Unload, true, Message::Loaded, None),
            (Before::Reset, false, clean, None),
        ];
        for (before, load, answer, want) in cases {
            let sink = Sink::default();
            let stream = frames(&[hello(), answer.clone()]);
            let mut s = RunnerSession::over(io::Cursor::new(stream), sink.clone());
            s.hello().unwrap();
            let got = s.run_after(before, load.then_some(&candidate), &case());
            match (&want, got) {
                (Some(want), Ok(got)) => assert_eq!(&got, want),
                (None, Err(RunnerError::Unexpected(_))) => {}
                (want, got) => panic!("{before:?} {answer:?}: {got:?}, want {want:?}"),
            }
            let sent = sink.0.lock().unwrap().clone();
            let mut steps = vec![];
            match before {
                Before::Nothing => {}
                Before::Reset => steps.push(Message::Reset),
                Before::Unload => steps.push(Message::Unload),
            }
            if load {
                steps.push(Message::Load(candidate.clone()));
            }
            steps.push(Message::Case(case()));
            assert_eq!(sent, frames(&[Message::Steps(steps)]), "one frame");
        }
    }

    #[test]
    fn garbage_eof_internal_and_wrong_replies_are_errors() {
        // Forged JSON instead of frames.
        let mut s = RunnerSession::over(
            io::Cursor::new(b"{\"status\":\"pass\"}\n".to_vec()),
            Sink::default(),
        );
        assert!(matches!(
            s.hello(),
            Err(RunnerError::Frame(FrameError::BadMagic(_)))
        ));
        // A clean EOF where an answer is due.
        let mut s = RunnerSession::over(io::Cursor::new(frames(&[hello()])), Sink::default());
        s.hello().unwrap();
        assert!(matches!(s.reset(), Err(RunnerError::Closed(_))));
        // XX from the runner.
        let stream = frames(&[hello(), Message::Internal("boom".into())]);
        let mut s = RunnerSession::over(io::Cursor::new(stream), Sink::default());
        s.hello().unwrap();
        assert!(matches!(s.run_case(&case()), Err(RunnerError::Internal(m)) if m == "boom"));
        // A reply of the wrong kind.
        let stream = frames(&[hello(), Message::Loaded]);
        let mut s = RunnerSession::over(io::Cursor::new(stream), Sink::default());
        s.hello().unwrap();
        assert!(matches!(
            s.run_case(&case()),
            Err(RunnerError::Unexpected("Loaded"))
        ));
        // Another version of sbx.
        let stream = frames(&[Message::Hello {
            sbx_version: "0.0.0-other".into(),
            oom_counter: false,
        }]);
        let mut s = RunnerSession::over(io::Cursor::new(stream), Sink::default());
        assert!(matches!(s.hello(), Err(RunnerError::Internal(_))));
    }

    #[test]
    fn a_silent_runner_times_out() {
        let mut s = RunnerSession::over(
            io::Cursor::new(frames(&[hello()])).chain(Silent),
            Sink::default(),
        );
        s.hello().unwrap();
        let started = Instant::now();
        let c = Case {
            wall_ms: 0,
            ..case()
        };
        // CASE_GRACE bounds it; a shorter receive shows the mechanism.
        s.send(&Message::Case(c)).unwrap();
        assert!(matches!(
            s.receive(Duration::from_millis(200), "case"),
            Err(RunnerError::Timeout("case"))
        ));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    /// A stream that stops inside a frame and stays open (a connection cut
    /// by something between sbx and the runner) is a broken stream, not a
    /// runner kept from answering: the caller reruns it instead of judging
    /// the candidate's `timeout`.
    #[test]
    fn a_stream_stopped_inside_a_frame_is_not_a_silent_runner() {
        let next = frames(&[Message::Refused("x".into())]);
        let mut stream = frames(&[hello()]);
        stream.extend_from_slice(&next[..next.len() / 2]);
        let mut s = RunnerSession::over(io::Cursor::new(stream).chain(Silent), Sink::default());
        s.hello().unwrap();
        s.send(&Message::Case(case())).unwrap();
        match s.receive(Duration::from_millis(300), "case") {
            Err(RunnerError::Closed(why)) => assert!(why.contains("inside a frame"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// A frame left unfinished ends the wait after `CASE_GRACE`, however
    /// long the case's guard (a hundred limits under the CPU rule): the
    /// rerun comes in seconds, not in the guard's minutes.
    #[test]
    fn a_stalled_frame_does_not_wait_out_the_case_s_guard() {
        let next = frames(&[Message::Refused("x".into())]);
        let mut stream = frames(&[hello()]);
        stream.extend_from_slice(&next[..next.len() / 2]);
        let mut s = RunnerSession::over(io::Cursor::new(stream).chain(Silent), Sink::default());
        s.hello().unwrap();
        s.send(&Message::Case(case())).unwrap();
        let started = Instant::now();
        match s.receive(Duration::from_secs(3600), "case") {
            Err(RunnerError::Closed(why)) => assert!(why.contains("inside a frame"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Wide: CASE_GRACE is 5 s.
        assert!(started.elapsed() < Duration::from_secs(60));
    }

    #[test]
    fn max_output_beyond_the_protocol_is_refused_before_sending() {
        let sink = Sink::default();
        let mut s = RunnerSession::over(io::Cursor::new(frames(&[hello()])), sink.clone());
        s.hello().unwrap();
        let c = Case {
            max_output: MAX_OUTPUT + 1,
            ..case()
        };
        assert!(matches!(s.run_case(&c), Err(RunnerError::Request(_))));
        assert!(sink.0.lock().unwrap().is_empty());
    }
}
