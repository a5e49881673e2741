//! The framed protocol between sbx (the host) and its runner (the
//! container's PID 1), over the container's stdin (host -> runner) and
//! stdout (runner -> host). Pure code over `Read` and `Write`.
//!
//! # Frames
//!
//! Every message is one frame:
//!
//! ```text
//! magic "SBXR" (4 bytes) | version (1 byte) | kind (1 byte) | length (u32 LE) | payload (length bytes)
//! ```
//!
//! A clean end of stream is allowed only between frames. Anything else is a
//! framing error: an end of stream inside a frame (a runner killed
//! mid-message), a wrong magic (garbage), another version, an unknown kind,
//! a length above `MAX_PAYLOAD`, or a payload that does not decode exactly
//! (short or with bytes left over). **A framing error is always an
//! infrastructure error, never a verdict**: the host discards the container.
//!
//! Payload fields are written in order, with no names: `u8`, `u32`/`u64`
//! little-endian, `bool` as one byte 0 or 1, `bytes` as a u32 length then
//! the raw bytes (binary-safe, no base64), `str` as UTF-8 `bytes`, an option
//! as a `bool` then the value when present, a list as a u32 count then the
//! items.
//!
//! # Messages
//!
//! | kind | direction | message | payload |
//! |---|---|---|---|
//! | 1 | runner -> host | `Hello` | str sbx version, bool oom counter readable |
//! | 2 | host -> runner | `Load` | str file name, bytes program, option list-of-str interpreter (none: the `#!` line), option list of build files (str path, bytes) |
//! | 3 | runner -> host | `Loaded` | (empty) |
//! | 4 | runner -> host | `Refused` | str message (the candidate cannot be run: no `#!` line) |
//! | 5 | host -> runner | `Case` | bytes stdin, u64 limit ms, u64 max output bytes, option u64 cpu seconds, u8 time rule (0 wall clock, 1 CPU time) |
//! | 6 | runner -> host | `Result` | see `CaseResult` |
//! | 7 | host -> runner | `Reset` | (empty) |
//! | 8 | runner -> host | `ResetDone` | bool clean, str message |
//! | 9 | runner -> host | `Internal` | str message (isolate's XX: the runner failed, not the candidate) |
//! | 10 | host -> runner | `Bye` | (empty); the runner exits 0 |
//! | 11 | host -> runner | `Unload` | (empty): a `Reset` that also drops the candidate and its build |
//! | 12 | host -> runner | `Steps` | list of (u8 kind, bytes payload): `Unload`, `Reset`, `Load` and `Case` messages, run in order |
//!
//! The runner speaks first (`Hello`), then answers each host message with
//! exactly one message: `Load` with `Loaded`, `Refused` or `Internal`;
//! `Case` with `Result` or `Internal`; `Reset` and `Unload` with
//! `ResetDone` or `Internal`. A case needs a loaded candidate and a reset since the
//! previous case.
//!
//! `Steps` saves round trips through the engine (each one crosses the
//! client, the daemon and the shim twice): the runner does each step as if
//! it came alone, and answers once, with the first answer that does not
//! let the next step go on (anything but `Loaded` and a clean
//! `ResetDone`), or with the last step's answer. A `Steps` of `Unload`,
//! `Load`, `Case` is one candidate's first case on a reused container;
//! `Reset`, `Case`, each later case. Nothing of the rules changes: a step
//! the runner would refuse alone, it refuses inside `Steps`.

use std::io::{self, Read, Write};

/// The first bytes of every frame.
pub const MAGIC: [u8; 4] = *b"SBXR";
/// The protocol version; a frame of another version is a framing error.
pub const VERSION: u8 = 4;
/// The largest payload either side accepts (candidate, stdin, output).
pub const MAX_PAYLOAD: u32 = 64 << 20;
/// Bytes of a frame before its payload.
const HEADER: usize = 10;

/// A message of the protocol (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Hello {
        sbx_version: String,
        oom_counter: bool,
    },
    Load(Candidate),
    Loaded,
    Refused(String),
    Case(Case),
    Result(CaseResult),
    Reset,
    ResetDone {
        clean: bool,
        message: String,
    },
    Internal(String),
    Bye,
    Unload,
    /// Host -> runner: these messages in order, answered once (see the
    /// module documentation). Only `Unload`, `Reset`, `Load` and `Case`.
    Steps(Vec<Message>),
}

