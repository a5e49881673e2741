//! The zygote: one Python interpreter per runner, started as root after a
//! clean reset, that forks each `python3 -c CODE ARGS...` case instead of
//! a new interpreter being started for it (a Python start is most of a
//! function test's CPU).
//!
//! What makes it safe to keep next to candidates:
//! - it is root's, and every candidate process runs under the candidates'
//!   uid with no capability: no candidate can signal, `ptrace`, `prlimit`
//!   or reschedule it, or open its `/proc` files beyond what any process
//!   shows (its command line is this crate's own text);
//! - it reads nothing but its socket to the runner, and while it serves,
//!   its `sys.path` is empty: it imports nothing after its start, and its
//!   start (from `/`, right after a verified reset) reads only the image;
//! - it holds no secret: a function test's token reaches the child on its
//!   stdin, which the zygote never reads, and expected values are never in
//!   the container;
//! - each child, before any of the candidate's code, joins a process group
//!   of its own, takes the OOM killer's first place, its CPU limit, an
//!   empty group list and the candidates' gid and uid (all three of each:
//!   root's capabilities are gone), the runner's working directory and the
//!   case's fresh pipes as fds 0, 1 and 2, and closes every other fd; the
//!   zygote answers `P PID` only once that is done, `F WHY` if it failed;
//! - the child's status and resource use come from the zygote's `wait4`;
//!   the reset kills candidates by uid (see `reset::kill_others`) and
//!   spares only a root-owned zygote, which `verify` checks.
//!
//! Anything else (compiled candidates, other interpreters, words the zygote
//! cannot carry) is spawned by the runner directly, as is every case once
//! the zygote failed in a container.

use std::io::{self, IoSlice, PipeReader, PipeWriter, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

use super::identity::Identity;

/// The zygote's own program (`python3 -c SOURCE CWD`): its first line
/// keeps the fresh globals a forked program starts with.
pub(crate) const SOURCE: &str = concat!(
    "_fresh = dict(globals())\n",
    include_str!("import_block.py"),
    include_str!("zygote.py")
);

/// LiveCodeBench's import block (`_sbx_lcb_block(scope)`), which the
/// zygote runs once into `sys._sbx_lcb_prepared`; sbx's LiveCodeBench
/// harnesses include it for where no zygote forked them.
pub const LIVECODEBENCH_BLOCK: &str = include_str!("import_block.py");

/// How long the zygote may take to start, or to answer a request.
const ANSWER: Duration = Duration::from_secs(10);
/// How often a blocked read looks at its deadline.
const TICK: Duration = Duration::from_millis(200);

/// The runner's zygote, if any.
#[derive(Default)]
pub(crate) enum Slot {
    /// Not started yet (or lost; started again at the next case).
    #[default]
    Idle,
    Running(Zygote),
    /// It could not start or serve in this container: cases are spawned
    /// directly from now on.
    Unavailable,
}

impl Slot {
    /// The zygote's pid, which the reset spares while it is root's; a
    /// zygote that ended (or was reaped) is dropped, to be started again.
    pub(crate) fn pid(&mut self) -> Option<u32> {
        let Slot::Running(z) = self else {
            return None;
        };
        match z.child.try_wait() {
            Ok(None) => Some(z.child.id()),
            _ => {
                *self = Slot::Idle;
                None
            }
        }
    }
}

/// How the zygote's child runs the case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form<'a> {
    /// `python3 -c CODE ARGS...`: these words (`CODE ARGS...`), the
    /// case's file appended.
    Code(&'a [String]),
    /// `python3 FILE`: the case's file as the script.
    Script,
}

/// The interpreter and the form when a case can be forked by the zygote:
/// `python`, `python3` or `python3.N` (by name or absolute path), alone or
/// followed by `-c` and its words; no build; no NUL byte in any word. A
/// script holding a NUL byte (Python's own message for it differs from
/// `compile`'s) or a zip archive's end record (Python runs a zip's
/// `__main__.py`) is spawned directly.
pub(crate) fn eligible<'a>(
    interpreter: &'a [String],
    has_build: bool,
    program: &[u8],
) -> Option<(&'a str, Form<'a>)> {
    let (python, rest) = interpreter.split_first()?;
    let form = match rest.split_first() {
        None => Form::Script,
        Some((flag, words)) if flag == "-c" && !words.is_empty() => Form::Code(words),
        Some(_) => return None,
    };
    if has_build {
        return None;
    }
    if form == Form::Script
        && (program.contains(&0) || program.windows(4).any(|w| w == b"PK\x05\x06"))
    {
        return None;
    }
    // A relative path with a slash would resolve against `/` (the
    // zygote's directory), not the runner's.
    if python.contains('/') && !python.starts_with('/') {
        return None;
    }
    let name = python.rsplit('/').next().unwrap_or(python);
    let version = name.strip_prefix("python")?;
    let is_python = version.is_empty()
        || version == "3"
        || version
            .strip_prefix("3.")
            .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()));
    let clean = interpreter.iter().all(|w| !w.contains('\0'));
    (is_python && clean).then_some((python.as_str(), form))
}

