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

const FAKE_DOCKER: &str = include_str!("support/fake_docker.sh");

/// One fake engine: a temp dir with the fake CLI, its log, its pid files,
/// the TMPDIR given to sbx (so staged copies are findable) and candidates.
struct Fake {
    dir: TempDir,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().to_str().expect("temp dir path is UTF-8");
        assert!(!root.contains('\''), "temp dir path must not contain `'`");
        fs::create_dir(dir.path().join("tmp")).expect("create tmp");
        let docker = dir.path().join("docker");
        fs::write(&docker, FAKE_DOCKER.replace("@DIR@", root)).expect("write fake docker");
        fs::set_permissions(&docker, fs::Permissions::from_mode(0o755)).expect("chmod");
        let fake = Fake { dir };
        fake.wait_until_executable();
        fake
    }

    /// Another test thread may have forked while our write fd was open; until
    /// that child execs, executing the script fails with ETXTBSY. Wait for a
    /// successful exec so that sbx never sees it.
    fn wait_until_executable(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match std::process::Command::new(self.docker())
                .arg("__probe")
                .status()
            {
                Ok(status) if status.success() => return,
                Err(e) if e.kind() == io::ErrorKind::ExecutableFileBusy => {
                    assert!(Instant::now() < deadline, "fake docker stays busy");
                    thread::sleep(Duration::from_millis(10));
                }
                other => panic!("the fake docker does not run: {other:?}"),
            }
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
        for k in FAKE_VARS {
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

/// The fake's switches: never inherited from the environment of the tests.
const FAKE_VARS: [&str; 18] = [
    "FAKE_RUNTIMES",
    "FAKE_FAIL_ALL",
    "FAKE_PS",
    "FAKE_IMAGES",
    "FAKE_DIE",
    "FAKE_HELPER",
    "FAKE_EVENTS",
    "FAKE_DEAD_ENGINE",
    "FAKE_NO_IMAGE_ENGINE",
    "FAKE_DAEMON",
    "FAKE_IMAGE",
    "FAKE_PULL",
    "FAKE_PULL_SLEEP",
    "FAKE_OOM",
    "FAKE_CREATE_SLEEP",
    "FAKE_START_FAIL",
    "FAKE_ARCH",
    "FAKE_RM_FAIL_FOR",
];

fn show(out: &Output) -> String {
    format!(
        "status: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that sbx exited with `code`.
fn assert_exit(out: &Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", show(out));
}

/// Asserts that sbx printed nothing and exactly one line on stderr; returns it.
fn one_line_error(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(stdout(out), "");
    err
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

/// The value after `flag` in an argv.
fn after<'a>(argv: &'a [String], flag: &str) -> &'a str {
    let i = argv
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("no {flag} in {argv:?}"));
    &argv[i + 1]
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

/// The eval report: the JSON list on stdout.
fn report(out: &Output) -> Vec<Value> {
    match serde_json::from_slice(&out.stdout) {
        Ok(Value::Array(items)) => items,
        other => panic!("no JSON report ({other:?}):\n{}", show(out)),
    }
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

// ---------------------------------------------------------------- sbx run

#[test]
fn run_timeout_kills_client_and_removes_container() {
    let fake = Fake::new();
    let file = fake.file("sleep.sh", SLEEPER);
    let clock = Instant::now();
    let out = fake.run("t-timeout", &file, &["python:3.12-slim", "1"]);
    let elapsed = clock.elapsed();
    assert_exit(&out, 124);
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert!(elapsed >= Duration::from_millis(900), "took {elapsed:?}");
    assert!(stderr(&out).contains("timed out"), "{}", show(&out));
    let name = "sbx-t-timeout-0";
    assert_stopped_and_removed(&fake, name);
    assert_eq!(commands(&fake.calls()), ["create", "start", "rm"]);
    assert_stage_empty(&fake);
}

#[test]
fn run_exit_code_and_output_pass_through() {
    let fake = Fake::new();
    let three = fake.file(
        "three.sh",
        "#!/bin/sh\necho out-line\necho err-line >&2\nexit 3\n",
    );
    let out = fake.run("t-code", &three, &[]);
    assert_exit(&out, 3);
    assert_eq!(stdout(&out), "out-line\n");
    assert_eq!(stderr(&out), "err-line\n");
    assert_removed_after_start(&fake, "sbx-t-code-0");

    let zero = fake.file("zero.sh", "#!/bin/sh\necho fine\n");
    let out = fake.run("t-code", &zero, &[]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "fine\n");
    assert_eq!(stderr(&out), "");
    assert_eq!(
        commands(&fake.calls()),
        ["create", "start", "rm", "create", "start"]
    );
    assert_stage_empty(&fake);
}

#[test]
fn run_stdin_passes_through() {
    let fake = Fake::new();
    let file = fake.file("cat.sh", "#!/bin/sh\nexec cat\n");
    let out = fake
        .run_cmd("t-stdin", &file)
        .write_stdin("line one\nline two\n")
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "line one\nline two\n");
    // The stdin reaches the program through `create -i` and `start -a -i`.
    let calls = fake.calls();
    assert!(fake.created("sbx-t-stdin-0").interactive, "{calls:?}");
    start_of(&calls, "sbx-t-stdin-0");
}

#[test]
fn run_program_exit_125_passes_through_and_removes_container() {
    let fake = Fake::new();
    let file = fake.file(
        "fail.sh",
        "#!/bin/sh\necho 'docker: Error response from daemon: oops.' >&2\nexit 125\n",
    );
    let out = fake.run("t-125", &file, &[]);
    assert_exit(&out, 125);
    assert!(stderr(&out).contains("oops"), "{}", show(&out));
    assert_removed_after_start(&fake, "sbx-t-125-0");
}

#[test]
fn run_start_failure_gets_the_code_docker_run_gives() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let cases = [
        ("t-notfound", START_NOT_FOUND, 127),
        ("t-denied", START_DENIED, 126),
        ("t-other", START_OTHER, 125),
    ];
    for (id, message, code) in cases {
        let out = fake
            .run_cmd(id, &file)
            .env("FAKE_START_FAIL", message)
            .output()
            .expect("run sbx");
        assert_eq!(out.status.code(), Some(code), "{message}: {}", show(&out));
        // docker's line reaches the user, and nothing else ran.
        assert_eq!(stderr(&out), format!("{message}\n"), "{}", show(&out));
        assert_eq!(stdout(&out), "", "{}", show(&out));
        let name = format!("sbx-{id}-0");
        assert!(!fake.pid_file(&name).exists(), "the program ran");
        // A container that could not start stays `Created`: sbx removes it.
        assert_removed_after_start(&fake, &name);
    }
    // No docker call after the run: whether the program started at all
    // comes from each run's event stream.
    assert_eq!(
        commands(&fake.calls()),
        ["create", "start", "rm", "create", "start", "rm", "create", "start", "rm"]
    );
    assert_eq!(fake.streams().len(), 3, "{:?}", fake.all_calls());
    assert_stage_empty(&fake);
}

#[test]
fn run_program_own_stderr_and_exit_1_are_the_programs() {
    let fake = Fake::new();
    // docker's words after the program's own first line are the program's.
    let body = format!(
        "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\necho '{START_NOT_FOUND}' >&2\nexit 1\n"
    );
    let file = fake.file("own.sh", &body);
    let out = fake.run("t-own1", &file, &[]);
    assert_exit(&out, 1);
    assert_eq!(
        stderr(&out),
        format!("Traceback (most recent call last):\n{START_NOT_FOUND}\n")
    );
    assert!(
        fake.pid_file("sbx-t-own1-0").exists(),
        "the program never ran"
    );
    assert_removed_after_start(&fake, "sbx-t-own1-0");
}

#[test]
fn run_removes_the_container_only_after_a_start_that_did_not_exit_0() {
    let fake = Fake::new();
    let zero = fake.file("zero.sh", "#!/bin/sh\necho zero\n");
    let out = fake.run("t-rm0", &zero, &[]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "zero\n");
    let calls = fake.calls();
    // A clean exit 0: `--rm` removed the container, sbx calls nothing more.
    assert_eq!(commands(&calls), ["create", "start"], "{calls:?}");
    assert_eq!(calls[1], start_argv("sbx-t-rm0-0"));
    assert_not_removed(&calls, "sbx-t-rm0-0");

    let three = fake.file("three.sh", "#!/bin/sh\necho three\nexit 3\n");
    let out = fake.run("t-rm3", &three, &[]);
    assert_exit(&out, 3);
    assert_eq!(stdout(&out), "three\n");
    let calls = fake.calls();
    assert_eq!(
        commands(&calls),
        ["create", "start", "create", "start", "rm"],
        "{calls:?}"
    );
    assert_eq!(calls[4], rm_argv("sbx-t-rm3-0"));
    assert_removed_after_start(&fake, "sbx-t-rm3-0");
    assert_eq!(fake.removed(), ["sbx-t-rm3-0"]);
    assert_stage_empty(&fake);
}

#[test]
fn run_exact_argv() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", "#!/bin/sh\nexit 0\n");
    let out = fake
        .run_cmd("t-argv", &file)
        .write_stdin("")
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let calls = fake.calls();
    // The create is the image check: no `image inspect`, and a clean exit 0
    // needs no `rm` (`--rm` removed the container).
    assert_eq!(commands(&calls), ["create", "start"], "{calls:?}");
    let create = &calls[0];

    let staged = staged(create);
    assert!(
        staged.starts_with(fake.tmp()),
        "{staged:?} is not under TMPDIR"
    );
    assert_ne!(staged, file);
    let stage_dir = staged.parent().and_then(Path::parent).expect("stage dir");
    assert!(
        stage_dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .starts_with("sbx-"),
        "{staged:?}"
    );
    assert_eq!(stage_dir.parent(), Some(fake.tmp().as_path()));
    let volume = format!("{}:/work/task:ro", staged.display());
    let expected: Vec<&str> = vec![
        "create",
        "--rm",
        "-i",
        "--name",
        "sbx-t-argv-0",
        "--label",
        "sbx.run=t-argv",
        "--log-driver",
        "none",
        "--pull",
        "never",
        "--network",
        "none",
        "--read-only",
        "--tmpfs",
        "/tmp:rw,noexec,nosuid,size=64m",
        "--memory",
        "256m",
        "--cpus",
        "0.5",
        "--pids-limit",
        "64",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "-v",
        &volume,
        "--",
        "python:3.12-slim",
        "/work/task",
    ];
    assert_eq!(create, &expected);
    assert!(!create.iter().any(|a| a == "-t" || a == "--tty"));
    assert_eq!(calls[1], ["start", "-a", "-i", "--", "sbx-t-argv-0"]);
    // What the fake engine saw matches.
    let created = fake.created("sbx-t-argv-0");
    assert_eq!(created.staged, staged);
    assert!(created.interpreter.is_empty(), "{created:?}");
    assert!(created.interactive, "{created:?}");
    // sbx leaves nothing staged.
    assert_stage_empty(&fake);
}

#[test]
fn run_limits_reach_the_argv() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", "#!/bin/sh\nexit 0\n");
    let out = fake
        .sbx("t-limits")
        .args(["run", "--memory", "512m", "--cpus", "1.5"])
        .args(["--pids-limit", "32", "--tmpfs-size", "16m"])
        .args(["--network", "bridge", "--image", "busybox"])
        .arg(&file)
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let calls = fake.calls();
    let create = only_create(&calls);
    assert_eq!(after(create, "--memory"), "512m");
    assert_eq!(after(create, "--cpus"), "1.5");
    assert_eq!(after(create, "--pids-limit"), "32");
    assert_eq!(after(create, "--tmpfs"), "/tmp:rw,noexec,nosuid,size=16m");
    assert_eq!(after(create, "--network"), "bridge");
    assert_eq!(&create[create.len() - 3..], ["--", "busybox", "/work/task"]);
    // The limits are the create's business: the start only names the container.
    assert_eq!(calls_of(&calls, "start"), [&start_argv("sbx-t-limits-0")]);
}

