//! Supervision tests with a fake docker CLI: a small shell script that logs
//! every invocation's argv and plays the engine. Nothing here talks to a
//! real engine or the network, and every run is bounded by a timeout.
//!
//! Every run is `docker create ... -- IMAGE [INTERP...] /work/task` before
//! the clock, then `docker start -a [-i] -- NAME` under it, then `rm -f --
//! NAME` unless the start exited 0 by itself. The fake's `create` records,
//! per container name, the staged copy from the `-v` argument, the
//! interpreter words and whether `-i` was given (files `c-<name>.*` in its
//! directory) and prints a container id. Its `start` looks the container up,
//! writes its own pid to `pid-<name>` and executes the staged copy with
//! `/bin/sh` (with a stdin only if both create and start had `-i`), so each
//! candidate's body decides how "the container" behaves: `exec sleep 20`,
//! `exec cat`, `exec yes`, print and exit N. Its `rm -f` marks the named
//! containers removed (and lists, in `removed`, those that existed). The
//! engine side (missing image, daemon down, pull, a slow create, a start that
//! docker itself fails, `events`) is chosen with `FAKE_*` environment
//! variables, which pass through sbx to the docker CLI.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::support;

use support::{
    after, assert_exit, assert_one_line_error, one_line_error, report, show, stderr, stdout,
    ENGINE_VARS, FAKE_VARS,
};

mod engine_calls;
mod eval;
mod hostile;
mod passk_run;
mod run;
mod signals;

/// The separator between the arguments of one logged call.
const SEP: u8 = 0x1f;
/// Upper bound for any one sbx invocation: a hang fails instead of hanging CI.
const LIMIT: Duration = Duration::from_secs(20);
/// How long a "hanging" candidate sleeps: far beyond every timeout used
/// here, yet bounded, so that a process sbx failed to kill cannot hold a
/// test's pipes for ever.
const SLEEPER: &str = "#!/bin/sh\nexec sleep 20\n";
/// A candidate that prints `ran`.
const PRINTS_RAN: &str = "#!/bin/sh\necho ran\n";

/// What `docker start` prints (exit 1) when the runtime cannot find the
/// program; `docker run` gives this 127.
const START_NOT_FOUND: &str = "Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"node\": executable file not found in $PATH: unknown";
/// What `docker start` prints (exit 1) when the program cannot be executed;
/// `docker run` gives this 126.
const START_DENIED: &str = "Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"/work/task\": permission denied: unknown";
/// Any other daemon failure of `docker start`; `docker run` gives this 125.
const START_OTHER: &str = "Error response from daemon: failed to set up container networking: oops";

/// One fake engine: a temp dir with the fake CLI, its log, its pid files,
/// the TMPDIR given to sbx (so staged copies are findable) and candidates.
struct Fake {
    dir: TempDir,
}

