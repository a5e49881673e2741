//! The runner: `sbx __runner`, run as the container's PID 1 (never on a
//! host: it kills every other process of its pid namespace). It speaks the
//! protocol of `protocol` on its stdin and stdout and runs each case as a
//! fresh process.
//!
//! Its own safety, before it reads anything:
//! - it refuses to run unless it is PID 1;
//! - `prctl(PR_SET_DUMPABLE, 0)`: a candidate running as the same user can
//!   then neither `ptrace` it nor open `/proc/1/fd/*` (its protocol pipes);
//! - it installs no signal handler (sbx's own handlers are installed only
//!   after this subcommand is dispatched), so signals sent to PID 1 from
//!   inside the container are dropped by the kernel;
//! - children get fresh pipes as fds 0, 1 and 2, and every other fd of the
//!   runner is close-on-exec (checked at start).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{
    getrlimit, prlimit, set_dumpable_behavior, DumpableBehavior, Pid, Resource, Rlimit,
};
use wait4::Wait4;

use super::posture::Posture;
use super::protocol::{
    read_message, valid_build_path, write_message, BuildFile, Candidate, Case, CaseResult,
    CaseStatus, Message, BUILD_DIR, BUILD_MOUNT, STDERR_TAIL,
};
use super::reset::{self, Dirs};
use super::shebang;

/// The hidden subcommand that makes sbx the runner.
pub const SUBCOMMAND: &str = "__runner";
/// The largest `max_output` a case may ask for (the result must fit a frame).
pub const MAX_OUTPUT: u64 = 32 << 20;
/// How often the case loop looks at the output flag and the clock.
const POLL: Duration = Duration::from_millis(5);
/// How long a killed child may take to be reaped, and readers to see EOF.
const GRACE: Duration = Duration::from_secs(5);
/// O_CLOEXEC as `/proc/self/fdinfo` prints it (octal flags).
const O_CLOEXEC: u32 = 0o2000000;
/// The runner's own OOM score.
const OOM_SCORE_SELF: &str = "/proc/self/oom_score_adj";

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
    // Every thread a case needs exists before any candidate runs: a
    // candidate that fills the pids limit cannot keep the runner from
    // supervising it.
    let lanes = match Lanes::start() {
        Ok(lanes) => lanes,
        Err(e) => {
            let _ = write_message(&mut output, &Message::Internal(format!("threads: {e}")));
            return crate::exit::ENGINE;
        }
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            let _ = write_message(&mut output, &Message::Internal(format!("own path: {e}")));
            return crate::exit::ENGINE;
        }
    };
    let mut runner = Runner {
        wiper: reset::Wiper {
            exe,
            subcommand: SUBCOMMAND,
            uid: identity.uid,
            gid: identity.gid,
        },
        identity,
        lanes,
        dirs: Dirs::record(),
        posture: Posture::record(),
        oom_counter: oom_counter_path(),
        candidate: None,
        clean: true,
        cases: 0,
    };
    let hello = Message::Hello {
        sbx_version: crate::VERSION.into(),
        oom_counter: runner.oom_counter.is_some(),
    };
    if write_message(&mut output, &hello).is_err() {
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
            Message::Reset => runner.reset(false),
            Message::Unload => runner.reset(true),
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
        let Ok(info) = fs::read_to_string(format!("/proc/self/fdinfo/{fd}")) else {
            continue;
        };
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
    parse_oom_kills(&fs::read_to_string(path).ok()?)
}

fn parse_oom_kills(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse().ok())
}

/// A loaded candidate: where its bytes go and how it runs.
struct Loaded {
    file_name: String,
    program: Vec<u8>,
    interpreter: Vec<String>,
    /// A compiled candidate's build as written under `BUILD_DIR`: the
    /// interpreter is then the whole command (no file appended).
    build: Option<Built>,
}

/// What `BUILD_MOUNT` holds once a build is written: each path (relative
/// to `BUILD_MOUNT`) and its size, `None` for a directory.
type Built = BTreeMap<PathBuf, Option<u64>>;

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

/// The uid and gid every candidate process runs under: never root's, and
/// never the runner's (root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    pub uid: u32,
    pub gid: u32,
}