#[test]
fn run_print_argv_prints_json_and_runs_nothing() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", "#!/bin/sh\necho hi\n");
    let out = fake
        .sbx("t-print")
        .arg("run")
        .arg("--print-argv")
        .arg(&file)
        .arg("busybox:1.36")
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    let argv: Vec<String> = serde_json::from_str(&text).expect("a JSON list of strings");
    assert_eq!(argv[0], fake.docker().to_str().expect("utf-8"));
    assert_eq!(argv[1], "run");
    let dashes = argv
        .iter()
        .position(|a| a == "--")
        .expect("`--` in the argv");
    assert_eq!(argv[dashes + 1], "busybox:1.36");
    assert_eq!(argv.last().map(String::as_str), Some("/work/task"));
    assert_eq!(after(&argv, "--name"), "sbx-t-print-0");
    // The staged copy it names is kept, holds the file, and is not the file.
    let staged = staged(&argv);
    assert_ne!(staged, file);
    assert_eq!(
        fs::read(&staged).expect("staged copy kept"),
        b"#!/bin/sh\necho hi\n"
    );
    let calls = fake.calls();
    assert!(calls.is_empty(), "--print-argv ran something: {calls:?}");

    // It is the create of a real run with `create` replaced by `run` (the
    // staging directory differs from one session to the next).
    let out = fake.run("t-print", &file, &["busybox:1.36"]);
    assert_exit(&out, 0);
    let calls = fake.calls();
    let create = only_create(&calls);
    let without_volume = |args: &[String]| -> Vec<String> {
        let v = args.iter().position(|a| a == "-v").expect("-v") + 1;
        let mut args = args.to_vec();
        args[v] = "VOLUME".into();
        args
    };
    let mut printed = without_volume(&argv[1..]);
    printed[0] = "create".into();
    assert_eq!(printed, without_volume(create));
}

#[test]
fn run_odd_file_paths() {
    let fake = Fake::new();
    let body = "#!/bin/sh\necho odd-ok\n";
    let mut paths: Vec<PathBuf> = ["colon:dir", "comma,dir", "space dir", "a:b,c d"]
        .iter()
        .map(|d| fake.file(Path::new(d).join("x:y,z w.sh"), body))
        .collect();
    let non_utf8 = fake
        .root()
        .join(OsStr::from_bytes(b"bytes\xff\xfe dir"))
        .join(OsStr::from_bytes(b"f\xff.sh"));
    fs::create_dir_all(non_utf8.parent().expect("parent")).expect("mkdir");
    fs::write(&non_utf8, body).expect("write");
    paths.push(non_utf8);

    for (i, path) in paths.iter().enumerate() {
        let id = format!("t-odd{i}");
        let out = fake.run(&id, path, &[]);
        assert_eq!(out.status.code(), Some(0), "{path:?}: {}", show(&out));
        assert_eq!(stdout(&out), "odd-ok\n", "{path:?}");
        let calls = fake.calls();
        let name = format!("sbx-{id}-0");
        let create = &calls[create_of(&calls, &name)];
        let staged = staged(create);
        assert!(staged.starts_with(fake.tmp()), "{staged:?}");
        let volume = after(create, "-v");
        assert_eq!(volume.matches(':').count(), 2, "{volume}");
        assert!(!volume.contains(','), "{volume}");
        assert!(!volume.contains(' '), "{volume}");
        assert_eq!(fake.created(&name).staged, staged);
        start_of(&calls, &name);
    }
    // No argument of any call carries a user path (compared as bytes).
    let log = fake.raw_log();
    for path in &paths {
        let user = path.as_os_str().as_bytes();
        assert!(
            !log.windows(user.len()).any(|w| w == user),
            "{path:?} reached the docker argv"
        );
        let dir = path.parent().expect("dir").file_name().expect("name");
        let dir = dir.as_bytes();
        assert!(
            !log.windows(dir.len()).any(|w| w == dir),
            "{path:?} reached the docker argv"
        );
    }
}

#[test]
fn run_missing_file_is_64_with_the_seed_message() {
    let fake = Fake::new();
    let missing = fake.root().join("nope.py");
    let out = fake.run("t-missing", &missing, &[]);
    assert_exit(&out, 64);
    assert_eq!(
        stderr(&out),
        format!("No such file: {}\n", missing.display())
    );
    assert_eq!(stdout(&out), "");
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());

    let dir = fake.root().join("a-dir");
    fs::create_dir(&dir).expect("mkdir");
    let out = fake.run("t-missing", &dir, &[]);
    assert_exit(&out, 64);
    assert_eq!(stderr(&out), format!("No such file: {}\n", dir.display()));
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
}

#[test]
fn run_refuses_bad_arguments_before_running_anything() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let f = file.to_str().expect("utf-8");
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", f, "--", "--privileged"],
        vec!["run", f, "--privileged"],
        vec!["run", "--memory", "1g,exec", f],
        vec!["run", "--tmpfs-size", "64m,exec", f],
        vec!["run", "--network", "container:x", f],
        vec!["run", "--image", "-v=/:/host", f],
        vec!["run", f, "img:1", "--image", "img:2"],
        vec!["run", "--interpreter", "--x", f],
    ];
    for args in cases {
        let out = fake.sbx("t-bad").args(&args).output().expect("run sbx");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", show(&out));
        assert!(!stdout(&out).contains("ran"), "{args:?}");
        assert!(
            fake.calls().is_empty(),
            "{args:?} called docker: {:?}",
            fake.calls()
        );
    }
    // A TIMEOUT that GNU timeout refuses: its code, 125, as the script.
    for args in [
        vec!["run", f, "python:3.12-slim", "-1"],
        vec!["run", f, "python:3.12-slim", "abc"],
        vec!["run", "--timeout=-1", f],
    ] {
        let out = fake.sbx("t-bad").args(&args).output().expect("run sbx");
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", show(&out));
        assert!(fake.calls().is_empty(), "{args:?}: {:?}", fake.calls());
    }
}

#[test]
fn run_docker_cli_missing_is_127() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .run_cmd("t-nodocker", &file)
        .env("SBX_DOCKER", "/nonexistent/docker")
        .output()
        .expect("run sbx");
    assert_exit(&out, 127);
    let err = one_line_error(&out);
    assert!(err.ends_with('\n'), "{err}");
    assert!(err.contains("docker"), "{err}");
    assert!(err.contains("/nonexistent/docker"), "{err}");
}

#[test]
fn run_daemon_down_is_125_one_line() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .run_cmd("t-down", &file)
        .env("FAKE_DAEMON", "down")
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    let err = one_line_error(&out);
    assert!(err.contains("Cannot connect to the Docker daemon"), "{err}");
    // The failed create is the only call: no pull, no start.
    let calls = fake.calls();
    assert_eq!(commands(&calls), ["create"], "{calls:?}");
}

#[test]
fn run_image_missing_with_pull_never_is_125_without_pull_or_run() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .sbx("t-never")
        .env("FAKE_IMAGE", "missing")
        .args(["run", "--pull", "never"])
        .arg(&file)
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    let err = one_line_error(&out);
    assert!(err.contains("python:3.12-slim"), "{err}");
    // The create is the image check; it fails, and nothing follows it.
    let calls = fake.calls();
    assert_eq!(commands(&calls), ["create"], "{calls:?}");
    assert_eq!(after(&calls[0], "--pull"), "never");
}

#[test]
fn run_image_missing_is_pulled_before_the_run() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .run_cmd("t-pull", &file)
        .env("FAKE_IMAGE", "missing")
        .arg("busybox:1.36")
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "ran\n");
    let calls = fake.calls();
    // create (no such image), pull, the same create again, start.
    assert_eq!(
        commands(&calls),
        ["create", "pull", "create", "start"],
        "{calls:?}"
    );
    assert_eq!(calls[1], ["pull", "--", "busybox:1.36"], "{calls:?}");
    assert_eq!(calls[0], calls[2], "the second create differs");
    assert_eq!(after(&calls[0], "--name"), "sbx-t-pull-0");
    assert_eq!(calls[3], start_argv("sbx-t-pull-0"));
}

#[test]
fn run_pull_failure_is_125_without_run() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .run_cmd("t-pullfail", &file)
        .env("FAKE_IMAGE", "missing")
        .env("FAKE_PULL", "fail")
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    assert!(
        stderr(&out).contains("pull access denied"),
        "{}",
        show(&out)
    );
    assert_eq!(stdout(&out), "");
    let calls = fake.calls();
    assert_eq!(commands(&calls), ["create", "pull"], "{calls:?}");
}

#[test]
fn run_without_shebang_needs_an_interpreter() {
    let fake = Fake::new();
    let file = fake.file("plain.py", "echo from-plain\n");
    let out = fake.run("t-interp", &file, &[]);
    assert_exit(&out, 126);
    assert!(stderr(&out).contains("--interpreter"), "{}", show(&out));
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());

    let out = fake
        .sbx("t-interp")
        .args(["run", "--interpreter", "python3"])
        .arg(&file)
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "from-plain\n");
    let calls = fake.calls();
    let create = only_create(&calls);
    assert_eq!(
        &create[create.len() - 4..],
        ["--", "python:3.12-slim", "python3", "/work/task"]
    );
    assert_eq!(fake.created("sbx-t-interp-0").interpreter, ["python3"]);
    assert_eq!(calls_of(&calls, "start"), [&start_argv("sbx-t-interp-0")]);
}

