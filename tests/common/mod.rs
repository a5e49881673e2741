//! Helpers shared by the real-engine tests (`tests/engine/`):
//! processes run with a bound, `docker` calls, the engine and image
//! preconditions (checked once, a panic with what is missing, never a skip),
//! the `sbx` command, and the guard that removes a test's containers by label.
//!
//! Nothing here pulls an image or sends network traffic.

#![expect(
    unreachable_pub,
    reason = "`pub` here means for the test modules, `crate::common`'s siblings"
)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread;
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// The machine, as the tests share it: a test that loads every core on
/// purpose (`isolate::verdicts_are_the_same_idle_and_loaded`) holds it
/// alone; a test whose verdict rests on a wall clock (the compile step's
/// limit, which is wall-clock time) holds it with the others, so that it
/// never runs beside that load. The engine tests share one process.
static MACHINE: RwLock<()> = RwLock::new(());

/// The machine alone, while a test loads it on purpose.
pub fn loading_the_machine() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|p| p.into_inner())
}

/// The machine shared, but never with a test that loads it on purpose.
pub fn not_beside_load() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|p| p.into_inner())
}

/// A checker's Python `zygote(pid)`: whether `pid` is the runner's Python
/// zygote (all its uids 0, the zygote's command line), the one process a
/// checker may find besides PID 1 and itself. A literal, for `concat!`.
macro_rules! zygote_filter {
    () => {
        r#"def zygote(p):
    # The runner's Python zygote (root's, forking Python cases) may stay.
    try:
        uids = [l.split()[1:] for l in open('/proc/%s/status' % p) if l.startswith('Uid:')]
        return uids == [['0'] * 4] and b'_fresh = dict(globals())' in open('/proc/%s/cmdline' % p, 'rb').read()
    except OSError:
        return False
"#
    };
}
pub(crate) use zygote_filter;

pub mod corpus;
pub mod jsonl;
pub mod scratch;
pub mod second;

/// The first lines of a docker wrapper (sh) that must see the runner's
/// frames: `create` without the runner's `--control` option, so that the
/// runner speaks on stdin and stdout, which sbx reads while it waits on the
/// control socket.
pub const WRAPPER_KEEPS_STDIO: &str = r#"if [ "$1" = create ]; then
  skip=0
  for a in "$@"; do
    shift
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    if [ "$a" = --control ]; then skip=1; continue; fi
    set -- "$@" "$a"
  done
  exec docker "$@"
fi
"#;

pub const BUSYBOX: &str = "sbx-busybox:latest";
pub const PYTHON: &str = "sbx-python:bookworm";

/// Bound on one docker (or other helper) command run by the tests themselves.
pub const DOCKER_LIMIT: Duration = Duration::from_secs(60);
/// How long stdout/stderr may stay open after the process exited.
const PIPE_GRACE: Duration = Duration::from_secs(10);
/// How long the guard keeps retrying `docker rm -f` (a fork bomb without a
/// pids cap can keep the engine from killing a container for a while).
const CLEANUP_LIMIT: Duration = Duration::from_secs(90);

// ---------------------------------------------------------------------------
// Processes with bounded waits
// ---------------------------------------------------------------------------

/// What a finished process left.
pub struct Out {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n  status: {:?}\n  elapsed: {:?}\n  stdout: {}\n  stderr: {}",
            self.status,
            self.elapsed,
            clip(&self.stdout),
            clip(&self.stderr)
        )
    }
}

impl Out {
    /// The exit code; panics (with the output) if the process died of a signal.
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("process died of a signal: {self:?}"))
    }
}

/// `s` quoted for a failure message, cut after 4000 bytes.
fn clip(s: &str) -> String {
    const MAX: usize = 4000;
    if s.len() <= MAX {
        format!("{s:?}")
    } else {
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{:?}... ({} bytes in all)", &s[..end], s.len())
    }
}

/// One output pipe drained by a thread; partial output stays readable.
struct Drain {
    bytes: Arc<Mutex<Vec<u8>>>,
    eof: mpsc::Receiver<()>,
}