impl Identity {
    /// `UID:GID` as the runner's argument.
    pub(crate) fn from_args(arg: Option<&str>) -> Result<Identity, String> {
        let arg = arg.ok_or("the candidates' UID:GID must follow the subcommand")?;
        let parsed = arg
            .split_once(':')
            .and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)));
        match parsed {
            Some((0, _) | (_, 0)) => Err(format!(
                "candidates never run as root (uid or gid 0), asked `{arg}`"
            )),
            Some((uid, gid)) => Ok(Identity { uid, gid }),
            None => Err(format!("expected the candidates' UID:GID, got `{arg}`")),
        }
    }
}

/// The argument that makes sbx the identity probe `sbx doctor` runs as a
/// candidate (`sbx __runner --probe`): what it is and whether it can reach
/// PID 1, one `key value` line each, using nothing of the image.
pub const PROBE: &str = "--probe";

/// The probe's report (see `PROBE`). Each reach of PID 1 is tried without
/// changing anything if it succeeds (the same limit, the same nice value,
/// an open without a write, an attach then a detach) and prints `ok` or
/// the errno's name.
pub(crate) fn probe() -> String {
    use rustix::process::{getegid, geteuid, getgid, getuid, Pid};
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(","))
            .unwrap_or_else(|| "?".into())
    };
    let errno = |r: Result<(), rustix::io::Errno>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => errno_name(e.raw_os_error()),
    };
    let io_errno = |r: io::Result<()>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => errno_name(e.raw_os_error().unwrap_or(0)),
    };
    let mut out = format!(
        "uid {} {}
gid {} {}
groups {}
",
        getuid().as_raw(),
        geteuid().as_raw(),
        getgid().as_raw(),
        getegid().as_raw(),
        field("Groups")
    );
    for key in ["CapEff", "CapPrm", "CapInh", "CapAmb", "NoNewPrivs"] {
        let mut value = field(key);
        // gVisor's /proc/self/status has no NoNewPrivs line: ask prctl.
        if key == "NoNewPrivs" && value == "?" {
            if let Ok(set) = rustix::thread::no_new_privs() {
                value = u8::from(set).to_string();
            }
        }
        out += &format!(
            "{key} {value}
"
        );
    }
    let kill = nix::sys::signal::kill(nix::unistd::Pid::from_raw(1), None);
    out += &format!(
        "kill {}
",
        match kill {
            Ok(()) => "ok".to_string(),
            Err(e) => errno_name(e as i32),
        }
    );
    let own = getrlimit(Resource::As);
    out += &format!(
        "prlimit {}
",
        errno(prlimit(Some(Pid::INIT), Resource::As, own).map(drop))
    );
    let nice = rustix::process::getpriority_process(Some(Pid::INIT)).unwrap_or(0);
    out += &format!(
        "setpriority {}
",
        errno(rustix::process::setpriority_process(Some(Pid::INIT), nice))
    );
    let oom = fs::OpenOptions::new()
        .write(true)
        .open("/proc/1/oom_score_adj")
        .map(drop);
    out += &format!(
        "oom_score_adj {}
",
        io_errno(oom)
    );
    let traced = nix::sys::ptrace::attach(nix::unistd::Pid::from_raw(1));
    out += &format!(
        "ptrace {}
",
        match traced {
            Ok(()) => {
                let _ = nix::sys::ptrace::detach(nix::unistd::Pid::from_raw(1), None);
                "ok".to_string()
            }
            Err(e) => errno_name(e as i32),
        }
    );
    let dev = Path::new("/dev/sbx-probe");
    let made = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dev)
        .map(drop);
    if made.is_ok() {
        let _ = fs::remove_file(dev);
    }
    out += &format!(
        "dev {}
",
        io_errno(made)
    );
    out
}

fn errno_name(n: i32) -> String {
    match n {
        1 => "EPERM".into(),
        2 => "ENOENT".into(),
        3 => "ESRCH".into(),
        13 => "EACCES".into(),
        30 => "EROFS".into(),
        n => format!("errno {n}"),
    }
}

/// Where the candidate is, as the seed script shows it (a root-owned
/// tmpfs of its own, mode 0755; the file is mode 0444).
pub(crate) const WORK_DIR: &str = "/work";