/// A candidate program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// A plain file name (no `/`), such as `task.py`; the runner writes the
    /// program under a fresh directory of `/tmp` with this name.
    pub file_name: String,
    pub program: Vec<u8>,
    /// Words run before the file; `None`: the runner reads the `#!` line.
    pub interpreter: Option<Vec<String>>,
    /// A compiled candidate's build, written by the runner under
    /// `BUILD_DIR` (root's, directories 0755, files 0555: executable, never
    /// writable by the candidate). With a build, `interpreter` is the whole
    /// command (such as `/sbx/build/main`): the file is not appended.
    pub build: Option<Vec<BuildFile>>,
}

/// One file of a compiled candidate's build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildFile {
    /// A relative path under `BUILD_DIR` (`main`, `Main$1.class`,
    /// `pkg/A.class`): plain components, no `.` or `..`, no NUL.
    pub path: String,
    pub bytes: Vec<u8>,
}

/// Where the runner writes a compiled candidate's build: inside an
/// exec-allowed tmpfs (`BUILD_MOUNT`) that only the runner (root) can
/// write. The same path as the compile step's output.
pub const BUILD_DIR: &str = "/sbx/build";
/// The runner container's exec-allowed, root-owned tmpfs holding `BUILD_DIR`.
pub const BUILD_MOUNT: &str = "/sbx";

/// Whether `path` is a build file's path the runner accepts (see
/// `BuildFile::path`).
pub fn valid_build_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 4096
        && !path.contains('\0')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && c.len() <= 255)
}

/// One case of the loaded candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// Written to the program's stdin, then closed.
    pub stdin: Vec<u8>,
    /// The time limit, in milliseconds: of the wall clock from the
    /// program's start (`TimeRule::Wall`), or of the candidate's CPU time
    /// with a backstop on its effective wall clock (`TimeRule::Cpu`).
    pub wall_ms: u64,
    /// Bytes kept of each of stdout and stderr; more stops the case.
    pub max_output: u64,
    /// RLIMIT_CPU of the program, in seconds.
    pub cpu_limit_s: Option<u64>,
    /// What `wall_ms` limits.
    pub rule: TimeRule,
}

/// What a case's time limit counts (see the runner's `account` module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeRule {
    /// The wall clock from the program's start (`Timeout`).
    Wall = 0,
    /// The CPU time of all the candidate's processes and threads
    /// (`Timeout`), with a backstop on the wall clock minus the time the
    /// candidate waited for a CPU (`WallTimeout` when the candidate was
    /// mostly not computing).
    Cpu = 1,
}

/// How a case ended, in isolate's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseStatus {
    /// Exit code 0.
    Ok = 0,
    /// RE: a non-zero exit code.
    RuntimeError = 1,
    /// SG: killed by a signal (not by the runner).
    Signal = 2,
    /// TO: the time limit expired (the wall clock under `TimeRule::Wall`,
    /// the CPU time under `TimeRule::Cpu`); the runner killed it.
    Timeout = 3,
    /// stdout or stderr went past the limit; the runner killed it.
    OutputLimit = 4,
    /// The CPU-time limit (RLIMIT_CPU) killed it.
    CpuLimit = 5,
    /// The container's memory cgroup counted an OOM kill during the case
    /// (any end but an output limit).
    Oom = 6,
    /// The interpreter could not be executed (missing: exit code 127, not
    /// executable: 126): nothing of the candidate ran. As `docker start`
    /// failing in `case` mode, this is the task's set-up, not the candidate.
    NotStarted = 7,
    /// Something of the program outlived the runner's kill at the case's
    /// end: its output pipes stayed open, or the program was not reaped,
    /// within the grace after every process was sent SIGKILL. Only the
    /// candidate's processes hold those pipes: its own failure, judged
    /// once. The runner does not reuse its container after it (its next
    /// reset is dirty).
    Outlived = 8,
    /// `TimeRule::Cpu` only: the wall-clock backstop (the wall clock minus
    /// the time the candidate waited for a CPU) reached the limit while
    /// the candidate was mostly blocked, sleeping or waiting; the runner
    /// killed it.
    WallTimeout = 9,
}