impl Drain {
    fn start(pipe: Option<impl Read + Send + 'static>) -> Drain {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let (tx, eof) = mpsc::channel();
        if let Some(mut pipe) = pipe {
            let into = Arc::clone(&bytes);
            thread::spawn(move || {
                let mut buf = [0u8; 64 * 1024];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => into
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tx.send(());
            });
        }
        Drain { bytes, eof }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

/// A started process whose outputs are being drained.
pub struct Running {
    child: Child,
    what: String,
    started: Instant,
    stdout: Drain,
    stderr: Drain,
}

/// Starts `cmd` with stdin from `stdin` (written by a thread that is never
/// waited for, so a program that ignores it cannot block us) or /dev/null;
/// `Err` if it cannot start.
pub fn try_start(mut cmd: Command, stdin: Option<Vec<u8>>) -> Result<Running, String> {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let what = format!("{cmd:?}");
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = Drain::start(child.stdout.take());
    let stderr = Drain::start(child.stderr.take());
    Ok(Running {
        child,
        what,
        started,
        stdout,
        stderr,
    })
}

/// [`try_start`], which must start.
pub fn start(cmd: Command, stdin: Option<Vec<u8>>) -> Running {
    try_start(cmd, stdin).unwrap_or_else(|e| panic!("{e}"))
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits at most `limit`. On expiry the process is killed and an error
    /// (with the output so far) is returned. A process that exits while
    /// something it started still holds its stdout or stderr open (a docker
    /// client that outlived sbx) is an error too.
    pub fn wait(mut self, limit: Duration) -> Result<Out, String> {
        let status = match self.child.wait_timeout(limit) {
            Ok(Some(status)) => status,
            Ok(None) | Err(_) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!(
                    "{} did not finish within {limit:?}; killed it\n  stdout so far: {}\n  stderr so far: {}",
                    self.what,
                    clip(&self.stdout.text()),
                    clip(&self.stderr.text())
                ));
            }
        };
        let elapsed = self.started.elapsed();
        let deadline = Instant::now() + PIPE_GRACE;
        for (name, drain) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let left = deadline.saturating_duration_since(Instant::now());
            if drain.eof.recv_timeout(left).is_err() {
                return Err(format!(
                    "{} exited ({status:?}) but its {name} stayed open for {PIPE_GRACE:?}: \
                     a process it started outlived it\n  stdout: {}\n  stderr: {}",
                    self.what,
                    clip(&self.stdout.text()),
                    clip(&self.stderr.text())
                ));
            }
        }
        Ok(Out {
            status,
            stdout: self.stdout.text(),
            stderr: self.stderr.text(),
            elapsed,
        })
    }
}

/// Parses an eval report (stdout), with the whole output on failure.
pub fn report(out: &Out) -> Vec<serde_json::Value> {
    match serde_json::from_str::<serde_json::Value>(&out.stdout) {
        Ok(serde_json::Value::Array(entries)) => entries,
        _ => panic!("stdout is not a JSON list: {out:?}"),
    }
}

/// A report's entries by their id.
pub fn by_id(entries: &[serde_json::Value]) -> BTreeMap<String, serde_json::Value> {
    entries
        .iter()
        .map(|e| (e["id"].as_str().expect("an id").to_string(), e.clone()))
        .collect()
}

/// What must agree between two ways of judging the same candidate (two
/// isolation modes, two runtimes): an entry without its times, the
/// runner's own measures and stderr (tracebacks name the program's path,
/// and gVisor's messages may differ). A runner mode's `wall_timeout` reads
/// as `case` mode's `timeout` (each is checked against `corpus::expected`).
pub fn verdict(entry: &serde_json::Value) -> serde_json::Value {
    let mut e = entry.clone();
    let obj = e.as_object_mut().expect("an entry is an object");
    if obj.get("reason").and_then(|r| r.as_str()) == Some("wall_timeout") {
        obj.insert("reason".into(), "timeout".into());
    }
    for field in [
        "duration_ms",
        "cpu_ms",
        "wait_ms",
        "max_rss_kib",
        "stderr_tail",
        "message",
    ] {
        obj.remove(field);
    }
    e
}

/// Runs `cmd` (stdin /dev/null) to its end within `limit`; `Err` if it could
/// not start or finish in time.
pub fn try_finish(cmd: Command, limit: Duration) -> Result<Out, String> {
    try_start(cmd, None)?.wait(limit)
}