struct Runner {
    identity: Identity,
    wiper: reset::Wiper,
    lanes: Lanes,
    dirs: Dirs,
    /// What children inherit from the runner, as it was at the start.
    posture: Posture,
    oom_counter: Option<PathBuf>,
    candidate: Option<Loaded>,
    /// No case ran since the last clean reset (or the start).
    clean: bool,
    cases: u64,
}

impl Runner {
    fn load(&mut self, c: Candidate) -> Message {
        let name = &c.file_name;
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
            return Message::Internal(format!("bad candidate file name `{}`", name.escape_debug()));
        }
        // No process of an earlier case may see what is loaded next.
        if !self.clean {
            return Message::Internal("a load needs a clean reset before it".into());
        }
        // The previous candidate and its build go first, whatever comes next.
        self.candidate = None;
        if let Err(e) = clear_build() {
            return Message::Internal(format!("remove the previous build: {e}"));
        }
        let given_command = c.interpreter.is_some();
        let interpreter = match c.interpreter {
            Some(words) if words.is_empty() => {
                return Message::Internal("empty interpreter".into())
            }
            Some(words) => words,
            None => match shebang::parse(&c.program) {
                Ok(words) => words,
                Err(message) => {
                    self.candidate = None;
                    return Message::Refused(message);
                }
            },
        };
        let build = match c.build {
            None => None,
            Some(_) if !given_command => {
                return Message::Internal("a build needs its run command".into())
            }
            Some(files) => match write_build(&files) {
                Ok(built) => Some(built),
                Err(e) => {
                    // Nothing half-written stays for the next candidate.
                    let _ = clear_build();
                    return Message::Internal(format!("write the build: {e}"));
                }
            },
        };
        self.candidate = Some(Loaded {
            file_name: c.file_name,
            program: c.program,
            interpreter,
            build,
        });
        Message::Loaded
    }

    /// `Reset` (`unload` false: the candidate stays loaded for its next
    /// case) or `Unload` (between candidates: the candidate, its file and
    /// its build go too, and the reset verifies that they are gone).
    fn reset(&mut self, unload: bool) -> Message {
        // Processes first (they could change the posture again), then the
        // posture, which a candidate may have changed from outside.
        let done = reset::reset(&mut self.dirs, &self.wiper);
        let posture = self.posture.restore();
        let dropped = if unload {
            self.candidate = None;
            clear_build()
                .and_then(|()| clear_dir(Path::new(WORK_DIR)))
                .map_err(|e| format!("unload the candidate: {e}"))
        } else {
            Ok(())
        };
        // Nobody but the runner can write /work and the build: they hold
        // the loaded candidate only (nothing once it is unloaded).
        let work = self.work_holds_only_the_program();
        let build = build_is_as_loaded(self.candidate.as_ref().and_then(|c| c.build.as_ref()));
        let done = done.and(dropped).and(work).and(build);
        let done = match (done, posture) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
            (Err(a), Err(b)) => Err(format!("{a}; {b}")),
        };
        match done {
            Ok(()) => {
                self.clean = true;
                Message::ResetDone {
                    clean: true,
                    message: String::new(),
                }
            }
            Err(message) => {
                self.clean = false;
                Message::ResetDone {
                    clean: false,
                    message,
                }
            }
        }
    }

    fn work_holds_only_the_program(&self) -> Result<(), String> {
        let entries = fs::read_dir(WORK_DIR).map_err(|e| format!("{WORK_DIR}: {e}"))?;
        for entry in entries {
            let name = entry.map_err(|e| format!("{WORK_DIR}: {e}"))?.file_name();
            if self.candidate.as_ref().map(|c| c.file_name.as_str()) != name.to_str() {
                return Err(format!("{WORK_DIR} holds `{}`", name.to_string_lossy()));
            }
        }
        Ok(())
    }

    fn case(&mut self, case: &Case) -> Message {
        if !self.clean {
            return Message::Internal("a case needs a clean reset before it".into());
        }
        if case.max_output > MAX_OUTPUT {
            return Message::Internal(format!("max output above {MAX_OUTPUT} bytes"));
        }
        let Some(loaded) = &self.candidate else {
            return Message::Internal("no candidate loaded".into());
        };
        self.clean = false;
        self.cases += 1;
        let file = Path::new(WORK_DIR).join(&loaded.file_name);
        if let Err(e) = write_task(&file, &loaded.program) {
            return Message::Internal(format!("write the candidate to {}: {e}", file.display()));
        }
        match run_case(
            self.identity,
            &self.lanes,
            loaded,
            &file,
            case,
            self.oom_counter.as_deref(),
        ) {
            Ok(result) => Message::Result(result),
            Err(message) => Message::Internal(message),
        }
    }
}