impl CaseStatus {
    fn from_u8(value: u8) -> Option<CaseStatus> {
        Some(match value {
            0 => CaseStatus::Ok,
            1 => CaseStatus::RuntimeError,
            2 => CaseStatus::Signal,
            3 => CaseStatus::Timeout,
            4 => CaseStatus::OutputLimit,
            5 => CaseStatus::CpuLimit,
            6 => CaseStatus::Oom,
            7 => CaseStatus::NotStarted,
            8 => CaseStatus::Outlived,
            9 => CaseStatus::WallTimeout,
            _ => return None,
        })
    }

    /// isolate's short code (`OK`, `RE`, `SG`, `TO`, `OL`, `CL`, `OM`).
    pub fn code(self) -> &'static str {
        match self {
            CaseStatus::Ok => "OK",
            CaseStatus::RuntimeError => "RE",
            CaseStatus::Signal => "SG",
            CaseStatus::Timeout => "TO",
            CaseStatus::OutputLimit => "OL",
            CaseStatus::CpuLimit => "CL",
            CaseStatus::Oom => "OM",
            CaseStatus::NotStarted => "NS",
            CaseStatus::Outlived => "OV",
            CaseStatus::WallTimeout => "TW",
        }
    }
}

/// The record of one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseResult {
    pub status: CaseStatus,
    /// The exit code, when the program exited by itself.
    pub exit_code: Option<i32>,
    /// The terminating signal, when it died of one (SIGKILL after a timeout
    /// or an output limit included).
    pub signal: Option<i32>,
    /// From the program's start to its end.
    pub wall_ms: u64,
    /// User + system CPU time of the candidate: every process and thread
    /// of it, when the runner can count them (the container's CPU cgroup,
    /// or each task's schedstat); else the program and its waited-for
    /// children.
    pub cpu_ms: u64,
    /// The time the candidate's tasks waited for a CPU (run-queue wait,
    /// summed over its tasks; 0 where the runtime does not report it).
    pub wait_ms: u64,
    pub max_rss_kib: u64,
    /// The cgroup's `oom_kill` counter changed during the case.
    pub oom: bool,
    /// The first `max_output` bytes of stdout.
    pub stdout: Vec<u8>,
    /// stdout carried more than what is kept.
    pub stdout_truncated: bool,
    /// The last bytes (at most `STDERR_TAIL`) of what stderr carried.
    pub stderr_tail: Vec<u8>,
    /// stderr carried more than `stderr_tail`.
    pub stderr_truncated: bool,
}

/// The most stderr bytes a result carries (its end).
pub const STDERR_TAIL: usize = 64 << 10;