fn run_interrupted_by(signal: &str, code: i32, run_id: &str) {
    let fake = Fake::new();
    let file = fake.file("sleep.sh", SLEEPER);
    let mut sbx = spawn(
        fake.sbx_std(run_id)
            .arg("run")
            .arg(&file)
            .arg("python:3.12-slim")
            .arg("15"),
        Stdio::null(),
        fake.stderr_file(),
    );
    let name = format!("sbx-{run_id}-0");
    assert!(
        wait_for(&fake.pid_file(&name), Duration::from_secs(5)),
        "the fake start never ran the program: {:?}",
        fake.calls()
    );
    let pid = fake.pid(&name);
    assert!(alive(pid));
    let (status, elapsed) = sbx.stop(signal, Duration::from_secs(5));
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    let err = fake.stderr_text();
    assert_eq!(status.code(), Some(code), "stderr: {err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_gone(pid);
    assert_removed_after_start(&fake, &name);
    assert_eq!(commands(&fake.calls()), ["create", "start", "rm"]);
    assert_stage_empty(&fake);
}

#[test]
fn run_sigterm_kills_client_removes_container_exits_143() {
    run_interrupted_by("-TERM", 143, "t-sigterm");
}

#[test]
fn run_sigint_kills_client_removes_container_exits_130() {
    run_interrupted_by("-INT", 130, "t-sigint");
}

// ---------------------------------------------------------------- sbx eval

fn task(id: &str, stdin: &str, expect: &str) -> Value {
    json!({"id": id, "prompt": "p", "stdin": stdin, "expect": expect})
}

#[test]
fn eval_falls_back_to_case_mode_on_an_engine_of_another_architecture_and_says_so() {
    let fake = Fake::new();
    fake.candidate("echo", "exec cat\n");
    fake.candidate("wrong", "echo nope\n");
    let tasks = json!([task("echo", "hi\n", "hi\n"), task("wrong", "", "yes\n")]);
    for (mode, arch) in [("worker", "arm64"), ("candidate", "s390x")] {
        let out = bounded(fake.eval_std(&format!("t-arch-{mode}"), &tasks))
            .args(["--isolate", mode])
            .env("FAKE_ARCH", arch)
            .output()
            .expect("run sbx");
        assert_exit(&out, 1);
        let results = report(&out);
        let statuses: Vec<(&str, &str)> = results
            .iter()
            .map(|r| (field(r, "status"), field(r, "reason")))
            .collect();
        assert_eq!(statuses, [("pass", ""), ("fail", "wrong_output")]);
        // Case mode's entries: no runner fields.
        assert!(
            results.iter().all(|r| r.get("cpu_ms").is_none()),
            "{results:?}"
        );
        let err = stderr(&out);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("--isolate case"))
            .collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].contains(&format!("the engine runs {arch}"))
                && lines[0].contains(&format!("instead of {mode}")),
            "{err}"
        );
        // The containers were the case mode's (`/work/task`, no runner).
        let calls = fake.calls();
        assert!(!calls_of(&calls, "create").is_empty());
        assert!(!calls
            .iter()
            .any(|c| c.iter().any(|a| a.contains("__runner"))));
    }
    // `--isolate case` never asks for the architecture.
    let out = fake.eval("t-arch-case", &tasks).output().expect("run sbx");
    assert_exit(&out, 1);
    assert!(!stderr(&out).contains("--isolate case"));
}