/// How the runner saw the case end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Exited,
    TimedOut,
    OutputLimit,
}

/// What the readers keep of one stream.
#[derive(Debug, Default)]
struct Kept {
    bytes: Vec<u8>,
    total: u64,
}

/// Writes the program as `file` in `WORK_DIR`, read-only and owned by the
/// runner (root), alone there: whatever was there goes first (root without
/// `CAP_DAC_OVERRIDE` cannot open a mode-0444 file for writing).
fn write_task(file: &Path, program: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for entry in fs::read_dir(WORK_DIR)? {
        fs::remove_file(entry?.path())?;
    }
    fs::write(file, program)?;
    fs::set_permissions(file, fs::Permissions::from_mode(0o444))
}

/// Removes everything in `dir` (the runner's own: `/work`, or the build
/// mount, which only the runner can write). A missing `dir` is empty.
fn clear_dir(dir: &Path) -> io::Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let path = entry?.path();
        if fs::symlink_metadata(&path)?.is_dir() {
            fs::remove_dir_all(&path)?;
        } else {
            fs::remove_file(&path)?;
        }
    }
    Ok(())
}

fn clear_build() -> io::Result<()> {
    clear_dir(Path::new(BUILD_MOUNT))
}

/// Writes a compiled candidate's build under `BUILD_DIR`: directories mode
/// 0755, files 0555, all root's, in the exec-allowed `BUILD_MOUNT`, which
/// must be root's and writable by nobody else (so the candidate's uid can
/// execute the build but never write there). Returns what it wrote.
fn write_build(files: &[BuildFile]) -> io::Result<Built> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let mount = Path::new(BUILD_MOUNT);
    let meta = fs::symlink_metadata(mount)
        .map_err(|e| io::Error::new(e.kind(), format!("{BUILD_MOUNT} (the build's mount): {e}")))?;
    if !meta.is_dir() || meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{BUILD_MOUNT} must be a directory of root's that only root can write"
        )));
    }
    let base = Path::new(BUILD_DIR);
    let rel = |p: &Path| p.strip_prefix(mount).unwrap_or(p).to_path_buf();
    let mut built = Built::new();
    let mkdir = |dir: &Path, built: &mut Built| -> io::Result<()> {
        if built.contains_key(&rel(dir)) {
            return Ok(());
        }
        fs::create_dir(dir)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
        built.insert(rel(dir), None);
        Ok(())
    };
    mkdir(base, &mut built)?;
    for file in files {
        if !valid_build_path(&file.path) {
            return Err(io::Error::other(format!(
                "bad build path `{}`",
                file.path.escape_debug()
            )));
        }
        let path = base.join(&file.path);
        let mut dir = base.to_path_buf();
        let parts: Vec<&str> = file.path.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            dir.push(part);
            mkdir(&dir, &mut built)?;
        }
        // A path given twice, or a file where a directory is: refused.
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o500)
            .open(&path)?;
        out.write_all(&file.bytes)?;
        drop(out);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o555))?;
        built.insert(rel(&path), Some(file.bytes.len() as u64));
    }
    Ok(built)
}

/// Checks that `BUILD_MOUNT` holds exactly `built` (nothing when `None`),
/// each entry root's, with its mode (0755 directories, 0555 files) and its
/// size: the candidate cannot write there, so any difference is the
/// runner's and makes the reset dirty.
fn build_is_as_loaded(built: Option<&Built>) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let mount = Path::new(BUILD_MOUNT);
    let empty = Built::new();
    let want = built.unwrap_or(&empty);
    let mut seen = Built::new();
    let mut stack = vec![mount.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound && dir == mount => break,
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        };
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            let meta =
                fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let rel = path.strip_prefix(mount).unwrap_or(&path).to_path_buf();
            let (mode, size) = if meta.is_dir() {
                stack.push(path.clone());
                (0o755, None)
            } else {
                (0o555, Some(meta.len()))
            };
            let kind_ok = meta.is_dir() || meta.is_file();
            if !kind_ok || meta.uid() != 0 || meta.mode() & 0o7777 != mode {
                return Err(format!("{} is not as the runner wrote it", path.display()));
            }
            seen.insert(rel, size);
        }
    }
    if &seen != want {
        let extra: Vec<String> = seen
            .iter()
            .filter(|(p, s)| want.get(*p) != Some(s))
            .map(|(p, _)| p.display().to_string())
            .collect();
        return Err(format!(
            "{BUILD_MOUNT} does not hold the loaded build (differs: {})",
            if extra.is_empty() {
                "entries missing".into()
            } else {
                extra.join(" ")
            }
        ));
    }
    Ok(())
}

