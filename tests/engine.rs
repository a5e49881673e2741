//! Integration tests against a real Docker engine.
//!
//! They need a reachable engine and the two local images built by
//! `scripts/build-images.sh` (`sbx-busybox:latest`, `sbx-python:bookworm`);
//! without them every test panics with a message saying what is missing,
//! never skips. Nothing is ever pulled (`--pull never` everywhere) and no
//! test sends network traffic: isolation is checked by reading
//! `/sys/class/net` inside the container.
//!
//! Every test has its own run id (`SBX_RUN_ID`), so its containers are found
//! by label; a guard removes them whatever happens, and each test asserts
//! that sbx itself left none. Every process is waited for with a bound.
//!
//! Run with: `cargo test --test engine -- --test-threads 2`

use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wait_timeout::ChildExt;

const BUSYBOX: &str = "sbx-busybox:latest";
const PYTHON: &str = "sbx-python:bookworm";
/// A local image name that must not exist (and must never be pulled).
const ABSENT_IMAGE: &str = "sbx-nonexistent:never";

/// Bound on one sbx invocation that is expected to finish on its own.
const RUN_LIMIT: Duration = Duration::from_secs(60);
/// Bound on one docker control command run by the tests themselves.
const DOCKER_LIMIT: Duration = Duration::from_secs(60);
/// How long stdout/stderr may stay open after the process exited.
const PIPE_GRACE: Duration = Duration::from_secs(10);
/// Timeout given to programs that should finish: load never makes them time out.
const GENEROUS: &str = "30";

// ---------------------------------------------------------------------------
// Processes with bounded waits
// ---------------------------------------------------------------------------

/// What a finished process left.
struct Out {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
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
    fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("process died of a signal: {self:?}"))
    }
}