#[test]
fn eval_judges_each_task_and_keeps_task_order() {
    let fake = Fake::new();
    // Earlier tasks take longer, so with -j 4 they finish last.
    fake.candidate("echo", "sleep 0.6\nexec cat\n");
    fake.candidate("wrong", "sleep 0.4\necho nope\n");
    fake.candidate("three", "sleep 0.2\necho partial\nexit 3\n");
    fake.candidate("quick", "printf 'a b\\n'\n");
    let tasks = json!([
        task("echo", "hello\nworld\n", "hello\nworld\n"),
        task("wrong", "", "yes\n"),
        task("three", "", "partial\n"),
        task("absent", "", ""),
        task("quick", "", "a b\n"),
    ]);
    let out = fake
        .eval("t-eval", &tasks)
        .args(["-j", "4"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    let ids: Vec<&str> = results.iter().map(|r| field(r, "id")).collect();
    assert_eq!(ids, ["echo", "wrong", "three", "absent", "quick"]);
    let statuses: Vec<(&str, &str)> = results
        .iter()
        .map(|r| (field(r, "status"), field(r, "reason")))
        .collect();
    assert_eq!(
        statuses,
        [
            ("pass", ""),
            ("fail", "wrong_output"),
            ("fail", "exit_code"),
            ("missing", "no_candidate"),
            ("pass", ""),
        ],
        "{results:?}"
    );
    assert_eq!(result_of(&results, "three")["exit_code"], 3);
    assert!(stderr(&out).contains("2 passed, 2 failed, 1 missing, 0 errors"));

    // Every candidate was created as `python3 /work/task`, with its stdin
    // (-i), and started attached with its stdin (-a -i).
    let calls = fake.calls();
    let creates = calls_of(&calls, "create");
    assert_eq!(creates.len(), 4, "{calls:?}");
    let mut names: Vec<&str> = Vec::new();
    for create in &creates {
        assert_eq!(&create[..3], ["create", "--rm", "-i"]);
        assert_eq!(
            &create[create.len() - 4..],
            ["--", "python:3.12-slim", "python3", "/work/task"]
        );
        assert!(staged(create).starts_with(fake.tmp()));
        let name = after(create, "--name");
        let created = fake.created(name);
        assert_eq!(created.interpreter, ["python3"], "{created:?}");
        assert!(created.interactive, "{created:?}");
        let create_at = create_of(&calls, name);
        assert!(create_at < start_of(&calls, name), "{calls:?}");
        names.push(name);
    }
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 4, "{calls:?}");
    assert_eq!(calls_of(&calls, "start").len(), 4, "{calls:?}");
    // The image is checked once, before any create.
    let inspects = calls_of(&calls, "image");
    assert_eq!(inspects.len(), 1, "{calls:?}");
    assert!(find(&calls, &["image"]) < find(&calls, &["create"]));
    // Only the run that exited 3 is removed by sbx; `--rm` did the others.
    let rms = calls_of(&calls, "rm");
    assert_eq!(rms.len(), 1, "{calls:?}");
    assert_removed_after_start(&fake, &rms[0][3]);
    assert_stage_empty(&fake);
}

#[test]
fn eval_stdin_reaches_the_program() {
    let fake = Fake::new();
    fake.candidate("cat", "exec cat\n");
    fake.candidate("cat2", "exec cat\n");
    let stdin = "some input\nwith two lines, no final newline";
    let tasks = json!([
        task("cat", stdin, stdin),
        task("cat2", "different input\n", "expected something else\n"),
    ]);
    let out = fake.eval("t-stdin", &tasks).output().expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    assert_eq!(field(&results[0], "status"), "pass", "{results:?}");
    assert_verdict(&results[1], "fail", "wrong_output");
}

/// Runs `sbx eval ARGS` over `tasks` (one task whose candidate does not end
/// by itself), which must end within 5 s with the task failed for `reason`,
/// its client gone and its container removed.
fn assert_eval_stops(fake: &Fake, run_id: &str, tasks: &Value, args: &[&str], reason: &str) {
    let clock = Instant::now();
    let out = fake
        .eval(run_id, tasks)
        .args(args)
        .output()
        .expect("run sbx");
    assert!(
        clock.elapsed() < Duration::from_secs(5),
        "{:?}",
        clock.elapsed()
    );
    assert_exit(&out, 1);
    assert_verdict(&report(&out)[0], "fail", reason);
    assert_stopped_and_removed(fake, &format!("sbx-{run_id}-0"));
}

#[test]
fn eval_output_flood_stops_at_max_output() {
    let fake = Fake::new();
    fake.candidate("flood", "exec yes flood\n");
    let tasks = json!([task("flood", "", "flood\n")]);
    assert_eval_stops(
        &fake,
        "t-flood",
        &tasks,
        &["--max-output", "1K"],
        "output_limit",
    );
}

/// Output past the limit followed at once by exit 0: the client often exits
/// in the same poll as the limit is crossed. The cut output must never be
/// judged (it could even match, as here: the first 4 bytes are the expect).
#[test]
fn eval_output_past_the_limit_is_output_limit_even_when_the_exit_wins() {
    let fake = Fake::new();
    let ids: Vec<String> = (0..20).map(|i| format!("quick{i}")).collect();
    for id in &ids {
        fake.candidate(id, "printf abcdEXTRA\n");
    }
    let tasks = Value::Array(ids.iter().map(|id| task(id, "", "abcd")).collect());
    let out = fake
        .eval("t-race", &tasks)
        .args(["--max-output", "4", "-j", "8"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    for id in &ids {
        assert_verdict(result_of(&results, id), "fail", "output_limit");
    }
}

#[test]
fn eval_timeout_kills_and_removes() {
    let fake = Fake::new();
    fake.candidate("slow", SLEEPER);
    let tasks = json!([{"id": "slow", "stdin": "", "expect": "", "timeout": 1}]);
    assert_eval_stops(&fake, "t-evaltimeout", &tasks, &[], "timeout");
}

#[test]
fn eval_docker_words_from_a_program_that_started_are_its_own() {
    // Candidates that print docker's words and exit as docker would: they
    // did start (the engine has their `start` event), so their failure is
    // theirs, never an `error`. A real start failure is the next test.
    let fake = Fake::new();
    fake.candidate(
        "spoof1",
        "echo 'Error response from daemon: failed to create shim task: exec: \"x\": executable file not found in $PATH: unknown' >&2\nexit 1\n",
    );
    fake.candidate(
        "spoof125",
        "echo 'docker: Error response from daemon: oops.' >&2\nexit 125\n",
    );
    fake.candidate("own125", "echo 'Traceback: boom' >&2\nexit 125\n");
    let tasks = json!([
        task("spoof1", "", ""),
        task("spoof125", "", ""),
        task("own125", "", "")
    ]);
    let out = fake.eval("t-start", &tasks).output().expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    for id in ["spoof1", "spoof125", "own125"] {
        assert_verdict(result_of(&results, id), "fail", "exit_code");
    }
    // The engine's record came from one event stream, not from docker calls.
    assert_eq!(fake.streams().len(), 1, "{:?}", fake.all_calls());
    assert!(!commands(&fake.calls()).contains(&"events"));
    // None exited 0: all containers are removed.
    assert_removed_after_start(&fake, "sbx-t-start-0");
    assert_removed_after_start(&fake, "sbx-t-start-1");
    assert_removed_after_start(&fake, "sbx-t-start-2");
}

#[test]
fn eval_docker_start_exit_1_is_start_failed() {
    for (id, message, says) in [
        (
            "t-evalnotfound",
            START_NOT_FOUND,
            "executable file not found",
        ),
        ("t-evaldenied", START_DENIED, "permission denied"),
    ] {
        let fake = Fake::new();
        fake.candidate("a", "echo a\n");
        let tasks = json!([task("a", "", "a\n")]);
        let out = fake
            .eval(id, &tasks)
            .env("FAKE_START_FAIL", message)
            .output()
            .expect("run sbx");
        assert_eq!(out.status.code(), Some(2), "{message}: {}", show(&out));
        let results = report(&out);
        let a = result_of(&results, "a");
        assert_verdict(a, "error", "start_failed");
        assert_eq!(field(a, "message"), message, "{results:?}");
        assert!(field(a, "message").contains(says), "{results:?}");
        assert!(stderr(&out).contains("0 passed, 0 failed, 0 missing, 1 errors"));
        let name = format!("sbx-{id}-0");
        assert!(!fake.pid_file(&name).exists(), "the program ran");
        assert_removed_after_start(&fake, &name);
    }
}

#[test]
fn eval_program_own_stderr_and_exit_1_is_a_fail() {
    let fake = Fake::new();
    fake.candidate(
        "own1",
        &format!(
            "echo 'Traceback (most recent call last):' >&2\necho '{START_NOT_FOUND}' >&2\nexit 1\n"
        ),
    );
    let tasks = json!([task("own1", "", "")]);
    let out = fake.eval("t-evalown1", &tasks).output().expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    let own = result_of(&results, "own1");
    assert_verdict(own, "fail", "exit_code");
    assert_eq!(own["exit_code"], 1, "{results:?}");
    assert_removed_after_start(&fake, "sbx-t-evalown1-0");
}

#[test]
fn eval_oom_event_is_reported() {
    let fake = Fake::new();
    fake.candidate("hog", "exit 137\n");
    let tasks = json!([task("hog", "", "x\n")]);
    let out = fake
        .eval("t-oom", &tasks)
        .env("FAKE_OOM", "1")
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    assert_eq!(field(&results[0], "reason"), "oom", "{results:?}");
    // One stream of the run's containers, started before the first one.
    let calls = fake.all_calls();
    let streams = fake.streams();
    assert_eq!(streams.len(), 1, "{calls:?}");
    assert!(
        streams[0]
            .windows(2)
            .any(|w| w == ["--filter", "label=sbx.run=t-oom"]),
        "{calls:?}"
    );
}

#[test]
fn eval_image_missing_with_pull_never_is_one_line_and_125() {
    let fake = Fake::new();
    fake.candidate("a", "echo a\n");
    fake.candidate("b", "echo b\n");
    let tasks = json!([
        task("a", "", "a\n"),
        task("b", "", "b\n"),
        {"id": "c", "stdin": "", "expect": "", "image": "busybox:1.36"},
    ]);
    let out = fake
        .eval("t-evalnever", &tasks)
        .env("FAKE_IMAGE", "missing")
        .args(["--pull", "never"])
        .output()
        .expect("run sbx");
    // Nothing could run: one line saying what to do, no report.
    assert_exit(&out, 125);
    assert!(out.stdout.is_empty(), "{}", show(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no task was judged (2 tasks with candidates need image"),
        "{err}"
    );
    let calls = fake.calls();
    assert!(calls_of(&calls, "create").is_empty(), "{calls:?}");
    assert!(calls_of(&calls, "start").is_empty(), "{calls:?}");
    assert!(find(&calls, &["pull"]).is_none(), "{calls:?}");
    // Each distinct image is checked once.
    let inspects = calls_of(&calls, "image");
    assert_eq!(inspects.len(), 2, "{calls:?}");
}

#[test]
fn eval_image_missing_is_pulled_before_any_run() {
    let fake = Fake::new();
    fake.candidate("a", "echo a\n");
    let tasks = json!([task("a", "", "a\n")]);
    let out = fake
        .eval("t-evalpull", &tasks)
        .env("FAKE_IMAGE", "missing")
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    assert_eq!(field(&report(&out)[0], "status"), "pass");
    let calls = fake.calls();
    let pull =
        find(&calls, &["pull", "--", "python:3.12-slim"]).unwrap_or_else(|| panic!("{calls:?}"));
    assert_eq!(calls_of(&calls, "pull").len(), 1, "{calls:?}");
    // The image is there before the create: it succeeds the first time.
    only_create(&calls);
    let create = create_of(&calls, "sbx-t-evalpull-0");
    assert!(pull < create, "{calls:?}");
    assert!(create < start_of(&calls, "sbx-t-evalpull-0"), "{calls:?}");
}

#[test]
fn eval_closed_stdout_does_not_panic() {
    let fake = Fake::new();
    fake.candidate("a", "echo a\n");
    fake.candidate("b", "sleep 0.3\necho b\n");
    let tasks = json!([task("a", "", "a\n"), task("b", "", "b\n")]);
    let mut sbx = spawn(
        &mut fake.eval_std("t-closed", &tasks),
        Stdio::piped(),
        fake.stderr_file(),
    );
    // Close the read end before sbx writes its report.
    drop(sbx.0.stdout.take());
    let status = sbx.wait(Duration::from_secs(10));
    let err = fake.stderr_text();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(err.contains("2 passed"), "{err}");
}

#[test]
fn eval_sigterm_stops_every_run() {
    let fake = Fake::new();
    fake.candidate("s1", SLEEPER);
    fake.candidate("s2", SLEEPER);
    let tasks = json!([task("s1", "", ""), task("s2", "", "")]);
    let mut sbx = spawn(
        fake.eval_std("t-evalterm", &tasks).args(["-j", "2"]),
        Stdio::null(),
        fake.stderr_file(),
    );
    let names = ["sbx-t-evalterm-0", "sbx-t-evalterm-1"];
    for name in names {
        assert!(
            wait_for(&fake.pid_file(name), Duration::from_secs(5)),
            "{name} never started: {:?}",
            fake.calls()
        );
    }
    let pids: Vec<u32> = names.iter().map(|n| fake.pid(n)).collect();
    let (status, _) = sbx.stop("-TERM", Duration::from_secs(5));
    let err = fake.stderr_text();
    assert_eq!(status.code(), Some(143), "stderr: {err}");
    for pid in pids {
        assert_gone(pid);
    }
    for name in names {
        assert_removed_after_start(&fake, name);
    }
    // The run's label is swept at the end.
    let calls = fake.calls();
    assert!(
        find(
            &calls,
            &[
                "ps",
                "-a",
                "-q",
                "--no-trunc",
                "--filter",
                "label=sbx.run=t-evalterm"
            ]
        )
        .is_some(),
        "{calls:?}"
    );
}

// ------------------------------------------- signals before the start, closed stderr

#[test]
fn run_sigterm_during_pull_stops_promptly() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let mut sbx = spawn(
        fake.sbx_std("t-pullterm")
            .env("FAKE_IMAGE", "missing")
            .env("FAKE_PULL_SLEEP", "8")
            .arg("run")
            .arg(&file),
        Stdio::null(),
        fake.stderr_file(),
    );
    let pull_pid = fake.root().join("pull.pid");
    assert!(wait_for(&pull_pid, Duration::from_secs(5)), "no pull");
    let (status, elapsed) = sbx.stop("-TERM", Duration::from_secs(15));
    if let Some(pid) = fs::read_to_string(&pull_pid)
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
    {
        let _ = kill("-KILL", pid);
    }
    let err = fake.stderr_text();
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}: {err}");
    assert_eq!(status.code(), Some(143), "stderr: {err}");
    // The create that found no image, the interrupted pull, nothing else.
    let calls = fake.calls();
    assert_eq!(commands(&calls), ["create", "pull"], "{calls:?}");
}

#[test]
fn run_sigterm_during_a_slow_create_removes_the_container_once_created() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out_path = fake.root().join("sbx.stdout");
    let mut sbx = spawn(
        fake.sbx_std("t-createterm")
            .env("FAKE_CREATE_SLEEP", "2")
            .arg("run")
            .arg(&file),
        fs::File::create(&out_path).expect("stdout file"),
        fake.stderr_file(),
    );
    let started = fake.root().join("create.started");
    assert!(
        wait_for(&started, Duration::from_secs(5)),
        "no create: {:?}",
        fake.calls()
    );
    let (status, elapsed) = sbx.stop("-TERM", Duration::from_secs(10));
    let err = fake.stderr_text();
    assert_eq!(status.code(), Some(143), "stderr: {err}");
    // sbx let the create finish (it sleeps 2 s) instead of killing it...
    assert!(elapsed >= Duration::from_secs(1), "took {elapsed:?}: {err}");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}: {err}");
    assert!(err.contains("interrupted"), "{err}");
    // ...then removed the container it made, by name, and never started it.
    let name = "sbx-t-createterm-0";
    let calls = fake.calls();
    assert_eq!(commands(&calls), ["create", "rm"], "{calls:?}");
    assert_eq!(after(&calls[0], "--name"), name);
    assert_eq!(calls[1], rm_argv(name), "{calls:?}");
    assert_eq!(
        fake.removed(),
        [name],
        "the rm did not find the created container"
    );
    assert!(!fake.pid_file(name).exists(), "the program ran");
    assert_eq!(fs::read_to_string(&out_path).unwrap_or_default(), "");
    assert_stage_empty(&fake);
}

#[test]
fn closed_stderr_keeps_the_exit_code() {
    let fake = Fake::new();
    let file = fake.file("sleep.sh", SLEEPER);
    let mut sbx = spawn(
        fake.sbx_std("t-closederr")
            .arg("run")
            .arg(&file)
            .arg("python:3.12-slim")
            .arg("1"),
        Stdio::null(),
        Stdio::piped(),
    );
    drop(sbx.0.stderr.take());
    let status = sbx.wait(Duration::from_secs(10));
    assert_stopped_and_removed(&fake, "sbx-t-closederr-0");
    assert_eq!(
        status.code(),
        Some(124),
        "`sbx run ... 2>&1 | head` lost its exit code"
    );

    fake.candidate("a", "echo a\n");
    let tasks = json!([task("a", "", "a\n")]);
    let mut sbx = spawn(
        &mut fake.eval_std("t-closederr2", &tasks),
        Stdio::piped(),
        Stdio::piped(),
    );
    drop(sbx.0.stdout.take());
    drop(sbx.0.stderr.take());
    let status = sbx.wait(Duration::from_secs(10));
    assert_eq!(
        status.code(),
        Some(0),
        "`sbx eval 2>&1 | head` lost its exit code"
    );
}

// ---- several engines -------------------------------------------------------

const ENGINE_A: &str = "tcp://127.0.0.1:1";
const ENGINE_B: &str = "tcp://127.0.0.1:2";

/// `(engine, container)` of every start that ran a program, in order.
fn ran_on(fake: &Fake) -> Vec<(String, String)> {
    fs::read_to_string(fake.root().join("ran-on"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(e, n)| (e.to_string(), n.to_string()))
        .collect()
}

fn four_printing_tasks(fake: &Fake) -> Value {
    let ids = ["t1", "t2", "t3", "t4"];
    for id in ids {
        fake.candidate(id, "sleep 0.2\necho ran\n");
    }
    Value::Array(ids.iter().map(|id| task(id, "", "ran\n")).collect())
}

#[test]
fn eval_spreads_over_engines_and_names_each() {
    let fake = Fake::new();
    let tasks = four_printing_tasks(&fake);
    let out = fake
        .eval("t-two", &tasks)
        .args(["--engine", &format!("{ENGINE_A},jobs=2")])
        .args(["--engine", &format!("{ENGINE_B},jobs=2")])
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let results = report(&out);
    let ids: Vec<&str> = results.iter().map(|r| field(r, "id")).collect();
    assert_eq!(ids, ["t1", "t2", "t3", "t4"]);
    let ran = ran_on(&fake);
    for engine in [ENGINE_A, ENGINE_B] {
        assert!(ran.iter().any(|(e, _)| e == engine), "{engine}: {ran:?}");
    }
    // Each entry names the engine that ran it, and that engine's start ran it.
    for r in &results {
        assert_eq!(field(r, "status"), "pass", "{r}");
        let engine = field(r, "engine");
        assert!([ENGINE_A, ENGINE_B].contains(&engine), "{r}");
        assert!(r.get("requeued").is_none(), "{r}");
    }
    // Every docker call went to one of the two engines, by --host.
    for call in fake.calls() {
        assert_eq!(call[0], "--host", "{call:?}");
        assert!([ENGINE_A, ENGINE_B].contains(&call[1].as_str()), "{call:?}");
    }
}

#[test]
fn eval_engine_dying_mid_run_is_never_the_candidates_failure() {
    let fake = Fake::new();
    let tasks = four_printing_tasks(&fake);
    let out = fake
        .eval("t-die", &tasks)
        .env("FAKE_DEAD_ENGINE", ENGINE_B)
        .args(["--engine", &format!("{ENGINE_A},jobs=1")])
        .args(["--engine", &format!("{ENGINE_B},jobs=1")])
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let results = report(&out);
    let died = fs::read_to_string(fake.root().join("died-on")).unwrap_or_default();
    assert!(!died.is_empty(), "engine B never got a task");
    let mut moved = 0;
    for r in &results {
        assert_eq!(field(r, "status"), "pass", "{r}");
        assert_eq!(field(r, "engine"), ENGINE_A, "{r}");
        if let Some(requeued) = r["requeued"].as_array() {
            moved += 1;
            assert_eq!(requeued.len(), 1, "{r}");
            assert_eq!(requeued[0]["engine"], ENGINE_B, "{r}");
            assert!(
                requeued[0]["reason"].as_str().unwrap_or("").contains("EOF"),
                "{r}"
            );
        }
    }
    assert_eq!(
        moved, 1,
        "exactly the task in flight on B moves: {results:?}"
    );
    assert!(
        stderr(&out).contains(&format!("engine `{ENGINE_B}` stopped answering")),
        "{}",
        show(&out)
    );
}

#[test]
fn eval_with_no_engine_left_reports_errors_not_failures() {
    let fake = Fake::new();
    let tasks = four_printing_tasks(&fake);
    // The current context dies during the first run: nothing may be scored
    // `fail`; every task is an `error` that says why.
    let out = fake
        .eval("t-alldead", &tasks)
        .env("FAKE_DEAD_ENGINE", "default")
        .args(["-j", "1"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 2);
    for r in report(&out) {
        assert_eq!(field(&r, "status"), "error", "{r}");
        assert_eq!(field(&r, "reason"), "no_engine", "{r}");
        assert!(
            field(&r, "message").contains("engine `default` stopped answering"),
            "{r}"
        );
    }
}

#[test]
fn eval_engine_without_the_image_is_reported_and_skipped() {
    let fake = Fake::new();
    let tasks = four_printing_tasks(&fake);
    let out = fake
        .eval("t-noimg", &tasks)
        .env("FAKE_NO_IMAGE_ENGINE", ENGINE_B)
        .args([
            "--pull", "never", "--engine", ENGINE_A, "--engine", ENGINE_B,
        ])
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    for r in report(&out) {
        assert_eq!(field(&r, "status"), "pass", "{r}");
        assert_eq!(field(&r, "engine"), ENGINE_A, "{r}");
    }
    assert!(ran_on(&fake).iter().all(|(e, _)| e == ENGINE_A));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("engine `{ENGINE_B}` cannot run tasks of image")),
        "{err}"
    );
}

#[test]
fn bad_engine_values_are_usage_errors() {
    let fake = Fake::new();
    let tasks = four_printing_tasks(&fake);
    for bad in ["--privileged", "http://x", "a,jobs=0", "tcp://", "x y"] {
        let out = fake
            .eval("t-badengine", &tasks)
            .arg(format!("--engine={bad}"))
            .output()
            .expect("run sbx");
        assert_exit(&out, 2);
        let line = one_line_error(&out);
        assert!(line.starts_with("sbx: invalid --engine"), "{line}");
    }
    assert!(fake.calls().is_empty(), "no docker call for bad input");
}

#[test]
fn eval_failure_the_engine_did_not_record_is_retried_then_an_error() {
    let fake = Fake::new();
    fake.candidate("three", "echo partial\nexit 3\n");
    let tasks = json!([task("three", "", "partial\n")]);
    // The client says 3, the engine has no record of the program ending:
    // a cut connection, not the candidate's failure.
    let out = fake
        .eval("t-lost", &tasks)
        .env("FAKE_DIE", "none")
        .output()
        .expect("run sbx");
    assert_exit(&out, 2);
    let results = report(&out);
    let r = &results[0];
    assert_eq!(field(r, "status"), "error", "{r}");
    assert_eq!(field(r, "reason"), "engine_lost", "{r}");
    assert!(
        field(r, "message").contains("no record of the program exiting 3"),
        "{r}"
    );
    // Three runs in all: two moved back to the queue, the third stands.
    assert_eq!(r["requeued"].as_array().map(Vec::len), Some(2), "{r}");
    assert_eq!(calls_of(&fake.calls(), "start").len(), 3);

    // With the engine's record, the same run is the candidate's failure.
    let out = fake.eval("t-lost2", &tasks).output().expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    assert_eq!(field(&results[0], "reason"), "exit_code", "{results:?}");
}

#[test]
fn eval_a_neighbours_oom_is_not_ours() {
    let fake = Fake::new();
    fake.candidate("three", "exit 3\n");
    let tasks = json!([task("three", "", "")]);
    // docker's `container=` filter matches a name prefix: `sbx-r-1` also
    // matches `sbx-r-10`. Only the exact name's events count.
    let out = fake
        .eval("t-neighbour", &tasks)
        .env("FAKE_OOM", "neighbour")
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    // (With its own oom event the same run is `oom`: eval_oom_event_is_reported.)
    assert_eq!(field(&results[0], "reason"), "exit_code", "{results:?}");
}

// ------------------------------------------------ faults found in review

#[test]
fn eval_regex_expectation_cannot_escape_its_anchoring() {
    let fake = Fake::new();
    fake.candidate("wrong", "echo 'a completely wrong answer'\n");
    // Wrapped as text, `expected)|(.*` closed sbx's group and matched
    // anything: a wrong pass. Parsed on its own, it is not a regex.
    let tasks = json!([
        {"id": "wrong", "prompt": "p", "stdin": "", "expect": "expected)|(.*", "compare": "regex"}
    ]);
    let out = fake
        .eval("t-regex-escape", &tasks)
        .output()
        .expect("run sbx");
    assert_exit(&out, 2);
    assert!(
        one_line_error(&out).contains("invalid regex"),
        "{}",
        show(&out)
    );
    // A top-level alternation is anchored as a whole.
    let tasks = json!([
        {"id": "wrong", "prompt": "p", "stdin": "", "expect": "expected|(.*)right", "compare": "regex"}
    ]);
    let out = fake
        .eval("t-regex-escape", &tasks)
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    assert_verdict(&report(&out)[0], "fail", "wrong_output");
}

#[test]
fn eval_verbose_regex_may_end_in_a_comment() {
    let fake = Fake::new();
    fake.candidate("hello", "echo 'hello 42'\n");
    let tasks = json!([
        {"id": "hello", "prompt": "p", "stdin": "", "expect": "(?x) hello \\s \\d+ \\n  # a greeting", "compare": "regex"}
    ]);
    let out = fake.eval("t-regex-x", &tasks).output().expect("run sbx");
    assert_exit(&out, 0);
    assert_verdict(&report(&out)[0], "pass", "");
}

#[test]
fn eval_compares_bytes_not_their_lossy_decoding() {
    let fake = Fake::new();
    // The byte 0xff is not U+FFFD, which a lossy decoding turns it into.
    fake.candidate("ff", "printf '\\377\\n'\n");
    fake.candidate("fffd", "printf '\\357\\277\\275\\n'\n");
    let tasks = json!([task("ff", "", "\u{fffd}\n"), task("fffd", "", "\u{fffd}\n")]);
    let out = fake.eval("t-bytes", &tasks).output().expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    assert_verdict(result_of(&results, "ff"), "fail", "wrong_output");
    assert_verdict(result_of(&results, "fffd"), "pass", "");
}

/// Whether python3's XML parser accepts `path`; `Err` with its message.
fn parse_xml(path: &Path) -> Result<(), String> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])",
        ])
        .arg(path)
        .output()
        .expect("python3 must be installed for this test");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn eval_junit_stays_well_formed_xml_whatever_a_candidate_writes() {
    let fake = Fake::new();
    // U+FFFF, U+FFFE, a C0 control, an invalid byte (lossy: U+FFFD, which
    // XML allows), then exit 1: a failure whose stderr goes into the XML.
    fake.candidate(
        "odd",
        "printf 'a\\357\\277\\277b\\357\\277\\276c\\001d\\377e\\n' >&2\nprintf '\\357\\277\\277\\n'\nexit 1\n",
    );
    fake.candidate("wrong", "printf 'x\\357\\277\\277\\033y\\n'\n");
    let tasks = json!([task("odd", "", ""), task("wrong", "", "z\n")]);
    let junit = fake.root().join("junit.xml");
    let out = fake
        .eval("t-junit-xml", &tasks)
        .arg("--junit")
        .arg(&junit)
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    if let Err(e) = parse_xml(&junit) {
        panic!(
            "--junit wrote XML that does not parse: {e}\n{}",
            String::from_utf8_lossy(&fs::read(&junit).unwrap_or_default())
        );
    }
}