/// What went wrong with the stream of frames. Every variant is an
/// infrastructure error.
#[derive(Debug)]
pub enum FrameError {
    /// The stream ended inside a frame (the peer died mid-message).
    Truncated,
    /// The first bytes are not `MAGIC`.
    BadMagic([u8; 4]),
    /// Another protocol version.
    BadVersion(u8),
    /// A length above `MAX_PAYLOAD`.
    TooLong(u32),
    /// An unknown message kind.
    UnknownKind(u8),
    /// The payload does not decode as its kind.
    Malformed(&'static str),
    /// Reading or writing failed.
    Io(io::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Truncated => write!(f, "the stream ended inside a frame"),
            FrameError::BadMagic(m) => write!(f, "bad frame magic {m:02x?}"),
            FrameError::BadVersion(v) => {
                write!(f, "protocol version {v}, expected {VERSION}")
            }
            FrameError::TooLong(n) => {
                write!(f, "frame length {n} above the maximum {MAX_PAYLOAD}")
            }
            FrameError::UnknownKind(k) => write!(f, "unknown message kind {k}"),
            FrameError::Malformed(what) => write!(f, "malformed payload: {what}"),
            FrameError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for FrameError {}

impl Message {
    fn kind(&self) -> u8 {
        match self {
            Message::Hello { .. } => 1,
            Message::Load(_) => 2,
            Message::Loaded => 3,
            Message::Refused(_) => 4,
            Message::Case(_) => 5,
            Message::Result(_) => 6,
            Message::Reset => 7,
            Message::ResetDone { .. } => 8,
            Message::Internal(_) => 9,
            Message::Bye => 10,
            Message::Unload => 11,
            Message::Steps(_) => 12,
        }
    }

    /// A short name, for messages about an unexpected reply.
    pub fn name(&self) -> &'static str {
        match self {
            Message::Hello { .. } => "Hello",
            Message::Load(_) => "Load",
            Message::Loaded => "Loaded",
            Message::Refused(_) => "Refused",
            Message::Case(_) => "Case",
            Message::Result(_) => "Result",
            Message::Reset => "Reset",
            Message::ResetDone { .. } => "ResetDone",
            Message::Internal(_) => "Internal",
            Message::Bye => "Bye",
            Message::Unload => "Unload",
            Message::Steps(_) => "Steps",
        }
    }

    fn encode_payload(&self) -> Vec<u8> {
        let mut e = Enc(Vec::new());
        match self {
            Message::Hello {
                sbx_version,
                oom_counter,
            } => {
                e.str(sbx_version);
                e.bool(*oom_counter);
            }
            Message::Load(c) => {
                e.str(&c.file_name);
                e.bytes(&c.program);
                e.bool(c.interpreter.is_some());
                if let Some(words) = &c.interpreter {
                    e.u32(words.len() as u32);
                    for w in words {
                        e.str(w);
                    }
                }
                e.bool(c.build.is_some());
                if let Some(files) = &c.build {
                    e.u32(files.len() as u32);
                    for f in files {
                        e.str(&f.path);
                        e.bytes(&f.bytes);
                    }
                }
            }
            Message::Case(c) => {
                e.bytes(&c.stdin);
                e.u64(c.wall_ms);
                e.u64(c.max_output);
                e.bool(c.cpu_limit_s.is_some());
                if let Some(s) = c.cpu_limit_s {
                    e.u64(s);
                }
                e.u8(c.rule as u8);
            }
            Message::Result(r) => {
                e.u8(r.status as u8);
                e.opt_i32(r.exit_code);
                e.opt_i32(r.signal);
                e.u64(r.wall_ms);
                e.u64(r.cpu_ms);
                e.u64(r.wait_ms);
                e.u64(r.max_rss_kib);
                e.bool(r.oom);
                e.bytes(&r.stdout);
                e.bool(r.stdout_truncated);
                e.bytes(&r.stderr_tail);
                e.bool(r.stderr_truncated);
            }
            Message::ResetDone { clean, message } => {
                e.bool(*clean);
                e.str(message);
            }
            Message::Refused(m) | Message::Internal(m) => e.str(m),
            Message::Loaded | Message::Reset | Message::Bye | Message::Unload => {}
            Message::Steps(steps) => {
                e.u32(steps.len() as u32);
                for step in steps {
                    e.u8(step.kind());
                    e.bytes(&step.encode_payload());
                }
            }
        }
        e.0
    }

    fn decode(kind: u8, payload: &[u8]) -> Result<Message, FrameError> {
        let mut d = Dec(payload);
        let message = match kind {
            1 => Message::Hello {
                sbx_version: d.str()?,
                oom_counter: d.bool()?,
            },
            2 => {
                let file_name = d.str()?;
                let program = d.bytes()?.to_vec();
                let interpreter = if d.bool()? {
                    let n = d.u32()?;
                    let mut words = Vec::new();
                    for _ in 0..n {
                        words.push(d.str()?);
                    }
                    Some(words)
                } else {
                    None
                };
                let build = if d.bool()? {
                    let n = d.u32()?;
                    let mut files = Vec::new();
                    for _ in 0..n {
                        let path = d.str()?;
                        let bytes = d.bytes()?.to_vec();
                        files.push(BuildFile { path, bytes });
                    }
                    Some(files)
                } else {
                    None
                };
                Message::Load(Candidate {
                    file_name,
                    program,
                    interpreter,
                    build,
                })
            }
            3 => Message::Loaded,
            4 => Message::Refused(d.str()?),
            5 => {
                let stdin = d.bytes()?.to_vec();
                let wall_ms = d.u64()?;
                let max_output = d.u64()?;
                let cpu_limit_s = if d.bool()? { Some(d.u64()?) } else { None };
                let rule = match d.u8()? {
                    0 => TimeRule::Wall,
                    1 => TimeRule::Cpu,
                    _ => return Err(FrameError::Malformed("time rule")),
                };
                Message::Case(Case {
                    stdin,
                    wall_ms,
                    max_output,
                    cpu_limit_s,
                    rule,
                })
            }
            6 => Message::Result(CaseResult {
                status: CaseStatus::from_u8(d.u8()?).ok_or(FrameError::Malformed("status"))?,
                exit_code: d.opt_i32()?,
                signal: d.opt_i32()?,
                wall_ms: d.u64()?,
                cpu_ms: d.u64()?,
                wait_ms: d.u64()?,
                max_rss_kib: d.u64()?,
                oom: d.bool()?,
                stdout: d.bytes()?.to_vec(),
                stdout_truncated: d.bool()?,
                stderr_tail: d.bytes()?.to_vec(),
                stderr_truncated: d.bool()?,
            }),
            7 => Message::Reset,
            8 => Message::ResetDone {
                clean: d.bool()?,
                message: d.str()?,
            },
            9 => Message::Internal(d.str()?),
            10 => Message::Bye,
            11 => Message::Unload,
            12 => {
                let n = d.u32()?;
                let mut steps = Vec::new();
                for _ in 0..n {
                    let kind = d.u8()?;
                    if !STEP_KINDS.contains(&kind) {
                        return Err(FrameError::Malformed(
                            "a step that is not Unload, Reset, Load or Case",
                        ));
                    }
                    steps.push(Message::decode(kind, d.bytes()?)?);
                }
                Message::Steps(steps)
            }
            other => return Err(FrameError::UnknownKind(other)),
        };
        if !d.0.is_empty() {
            return Err(FrameError::Malformed("bytes left over"));
        }
        Ok(message)
    }
}

/// The kinds a `Steps` message may hold: `Load`, `Case`, `Reset`,
/// `Unload` (never another `Steps`).
const STEP_KINDS: [u8; 4] = [2, 5, 7, 11];

/// Writes one frame and flushes.
pub fn write_message(w: &mut impl Write, message: &Message) -> Result<(), FrameError> {
    let payload = message.encode_payload();
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&n| n <= MAX_PAYLOAD)
        .ok_or(FrameError::TooLong(u32::MAX))?;
    let mut frame = Vec::with_capacity(HEADER + payload.len());
    frame.extend_from_slice(&MAGIC);
    frame.push(VERSION);
    frame.push(message.kind());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&payload);
    w.write_all(&frame).map_err(FrameError::Io)?;
    w.flush().map_err(FrameError::Io)
}