/// A running zygote.
pub(crate) struct Zygote {
    pub(crate) program: String,
    child: Child,
    sock: UnixStream,
    lines: Arc<Mutex<Lines>>,
    /// The read ends of its stdout and stderr, kept open (it writes
    /// nothing): its children's `sys.stdout` and `sys.stderr` are then
    /// built over pipes, as a spawned program's are.
    _output: (Option<ChildStdout>, Option<ChildStderr>),
}

/// The zygote's answers, a line each.
struct Lines {
    sock: UnixStream,
    pending: Vec<u8>,
}

impl Lines {
    /// The next line, waiting until `deadline` (forever for `None`).
    fn next(&mut self, deadline: Option<Instant>) -> Result<String, String> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return Ok(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            let mut buf = [0u8; 512];
            match self.sock.read(&mut buf) {
                Ok(0) => return Err("the zygote is gone".into()),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err("the zygote did not answer in time".into());
                    }
                }
                Err(e) => return Err(format!("the zygote's socket: {e}")),
            }
        }
    }
}

/// A case's program as the zygote forked it.
pub(crate) struct Spawned {
    pub stdin: PipeWriter,
    pub stdout: PipeReader,
    pub stderr: PipeReader,
    /// Waits for the program's end (see [`wait`]).
    pub waiter: Waiter,
}

/// How a forked program ended, as the zygote's `wait4` saw it.
#[derive(Debug)]
pub(crate) struct Reaped {
    pub status: ExitStatus,
    pub cpu: Duration,
    pub max_rss_kib: u64,
}

/// Reads the end of one forked program.
pub(crate) struct Waiter(Arc<Mutex<Lines>>);

impl Waiter {
    /// Blocks until the zygote reports the program's end; `Err` when the
    /// zygote is gone or says something else.
    pub(crate) fn wait(self) -> Result<Reaped, String> {
        let mut lines = match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let line = lines.next(None)?;
        parse_end(&line).ok_or_else(|| format!("the zygote said `{}`", line.escape_debug()))
    }
}

/// `W STATUS UTIME_US STIME_US MAXRSS_KIB`.
fn parse_end(line: &str) -> Option<Reaped> {
    let mut words = line.strip_prefix("W ")?.split(' ');
    let mut next = || words.next()?.parse::<i64>().ok();
    let (status, user, system, rss) = (next()?, next()?, next()?, next()?);
    let micros = |v: i64| Duration::from_micros(u64::try_from(v).unwrap_or(0));
    Some(Reaped {
        status: ExitStatus::from_raw(i32::try_from(status).ok()?),
        cpu: micros(user) + micros(system),
        max_rss_kib: u64::try_from(rss).unwrap_or(0),
    })
}

impl Zygote {
    /// Starts `program -c SOURCE CWD` as root from `/`, with the runner's
    /// environment, and waits for its `R`. Call it only after a clean
    /// reset: its start reads the file system, which no candidate may
    /// have touched.
    pub(crate) fn start(program: &str) -> Result<Zygote, String> {
        let (ours, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
        let cwd = std::env::current_dir().map_err(|e| format!("the runner's directory: {e}"))?;
        let child = Command::new(program)
            .arg("-c")
            .arg(SOURCE)
            .arg(&cwd)
            .current_dir("/")
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start the zygote `{program}`: {e}"))?;
        let mut child = child;
        let reader = match ours
            .try_clone()
            .and_then(|r| r.set_read_timeout(Some(TICK)).map(|()| r))
        {
            Ok(reader) => reader,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the zygote's socket: {e}"));
            }
        };
        // From here, dropping it kills it.
        let output = (child.stdout.take(), child.stderr.take());
        let zygote = Zygote {
            program: program.to_string(),
            _output: output,
            child,
            sock: ours,
            lines: Arc::new(Mutex::new(Lines {
                sock: reader,
                pending: Vec::new(),
            })),
        };
        match zygote.line(Some(Instant::now() + ANSWER))?.as_str() {
            "R" => Ok(zygote),
            other => Err(format!(
                "the zygote started with `{}`",
                other.escape_debug()
            )),
        }
    }

    fn line(&self, deadline: Option<Instant>) -> Result<String, String> {
        let mut lines = match self.lines.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        lines.next(deadline)
    }