#[test]
fn run_lock_never_writes_through_a_planted_symlink() {
    let fake = Fake::new();
    let file = fake.file("ran.sh", PRINTS_RAN);
    let victim = fake.file("victim", "precious\n");
    let id = "t-lock-link";
    // Anyone can create the shared `<tmp>/sbx-runs` first and plant a link
    // there: sbx used it and truncated the file the link points to.
    let shared = fake.tmp().join("sbx-runs");
    fs::create_dir(&shared).expect("shared dir");
    std::os::unix::fs::symlink(&victim, shared.join(format!("{id}.lock"))).expect("plant");
    let out = fake.run(id, &file, &[]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "ran\n");
    assert_eq!(fs::read_to_string(&victim).expect("victim"), "precious\n");

    // A link in the private directory itself is refused, not followed.
    let private = fake.lock_dir();
    assert!(private.is_dir(), "sbx creates its private lock directory");
    let mode = fs::metadata(&private)
        .expect("lock dir")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    std::os::unix::fs::symlink(&victim, private.join(format!("{id}.lock"))).expect("plant");
    let out = fake.run(id, &file, &[]);
    assert_exit(&out, 2);
    assert!(one_line_error(&out).contains("run lock"), "{}", show(&out));
    assert_eq!(fs::read_to_string(&victim).expect("victim"), "precious\n");
    fs::remove_file(private.join(format!("{id}.lock"))).expect("unplant");

    // A lock directory others can write to is refused...
    fs::set_permissions(&private, fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = fake.run(id, &file, &[]);
    assert_exit(&out, 2);
    assert!(
        one_line_error(&out).contains("open to other users"),
        "{}",
        show(&out)
    );
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).expect("chmod");

    // ...and so is one another user owns (this part needs root, as CI has).
    let chown = std::process::Command::new("chown")
        .arg("65534")
        .arg(&private)
        .status()
        .expect("run chown");
    assert!(
        chown.success(),
        "chown needs root: run these tests as root, as CI does"
    );
    let out = fake.run(id, &file, &[]);
    assert_exit(&out, 2);
    assert!(
        one_line_error(&out).contains("owned by uid 65534"),
        "{}",
        show(&out)
    );
    let _ = fs::remove_dir(&private);
}