impl Fake {
    fn new() -> Fake {
        Fake {
            dir: support::fake_engine_dir(),
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn docker(&self) -> PathBuf {
        self.root().join("docker")
    }

    /// The TMPDIR of sbx: its staging directories appear here.
    fn tmp(&self) -> PathBuf {
        self.root().join("tmp")
    }

    /// The directory of this user's run locks in sbx's TMPDIR.
    fn lock_dir(&self) -> PathBuf {
        use std::os::unix::fs::MetadataExt;
        // The test created `tmp`: its owner is the uid sbx runs as.
        let uid = fs::metadata(self.tmp()).expect("tmp").uid();
        self.tmp().join(format!("sbx-runs-{uid}"))
    }

    fn gen(&self) -> PathBuf {
        self.root().join("gen")
    }

    /// Writes a candidate file at `rel` (parents created) and returns its path.
    fn file(&self, rel: impl AsRef<Path>, body: &str) -> PathBuf {
        let path = self.root().join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create candidate dir");
        }
        fs::write(&path, body).expect("write candidate");
        path
    }

    /// `sbx` (std) wired to this fake with a fixed run id, for tests that
    /// spawn and signal it.
    fn sbx_std(&self, run_id: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_sbx"));
        for k in FAKE_VARS.iter().chain(&ENGINE_VARS) {
            cmd.env_remove(k);
        }
        // In the fake's folder: the repository's sbx.toml must not apply.
        cmd.current_dir(self.root())
            .env("SBX_DOCKER", self.docker())
            .env("SBX_RUN_ID", run_id)
            .env("TMPDIR", self.tmp());
        cmd
    }

    /// `sbx` (assert_cmd) wired to this fake, with a fixed run id.
    fn sbx(&self, run_id: &str) -> Command {
        bounded(self.sbx_std(run_id))
    }

    /// `sbx run FILE` (assert_cmd); positionals, environment or stdin may follow.
    fn run_cmd(&self, run_id: &str, file: &Path) -> Command {
        let mut cmd = self.sbx(run_id);
        cmd.arg("run").arg(file);
        cmd
    }

    /// `sbx run FILE ARGS...`, to its end.
    fn run(&self, run_id: &str, file: &Path, args: &[&str]) -> Output {
        self.run_cmd(run_id, file)
            .args(args)
            .output()
            .expect("run sbx")
    }

    /// `sbx eval` (std) over `tasks`, candidates in `<tmp>/gen`.
    fn eval_std(&self, run_id: &str, tasks: &Value) -> std::process::Command {
        let path = self.root().join("tasks.json");
        fs::write(&path, serde_json::to_vec(tasks).expect("tasks")).expect("write tasks");
        fs::create_dir_all(self.gen()).expect("gen dir");
        let mut cmd = self.sbx_std(run_id);
        cmd.arg("eval")
            .arg("--tasks")
            .arg(&path)
            .arg("--gen")
            .arg(self.gen());
        cmd
    }

    /// `sbx eval --isolate case` (assert_cmd) over `tasks`, candidates in
    /// `<tmp>/gen`: the fake engine runs containers, not sbx's runner.
    fn eval(&self, run_id: &str, tasks: &Value) -> Command {
        let mut cmd = self.eval_std(run_id, tasks);
        cmd.args(["--isolate", "case"]);
        bounded(cmd)
    }

    /// Where a spawned sbx writes its stderr (see [`Fake::stderr_file`]).
    fn stderr_path(&self) -> PathBuf {
        self.root().join("sbx.stderr")
    }

    /// A fresh file for a spawned sbx's stderr.
    fn stderr_file(&self) -> fs::File {
        fs::File::create(self.stderr_path()).expect("stderr file")
    }

    /// What a spawned sbx wrote to [`Fake::stderr_file`].
    fn stderr_text(&self) -> String {
        fs::read_to_string(self.stderr_path()).unwrap_or_default()
    }

    /// A `.py` candidate for eval; its body is run by the fake with /bin/sh.
    fn candidate(&self, id: &str, body: &str) {
        self.file(Path::new("gen").join(format!("{id}.py")), body);
    }

    fn raw_log(&self) -> Vec<u8> {
        fs::read(self.root().join("log")).unwrap_or_default()
    }

    /// Every docker call but the event streams (`docker events`), whose
    /// start runs beside the first create, in no fixed order.
    fn calls(&self) -> Vec<Vec<String>> {
        let mut calls = self.all_calls();
        calls.retain(|c| c[0] != "events");
        calls
    }

    /// The event streams sbx started (`docker events ...`).
    fn streams(&self) -> Vec<Vec<String>> {
        let mut calls = self.all_calls();
        calls.retain(|c| c[0] == "events");
        calls
    }

    /// Every logged call, in order, each as its argv (lossy UTF-8).
    fn all_calls(&self) -> Vec<Vec<String>> {
        self.raw_log()
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| {
                line.split(|&b| b == SEP)
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect()
            })
            .collect()
    }

    fn pid_file(&self, container: &str) -> PathBuf {
        self.root().join(format!("pid-{container}"))
    }

    /// The pid the fake recorded for the container's client.
    fn pid(&self, container: &str) -> u32 {
        let text = fs::read_to_string(self.pid_file(container))
            .unwrap_or_else(|e| panic!("no pid recorded for {container}: {e}"));
        text.trim().parse().expect("pid")
    }