    /// Forks the case (`form`, with `file`) as the candidate, with fresh
    /// pipes; returns once the child runs as the candidate.
    pub(crate) fn spawn(
        &mut self,
        identity: Identity,
        cpu_limit_s: Option<u64>,
        form: Form<'_>,
        file: &Path,
    ) -> Result<Spawned, String> {
        let lost = |what: &str, e: io::Error| format!("{what}: {e}");
        let (in_r, in_w) = io::pipe().map_err(|e| lost("pipe", e))?;
        let (out_r, out_w) = io::pipe().map_err(|e| lost("pipe", e))?;
        let (err_r, err_w) = io::pipe().map_err(|e| lost("pipe", e))?;
        let cpu = cpu_limit_s.map_or(-1, |s| i64::try_from(s).unwrap_or(i64::MAX));
        let mut fields: Vec<&[u8]> = Vec::with_capacity(8);
        let (uid, gid, cpu) = (
            identity.uid.to_string(),
            identity.gid.to_string(),
            cpu.to_string(),
        );
        fields.extend([uid.as_bytes(), gid.as_bytes(), cpu.as_bytes()]);
        match form {
            Form::Code(words) => {
                fields.push(b"c");
                fields.extend(words.iter().map(|w| w.as_bytes()));
            }
            Form::Script => fields.push(b"f"),
        }
        fields.push(file.as_os_str().as_bytes());
        let payload = fields.join(&b'\0');
        let len = u32::try_from(payload.len()).map_err(|_| "a request above 4 GiB".to_string())?;
        let mut frame = len.to_be_bytes().to_vec();
        frame.extend_from_slice(&payload);
        let fds = [in_r.as_fd(), out_w.as_fd(), err_w.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err("no room for the fds".into());
        }
        let sent = sendmsg(
            &self.sock,
            &[IoSlice::new(&frame)],
            &mut control,
            SendFlags::NOSIGNAL,
        )
        .map_err(|e| lost("send to the zygote", e.into()))?;
        (&self.sock)
            .write_all(&frame[sent..])
            .map_err(|e| lost("send to the zygote", e))?;
        // The child has its own copies now.
        drop((in_r, out_w, err_w));
        // `F WHY`: the child could not become the candidate; nothing of
        // the candidate ran, and the zygote reaped it.
        let line = self.line(Some(Instant::now() + ANSWER))?;
        if let Some(why) = line.strip_prefix("F ") {
            return Err(format!("the zygote's child: {why}"));
        }
        if !line.starts_with("P ") {
            return Err(format!("the zygote said `{}`", line.escape_debug()));
        }
        Ok(Spawned {
            stdin: in_w,
            stdout: out_r,
            stderr: err_r,
            waiter: Waiter(Arc::clone(&self.lines)),
        })
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_python_alone_or_with_minus_c_and_no_build_is_forked() {
        // (the interpreter, the words after `-c` or `None` for a script)
        type Eligible = Option<(String, Option<Vec<String>>)>;
        let code = |w: &[&str]| -> Eligible {
            eligible(&words(w), false, b"print(1)\n").map(|(p, form)| {
                let words = match form {
                    Form::Code(words) => Some(words.to_vec()),
                    Form::Script => None,
                };
                (p.to_string(), words)
            })
        };
        for w in [
            &["python3", "-c", "pass"][..],
            &["/usr/bin/python3", "-c", "pass", "1"],
            &["python", "-c", "x"],
            &["python3.11", "-c", "x"],
        ] {
            assert!(matches!(code(w), Some((_, Some(_)))), "{w:?}");
        }
        for w in [&["python3"][..], &["/usr/bin/python3.11"], &["python"]] {
            assert!(matches!(code(w), Some((_, None))), "{w:?}");
        }
        let no = [
            &["python3", "-u"][..],
            &["python3", "-c"],
            &["python3", "-I", "-c", "pass"],
            &["bash", "-c", "echo"],
            &["sh"],
            &["python3x", "-c", "pass"],
            &["python3.", "-c", "pass"],
            &["python2.7", "-c", "pass"],
            &["pythonw", "-c", "pass"],
            &["python3", "-c", "pa\0ss"],
            &["./python3", "-c", "pass"],
            &["bin/python3"],
            &["env", "python3"],
            &[],
        ];
        for w in no {
            assert!(code(w).is_none(), "{w:?}");
        }
        assert!(eligible(&words(&["python3", "-c", "pass"]), true, b"").is_none());
        assert!(eligible(&words(&["python3"]), true, b"").is_none());
        // Scripts Python would not read as source.
        assert!(eligible(&words(&["python3"]), false, b"print(1)\0").is_none());
        assert!(eligible(&words(&["python3"]), false, b"#!x\nPK\x05\x06rest").is_none());
        // `-c` runs its words, whatever the file holds.
        assert!(eligible(&words(&["python3", "-c", "x"]), false, b"\0").is_some());
        assert_eq!(
            code(&["python3", "-c", "a", "b"]),
            Some(("python3".to_string(), Some(words(&["a", "b"]))))
        );
    }

    #[test]
    fn the_end_line_is_read_exactly() {
        let r = parse_end("W 256 1500 2500 9000").unwrap();
        assert_eq!(r.status.code(), Some(1));
        assert_eq!(r.cpu, Duration::from_micros(4000));
        assert_eq!(r.max_rss_kib, 9000);
        assert_eq!(parse_end("W 9 0 0 0").unwrap().status.signal(), Some(9));
        for bad in ["", "W", "W 1 2 3", "P 12", "W a 1 2 3", "W 1 2 3 x"] {
            assert!(parse_end(bad).is_none(), "{bad:?}");
        }
    }
}