/// Runs `cmd` to its end within `limit`, or panics.
pub fn finish(cmd: Command, stdin: Option<Vec<u8>>, limit: Duration) -> Out {
    start(cmd, stdin)
        .wait(limit)
        .unwrap_or_else(|e| panic!("{e}"))
}

// ---------------------------------------------------------------------------
// docker
// ---------------------------------------------------------------------------

/// `docker ARGS` within [`DOCKER_LIMIT`]; `Err` if it could not start or run
/// in time (a missing CLI is an error, not a panic).
pub fn try_docker<S: AsRef<OsStr>>(args: &[S]) -> Result<Out, String> {
    let mut cmd = Command::new("docker");
    cmd.args(args);
    try_finish(cmd, DOCKER_LIMIT)
}

/// `docker ARGS`, which must succeed.
pub fn docker<S: AsRef<OsStr>>(args: &[S]) -> Out {
    let out = try_docker(args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.code(),
        0,
        "docker {:?} failed: {out:?}",
        args.iter().map(|a| a.as_ref()).collect::<Vec<_>>()
    );
    out
}

/// Full IDs listed by `docker ps -q --no-trunc ARGS` (`-a`: in any state;
/// `--filter F`: only those matching).
pub fn try_ps(args: &[&str]) -> Result<Vec<String>, String> {
    let mut argv = vec!["ps", "-q", "--no-trunc"];
    argv.extend_from_slice(args);
    let out = try_docker(&argv)?;
    if out.code() != 0 {
        return Err(format!("docker {argv:?} failed: {out:?}"));
    }
    Ok(out.stdout.split_whitespace().map(str::to_string).collect())
}

/// [`try_ps`], which must succeed.
pub fn ps(args: &[&str]) -> Vec<String> {
    try_ps(args).unwrap_or_else(|e| panic!("{e}"))
}

/// The `docker ps` filter of the containers of one sbx run.
pub fn label_filter(run_id: &str) -> String {
    format!("label=sbx.run={run_id}")
}

/// Full IDs of the containers (any state) carrying `sbx.run=<run_id>`.
pub fn try_labelled(run_id: &str) -> Result<Vec<String>, String> {
    try_ps(&["-a", "--filter", &label_filter(run_id)])
}

/// [`try_labelled`], which must succeed.
pub fn labelled(run_id: &str) -> Vec<String> {
    try_labelled(run_id).unwrap_or_else(|e| panic!("{e}"))
}

/// Whether `image` exists locally (`docker image inspect`: never a pull).
pub fn image_exists(image: &str) -> Result<bool, String> {
    let inspect = try_docker(&["image", "inspect", "--format", "{{.Id}}", "--", image])?;
    Ok(inspect.code() == 0)
}

// ---------------------------------------------------------------------------
// Engine and images: checked once, panics (never skips) when missing
// ---------------------------------------------------------------------------

/// Panics, saying what is missing, unless the engine answers and both local
/// images exist. Checked once; every later caller panics with the same words.
pub fn require_engine() {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(message) = CHECKED.get_or_init(check_engine) {
        panic!("{message}");
    }
}