    /// What the fake's `create` recorded for a container (removed or not).
    fn created(&self, container: &str) -> Created {
        let record = |ext: &str| self.root().join(format!("c-{container}.{ext}"));
        let staged = fs::read(record("staged"))
            .or_else(|_| fs::read(record("removed")))
            .unwrap_or_else(|e| panic!("{container} was never created: {e}"));
        let interp = fs::read_to_string(record("interp")).expect("interpreter record");
        Created {
            staged: PathBuf::from(OsStr::from_bytes(&staged)),
            interpreter: interp.lines().map(str::to_string).collect(),
            interactive: record("i").exists(),
        }
    }

    /// The containers that `rm -f` found (created and not yet removed) and
    /// removed, in order.
    fn removed(&self) -> Vec<String> {
        fs::read_to_string(self.root().join("removed"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// One container as the fake's `create` recorded it.
#[derive(Debug)]
struct Created {
    /// The host side of `-v SRC:/work/task:ro`.
    staged: PathBuf,
    /// The words between the image and `/work/task`.
    interpreter: Vec<String>,
    /// Whether `create` had `-i`.
    interactive: bool,
}

/// An assert_cmd command for `cmd`, bounded by [`LIMIT`].
fn bounded(cmd: std::process::Command) -> Command {
    let mut cmd = Command::from_std(cmd);
    cmd.timeout(LIMIT);
    cmd
}

/// Index of the first call whose argv starts with `prefix`.
fn find(calls: &[Vec<String>], prefix: &[&str]) -> Option<usize> {
    calls
        .iter()
        .position(|c| c.len() >= prefix.len() && c.iter().zip(prefix).all(|(a, b)| a == b))
}

/// The calls of one docker command (`create`, `start`, ...), in order.
fn calls_of<'a>(calls: &'a [Vec<String>], command: &str) -> Vec<&'a Vec<String>> {
    calls.iter().filter(|c| c[0] == command).collect()
}

/// Asserts that sbx made no `docker COMMAND` call.
fn assert_not_called(fake: &Fake, command: &str) {
    let calls = fake.calls();
    assert!(
        calls_of(&calls, command).is_empty(),
        "docker {command} was called: {calls:?}"
    );
}

/// The docker command of each call, in order: `["create", "start", "rm"]`.
fn commands(calls: &[Vec<String>]) -> Vec<&str> {
    calls.iter().map(|c| c[0].as_str()).collect()
}

/// The exact argv of the attached start of `name` (sbx's runs under test
/// are all interactive: their stdin is never a terminal).
fn start_argv(name: &str) -> Vec<String> {
    ["start", "-a", "-i", "--", name]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The exact argv of the removal of `name`.
fn rm_argv(name: &str) -> Vec<String> {
    ["rm", "-f", "--", name]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The one `create` among `calls`.
fn only_create(calls: &[Vec<String>]) -> &Vec<String> {
    let creates = calls_of(calls, "create");
    assert_eq!(creates.len(), 1, "{calls:?}");
    creates[0]
}

/// Index of the `create` of container `name`.
fn create_of(calls: &[Vec<String>], name: &str) -> usize {
    calls
        .iter()
        .position(|c| c[0] == "create" && after(c, "--name") == name)
        .unwrap_or_else(|| panic!("no create of {name}: {calls:?}"))
}

/// Index of the `start` of container `name` (exact argv checked).
fn start_of(calls: &[Vec<String>], name: &str) -> usize {
    let i = calls
        .iter()
        .position(|c| c[0] == "start" && c.last().map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no start of {name}: {calls:?}"));
    assert_eq!(calls[i], start_argv(name), "{calls:?}");
    i
}

/// The staged host path of a create argv (`-v STAGED:/work/task:ro`).
fn staged(argv: &[String]) -> PathBuf {
    let volume = after(argv, "-v");
    let path = volume
        .strip_suffix(":/work/task:ro")
        .unwrap_or_else(|| panic!("unexpected -v {volume:?}"));
    PathBuf::from(path)
}

/// Asserts that container `name` was created, then started, then removed
/// by exactly one `rm -f -- NAME`, which found the container.
fn assert_removed_after_start(fake: &Fake, name: &str) {
    let calls = fake.calls();
    let create = create_of(&calls, name);
    let start = start_of(&calls, name);
    assert!(create < start, "start before create: {calls:?}");
    let rms: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.iter().any(|a| a == name) && c[0] == "rm")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(rms.len(), 1, "not one rm of {name}: {calls:?}");
    assert_eq!(calls[rms[0]], rm_argv(name), "{calls:?}");
    assert!(start < rms[0], "rm before start: {calls:?}");
    assert!(
        fake.removed().iter().any(|r| r == name),
        "`rm -f -- {name}` did not find the container: {calls:?}"
    );
}

/// Asserts that the client of container `name` is gone and that the
/// container was removed after its start.
fn assert_stopped_and_removed(fake: &Fake, name: &str) {
    assert_gone(fake.pid(name));
    assert_removed_after_start(fake, name);
}

/// Asserts that no call removed container `name`.
fn assert_not_removed(calls: &[Vec<String>], name: &str) {
    assert!(
        !calls
            .iter()
            .any(|c| c[0] == "rm" && c.iter().any(|a| a == name)),
        "{name} was removed by sbx: {calls:?}"
    );
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Asserts the process is gone (allowing a moment for a reparented zombie
/// to be reaped); kills it if not, so a failure leaves nothing behind.
fn assert_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while alive(pid) {
        if Instant::now() >= deadline {
            let state = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let _ = kill("-KILL", pid);
            panic!("the client process {pid} survived sbx: {state}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `path` exists.
fn wait_for(path: &Path, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while !path.exists() {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
    true
}

/// A child that is killed and reaped if the test panics.
struct Spawned(Child);

/// Spawns `cmd` (an sbx) with stdin from /dev/null and these stdout and stderr.
fn spawn(
    cmd: &mut std::process::Command,
    stdout: impl Into<Stdio>,
    stderr: impl Into<Stdio>,
) -> Spawned {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("spawn sbx");
    Spawned(child)
}

impl Spawned {
    /// Sends `signal` and waits `within` for the exit; returns the status
    /// and the time it took from the signal.
    fn stop(&mut self, signal: &str, within: Duration) -> (ExitStatus, Duration) {
        let clock = Instant::now();
        send(signal, self.0.id());
        let status = self.wait(within);
        (status, clock.elapsed())
    }

    fn wait(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.0.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "sbx did not exit in {within:?}");
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `kill SIGNAL PID`.
fn kill(signal: &str, pid: u32) -> io::Result<ExitStatus> {
    std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
}

fn send(signal: &str, pid: u32) {
    let status = kill(signal, pid).expect("run kill");
    assert!(status.success(), "kill {signal} {pid} failed");
}

fn field<'a>(result: &'a Value, name: &str) -> &'a str {
    result[name].as_str().unwrap_or("")
}

/// Asserts the status and reason of one report entry.
fn assert_verdict(result: &Value, status: &str, reason: &str) {
    assert_eq!(field(result, "status"), status, "{result}");
    assert_eq!(field(result, "reason"), reason, "{result}");
}

/// The entry of `id` in the report.
fn result_of<'a>(results: &'a [Value], id: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
}

/// Nothing of sbx is left in its TMPDIR: no staging directory, and in the
/// user's `sbx-runs-<uid>` directory no run lock (sbx removes its own).
fn assert_stage_empty(fake: &Fake) {
    let entries = |dir: &Path| -> Vec<_> {
        match fs::read_dir(dir) {
            Ok(rd) => rd.map(|e| e.map(|e| e.file_name())).collect(),
            Err(_) => Vec::new(),
        }
    };
    let left: Vec<_> = entries(&fake.tmp())
        .into_iter()
        .filter(|e| !matches!(e, Ok(n) if *n == *fake.lock_dir().file_name().unwrap_or_default()))
        .collect();
    assert!(left.is_empty(), "staged copies left behind: {left:?}");
    let locks = entries(&fake.lock_dir());
    assert!(locks.is_empty(), "run locks left behind: {locks:?}");
}

/// A task reading `stdin` and expecting `expect`, with a prompt.
fn task(id: &str, stdin: &str, expect: &str) -> Value {
    json!({"id": id, "prompt": "p", "stdin": stdin, "expect": expect})
}