/// Runs `f` on this thread with the candidate's uid and gid as its *real*
/// ids, effective and saved ids staying root's: the kernel lets one process
/// `prlimit` another only when the caller's real ids are the target's, and
/// the runner has no `CAP_SYS_RESOURCE` (engines may not grant it). The
/// effective ids stay 0, so the runner keeps its capabilities and takes
/// its real ids back right after. Ids are per thread on Linux: no other
/// thread of the runner changes.
fn as_real_identity<T>(
    identity: Identity,
    f: impl FnOnce() -> rustix::io::Result<T>,
) -> Result<T, String> {
    use rustix::process::{Gid, Uid};
    use rustix::thread::{set_thread_res_gid, set_thread_res_uid};
    let (uid, gid) = (Uid::from_raw(identity.uid), Gid::from_raw(identity.gid));
    set_thread_res_gid(gid, None, None).map_err(|e| format!("setresgid: {e}"))?;
    let r = set_thread_res_uid(uid, None, None)
        .map_err(|e| format!("setresuid: {e}"))
        .map(|()| f());
    let back = set_thread_res_uid(Uid::ROOT, None, None)
        .and_then(|()| set_thread_res_gid(Gid::ROOT, None, None));
    if let Err(e) = back {
        return Err(format!("the runner could not take back its ids: {e}"));
    }
    r?.map_err(|e| e.to_string())
}

/// The OOM score every program starts with: the OOM killer's first choice.
const PROGRAM_OOM_SCORE: &str = "1000";