fn clip(s: &str) -> String {
    const MAX: usize = 2000;
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
struct Running {
    child: Child,
    what: String,
    started: Instant,
    stdout: Drain,
    stderr: Drain,
}

/// Starts `cmd` with stdin from `stdin` (written by a thread that is never
/// waited for, so a program that ignores it cannot block us) or /dev/null.
fn start(mut cmd: Command, stdin: Option<Vec<u8>>) -> Running {
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
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = Drain::start(child.stdout.take());
    let stderr = Drain::start(child.stderr.take());
    Running {
        child,
        what,
        started,
        stdout,
        stderr,
    }
}

impl Running {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits at most `limit`. On expiry the process is killed and an error
    /// (with the output so far) is returned. A process that exits while
    /// something it started still holds its stdout or stderr open (a docker
    /// client that outlived sbx) is an error too.
    fn wait(mut self, limit: Duration) -> Result<Out, String> {
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

/// Runs `cmd` to its end within `limit`, or panics.
fn finish(cmd: Command, stdin: Option<Vec<u8>>, limit: Duration) -> Out {
    start(cmd, stdin)
        .wait(limit)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `docker ARGS` with a bound; `Err` if it could not start or run in time.
fn try_docker<S: AsRef<OsStr>>(args: &[S]) -> Result<Out, String> {
    let mut cmd = Command::new("docker");
    cmd.args(args);
    let what = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Spawned here (not via `start`) so a missing CLI is an error, not a panic.
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let stdout = Drain::start(child.stdout.take());
    let stderr = Drain::start(child.stderr.take());
    Running {
        child,
        what,
        started,
        stdout,
        stderr,
    }
    .wait(DOCKER_LIMIT)
}

/// `docker ARGS`, which must succeed.
fn docker<S: AsRef<OsStr>>(args: &[S]) -> Out {
    let out = try_docker(args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.code(),
        0,
        "docker {:?} failed: {out:?}",
        args.iter().map(|a| a.as_ref()).collect::<Vec<_>>()
    );
    out
}

// ---------------------------------------------------------------------------
// Engine and images: checked once, panics (never skips) when missing
// ---------------------------------------------------------------------------

fn require_engine() {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(message) = CHECKED.get_or_init(check_engine) {
        panic!("{message}");
    }
}

fn check_engine() -> Result<(), String> {
    let unreachable = |why: String| {
        format!("no docker engine reachable: these tests need one; start dockerd ({why})")
    };
    let info = try_docker(&["info"]).map_err(unreachable)?;
    if info.code() != 0 {
        let line = info.stderr.lines().find(|l| !l.trim().is_empty());
        return Err(unreachable(format!(
            "`docker info` exited {}: {}",
            info.code(),
            line.unwrap_or("no message")
        )));
    }
    for image in [BUSYBOX, PYTHON] {
        let inspect =
            try_docker(&["image", "inspect", "--format", "{{.Id}}", image]).map_err(unreachable)?;
        if inspect.code() != 0 {
            return Err(format!(
                "image {image} missing: run scripts/build-images.sh"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// One test's run: its id, its files, its containers
// ---------------------------------------------------------------------------

/// A test's run id and scratch folder. Dropping it removes every container
/// carrying the run's label, so a failing test leaves nothing behind.
struct Run {
    id: String,
    dir: tempfile::TempDir,
}

impl Run {
    fn new(test: &str) -> Run {
        require_engine();
        let id = format!("t-{}-{}", test.replace('_', "-"), std::process::id());
        let dir = tempfile::Builder::new()
            .prefix("sbx-engine-")
            .tempdir()
            .expect("create a scratch folder");
        Run { id, dir }
    }

    fn label(&self) -> String {
        format!("label=sbx.run={}", self.id)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes a file (creating its folder) with the given mode.
    fn file(&self, rel: &str, content: impl AsRef<[u8]>, mode: u32) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create folder");
        }
        fs::write(&path, content).expect("write file");
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    /// `sbx` with this run's id, a clean docker setting and the scratch
    /// folder as working directory.
    fn sbx(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sbx"));
        cmd.env("SBX_RUN_ID", &self.id)
            .env_remove("SBX_DOCKER")
            .current_dir(self.dir.path());
        cmd
    }

    /// `sbx run FILE IMAGE TIMEOUT --pull never EXTRA...`
    fn run_cmd(&self, file: &Path, image: &str, timeout: &str, extra: &[&str]) -> Command {
        let mut cmd = self.sbx();
        cmd.arg("run")
            .arg(file)
            .arg(image)
            .arg(timeout)
            .args(["--pull", "never"])
            .args(extra);
        cmd
    }

    /// `sbx run` that must finish by itself, with stdin from /dev/null.
    fn run(&self, file: &Path, image: &str, timeout: &str, extra: &[&str]) -> Out {
        finish(self.run_cmd(file, image, timeout, extra), None, RUN_LIMIT)
    }

    /// Writes `tasks` to `<name>.json` and returns
    /// `sbx eval --tasks .. --gen GEN --image IMAGE --pull never EXTRA...`.
    fn eval_cmd(&self, tasks: &Value, gen: &Path, image: &str, extra: &[&str]) -> Command {
        let tasks_file = self.file(
            "tasks.json",
            serde_json::to_vec_pretty(tasks).expect("tasks serialize"),
            0o644,
        );
        let mut cmd = self.sbx();
        cmd.arg("eval")
            .arg("--tasks")
            .arg(tasks_file)
            .arg("--gen")
            .arg(gen)
            .args(["--image", image, "--pull", "never"])
            .args(extra);
        cmd
    }

    /// IDs of every container (any state) carrying this run's label.
    fn containers(&self) -> Vec<String> {
        docker(&["ps", "-a", "-q", "--no-trunc", "--filter", &self.label()])
            .stdout
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// sbx must have left no container of this run, in any state.
    fn assert_clean(&self) {
        let left = self.containers();
        if !left.is_empty() {
            let listing = try_docker(&[
                "ps",
                "-a",
                "--filter",
                &self.label(),
                "--format",
                "{{.Names}} {{.State}} {{.Status}}",
            ])
            .map(|o| o.stdout)
            .unwrap_or_default();
            panic!(
                "containers of run {} left behind: {left:?}\n{listing}",
                self.id
            );
        }
    }

    /// Polls until at least `n` containers of the run are running.
    fn wait_for_running(&self, n: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let running = docker(&["ps", "-q", "--filter", &self.label()])
                .stdout
                .split_whitespace()
                .count();
            if running >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no {n} running containers of run {} after {limit:?}",
                self.id
            );
            thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // Best effort, and never a panic (this may run while unwinding).
        // A failing test may have killed sbx while a create was in flight,
        // so then look twice.
        let passes = if thread::panicking() { 2 } else { 1 };
        for pass in 0..passes {
            if pass > 0 {
                thread::sleep(Duration::from_secs(2));
            }
            let listed = try_docker(&["ps", "-a", "-q", "--no-trunc", "--filter", &self.label()]);
            if let Ok(out) = listed {
                let ids: Vec<&str> = out.stdout.split_whitespace().collect();
                if !ids.is_empty() {
                    let mut args = vec!["rm", "-f"];
                    args.extend(ids);
                    let _ = try_docker(&args);
                }
            }
        }
    }
}

/// Parses an eval report (stdout), with the whole output on failure.
fn report(out: &Out) -> Vec<Value> {
    match serde_json::from_str::<Value>(&out.stdout) {
        Ok(Value::Array(entries)) => entries,
        _ => panic!("stdout is not a JSON list: {out:?}"),
    }
}

fn entry<'a>(report: &'a [Value], id: &str) -> &'a Value {
    report
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("no entry `{id}` in {report:#?}"))
}

fn send_signal(pid: u32, signal: &str) {
    let out = finish(
        {
            let mut cmd = Command::new("kill");
            cmd.arg(format!("-{signal}")).arg(pid.to_string());
            cmd
        },
        None,
        DOCKER_LIMIT,
    );
    assert_eq!(out.code(), 0, "kill -{signal} {pid}: {out:?}");
}

const BUSY_SH: &str = "#!/bin/sh\nwhile :; do :; done\n";

// ---------------------------------------------------------------------------
// 1. Network
// ---------------------------------------------------------------------------

#[test]
fn network_has_only_loopback() {
    let run = Run::new("network");
    let script = run.file("net.sh", "#!/bin/sh\nls /sys/class/net\n", 0o755);
    let out = run.run(&script, BUSYBOX, GENEROUS, &[]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(out.stdout, "lo\n", "interfaces other than lo: {out:?}");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 2. Filesystem: read-only root, writable but noexec /tmp
// ---------------------------------------------------------------------------

#[test]
fn root_filesystem_is_read_only() {
    let run = Run::new("read-only-root");
    let script = run.file(
        "ro.sh",
        "#!/bin/sh\nif echo x >> /work/task; then echo TASK-WRITABLE; fi\ntouch /x\n",
        0o755,
    );
    let out = run.run(&script, BUSYBOX, GENEROUS, &[]);
    assert_ne!(out.code(), 0, "touch /x succeeded: {out:?}");
    assert!(
        out.stderr.contains("/x: Read-only file system"),
        "no read-only error: {out:?}"
    );
    assert!(
        !out.stdout.contains("TASK-WRITABLE"),
        "the mounted candidate is writable: {out:?}"
    );
    run.assert_clean();
}

#[test]
fn tmp_is_writable() {
    let run = Run::new("tmp-writable");
    let script = run.file(
        "tmp.sh",
        "#!/bin/sh\necho a > /tmp/f && cat /tmp/f\n",
        0o755,
    );
    let out = run.run(&script, BUSYBOX, GENEROUS, &[]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(out.stdout, "a\n", "{out:?}");
    run.assert_clean();
}

#[test]
fn tmp_is_noexec() {
    let run = Run::new("tmp-noexec");
    let script = run.file(
        "noexec.sh",
        r#"#!/bin/sh
printf '#!/bin/sh\necho SCRIPT-RAN\n' > /tmp/s
cp /bin/busybox /tmp/bb
chmod +x /tmp/s /tmp/bb
test -x /tmp/s && test -x /tmp/bb && echo CHMOD-OK
/tmp/bb echo BINARY-RAN
echo "binary=$?"
/tmp/s
"#,
        0o755,
    );
    let out = run.run(&script, BUSYBOX, GENEROUS, &[]);
    assert!(
        out.stdout.contains("CHMOD-OK"),
        "setup in /tmp failed: {out:?}"
    );
    assert!(
        !out.stdout.contains("SCRIPT-RAN") && !out.stdout.contains("BINARY-RAN"),
        "something executed from /tmp: {out:?}"
    );
    assert!(out.stdout.contains("binary=126"), "{out:?}");
    assert_eq!(out.code(), 126, "{out:?}");
    assert!(out.stderr.contains("Permission denied"), "{out:?}");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 3. Capabilities
// ---------------------------------------------------------------------------

#[test]
fn capabilities_are_dropped() {
    let run = Run::new("caps");
    let script = run.file(
        "caps.sh",
        "#!/bin/sh\necho a > /tmp/f || exit 99\ngrep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status\nchown 1 /tmp/f\n",
        0o755,
    );
    let out = run.run(&script, BUSYBOX, GENEROUS, &[]);
    assert_ne!(out.code(), 0, "chown succeeded: {out:?}");
    assert_ne!(out.code(), 99, "could not create /tmp/f: {out:?}");
    assert!(out.stderr.contains("Operation not permitted"), "{out:?}");
    for line in [
        "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000",
        "NoNewPrivs:\t1",
    ] {
        assert!(out.stdout.contains(line), "missing `{line}`: {out:?}");
    }
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 4. Memory cap
// ---------------------------------------------------------------------------

/// Touches 16 MiB at a time, up to 1 GiB (4x the cap): if the cap ever
/// broke, the test fails on its output instead of eating the host.
const HOG_PY: &str = "chunks = []\nfor _ in range(64):\n    chunks.append(b'x' * (16 << 20))\nprint('ALLOCATED', len(chunks) * 16, 'MiB')\n";

#[test]
fn memory_cap_is_reported_as_oom_in_eval() {
    let run = Run::new("oom-eval");
    run.file("gen/hog.py", HOG_PY, 0o644);
    let tasks = json!([{"id": "hog", "stdin": "", "expect": "never\n", "timeout": 30}]);
    let out = finish(
        run.eval_cmd(&tasks, &run.path("gen"), PYTHON, &["-j", "1"]),
        None,
        RUN_LIMIT,
    );
    assert_eq!(out.code(), 1, "{out:?}");
    let report = report(&out);
    let hog = entry(&report, "hog");
    assert_eq!(hog["status"], "fail", "{hog:#}");
    assert_eq!(hog["reason"], "oom", "{hog:#}");
    assert_eq!(hog["exit_code"], 137, "{hog:#}");
    run.assert_clean();
}

#[test]
fn memory_cap_kills_run_with_137() {
    let run = Run::new("oom-run");
    let hog = run.file("hog.py", HOG_PY, 0o644);
    let out = run.run(&hog, PYTHON, GENEROUS, &["--interpreter", "python3"]);
    assert!(!out.stdout.contains("ALLOCATED"), "no memory cap: {out:?}");
    assert_eq!(out.code(), 137, "{out:?}");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 5. Timeout
// ---------------------------------------------------------------------------

fn assert_times_out(test: &str, name: &str, program: &str, image: &str, extra: &[&str]) {
    let run = Run::new(test);
    let file = run.file(name, program, 0o755);
    let out = run.run(&file, image, "2", extra);
    assert_eq!(out.code(), 124, "{out:?}");
    assert!(
        out.elapsed >= Duration::from_secs(2),
        "returned before the timeout: {out:?}"
    );
    assert!(
        out.elapsed < Duration::from_secs(12),
        "took far longer than the timeout: {out:?}"
    );
    assert!(out.stderr.contains("timed out"), "{out:?}");
    run.assert_clean();
}

#[test]
fn timeout_kills_shell_busy_loop() {
    assert_times_out("timeout-sh", "busy.sh", BUSY_SH, BUSYBOX, &[]);
}

#[test]
fn timeout_kills_program_ignoring_sigterm() {
    assert_times_out(
        "timeout-trap",
        "trap.sh",
        "#!/bin/sh\ntrap '' TERM\nwhile :; do :; done\n",
        BUSYBOX,
        &[],
    );
}

#[test]
fn timeout_kills_python_busy_loop() {
    assert_times_out(
        "timeout-py",
        "busy.py",
        "while True:\n    pass\n",
        PYTHON,
        &["--interpreter", "python3"],
    );
}

// ---------------------------------------------------------------------------
// 6. Stdin
// ---------------------------------------------------------------------------

const UPPER_PY: &str = "import sys\nsys.stdout.write(sys.stdin.read().upper())\n";

#[test]
fn stdin_reaches_run() {
    let run = Run::new("stdin-run");
    let upper = run.file("upper.py", UPPER_PY, 0o644);
    let out = finish(
        run.run_cmd(&upper, PYTHON, GENEROUS, &["--interpreter", "python3"]),
        Some(b"hello\n".to_vec()),
        RUN_LIMIT,
    );
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(out.stdout, "HELLO\n", "{out:?}");
    run.assert_clean();
}

#[test]
fn stdin_reaches_eval() {
    let run = Run::new("stdin-eval");
    run.file("gen/upper.py", UPPER_PY, 0o644);
    let tasks = json!([{
        "id": "upper",
        "stdin": "hello from eval\nline two\n",
        "expect": "HELLO FROM EVAL\nLINE TWO\n",
        "timeout": 30
    }]);
    let out = finish(
        run.eval_cmd(&tasks, &run.path("gen"), PYTHON, &[]),
        None,
        RUN_LIMIT,
    );
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(entry(&report(&out), "upper")["status"], "pass", "{out:?}");
    run.assert_clean();
}

#[test]
fn large_ignored_stdin_does_not_hang_run() {
    let run = Run::new("big-stdin-run");
    let script = run.file("ignore.sh", "#!/bin/sh\necho ignored\n", 0o755);
    let out = finish(
        run.run_cmd(&script, BUSYBOX, GENEROUS, &[]),
        Some(vec![b'a'; 20 << 20]),
        RUN_LIMIT,
    );
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(out.stdout, "ignored\n", "{out:?}");
    run.assert_clean();
}

#[test]
fn large_stdin_in_eval_ignored_or_read() {
    let run = Run::new("big-stdin-eval");
    run.file("gen/ignore.sh", "echo ignored\n", 0o644);
    run.file("gen/count.sh", "wc -c\n", 0o644);
    let tasks = json!([
        {"id": "ignore", "stdin": "a".repeat(20 << 20), "expect": "ignored\n", "timeout": 30},
        {"id": "count", "stdin": "b".repeat(2 << 20), "expect": "2097152", "compare": "trim",
         "timeout": 30},
    ]);
    let out = finish(
        run.eval_cmd(&tasks, &run.path("gen"), BUSYBOX, &["-j", "2"]),
        None,
        RUN_LIMIT,
    );
    let report = report(&out);
    assert_eq!(entry(&report, "ignore")["status"], "pass", "{out:?}");
    assert_eq!(entry(&report, "count")["status"], "pass", "{out:?}");
    assert_eq!(out.code(), 0, "{out:?}");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 7. Exit code and output pass through
// ---------------------------------------------------------------------------

#[test]
fn exit_code_and_streams_pass_through() {
    let run = Run::new("pass-through");
    let script = run.file(
        "seven.sh",
        "#!/bin/sh\necho to-stdout\necho to-stderr >&2\nexit 7\n",
        0o755,
    );
    let out = run.run(&script, BUSYBOX, GENEROUS, &[]);
    assert_eq!(out.code(), 7, "{out:?}");
    assert_eq!(out.stdout, "to-stdout\n", "{out:?}");
    assert!(out.stderr.contains("to-stderr\n"), "{out:?}");
    assert!(!out.stdout.contains("to-stderr"), "{out:?}");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 8. A script without its exec bit
// ---------------------------------------------------------------------------

#[test]
fn script_without_exec_bit_runs() {
    let run = Run::new("no-exec-bit");
    let script = run.file("plain.sh", "#!/bin/sh\necho ran without x\n", 0o644);
    let out = run.run(&script, BUSYBOX, GENEROUS, &[]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(out.stdout, "ran without x\n", "{out:?}");
    let mode = fs::metadata(&script).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "sbx changed the mode of the original file");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 9. Output flood
// ---------------------------------------------------------------------------

#[test]
fn output_flood_hits_the_limit() {
    let run = Run::new("flood");
    run.file("gen/flood_out.sh", "yes\n", 0o644);
    run.file("gen/flood_err.sh", "yes >&2\n", 0o644);
    let tasks = json!([
        {"id": "flood_out", "stdin": "", "expect": "y\n", "timeout": 30},
        {"id": "flood_err", "stdin": "", "expect": "y\n", "timeout": 30},
    ]);
    let out = finish(
        run.eval_cmd(
            &tasks,
            &run.path("gen"),
            BUSYBOX,
            &["-j", "2", "--max-output", "64K"],
        ),
        None,
        RUN_LIMIT,
    );
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.elapsed < Duration::from_secs(25),
        "the flood ran towards the task timeout: {out:?}"
    );
    let report = report(&out);
    for id in ["flood_out", "flood_err"] {
        let e = entry(&report, id);
        assert_eq!(e["status"], "fail", "{e:#}");
        assert_eq!(e["reason"], "output_limit", "{e:#}");
        let ms = e["duration_ms"].as_u64().expect("duration_ms");
        assert!(ms < 15_000, "stopped only after {ms} ms: {e:#}");
    }
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 10. Fork bomb
// ---------------------------------------------------------------------------

#[test]
fn fork_bomb_is_contained() {
    let run = Run::new("fork-bomb");
    // Never start a bomb unless the pids limit is really there.
    let probe = run.file(
        "probe.sh",
        "#!/bin/sh\ncat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null\n",
        0o755,
    );
    let limit = run.run(&probe, BUSYBOX, GENEROUS, &[]);
    assert_eq!(
        limit.stdout.trim(),
        "64",
        "pids limit not applied; refusing to start a fork bomb: {limit:?}"
    );

    run.file(
        "gen/bomb_sh.sh",
        "bomb() { bomb | bomb & }\nbomb\nwhile :; do bomb; done\n",
        0o644,
    );
    run.file(
        "gen/bomb_py.py",
        "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n",
        0o644,
    );
    let tasks = json!([
        {"id": "bomb_sh", "stdin": "", "expect": "x\n", "timeout": 5, "image": BUSYBOX},
        {"id": "bomb_py", "stdin": "", "expect": "x\n", "timeout": 5, "image": PYTHON},
    ]);
    let out = finish(
        run.eval_cmd(&tasks, &run.path("gen"), BUSYBOX, &["-j", "2"]),
        None,
        RUN_LIMIT,
    );
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.elapsed < Duration::from_secs(40), "{out:?}");
    let report = report(&out);
    for id in ["bomb_sh", "bomb_py"] {
        let e = entry(&report, id);
        assert_eq!(e["status"], "fail", "{e:#}");
        let reason = e["reason"].as_str().unwrap_or_default();
        assert!(
            reason == "timeout" || reason == "exit_code",
            "unexpected reason: {e:#}"
        );
    }
    run.assert_clean();

    // The host still works: it can fork, and the engine still runs containers.
    let mut host = Command::new("sh");
    host.args(["-c", "echo host-ok"]);
    assert_eq!(finish(host, None, DOCKER_LIMIT).stdout, "host-ok\n");
    let hello = run.file("hello.sh", "#!/bin/sh\necho after the bomb\n", 0o755);
    let after = run.run(&hello, BUSYBOX, GENEROUS, &[]);
    assert_eq!(after.code(), 0, "{after:?}");
    assert_eq!(after.stdout, "after the bomb\n", "{after:?}");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 11. Mixed eval suite
// ---------------------------------------------------------------------------

#[test]
fn eval_mixed_suite_in_parallel() {
    let run = Run::new("mixed");
    run.file("gen/pass.sh", "echo ok\n", 0o644);
    run.file("gen/wrong.sh", "echo wrong\n", 0o644);
    run.file("gen/exit.sh", "echo oops >&2\nexit 3\n", 0o644);
    run.file("gen/slow.sh", "while :; do :; done\n", 0o644);
    run.file("gen/pass_py.py", "print(6 * 7)\n", 0o644);
    let tasks = json!([
        {"id": "pass", "stdin": "", "expect": "ok\n", "timeout": 30},
        {"id": "wrong", "stdin": "", "expect": "right\n", "timeout": 30},
        {"id": "exit", "stdin": "", "expect": "", "timeout": 30},
        {"id": "slow", "stdin": "", "expect": "", "timeout": 3},
        {"id": "missing", "stdin": "", "expect": "anything\n"},
        {"id": "pass_py", "stdin": "", "expect": "42\n", "timeout": 30, "image": PYTHON},
    ]);
    let out = finish(
        run.eval_cmd(&tasks, &run.path("gen"), BUSYBOX, &["-j", "4"]),
        None,
        RUN_LIMIT,
    );
    assert_eq!(out.code(), 1, "{out:?}");
    let report = report(&out);
    let ids: Vec<&str> = report.iter().filter_map(|e| e["id"].as_str()).collect();
    assert_eq!(
        ids,
        ["pass", "wrong", "exit", "slow", "missing", "pass_py"],
        "report not in task order"
    );

    for id in ["pass", "pass_py"] {
        let e = entry(&report, id);
        assert_eq!(e["status"], "pass", "{e:#}");
        assert_eq!(e["exit_code"], 0, "{e:#}");
        assert!(e.get("diff").is_none(), "{e:#}");
    }

    let wrong = entry(&report, "wrong");
    assert_eq!(wrong["status"], "fail", "{wrong:#}");
    assert_eq!(wrong["reason"], "wrong_output", "{wrong:#}");
    assert_eq!(wrong["exit_code"], 0, "{wrong:#}");
    let diff = wrong["diff"].as_str().expect("wrong_output has a diff");
    assert!(
        diff.contains("right") && diff.contains("wrong"),
        "diff shows neither side: {diff}"
    );

    let exit = entry(&report, "exit");
    assert_eq!(exit["status"], "fail", "{exit:#}");
    assert_eq!(exit["reason"], "exit_code", "{exit:#}");
    assert_eq!(exit["exit_code"], 3, "{exit:#}");
    assert!(
        exit["stderr_tail"]
            .as_str()
            .unwrap_or_default()
            .contains("oops"),
        "{exit:#}"
    );

    let slow = entry(&report, "slow");
    assert_eq!(slow["status"], "fail", "{slow:#}");
    assert_eq!(slow["reason"], "timeout", "{slow:#}");
    assert!(slow["exit_code"].is_null(), "{slow:#}");

    let missing = entry(&report, "missing");
    assert_eq!(missing["status"], "missing", "{missing:#}");
    assert_eq!(missing["reason"], "no_candidate", "{missing:#}");

    for e in &report {
        for field in ["id", "status", "stderr_tail", "exit_code", "duration_ms"] {
            assert!(e.get(field).is_some(), "no `{field}` in {e:#}");
        }
    }
    assert!(
        out.stderr
            .contains("2 passed, 3 failed, 1 missing, 0 errors"),
        "{out:?}"
    );
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 12. Signals
// ---------------------------------------------------------------------------

#[test]
fn sigint_stops_eval_and_removes_its_containers() {
    let run = Run::new("sigint-eval");
    let mut tasks = Vec::new();
    for i in 0..6 {
        let id = format!("spin{i}");
        run.file(&format!("gen/{id}.sh"), "while :; do :; done\n", 0o644);
        tasks.push(json!({"id": id, "stdin": "", "expect": "", "timeout": 120}));
    }
    let running = start(
        run.eval_cmd(
            &Value::Array(tasks),
            &run.path("gen"),
            BUSYBOX,
            &["-j", "4"],
        ),
        None,
    );
    run.wait_for_running(2, Duration::from_secs(30));
    let signalled = Instant::now();
    send_signal(running.pid(), "INT");
    let out = running
        .wait(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        signalled.elapsed() < Duration::from_secs(15),
        "took {:?} to stop after SIGINT: {out:?}",
        signalled.elapsed()
    );
    assert_eq!(out.code(), 130, "{out:?}");
    assert!(out.stderr.contains("interrupted"), "{out:?}");
    run.assert_clean();
}

fn assert_run_stops_on(test: &str, signal: &str, code: i32) {
    let run = Run::new(test);
    let script = run.file("busy.sh", BUSY_SH, 0o755);
    let running = start(run.run_cmd(&script, BUSYBOX, "120", &[]), None);
    run.wait_for_running(1, Duration::from_secs(30));
    let signalled = Instant::now();
    send_signal(running.pid(), signal);
    let out = running
        .wait(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        signalled.elapsed() < Duration::from_secs(15),
        "took {:?} to stop after SIG{signal}: {out:?}",
        signalled.elapsed()
    );
    assert_eq!(out.code(), code, "{out:?}");
    assert!(out.stderr.contains("interrupted"), "{out:?}");
    run.assert_clean();
}

#[test]
fn sigterm_stops_run_with_143() {
    assert_run_stops_on("sigterm-run", "TERM", 143);
}

#[test]
fn sigint_stops_run_with_130() {
    assert_run_stops_on("sigint-run", "INT", 130);
}

// ---------------------------------------------------------------------------
// 13. Awkward paths
// ---------------------------------------------------------------------------

#[test]
fn path_with_colon_comma_and_spaces_runs() {
    let run = Run::new("odd-path");
    let script = run.file(
        "dir: one, two/my task: v1, final.sh",
        "#!/bin/sh\necho odd path ok\n",
        0o644,
    );
    let out = run.run(&script, BUSYBOX, GENEROUS, &[]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(out.stdout, "odd path ok\n", "{out:?}");
    run.assert_clean();

    let gen = run.path("gen: a, b");
    run.file("gen: a, b/odd: id, x.sh", "echo odd eval ok\n", 0o644);
    let tasks =
        json!([{"id": "odd: id, x", "stdin": "", "expect": "odd eval ok\n", "timeout": 30}]);
    let out = finish(run.eval_cmd(&tasks, &gen, BUSYBOX, &[]), None, RUN_LIMIT);
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(
        entry(&report(&out), "odd: id, x")["status"],
        "pass",
        "{out:?}"
    );
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 14. --pull never with an absent image
// ---------------------------------------------------------------------------

/// A docker CLI that logs every call and refuses `pull` (so even a buggy
/// sbx could not reach a registry from this test).
fn logging_docker_shim(run: &Run) -> (PathBuf, PathBuf) {
    let which = finish(
        {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "command -v docker"]);
            cmd
        },
        None,
        DOCKER_LIMIT,
    );
    let real = which.stdout.trim().to_string();
    assert!(real.starts_with('/'), "docker not on PATH: {which:?}");
    let log = run.path("docker-calls.log");
    let shim = run.file(
        "docker-shim",
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nif [ \"$1\" = pull ]; then echo 'shim: pull refused' >&2; exit 1; fi\nexec '{real}' \"$@\"\n",
            log.display()
        ),
        0o755,
    );
    (shim, log)
}

#[test]
fn pull_never_refuses_an_absent_image_without_pulling() {
    let run = Run::new("pull-never");
    let absent = try_docker(&["image", "inspect", ABSENT_IMAGE]).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(
        absent.code(),
        0,
        "{ABSENT_IMAGE} exists locally; remove it to run this test"
    );
    let (shim, log) = logging_docker_shim(&run);
    let script = run.file("hello.sh", "#!/bin/sh\necho should not run\n", 0o755);

    let mut cmd = run.run_cmd(&script, ABSENT_IMAGE, GENEROUS, &[]);
    cmd.arg("--docker").arg(&shim);
    let out = finish(cmd, None, RUN_LIMIT);
    assert_eq!(out.code(), 125, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "expected one line: {out:?}");
    assert!(
        lines[0].starts_with("sbx: ") && lines[0].contains(ABSENT_IMAGE),
        "unclear message: {out:?}"
    );
    assert!(lines[0].contains("--pull never"), "{out:?}");
    let calls = fs::read_to_string(&log).unwrap_or_default();
    // The image is checked by `docker create --pull never` itself (before
    // any clock), which fails: nothing is pulled, nothing is started.
    assert!(
        calls
            .lines()
            .all(|c| c.starts_with("image inspect ") || c.starts_with("create ")),
        "sbx did more than check the image: {calls}"
    );
    assert!(!calls.is_empty(), "the shim was not used");

    // eval: the task is an error (not the candidate's failure), still no pull.
    fs::write(&log, "").expect("truncate log");
    run.file("gen/hello.sh", "echo hi\n", 0o644);
    let tasks = json!([{"id": "hello", "stdin": "", "expect": "hi\n"}]);
    let mut cmd = run.eval_cmd(&tasks, &run.path("gen"), ABSENT_IMAGE, &[]);
    cmd.arg("--docker").arg(&shim);
    let out = finish(cmd, None, RUN_LIMIT);
    assert_eq!(out.code(), 2, "{out:?}");
    let e = entry(&report(&out), "hello").clone();
    assert_eq!(e["status"], "error", "{e:#}");
    assert_eq!(e["reason"], "image_missing", "{e:#}");
    let calls = fs::read_to_string(&log).unwrap_or_default();
    assert!(
        calls.lines().all(|c| c.starts_with("image inspect ")
            || c.starts_with("ps ")
            || c.starts_with("rm ")),
        "sbx pulled or ran something: {calls}"
    );
    assert!(!calls.lines().any(|c| c.starts_with("pull")), "{calls}");

    let still = try_docker(&["image", "inspect", ABSENT_IMAGE]).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(still.code(), 0, "{ABSENT_IMAGE} appeared locally");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// Regression: a kill must never race the container's creation
// ---------------------------------------------------------------------------

/// Timeouts of a few milliseconds. With a single `docker run`, such a timeout
/// fired while the daemon was still creating the container: sbx killed the
/// client, `docker rm -f NAME` found nothing yet, then the create completed
/// and the container stayed in `Created` forever (5-20 of 80 runs). sbx now
/// creates the container before the clock starts, so this must leave none.
#[test]
fn tiny_timeout_leaves_no_created_container() {
    let runs: Vec<Run> = (0..80)
        .map(|i| Run::new(&format!("tiny-timeout-{i}")))
        .collect();
    for (i, run) in runs.iter().enumerate() {
        let script = run.file("busy.sh", BUSY_SH, 0o755);
        let timeout = format!("0.0{}", i % 9 + 1);
        let out = run.run(&script, BUSYBOX, &timeout, &[]);
        assert_eq!(out.code(), 124, "{out:?}");
    }
    // Let creates that were in flight when sbx exited land.
    thread::sleep(Duration::from_secs(2));
    let leaked: Vec<String> = runs
        .iter()
        .filter(|r| !r.containers().is_empty())
        .map(|r| r.id.clone())
        .collect();
    let total = runs.len();
    // Clean up before failing (the guards' slow panic path is not needed).
    drop(runs);
    assert!(
        leaked.is_empty(),
        "{} of {} runs left a container behind after sbx exited: {leaked:?}",
        leaked.len(),
        total
    );
}