#[test]
fn eval_refuses_a_run_id_a_live_run_holds() {
    let fake = Fake::new();
    fake.candidate("slow", "sleep 3\necho ok\n");
    let tasks = json!([task("slow", "", "ok\n")]);
    let first_out = fake.root().join("first.out");
    let mut first = spawn(
        &mut fake.eval_std("t-dup", &tasks),
        fs::File::create(&first_out).expect("stdout file"),
        fake.stderr_file(),
    );
    assert!(
        wait_for(&fake.pid_file("sbx-t-dup-0"), LIMIT),
        "the first eval never started its container"
    );
    let second = fake.eval("t-dup", &tasks).output().expect("run sbx");
    assert_exit(&second, 2);
    assert!(
        one_line_error(&second).contains("in use by another sbx"),
        "{}",
        show(&second)
    );
    // The second eval removed nothing: the first one's verdict stands.
    let status = first.wait(LIMIT);
    assert_eq!(status.code(), Some(0), "{}", fake.stderr_text());
    let report: Value =
        serde_json::from_slice(&fs::read(&first_out).expect("report")).expect("JSON report");
    assert_verdict(&report[0], "pass", "");
    assert!(
        calls_of(&fake.calls(), "rm").is_empty(),
        "{:?}",
        fake.calls()
    );
    assert_stage_empty(&fake);
}

/// `sbx gc ARGS` against the fake, with `FAKE_PS` listing `containers`.
fn fake_gc(fake: &Fake, containers: &str, args: &[&str]) -> Output {
    let mut cmd = fake.sbx("t-gc-unused");
    cmd.env_remove("SBX_RUN_ID")
        .env("FAKE_PS", containers)
        .arg("gc")
        .args(args);
    cmd.output().expect("run sbx gc")
}

#[test]
fn gc_never_builds_host_paths_from_labels() {
    let fake = Fake::new();
    let created = "2026-11-29 15:40:27 +0000 UTC";
    // A label `<root>/fifo` named the FIFO `<root>/fifo.lock` as a run lock:
    // gc opened it and blocked forever.
    let fifo = fake.root().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(fifo.with_extension("lock"))
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    let line = format!("c1\tsbx-x-0\t{created}\t{}", fifo.display());
    let out = fake_gc(&fake, &line, &["--dry-run"]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("is not a run id"), "{}", show(&out));
    assert!(!stdout(&out).contains("c1"), "{}", show(&out));

    // A label `<root>/victim` made gc delete `<root>/victim.lock`.
    let victim = fake.file("victim.lock", "precious\n");
    let label = victim.with_extension("");
    let line = format!("c2\tsbx-y-0\t{created}\t{}", label.display());
    let out = fake_gc(&fake, &line, &[]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("is not a run id"), "{}", show(&out));
    assert!(victim.exists(), "gc deleted a file named by a label");
    assert!(
        calls_of(&fake.calls(), "rm").is_empty(),
        "{:?}",
        fake.calls()
    );
    // ...and `--run` takes only a run id.
    let out = fake_gc(&fake, &line, &["--run", &label.to_string_lossy()]);
    assert_exit(&out, 2);
    assert!(
        one_line_error(&out).contains("invalid --run"),
        "{}",
        show(&out)
    );
    assert!(victim.exists(), "gc deleted a file named by --run");
    assert!(
        calls_of(&fake.calls(), "rm").is_empty(),
        "{:?}",
        fake.calls()
    );
}

#[test]
fn gc_survives_an_odd_created_at() {
    let fake = Fake::new();
    // A non-ASCII byte inside the offset: gc sliced there and panicked.
    let out = fake_gc(
        &fake,
        "c1\tsbx-r1-0\t2026-11-29 15:40:27 +0\u{e9}0 UTC\tr1",
        &["--older-than", "1s"],
    );
    assert_exit(&out, 0);
    assert!(!stderr(&out).contains("panicked"), "{}", show(&out));
    let out = fake_gc(
        &fake,
        "c1\tsbx-r1-0\t2026-11-29 15:40:27 +0\u{e9}0 UTC\tr1",
        &[],
    );
    assert_exit(&out, 0);
    assert_eq!(calls_of(&fake.calls(), "rm").len(), 1, "{:?}", fake.calls());
}

/// Rows of the README's exit-code table that the code did not keep.
#[test]
fn exit_code_tmpdir_missing_is_2() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    // TMPDIR pointing at a missing directory: a setting of the caller, 2.
    let out = fake
        .run_cmd("t-exit-tmp", &file)
        .env("TMPDIR", fake.root().join("missing"))
        .output()
        .expect("run sbx");
    assert_exit(&out, 2);
    assert!(one_line_error(&out).contains("TMPDIR"), "{}", show(&out));
}

#[test]
fn exit_code_cache_naming_a_file_is_2() {
    let fake = Fake::new();
    fake.candidate("a", PRINTS_RAN);
    let not_a_dir = fake.file("cache-file", "x");
    let out = fake
        .eval("t-exit-cache", &json!([task("a", "", "ran\n")]))
        .arg("--cache")
        .arg(&not_a_dir)
        .output()
        .expect("run sbx");
    assert_exit(&out, 2);
    assert!(one_line_error(&out).contains("--cache"), "{}", show(&out));
}

#[test]
fn exit_code_gc_and_doctor_without_docker_cli_is_127() {
    let fake = Fake::new();
    for command in [
        &["gc"][..],
        &["doctor", "--image", "sbx-busybox:latest"][..],
    ] {
        let out = fake
            .sbx("t-exit-nocli")
            .env("SBX_DOCKER", "/nonexistent/docker")
            .args(command)
            .output()
            .expect("run sbx");
        assert_exit(&out, 127);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(all.contains("/nonexistent/docker"), "{}", show(&out));
    }
}