fn run_case(
    identity: Identity,
    lanes: &Lanes,
    loaded: &Loaded,
    file: &Path,
    case: &Case,
    oom_counter: Option<&Path>,
) -> Result<CaseResult, String> {
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
    // std's safe `uid`/`gid`: in the child, setgroups(0) (the runner is
    // root), setgid, setuid, then exec. Root's capabilities are all gone
    // after the switch, and `no-new-privileges` keeps them gone.
    cmd.uid(identity.uid)
        .gid(identity.gid)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let oom_before = oom_counter.and_then(read_oom_kills);
    // The program, not the runner, is the OOM killer's choice: it inherits
    // the score from its first instruction, and the runner takes its own
    // back right after the spawn (lowering it back needs no privilege down
    // to the engine's starting value, measured; the reset checks it). The
    // runner cannot write the program's own file: it belongs to the
    // candidate's uid.
    let own_score = fs::read_to_string(OOM_SCORE_SELF).ok();
    let raised = own_score.is_some() && fs::write(OOM_SCORE_SELF, PROGRAM_OOM_SCORE).is_ok();
    let spawned = cmd.spawn();
    if let (true, Some(was)) = (raised, &own_score) {
        if let Err(e) = fs::write(OOM_SCORE_SELF, was.trim()) {
            if let Ok(mut child) = spawned {
                reset::kill_others();
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
        Err(e) => return cannot_execute(program, &e),
    };
    let start = Instant::now();
    if let Some(seconds) = case.cpu_limit_s {
        let limit = Rlimit {
            current: Some(seconds),
            maximum: Some(seconds.saturating_add(1)),
        };
        let pid = Pid::from_child(&child);
        if let Err(e) = as_real_identity(identity, || prlimit(Some(pid), Resource::Cpu, limit)) {
            reset::kill_others();
            let _ = child.wait();
            return Err(format!("prlimit(RLIMIT_CPU) on the program: {e}"));
        }
    }
    let max = usize::try_from(case.max_output).unwrap_or(usize::MAX);
    let over = Arc::new(AtomicBool::new(false));
    let stdin = child.stdin.take();
    let stdin_bytes = case.stdin.clone();
    let (done_tx, done_rx) = mpsc::channel();
    let writer_done = done_tx.clone();
    let started = submit(
        &lanes.stdin,
        Box::new(move || {
            if let Some(mut pipe) = stdin {
                // EPIPE is normal: the program ignored its input.
                let _ = pipe.write_all(&stdin_bytes);
            }
            let _ = writer_done.send(());
        }),
    );
    let mut jobs = 1;
    let out = Arc::new(Mutex::new(Kept::default()));
    let err = Arc::new(Mutex::new(Kept::default()));
    let (stdout_pipe, stderr_pipe) = (child.stdout.take(), child.stderr.take());
    let (wait_tx, waited) = mpsc::channel();
    let started = started
        .and_then(|()| match stdout_pipe {
            Some(pipe) => {
                jobs += 1;
                let job = reader(pipe, Keep::Head(max), max, &out, &over, done_tx.clone());
                submit(&lanes.stdout, job)
            }
            None => Ok(()),
        })
        .and_then(|()| match stderr_pipe {
            Some(pipe) => {
                jobs += 1;
                let job = reader(pipe, Keep::Tail(STDERR_TAIL), max, &err, &over, done_tx);
                submit(&lanes.stderr, job)
            }
            None => Ok(()),
        })
        .and_then(|()| {
            // `wait4` blocks, so it runs on its own lane; the result comes
            // with the instant the program was reaped.
            let mut child = child;
            submit(
                &lanes.waiter,
                Box::new(move || {
                    let r = child.wait4();
                    let _ = wait_tx.send((r, Instant::now()));
                }),
            )
        });
    if let Err(e) = started {
        reset::kill_others();
        return Err(e);
    }

    let deadline = start + Duration::from_millis(case.wall_ms);
    let mut ended = Ended::Exited;
    let mut reaped = None;
    while reaped.is_none() {
        if over.load(Ordering::SeqCst) {
            ended = Ended::OutputLimit;
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            ended = Ended::TimedOut;
            break;
        }
        match waited.recv_timeout(POLL.min(deadline - now)) {
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
    // The case is over as the container would be when its program ends:
    // every other process dies, so stray writers close the pipes.
    reset::kill_others();
    let (res_use, exited_at) = match reaped {
        Some(r) => r,
        None => waited
            .recv_timeout(GRACE)
            .map_err(|_| "the killed program was not reaped in time".to_string())?,
    };
    let res_use = res_use.map_err(|e| format!("wait4: {e}"))?;
    let wall = end.unwrap_or(exited_at).saturating_duration_since(start);
    let grace_end = Instant::now() + GRACE;
    for _ in 0..jobs {
        let left = grace_end.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            return Err("a pipe stayed open after every process was killed".into());
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
    let cpu = res_use.rusage.utime + res_use.rusage.stime;
    let exit_code = res_use.status.code();
    let signal = res_use.status.signal();
    let status = decide(ended, oom, exit_code, signal, case.cpu_limit_s, cpu);
    Ok(CaseResult {
        status,
        exit_code,
        signal,
        wall_ms: wall.as_millis() as u64,
        cpu_ms: cpu.as_millis() as u64,
        max_rss_kib: res_use.rusage.maxrss / 1024,
        oom,
        stdout_truncated: stdout.total > stdout.bytes.len() as u64,
        stdout: stdout.bytes,
        stderr_truncated: stderr.total > stderr.bytes.len() as u64,
        stderr_tail: stderr.bytes,
    })
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

    #[test]
    fn the_candidates_identity_is_never_root() {
        assert_eq!(
            Identity::from_args(Some("65534:65534")),
            Ok(Identity {
                uid: 65534,
                gid: 65534
            })
        );
        for bad in [
            None,
            Some("0:0"),
            Some("0:1"),
            Some("1:0"),
            Some("1"),
            Some("a:b"),
        ] {
            assert!(Identity::from_args(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn refuses_to_run_unless_pid_1() {
        assert_ne!(rustix::process::getpid(), Pid::INIT);
        assert_eq!(main(), crate::exit::USAGE);
    }
}