/// Reads one frame. `Ok(None)` is a clean end of stream between frames.
pub fn read_message(r: &mut impl Read) -> Result<Option<Message>, FrameError> {
    let mut header = [0u8; HEADER];
    match fill(r, &mut header)? {
        0 => return Ok(None),
        n if n < HEADER => return Err(FrameError::Truncated),
        _ => {}
    }
    let magic = [header[0], header[1], header[2], header[3]];
    if magic != MAGIC {
        return Err(FrameError::BadMagic(magic));
    }
    if header[4] != VERSION {
        return Err(FrameError::BadVersion(header[4]));
    }
    let kind = header[5];
    let len = u32::from_le_bytes([header[6], header[7], header[8], header[9]]);
    if len > MAX_PAYLOAD {
        return Err(FrameError::TooLong(len));
    }
    // Read before allocating all of it: a short stream cannot make us
    // reserve 64 MiB.
    let mut payload = Vec::new();
    let got = r
        .take(u64::from(len))
        .read_to_end(&mut payload)
        .map_err(FrameError::Io)?;
    if got < len as usize {
        return Err(FrameError::Truncated);
    }
    Message::decode(kind, &payload).map(Some)
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> Result<usize, FrameError> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    Ok(n)
}

struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn bool(&mut self, v: bool) {
        self.0.push(u8::from(v));
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn opt_i32(&mut self, v: Option<i32>) {
        self.bool(v.is_some());
        if let Some(v) = v {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }
    fn bytes(&mut self, v: &[u8]) {
        // The whole frame is checked against MAX_PAYLOAD when written.
        self.u32(u32::try_from(v.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(v);
    }
    fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
}

struct Dec<'a>(&'a [u8]);

impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if self.0.len() < n {
            return Err(FrameError::Malformed("payload too short"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }
    fn bool(&mut self) -> Result<bool, FrameError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(FrameError::Malformed("bool")),
        }
    }
    fn u32(&mut self) -> Result<u32, FrameError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, FrameError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn opt_i32(&mut self) -> Result<Option<i32>, FrameError> {
        if self.bool()? {
            let b = self.take(4)?;
            Ok(Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        } else {
            Ok(None)
        }
    }
    fn bytes(&mut self) -> Result<&'a [u8], FrameError> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Result<String, FrameError> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| FrameError::Malformed("utf-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_messages() -> Vec<Message> {
        vec![
            Message::Hello {
                sbx_version: "0.1.0".into(),
                oom_counter: true,
            },
            Message::Load(Candidate {
                file_name: "task.py".into(),
                program: (0..=255u8).collect(),
                interpreter: Some(vec!["python3".into(), "-u".into()]),
                build: None,
            }),
            Message::Load(Candidate {
                file_name: "task".into(),
                program: b"int main(){}".to_vec(),
                interpreter: Some(vec!["/sbx/build/main".into()]),
                build: Some(vec![
                    BuildFile {
                        path: "main".into(),
                        bytes: vec![0x7f, b'E', b'L', b'F', 0],
                    },
                    BuildFile {
                        path: "pkg/Main$1.class".into(),
                        bytes: Vec::new(),
                    },
                ]),
            }),
            Message::Load(Candidate {
                file_name: "t.sh".into(),
                program: b"#!/bin/sh\necho hi\n".to_vec(),
                interpreter: None,
                build: Some(Vec::new()),
            }),
            Message::Loaded,
            Message::Refused("no #! line".into()),
            Message::Case(Case {
                stdin: vec![0, 1, 2, 255],
                wall_ms: 10_000,
                max_output: 1 << 20,
                cpu_limit_s: Some(3),
                rule: TimeRule::Cpu,
            }),
            Message::Case(Case {
                stdin: Vec::new(),
                wall_ms: 1,
                max_output: 0,
                cpu_limit_s: None,
                rule: TimeRule::Wall,
            }),
            Message::Result(CaseResult {
                status: CaseStatus::Signal,
                exit_code: None,
                signal: Some(9),
                wall_ms: 12,
                cpu_ms: 3,
                wait_ms: 5,
                max_rss_kib: 4096,
                oom: true,
                stdout: b"out\0\xff".to_vec(),
                stdout_truncated: true,
                stderr_tail: b"err".to_vec(),
                stderr_truncated: false,
            }),
            Message::Reset,
            Message::ResetDone {
                clean: false,
                message: "pid 7 left".into(),
            },
            Message::Internal("boom".into()),
            Message::Bye,
            Message::Unload,
            Message::Steps(Vec::new()),
            Message::Steps(vec![
                Message::Unload,
                Message::Load(Candidate {
                    file_name: "task".into(),
                    program: b"print(1)\n".to_vec(),
                    interpreter: Some(vec!["python3".into()]),
                    build: None,
                }),
                Message::Reset,
                Message::Case(Case {
                    stdin: b"1\n".to_vec(),
                    wall_ms: 6000,
                    max_output: 1 << 20,
                    cpu_limit_s: None,
                    rule: TimeRule::Cpu,
                }),
            ]),
        ]
    }

    #[test]
    fn steps_hold_only_host_requests_and_never_steps() {
        for inner in [
            Message::Steps(Vec::new()),
            Message::Bye,
            Message::Loaded,
            Message::Internal("x".into()),
            Message::ResetDone {
                clean: true,
                message: String::new(),
            },
        ] {
            let f = frame(&Message::Steps(vec![inner.clone()]));
            assert!(
                matches!(read_message(&mut &f[..]), Err(FrameError::Malformed(_))),
                "{inner:?} inside Steps"
            );
        }
        // A step whose own payload does not decode exactly.
        let mut f = frame(&Message::Steps(vec![Message::Reset]));
        let len = f.len();
        f[len - 4..].copy_from_slice(&1u32.to_le_bytes());
        f.push(0);
        f[6..10].copy_from_slice(&((len + 1 - 10) as u32).to_le_bytes());
        assert!(matches!(
            read_message(&mut &f[..]),
            Err(FrameError::Malformed(_))
        ));
    }

    fn frame(message: &Message) -> Vec<u8> {
        let mut buf = Vec::new();
        write_message(&mut buf, message).unwrap();
        buf
    }

    #[test]
    fn every_message_round_trips_back_to_back() {
        let messages = all_messages();
        let mut stream = Vec::new();
        for m in &messages {
            stream.extend(frame(m));
        }
        let mut r = &stream[..];
        for m in &messages {
            assert_eq!(read_message(&mut r).unwrap().as_ref(), Some(m));
        }
        assert!(read_message(&mut r).unwrap().is_none(), "clean EOF");
    }

    #[test]
    fn payloads_are_raw_bytes_not_base64() {
        let program = vec![0xAB; 100_000];
        let m = Message::Load(Candidate {
            file_name: "a".into(),
            program,
            interpreter: None,
            build: None,
        });
        assert!(frame(&m).len() < 100_000 + 64);
    }

    #[test]
    fn build_paths_are_plain_relative_paths() {
        for good in ["main", "Main$1.class", "pkg/A.class", "a/b/c"] {
            assert!(valid_build_path(good), "{good}");
        }
        for bad in [
            "", "/main", "a//b", "./main", "../x", "a/../b", "a/", "a\0b",
        ] {
            assert!(!valid_build_path(bad), "{bad:?}");
        }
    }

    #[test]
    fn eof_anywhere_inside_a_frame_is_truncated() {
        for m in all_messages() {
            let f = frame(&m);
            for cut in 1..f.len() {
                let err = read_message(&mut &f[..cut]).unwrap_err();
                assert!(
                    matches!(err, FrameError::Truncated),
                    "{} cut at {cut}: {err}",
                    m.name()
                );
            }
        }
    }

    #[test]
    fn garbage_bad_version_unknown_kind_and_over_long_lengths_are_errors() {
        let err = read_message(&mut &b"{\"status\":\"pass\"}\n"[..]).unwrap_err();
        assert!(matches!(err, FrameError::BadMagic(_)), "{err}");

        let mut f = frame(&Message::Bye);
        f[4] = 1;
        assert!(matches!(
            read_message(&mut &f[..]),
            Err(FrameError::BadVersion(1))
        ));

        let mut f = frame(&Message::Bye);
        f[5] = 99;
        assert!(matches!(
            read_message(&mut &f[..]),
            Err(FrameError::UnknownKind(99))
        ));

        let mut f = frame(&Message::Bye);
        f[6..10].copy_from_slice(&(MAX_PAYLOAD + 1).to_le_bytes());
        assert!(matches!(
            read_message(&mut &f[..]),
            Err(FrameError::TooLong(n)) if n == MAX_PAYLOAD + 1
        ));
    }

    #[test]
    fn payloads_must_decode_exactly() {
        // Bye with a payload byte: left over.
        let mut f = frame(&Message::Bye);
        f[6..10].copy_from_slice(&1u32.to_le_bytes());
        f.push(0);
        assert!(matches!(
            read_message(&mut &f[..]),
            Err(FrameError::Malformed(_))
        ));
        // A Result whose inner stdout length runs past the payload.
        let f = frame(&Message::Internal("abc".into()));
        let mut bad = f.clone();
        bad[10..14].copy_from_slice(&100u32.to_le_bytes());
        assert!(matches!(
            read_message(&mut &bad[..]),
            Err(FrameError::Malformed(_))
        ));
        // A bool that is neither 0 nor 1, a status out of range.
        let mut f = frame(&Message::ResetDone {
            clean: true,
            message: String::new(),
        });
        f[10] = 2;
        assert!(matches!(
            read_message(&mut &f[..]),
            Err(FrameError::Malformed(_))
        ));
        let mut f = frame(&Message::Result(CaseResult {
            status: CaseStatus::Ok,
            exit_code: Some(0),
            signal: None,
            wall_ms: 0,
            cpu_ms: 0,
            wait_ms: 0,
            max_rss_kib: 0,
            oom: false,
            stdout: Vec::new(),
            stdout_truncated: false,
            stderr_tail: Vec::new(),
            stderr_truncated: false,
        }));
        f[10] = 10;
        assert!(matches!(
            read_message(&mut &f[..]),
            Err(FrameError::Malformed("status"))
        ));
    }
}