fn check_engine() -> Result<(), String> {
    let unreachable = |why: String| {
        format!(
            "no docker engine reachable: these tests need one; start dockerd (scripts/ensure-engine.sh) ({why})"
        )
    };
    let info = try_docker(&["info", "--format", "{{.ServerVersion}}"]).map_err(unreachable)?;
    if info.code() != 0 || info.stdout.trim().is_empty() {
        let line = info.stderr.lines().find(|l| !l.trim().is_empty());
        return Err(unreachable(format!(
            "`docker info` exited {}: {}",
            info.code(),
            line.unwrap_or("no message")
        )));
    }
    for image in [BUSYBOX, PYTHON] {
        if !image_exists(image).map_err(unreachable)? {
            return Err(format!(
                "the local image {image} is missing: build it with scripts/build-images.sh (nothing is ever pulled)"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// sbx, run ids, what is left, cleanup
// ---------------------------------------------------------------------------

/// The sbx binary with a clean docker setting (`SBX_DOCKER` unset) and
/// `SBX_RUN_ID` set to `run_id`, or unset. It runs in a folder of cargo's
/// scratch folder for tests that holds an empty `.git`, so that the search
/// for `sbx.toml`, which goes up to a repository's root, never reaches the
/// repository's own (whose defaults would otherwise apply); a test that
/// needs a folder of its own sets it.
pub fn sbx(run_id: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sbx"));
    cmd.current_dir(no_config_folder());
    cmd.env_remove("SBX_DOCKER");
    match run_id {
        Some(id) => cmd.env("SBX_RUN_ID", id),
        None => cmd.env_remove("SBX_RUN_ID"),
    };
    cmd
}

/// `<cargo's test scratch>/no-config`, holding an empty `.git` folder: the
/// search for `sbx.toml` stops there.
pub fn no_config_folder() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-config");
    fs::create_dir_all(dir.join(".git")).expect("create the scratch folder");
    dir
}

/// A run id unique to this test and this process: `<prefix>-<tag>-<pid>`.
pub fn run_id(prefix: &str, tag: &str) -> String {
    format!("{prefix}-{}-{}", tag.replace('_', "-"), std::process::id())
}

/// Asserts that no container labelled `sbx.run=<run_id>` exists, in any
/// state; a failure lists them, then `context`.
pub fn assert_nothing_left(run_id: &str, context: &str) {
    let left = labelled(run_id);
    if !left.is_empty() {
        let listing = try_docker(&[
            "ps",
            "-a",
            "--filter",
            &label_filter(run_id),
            "--format",
            "{{.Names}} {{.State}} {{.Status}}",
        ])
        .map(|o| o.stdout)
        .unwrap_or_default();
        panic!("containers labelled sbx.run={run_id} left behind: {left:?}\n{listing}{context}");
    }
}

/// Removes, when dropped, every container labelled with one of `run_ids`
/// and every container named in `names`, retrying while the engine refuses,
/// so a failing test leaves nothing behind. Never panics when dropped.
pub struct Cleanup {
    run_ids: Vec<String>,
    names: Vec<String>,
}

impl Cleanup {
    /// Requires the engine (see [`require_engine`]).
    pub fn new(run_ids: &[&str]) -> Cleanup {
        require_engine();
        Cleanup {
            run_ids: run_ids.iter().map(|s| s.to_string()).collect(),
            names: Vec::new(),
        }
    }

    /// Also removes the containers of run `run_id` (a later run of the test).
    pub fn add_run(&mut self, run_id: &str) {
        self.run_ids.push(run_id.to_string());
    }

    /// Also removes the containers named `names` (planted by the test).
    pub fn add_names(&mut self, names: &[String]) {
        self.names.extend_from_slice(names);
    }

    /// Containers of this test that still exist.
    fn remaining(&self) -> Result<Vec<String>, String> {
        let mut ids = Vec::new();
        for run in &self.run_ids {
            ids.extend(try_labelled(run)?);
        }
        for name in &self.names {
            ids.extend(try_ps(&["-a", "--filter", &format!("name=^/{name}$")])?);
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    fn remove_all(&self) -> Result<(), String> {
        let deadline = Instant::now() + CLEANUP_LIMIT;
        loop {
            let last = match self.remaining() {
                Ok(ids) if ids.is_empty() => return Ok(()),
                Ok(ids) => {
                    let mut args = vec!["rm", "-f", "--"];
                    args.extend(ids.iter().map(String::as_str));
                    match try_docker(&args) {
                        Ok(out) => format!("{ids:?}: {}", out.stderr.trim()),
                        Err(e) => e,
                    }
                }
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "containers of runs {:?} / names {:?} could not be removed within {CLEANUP_LIMIT:?}: {last}",
                    self.run_ids, self.names
                ));
            }
            thread::sleep(Duration::from_millis(500));
        }
    }

    /// Removes what is left and asserts that nothing of this test remains.
    pub fn finish(&self) {
        if let Err(e) = self.remove_all() {
            panic!("{e}");
        }
        for run in &self.run_ids {
            assert_nothing_left(run, "");
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        // A failing test may have killed sbx while a create was in flight,
        // so then look twice.
        let passes = if thread::panicking() { 2 } else { 1 };
        for pass in 0..passes {
            if pass > 0 {
                thread::sleep(Duration::from_secs(2));
            }
            if let Err(e) = self.remove_all() {
                eprintln!("cleanup: {e}");
            }
        }
    }
}