#[test]
fn exit_code_doctor_with_a_failing_docker_cli_is_125() {
    let fake = Fake::new();
    // The report is still printed; the exit code says the engine.
    let out = fake
        .sbx("t-exit-fails")
        .env("FAKE_FAIL_ALL", "1")
        .args(["doctor", "--image", "sbx-busybox:latest"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    assert!(stdout(&out).contains("Cannot connect"), "{}", show(&out));
}

#[test]
fn doctor_without_the_default_image_says_it_is_missing_not_failed() {
    let fake = Fake::new();
    // No sbx.toml in the folder: the default image, which is absent.
    assert!(!fake.root().join("sbx.toml").exists());
    for json in [false, true] {
        let mut cmd = fake.sbx("t-doctor-noimage");
        cmd.env("FAKE_IMAGE", "missing").arg("doctor");
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().expect("run sbx");
        assert_exit(&out, 125);
        let text = stdout(&out);
        assert!(text.contains("nothing was checked"), "{}", show(&out));
        assert!(
            text.contains("--image sbx-python:bookworm"),
            "{}",
            show(&out)
        );
        assert!(text.contains("scripts/build-images.sh"), "{}", show(&out));
        assert!(!text.contains("does NOT fully hold"), "{}", show(&out));
        assert!(
            !text.contains("network"),
            "no probe is reported: {}",
            show(&out)
        );
        if !json {
            let last = text.lines().last().expect("a last line");
            assert!(
                last.starts_with(
                    "doctor: nothing was checked: image python:3.12-slim is not on this engine"
                ),
                "{last}"
            );
        }
    }
    // Nothing was created.
    assert!(
        !commands(&fake.calls()).contains(&"create"),
        "{:?}",
        fake.calls()
    );
}

#[test]
fn doctor_with_a_runtime_the_engine_lacks_says_so_in_one_line() {
    let fake = Fake::new();
    let out = fake
        .sbx("t-doctor-noruntime")
        .env("FAKE_RUNTIMES", "runc io.containerd.runc.v2")
        .args([
            "doctor",
            "--image",
            "sbx-busybox:latest",
            "--runtime",
            "runsc",
        ])
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    let text = stdout(&out);
    let last = text.lines().last().expect("a last line");
    assert_eq!(
        last,
        "doctor: nothing was checked: the engine has no runtime `runsc` (it has: runc, io.containerd.runc.v2); register it in the engine's daemon.json (for gVisor, scripts/gvisor-engine.sh runs an engine with runsc)",
        "{}",
        show(&out)
    );
    assert!(
        !commands(&fake.calls()).contains(&"create"),
        "{:?}",
        fake.calls()
    );
}

#[test]
fn eval_samples_with_non_utf8_names_are_run_by_their_real_names() {
    use std::ffi::OsStr;
    let fake = Fake::new();
    let samples = fake.gen().join("s");
    fs::create_dir_all(&samples).expect("samples dir");
    // Two names that decode lossily to the same `\u{fffd}.py`.
    for (name, body) in [
        (&b"\xff.py"[..], "echo ok\n"),
        (&b"\xfe.py"[..], "echo no\n"),
    ] {
        fs::write(samples.join(OsStr::from_bytes(name)), body).expect("sample");
    }
    let out = fake
        .eval("t-non-utf8", &json!([task("s", "", "ok\n")]))
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    let entry = &report(&out)[0];
    assert_eq!(entry["n"], 2, "{entry}");
    assert_eq!(entry["c"], 1, "{entry}");
    assert_eq!(entry["errors"], 0, "{entry}");
    let statuses: Vec<&str> = entry["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| field(s, "status"))
        .collect();
    assert_eq!(statuses, ["fail", "pass"], "{entry}");
}

/// Makes a FIFO at `path` (nobody ever writes to it).
fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Spawns `cmd`, lets it reach its blocking read, sends `signal` and
/// asserts that it exits with `code` promptly.
fn assert_read_interrupted(fake: &Fake, cmd: &mut std::process::Command, signal: &str, code: i32) {
    // A stdin pipe whose write end the test keeps open and never writes.
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(fake.stderr_file())
        .spawn()
        .expect("spawn sbx");
    let stdin = child.stdin.take();
    let mut sbx = Spawned(child);
    thread::sleep(Duration::from_millis(500));
    let (status, took) = sbx.stop(signal, Duration::from_secs(5));
    assert_eq!(status.code(), Some(code), "stderr: {}", fake.stderr_text());
    assert!(took < Duration::from_secs(3), "took {took:?}");
    drop(stdin);
}

#[test]
fn eval_tasks_from_a_silent_pipe_or_fifo_end_on_a_signal() {
    let fake = Fake::new();
    // `sleep 30 | sbx eval --tasks /dev/stdin`: SIGTERM must end it.
    let mut cmd = fake.sbx_std("t-read-pipe");
    cmd.args(["eval", "--tasks", "/dev/stdin", "--gen"])
        .arg(fake.root());
    assert_read_interrupted(&fake, &mut cmd, "-TERM", 143);
    // A FIFO no one writes: SIGINT must end it.
    let fifo = fake.root().join("tasks.fifo");
    mkfifo(&fifo);
    let mut cmd = fake.sbx_std("t-read-fifo");
    cmd.args(["eval", "--tasks"])
        .arg(&fifo)
        .arg("--gen")
        .arg(fake.root());
    assert_read_interrupted(&fake, &mut cmd, "-INT", 130);
}

#[test]
fn diff_of_a_silent_fifo_ends_on_a_signal() {
    let fake = Fake::new();
    let fifo = fake.root().join("old.fifo");
    mkfifo(&fifo);
    let new = fake.file("new.json", "[]");
    let mut cmd = fake.sbx_std("t-read-diff");
    cmd.arg("diff").arg(&fifo).arg(&new);
    assert_read_interrupted(&fake, &mut cmd, "-TERM", 143);
}

#[test]
fn eval_cache_entry_that_is_not_a_file_is_a_miss() {
    let fake = Fake::new();
    fake.candidate("a", PRINTS_RAN);
    let tasks = json!([task("a", "", "ran\n")]);
    let cache = fake.root().join("cache");
    let out = fake
        .eval("t-cache-fifo", &tasks)
        .arg("--cache")
        .arg(&cache)
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let entries: Vec<PathBuf> = fs::read_dir(&cache)
        .expect("cache dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    // A FIFO planted as the entry hung the next eval for ever.
    fs::remove_file(&entries[0]).expect("remove entry");
    mkfifo(&entries[0]);
    let out = fake
        .eval("t-cache-fifo", &tasks)
        .arg("--cache")
        .arg(&cache)
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let entry = &report(&out)[0];
    assert_verdict(entry, "pass", "");
    assert!(entry.get("cached").is_none(), "{entry}");
}

#[test]
fn interpreter_with_quotes_is_refused_not_run() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    // Split on whitespace, `python3 -c "import sys; ..."` ran a broken
    // command and blamed the candidate.
    let out = fake.run(
        "t-interp-quotes",
        &file,
        &[
            "--interpreter",
            r#"python3 -c "import sys; exec(open(sys.argv[1]).read())""#,
        ],
    );
    assert_exit(&out, 2);
    assert!(one_line_error(&out).contains("quotes"), "{}", show(&out));
    fake.candidate("a", PRINTS_RAN);
    let out = fake
        .eval("t-interp-quotes", &json!([task("a", "", "ran\n")]))
        .args(["--interpreter", "sh -c 'exec sh \"$0\"'"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 2);
    assert!(one_line_error(&out).contains("quotes"), "{}", show(&out));
    assert!(
        calls_of(&fake.calls(), "create").is_empty(),
        "{:?}",
        fake.calls()
    );
}

#[test]
fn error_lines_cut_huge_values() {
    let fake = Fake::new();
    let huge = |n: usize| "x".repeat(n);
    let assert_short = |out: &Output| {
        assert_exit(out, 2);
        let line = one_line_error(out);
        assert!(
            line.len() < 1000,
            "{} bytes: {}",
            line.len(),
            &line[..300.min(line.len())]
        );
        assert!(line.contains("bytes in all"), "{line}");
    };
    // A 10 MB id, a 1 MB field of the tasks file.
    let out = fake
        .eval("t-huge", &json!([task(&huge(10 << 20), "", "")]))
        .output()
        .expect("run sbx");
    assert_short(&out);
    let out = fake
        .eval(
            "t-huge",
            &json!([{"id": "a", "prompt": "p", "stdin": "", "expect": "", "compare": huge(1 << 20)}]),
        )
        .output()
        .expect("run sbx");
    assert_short(&out);
    let out = fake
        .eval(
            "t-huge",
            &json!([{"id": "a", "prompt": "p", "stdin": "", "expect": "", &huge(1 << 20): 1}]),
        )
        .output()
        .expect("run sbx");
    assert_short(&out);
    // Options and the run id (an argument is at most 128 KiB).
    let file = fake.file("prog.sh", PRINTS_RAN);
    let big = huge(100_000);
    // A TIMEOUT GNU timeout refuses exits 125, as the script does.
    let out = fake.run("t-huge", &file, &["--timeout", big.as_str()]);
    assert_exit(&out, 125);
    let line = one_line_error(&out);
    assert!(line.len() < 1000 && line.contains("bytes in all"), "{line}");
    for args in [
        vec!["--image", big.as_str()],
        vec!["--memory", big.as_str()],
        vec!["--engine", &format!("{big}:,x")],
    ] {
        assert_short(&fake.run("t-huge", &file, &args));
    }
    let out = fake
        .run_cmd("t-huge", &file)
        .env("SBX_RUN_ID", &big)
        .output()
        .expect("run sbx");
    assert_short(&out);
}

/// The peak resident memory (VmHWM, KiB) of a running process, polled
/// until it exits; returns the last value seen and the exit status.
fn peak_rss_kib(mut child: Child, limit: Duration) -> (u64, ExitStatus) {
    let deadline = Instant::now() + limit;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(text) = fs::read_to_string(&status_file) {
            if let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
        }
        if let Some(status) = child.try_wait().expect("try_wait") {
            return (peak, status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sbx did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// A candidate of `size` bytes (sparse: nothing is written but its first
/// line) whose shell body prints `ok`, sleeps a second and exits before the
/// NUL bytes that follow.
fn big_candidate(path: &Path, size: u64) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("candidate dir");
    }
    fs::write(path, "echo ok; sleep 1; exit 0\n").expect("write candidate");
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(size))
        .expect("grow candidate");
}

#[test]
fn memory_stays_bounded_whatever_the_candidate_size() {
    const MIB: u64 = 1 << 20;
    const BOUND_KIB: u64 = 64 * 1024;
    let fake = Fake::new();
    // Three 100 MiB samples at -j 1: all were read into memory and held
    // until the eval ended (300 MiB and more). Above the 8 MiB candidate
    // limit, each now fails `candidate_too_large`, told by its size alone.
    for n in 0..3 {
        big_candidate(&fake.gen().join(format!("big/{n}.sh")), 100 * MIB);
    }
    let child = fake
        .eval_std("t-big", &json!([task("big", "", "ok\n")]))
        .args(["-j", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sbx");
    let (peak, status) = peak_rss_kib(child, LIMIT);
    assert_eq!(status.code(), Some(1), "eval of big candidates");
    assert!(peak > 0, "no VmHWM read");
    assert!(peak < BOUND_KIB, "sbx eval peaked at {peak} KiB");
    // `sbx run` of one 200 MiB file.
    let file = fake.root().join("big.sh");
    big_candidate(&file, 200 * MIB);
    let child = fake
        .sbx_std("t-big-run")
        .arg("run")
        .arg(&file)
        .args(["--interpreter", "sh"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sbx");
    let (peak, status) = peak_rss_kib(child, LIMIT);
    assert_eq!(status.code(), Some(0), "run of a big candidate");
    assert!(peak < BOUND_KIB, "sbx run peaked at {peak} KiB");
    assert_stage_empty(&fake);
}

// ------------------------------------------------------- the event stream

/// The pids of the event streams the fake started.
fn stream_pids(fake: &Fake) -> Vec<u32> {
    fs::read_to_string(fake.root().join("events.pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[test]
fn eval_reads_one_event_stream_and_stops_it_at_the_end() {
    let fake = Fake::new();
    for k in 0..6 {
        fake.candidate(&format!("t{k}"), "echo no\nexit 3\n");
    }
    let tasks: Vec<Value> = (0..6)
        .map(|k| task(&format!("t{k}"), "", "yes\n"))
        .collect();
    let out = fake
        .eval("t-stream", &json!(tasks))
        .args(["-j", "3"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    for r in report(&out) {
        assert_verdict(&r, "fail", "exit_code");
        assert!(r["requeued"].is_null(), "{r}");
    }
    // One stream for the whole eval (it saw every container's life: none
    // was run again), gone (killed and reaped) when sbx is.
    let calls = fake.all_calls();
    assert_eq!(fake.streams().len(), 1, "{calls:?}");
    let pids = stream_pids(&fake);
    assert_eq!(pids.len(), 1);
    assert_gone(pids[0]);
}

#[test]
fn eval_sigint_stops_the_event_stream() {
    let fake = Fake::new();
    fake.candidate("s1", SLEEPER);
    let tasks = json!([task("s1", "", "")]);
    let mut sbx = spawn(
        &mut fake.eval_std("t-streamint", &tasks),
        Stdio::null(),
        fake.stderr_file(),
    );
    let name = "sbx-t-streamint-0";
    assert!(
        wait_for(&fake.pid_file(name), Duration::from_secs(5)),
        "{name} never started: {:?}",
        fake.all_calls()
    );
    let pids = stream_pids(&fake);
    assert_eq!(pids.len(), 1);
    assert!(alive(pids[0]));
    let (status, _) = sbx.stop("-INT", Duration::from_secs(5));
    assert_eq!(status.code(), Some(130), "{}", fake.stderr_text());
    assert_gone(pids[0]);
    assert_stopped_and_removed(&fake, name);
}

#[test]
fn eval_without_its_event_stream_scores_no_failure() {
    let fake = Fake::new();
    fake.candidate("ok", "echo ok\n");
    fake.candidate("bad", "sleep 0.5\necho no\nexit 3\n");
    let tasks = json!([task("ok", "", "ok\n"), task("bad", "", "yes\n")]);
    // The stream ends early: a run that did not pass has no evidence, so it
    // is never scored `fail` (its engine is left); a pass needs none.
    let out = fake
        .eval("t-cut", &tasks)
        .env("FAKE_EVENTS", "cut")
        .args(["-j", "1"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 2);
    let results = report(&out);
    assert_verdict(result_of(&results, "ok"), "pass", "");
    let bad = result_of(&results, "bad");
    assert_eq!(field(bad, "status"), "error", "{bad}");
    assert!(
        bad["requeued"][0]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("event stream ended: Error response from daemon: stream cut"),
        "{bad}"
    );
}

// ------------------------------------------------ kills reach the process group

/// The pid of the helper the fake client started (FAKE_HELPER=1).
fn helper_pid(fake: &Fake) -> u32 {
    let path = fake.root().join("helper.pid");
    assert!(wait_for(&path, Duration::from_secs(5)), "no helper started");
    fs::read_to_string(&path)
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .expect("a helper pid")
}

#[test]
fn run_timeout_kills_what_the_client_started() {
    let fake = Fake::new();
    let file = fake.file("sleep.sh", SLEEPER);
    let out = fake
        .run_cmd("t-group", &file)
        .env("FAKE_HELPER", "1")
        .args(["python:3.12-slim", "1"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 124);
    assert_gone(helper_pid(&fake));
    assert_stopped_and_removed(&fake, "sbx-t-group-0");
}

#[test]
fn run_sigterm_during_pull_kills_what_the_pull_started() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let mut sbx = spawn(
        fake.sbx_std("t-pullgroup")
            .env("FAKE_IMAGE", "missing")
            .env("FAKE_PULL_SLEEP", "8")
            .env("FAKE_HELPER", "1")
            .arg("run")
            .arg(&file),
        Stdio::null(),
        fake.stderr_file(),
    );
    let helper = helper_pid(&fake);
    let (status, _) = sbx.stop("-TERM", Duration::from_secs(15));
    assert_eq!(status.code(), Some(143), "stderr: {}", fake.stderr_text());
    assert_gone(helper);
}

// ------------------------------------------------------ the open-file limit

/// `cmd` run under `sh -c 'ulimit LIMIT && exec ...'`, same environment.
fn under_ulimit(cmd: &std::process::Command, limit: &str) -> Command {
    let mut sh = std::process::Command::new("/bin/sh");
    sh.arg("-c")
        .arg(format!("ulimit {limit} && exec \"$@\""))
        .arg("sh")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    let mut cmd = Command::from_std(sh);
    cmd.timeout(Duration::from_secs(120));
    cmd
}

/// 120 tasks that pass, and the eval of them at -j 64 under `limit`.
fn wide_eval(fake: &Fake, run_id: &str, limit: &str) -> Output {
    let mut tasks = Vec::new();
    for k in 0..120 {
        let id = format!("t{k}");
        fake.candidate(&id, "echo ok\n");
        tasks.push(task(&id, "", "ok\n"));
    }
    let mut cmd = fake.eval_std(run_id, &json!(tasks));
    cmd.args(["-j", "64"]);
    under_ulimit(&cmd, limit).output().expect("run sbx")
}

fn assert_all_pass(out: &Output) {
    assert_exit(out, 0);
    let results = report(out);
    assert_eq!(results.len(), 120);
    for r in &results {
        assert_eq!(field(r, "status"), "pass", "{r}");
    }
}

#[test]
fn a_low_soft_open_file_limit_is_raised() {
    let fake = Fake::new();
    let out = wide_eval(&fake, "t-nofile", "-Sn 128");
    assert_all_pass(&out);
    assert!(!stderr(&out).contains("open-file limit"), "{}", show(&out));
}

#[test]
fn a_low_hard_open_file_limit_lowers_the_parallelism() {
    let fake = Fake::new();
    let out = wide_eval(&fake, "t-nofile-hard", "-n 128");
    assert_all_pass(&out);
    let err = stderr(&out);
    let note: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("open-file limit"))
        .collect();
    assert_eq!(note.len(), 1, "{}", show(&out));
    assert!(note[0].contains("-j 64"), "{}", show(&out));
}

// ------------------------------------------------- what a task costs in docker calls

#[test]
fn a_task_that_does_not_pass_costs_three_or_four_docker_processes() {
    let fake = Fake::new();
    fake.candidate("ok", "echo ok\n");
    fake.candidate("wrong", "echo no\n");
    fake.candidate("three", "exit 3\n");
    fake.candidate("slow", SLEEPER);
    let tasks = json!([
        task("ok", "", "ok\n"),
        task("wrong", "", "ok\n"),
        task("three", "", "ok\n"),
        {"id": "slow", "stdin": "", "expect": "ok\n", "timeout": 1}
    ]);
    let out = fake.eval("t-cost", &tasks).output().expect("run sbx");
    assert_exit(&out, 1);
    let calls = fake.all_calls();
    let naming = |name: &str| -> Vec<&str> {
        calls
            .iter()
            .filter(|c| c.iter().any(|a| a == name))
            .map(|c| c[0].as_str())
            .collect()
    };
    // A pass: create and start. A wrong output (exit 0, removed by --rm):
    // create, start. Any other failure: create, start, rm -f.
    assert_eq!(naming("sbx-t-cost-0"), ["create", "start"], "{calls:?}");
    assert_eq!(naming("sbx-t-cost-1"), ["create", "start"], "{calls:?}");
    assert_eq!(
        naming("sbx-t-cost-2"),
        ["create", "start", "rm"],
        "{calls:?}"
    );
    assert_eq!(
        naming("sbx-t-cost-3"),
        ["create", "start", "rm"],
        "{calls:?}"
    );
    // Plus one `docker version` per task that did not pass (is the engine
    // still there?), and per eval: the context, the image, one event
    // stream, the final sweep of the run's label.
    let mut per_eval = commands(&calls);
    per_eval.retain(|c| !matches!(*c, "create" | "start" | "rm"));
    per_eval.sort_unstable();
    assert_eq!(
        per_eval,
        ["context", "events", "image", "ps", "version", "version", "version"],
        "{calls:?}"
    );
}

// ---------------------------------------------------------------------------
// Function tests
// ---------------------------------------------------------------------------

/// A function test passes only when stdout carries the token of its own
/// run, which sbx gives the runner as its stdin (never in its words or in
/// the staged program); exit 0 alone, or an old token, is `no_completion`.
#[test]
fn eval_function_test_passes_only_with_its_own_runs_token() {
    let fake = Fake::new();
    // The fake runs the staged program with /bin/sh: the candidate's lines
    // come first and end the run. Each reads its stdin (as the runner does)
    // and keeps it for the test.
    let root = fake.root().display().to_string();
    let token_of_this_run = format!("token=$(cat)\nprintf '%s\\n' \"$token\" >> '{root}/tokens'\n");
    fake.file(
        "gen/f/a.py",
        // (exit 7 if the staged program, `$0`, held the token)
        &format!("{token_of_this_run}grep -qF \"$token\" \"$0\" && exit 7\nprintf 'noise\\n%s\\n' \"$token\"\nexit 0\n"),
    );
    fake.file(
        "gen/f/b.py",
        &format!("{token_of_this_run}echo 'all good'\nexit 0\n"),
    );
    fake.file(
        "gen/f/c.py",
        &format!(
            "{token_of_this_run}printf '\\nsbx-done-00000000000000000000000000000000\\n'\nexit 0\n"
        ),
    );
    fake.file(
        "gen/f/d.py",
        &format!(
            "{token_of_this_run}printf '\\n%s\\n' \"$token\"\necho AssertionError >&2\nexit 1\n"
        ),
    );
    let tasks =
        json!([{"id": "f", "test": "def check(c):\n    assert c(1) == 2\n", "entry_point": "inc"}]);
    let out = fake
        .eval("t-function", &tasks)
        .args(["-j", "2", "--k", "1,2"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    let samples = results[0]["samples"].as_array().expect("samples");
    let verdicts: Vec<(&str, &str)> = samples
        .iter()
        .map(|s| (field(s, "status"), field(s, "reason")))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("pass", ""),
            ("fail", "no_completion"),
            ("fail", "no_completion"),
            ("fail", "exit_code")
        ],
        "{}",
        show(&out)
    );
    assert!(
        stderr(&out).contains("mean pass@1 0.250 over 1 task; mean pass@2 0.500 over 1 task"),
        "{}",
        show(&out)
    );
    // Each run: python3 -c RUNNER BUDGET /work/task, interactive, with a
    // token of its own as its stdin and nowhere in its words; the staged
    // program is the candidate, the test, then check(inc).
    for entry in fs::read_dir(fake.root()).expect("fake dir") {
        let file = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        let Some(name) = file
            .strip_prefix("c-")
            .and_then(|f| f.strip_suffix(".interp"))
        else {
            continue;
        };
        let c = fake.created(name);
        assert_eq!(&c.interpreter[..2], ["python3", "-c"], "{c:?}");
        // (the fake keeps a word a line: RUNNER spans many)
        let budget = c.interpreter.last().map(String::as_str);
        assert_eq!(budget, Some("524288"), "half of --max-output: {c:?}");
        assert!(
            !c.interpreter.iter().any(|w| w.contains("sbx-done-")),
            "{c:?}"
        );
        assert!(c.interactive, "{c:?}");
    }
    let tokens = fs::read_to_string(fake.root().join("tokens")).expect("tokens");
    let mut tokens: Vec<&str> = tokens.lines().collect();
    assert!(
        tokens
            .iter()
            .all(|t| t.len() == 41 && t.starts_with("sbx-done-")),
        "{tokens:?}"
    );
    assert_eq!(tokens.len(), 4, "{tokens:?}");
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), 4, "a token per run: {tokens:?}");
    assert_stage_empty(&fake);
}

/// Nothing left behind: an engine that refuses the removal for a few
/// seconds ("did not receive an exit event", as a real engine did after a
/// fork bomb) gets asked again, with growing pauses, until it removes the
/// container or says it is gone. Before, sbx gave up after three tries a
/// second apart and left the container.
#[test]
fn a_refused_removal_is_retried_until_the_engine_confirms() {
    let fake = Fake::new();
    let file = fake.file("sleep.sh", SLEEPER);
    let clock = Instant::now();
    let out = fake
        .run_cmd("t-rmretry", &file)
        .args(["python:3.12-slim", "1"])
        .env("FAKE_RM_FAIL_FOR", "4")
        .output()
        .expect("run sbx");
    let elapsed = clock.elapsed();
    assert_exit(&out, 124);
    let name = "sbx-t-rmretry-0";
    assert_gone(fake.pid(name));
    assert_eq!(fake.removed(), [name], "{}", show(&out));
    let calls = fake.calls();
    let rms = calls.iter().filter(|c| c[0] == "rm").count();
    assert!(rms >= 2, "one refused rm, then more: {calls:?}");
    // Each refusal was checked with the engine before the next try.
    assert!(
        calls
            .iter()
            .any(|c| c[..3] == ["ps", "-a", "-q"] && c.last().is_some_and(|a| a.contains(name))),
        "{calls:?}"
    );
    // Bounded: the timeout, the 3 to 4 s of refusals, the pauses.
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");
    assert_stage_empty(&fake);
}
