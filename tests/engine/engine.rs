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
//! Run with: `cargo test --test engine engine:: -- --test-threads 2`

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::{
    finish, image_exists, labelled, ps, report, start, Cleanup, Out, Running, BUSYBOX,
    DOCKER_LIMIT, PYTHON,
};

/// A local image name that must not exist (and must never be pulled).
const ABSENT_IMAGE: &str = "sbx-nonexistent:never";

/// Bound on one sbx invocation that is expected to finish on its own.
const RUN_LIMIT: Duration = Duration::from_secs(60);
/// Timeout given to programs that should finish: load never makes them time out.
const GENEROUS: &str = "30";

// ---------------------------------------------------------------------------
// One test's run: its id, its files, its containers
// ---------------------------------------------------------------------------

/// A test's run id and scratch folder. Its guard (dropped first) removes
/// every container carrying the run's label, so a failing test leaves
/// nothing behind.
struct Run {
    _guard: Cleanup,
    id: String,
    dir: tempfile::TempDir,
}

impl Run {
    fn new(test: &str) -> Run {
        let id = common::run_id("t", test);
        let guard = Cleanup::new(&[&id]);
        let dir = tempfile::Builder::new()
            .prefix("sbx-engine-")
            .tempdir()
            .expect("create a scratch folder");
        Run {
            _guard: guard,
            id,
            dir,
        }
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
        let mut cmd = common::sbx(Some(&self.id));
        cmd.current_dir(self.dir.path());
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

    /// Writes `script` to `name` with `mode` and runs it in busybox with
    /// the generous timeout.
    fn busybox(&self, name: &str, script: &str, mode: u32) -> Out {
        let file = self.file(name, script, mode);
        self.run(&file, BUSYBOX, GENEROUS, &[])
    }

    /// Writes `tasks` to `tasks.json` and returns
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

    /// `sbx eval` over the candidates in `gen/`, which must finish by itself.
    fn eval(&self, tasks: &Value, image: &str, extra: &[&str]) -> Out {
        finish(
            self.eval_cmd(tasks, &self.path("gen"), image, extra),
            None,
            RUN_LIMIT,
        )
    }

    /// IDs of every container (any state) carrying this run's label.
    fn containers(&self) -> Vec<String> {
        labelled(&self.id)
    }

    /// sbx must have left no container of this run, in any state.
    fn assert_clean(&self) {
        common::assert_nothing_left(&self.id, "");
    }

    /// Polls until at least `n` containers of the run are running.
    fn wait_for_running(&self, n: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let running = ps(&["--filter", &common::label_filter(&self.id)]).len();
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

/// A run that exited 0 and printed exactly `stdout`.
fn assert_ok(out: &Out, stdout: &str) {
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(out.stdout, stdout, "{out:?}");
}

fn entry<'a>(report: &'a [Value], id: &str) -> &'a Value {
    report
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("no entry `{id}` in {report:#?}"))
}

/// The report entry `e` has this status and reason.
fn assert_verdict(e: &Value, status: &str, reason: &str) {
    assert_eq!(e["status"], status, "{e:#}");
    assert_eq!(e["reason"], reason, "{e:#}");
}

/// `PROGRAM ARGS` on the host, within the docker bound, to its end.
fn host(program: &str, args: &[&str]) -> Out {
    let mut cmd = Command::new(program);
    cmd.args(args);
    finish(cmd, None, DOCKER_LIMIT)
}

fn send_signal(pid: u32, signal: &str) {
    let out = host("kill", &[&format!("-{signal}"), &pid.to_string()]);
    assert_eq!(out.code(), 0, "kill -{signal} {pid}: {out:?}");
}

/// Once `n` containers of `run` are running, sends `signal` to `sbx`, which
/// must stop within 15 s with `code`, say it was interrupted and leave no
/// container.
fn assert_stops_on(run: &Run, sbx: Running, n: usize, signal: &str, code: i32) {
    run.wait_for_running(n, Duration::from_secs(30));
    let signalled = Instant::now();
    send_signal(sbx.pid(), signal);
    let out = sbx
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

const BUSY_SH: &str = "#!/bin/sh\nwhile :; do :; done\n";

// ---------------------------------------------------------------------------
// 1. Network
// ---------------------------------------------------------------------------

#[test]
fn network_has_only_loopback() {
    let run = Run::new("network");
    let out = run.busybox("net.sh", "#!/bin/sh\nls /sys/class/net\n", 0o755);
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
    let out = run.busybox(
        "ro.sh",
        "#!/bin/sh\nif echo x >> /work/task; then echo TASK-WRITABLE; fi\ntouch /x\n",
        0o755,
    );
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
    let out = run.busybox(
        "tmp.sh",
        "#!/bin/sh\necho a > /tmp/f && cat /tmp/f\n",
        0o755,
    );
    assert_ok(&out, "a\n");
    run.assert_clean();
}

#[test]
fn tmp_is_noexec() {
    let run = Run::new("tmp-noexec");
    let out = run.busybox(
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
    let out = run.busybox(
        "caps.sh",
        "#!/bin/sh\necho a > /tmp/f || exit 99\ngrep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status\nchown 1 /tmp/f\n",
        0o755,
    );
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
    let out = run.eval(&tasks, PYTHON, &["-j", "1"]);
    assert_eq!(out.code(), 1, "{out:?}");
    let report = report(&out);
    let hog = entry(&report, "hog");
    assert_verdict(hog, "fail", "oom");
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
    assert_ok(&out, "HELLO\n");
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
    let out = run.eval(&tasks, PYTHON, &[]);
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
    assert_ok(&out, "ignored\n");
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
    let out = run.eval(&tasks, BUSYBOX, &["-j", "2"]);
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
    let out = run.busybox(
        "seven.sh",
        "#!/bin/sh\necho to-stdout\necho to-stderr >&2\nexit 7\n",
        0o755,
    );
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
    let out = run.busybox("plain.sh", "#!/bin/sh\necho ran without x\n", 0o644);
    assert_ok(&out, "ran without x\n");
    let mode = fs::metadata(run.path("plain.sh"))
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
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
    let out = run.eval(&tasks, BUSYBOX, &["-j", "2", "--max-output", "64K"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.elapsed < Duration::from_secs(25),
        "the flood ran towards the task timeout: {out:?}"
    );
    let report = report(&out);
    for id in ["flood_out", "flood_err"] {
        let e = entry(&report, id);
        assert_verdict(e, "fail", "output_limit");
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
    let limit = run.busybox(
        "probe.sh",
        "#!/bin/sh\ncat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null\n",
        0o755,
    );
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
    let out = run.eval(&tasks, BUSYBOX, &["-j", "2"]);
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
    assert_eq!(host("sh", &["-c", "echo host-ok"]).stdout, "host-ok\n");
    let after = run.busybox("hello.sh", "#!/bin/sh\necho after the bomb\n", 0o755);
    assert_ok(&after, "after the bomb\n");
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
    let out = run.eval(&tasks, BUSYBOX, &["-j", "4"]);
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
    assert_verdict(wrong, "fail", "wrong_output");
    assert_eq!(wrong["exit_code"], 0, "{wrong:#}");
    let diff = wrong["diff"].as_str().expect("wrong_output has a diff");
    assert!(
        diff.contains("right") && diff.contains("wrong"),
        "diff shows neither side: {diff}"
    );

    let exit = entry(&report, "exit");
    assert_verdict(exit, "fail", "exit_code");
    assert_eq!(exit["exit_code"], 3, "{exit:#}");
    assert!(
        exit["stderr_tail"]
            .as_str()
            .unwrap_or_default()
            .contains("oops"),
        "{exit:#}"
    );

    let slow = entry(&report, "slow");
    assert_verdict(slow, "fail", "timeout");
    assert!(slow["exit_code"].is_null(), "{slow:#}");

    assert_verdict(entry(&report, "missing"), "missing", "no_candidate");

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
    assert_stops_on(&run, running, 2, "INT", 130);
}

fn assert_run_stops_on(test: &str, signal: &str, code: i32) {
    let run = Run::new(test);
    let script = run.file("busy.sh", BUSY_SH, 0o755);
    let running = start(run.run_cmd(&script, BUSYBOX, "120", &[]), None);
    assert_stops_on(&run, running, 1, signal, code);
}

#[test]
fn sigterm_stops_run_with_143() {
    assert_run_stops_on("sigterm-run", "TERM", 143);
}

#[test]
fn sigint_stops_run_with_130() {
    assert_run_stops_on("sigint-run", "INT", 130);
}

/// A closed terminal: the docker client is in its own process group, so
/// only sbx gets the hangup, and sbx must not leave the container running.
#[test]
fn sighup_stops_run_with_129() {
    assert_run_stops_on("sighup-run", "HUP", 129);
}

#[test]
fn sigquit_stops_run_with_131() {
    assert_run_stops_on("sigquit-run", "QUIT", 131);
}

/// A candidate that prints docker's own start-failure line and exits 1 did
/// start: the engine's record decides, and it stays the candidate's failure.
#[test]
fn docker_words_from_a_candidate_are_its_own() {
    let run = Run::new("spoof");
    let line = "Error response from daemon: failed to create shim task: exec: \"x\": executable file not found in $PATH: unknown";
    let out = run.busybox(
        "spoof.sh",
        &format!("#!/bin/sh\necho '{line}' >&2\nexit 1\n"),
        0o755,
    );
    assert_eq!(
        out.code(),
        1,
        "sbx run rewrote the program's exit 1: {out:?}"
    );
    run.file(
        "gen/spoof.sh",
        format!("echo '{line}' >&2\nexit 1\n"),
        0o644,
    );
    // A real start failure too: an interpreter the image lacks (`.js` -> node).
    run.file("gen/nonode.js", "console.log(1)\n", 0o644);
    let tasks = json!([
        {"id": "spoof", "stdin": "", "expect": ""},
        {"id": "nonode", "stdin": "", "expect": "1\n"}
    ]);
    let out = run.eval(&tasks, BUSYBOX, &[]);
    let results = report(&out);
    assert_verdict(entry(&results, "spoof"), "fail", "exit_code");
    assert_verdict(entry(&results, "nonode"), "error", "toolchain_missing");
    assert_eq!(out.code(), 2, "an error entry makes eval exit 2: {out:?}");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// 13. Awkward paths
// ---------------------------------------------------------------------------

#[test]
fn path_with_colon_comma_and_spaces_runs() {
    let run = Run::new("odd-path");
    let out = run.busybox(
        "dir: one, two/my task: v1, final.sh",
        "#!/bin/sh\necho odd path ok\n",
        0o644,
    );
    assert_ok(&out, "odd path ok\n");
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
struct LoggingShim {
    path: PathBuf,
    log: PathBuf,
}

impl LoggingShim {
    fn new(run: &Run) -> LoggingShim {
        let which = host("sh", &["-c", "command -v docker"]);
        let real = which.stdout.trim().to_string();
        assert!(real.starts_with('/'), "docker not on PATH: {which:?}");
        let log = run.path("docker-calls.log");
        let path = run.file(
            "docker-shim",
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nif [ \"$1\" = pull ]; then echo 'shim: pull refused' >&2; exit 1; fi\nexec '{real}' \"$@\"\n",
                log.display()
            ),
            0o755,
        );
        LoggingShim { path, log }
    }

    /// Runs the sbx command `cmd` with `--docker SHIM`, on a fresh log.
    fn sbx(&self, mut cmd: Command) -> Out {
        fs::write(&self.log, "").expect("truncate log");
        cmd.arg("--docker").arg(&self.path);
        finish(cmd, None, RUN_LIMIT)
    }

    /// The docker calls logged, one a line (`$*`).
    fn calls(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Whether `image` exists locally; panics if docker cannot tell.
fn local(image: &str) -> bool {
    image_exists(image).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn pull_never_refuses_an_absent_image_without_pulling() {
    let run = Run::new("pull-never");
    assert!(
        !local(ABSENT_IMAGE),
        "{ABSENT_IMAGE} exists locally; remove it to run this test"
    );
    let shim = LoggingShim::new(&run);
    let script = run.file("hello.sh", "#!/bin/sh\necho should not run\n", 0o755);

    let out = shim.sbx(run.run_cmd(&script, ABSENT_IMAGE, GENEROUS, &[]));
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
    let calls = shim.calls();
    // The image is checked by `docker create --pull never` itself (before
    // any clock), which fails: nothing is pulled, nothing is started (the
    // run's event stream starts beside the create).
    assert!(
        calls.lines().all(|c| c.starts_with("image inspect ")
            || c.starts_with("create ")
            || c.starts_with("events ")),
        "sbx did more than check the image: {calls}"
    );
    assert!(!calls.is_empty(), "the shim was not used");

    // eval: one line (never the candidate's failure), exit 125, still no
    // pull.
    run.file("gen/hello.sh", "echo hi\n", 0o644);
    let tasks = json!([{"id": "hello", "stdin": "", "expect": "hi\n"}]);
    let out = shim.sbx(run.eval_cmd(&tasks, &run.path("gen"), ABSENT_IMAGE, &[]));
    assert_eq!(out.code(), 125, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(
        out.stderr
            .contains("no task was judged (1 task with candidates need image")
            && out.stderr.contains("--pull never forbids pulling it"),
        "{out:?}"
    );
    let calls = shim.calls();
    assert!(
        calls.lines().all(|c| c.starts_with("image inspect ")
            // where the current context's engine is (bind mount or image)
            || c.starts_with("context inspect ")
            // the engine's architecture (can sbx be the runner there)
            || c.starts_with("version ")
            || c.starts_with("ps ")
            || c.starts_with("rm ")
            || c.starts_with("events ")),
        "sbx pulled or ran something: {calls}"
    );
    assert!(!calls.lines().any(|c| c.starts_with("pull")), "{calls}");

    assert!(!local(ABSENT_IMAGE), "{ABSENT_IMAGE} appeared locally");
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

// ---------------------------------------------------------------------------
// Several cases per task
// ---------------------------------------------------------------------------

/// Each case runs in its own container; the task passes when every case
/// does; the entry counts them and carries the first failing case. With the
/// default fail-fast, a task stops at its first failing case.
#[test]
fn multi_case_tasks_count_cases_and_stop_at_the_first_failure() {
    let run = Run::new("cases");
    run.file("gen/upper.sh", "tr a-z A-Z\n", 0o644);
    run.file("gen/allgood.sh", "tr a-z A-Z\n", 0o644);
    run.file("gen/single.sh", "tr a-z A-Z\n", 0o644);
    let tasks = json!([
        {"id": "upper", "cases": [
            {"stdin": "a", "expect": "A"},
            {"stdin": "c", "expect": "X"},
            {"stdin": "b", "expect": "B"}
        ]},
        {"id": "allgood", "cases": [
            {"stdin": "x", "expect": "X"},
            {"stdin": "y", "expect": "Y"}
        ]},
        {"id": "single", "stdin": "q", "expect": "Q"}
    ]);
    let out = run.eval(&tasks, BUSYBOX, &[]);
    assert_eq!(out.code(), 1, "{out:?}");
    let results = report(&out);
    let upper = entry(&results, "upper");
    assert_verdict(upper, "fail", "wrong_output");
    assert_eq!(upper["case"], 2, "{upper:#}");
    assert_eq!(
        upper["cases_passed"], 1,
        "fail-fast stops at case 2: {upper:#}"
    );
    assert_eq!(upper["cases_total"], 3, "{upper:#}");
    assert!(
        upper["diff"].as_str().is_some_and(|d| d.contains("\"X\"")),
        "{upper:#}"
    );
    let good = entry(&results, "allgood");
    assert_eq!(good["status"], "pass", "{good:#}");
    assert_eq!(good["cases_passed"], 2, "{good:#}");
    assert_eq!(good["cases_total"], 2, "{good:#}");
    assert!(good.get("case").is_none(), "{good:#}");
    // The single-case schema and report stay as they were.
    let single = entry(&results, "single");
    assert_eq!(single["status"], "pass", "{single:#}");
    assert!(single.get("cases_total").is_none(), "{single:#}");

    // Without fail-fast every case runs: 2 of 3 pass, the first failure is reported.
    let out = run.eval(&tasks, BUSYBOX, &["--no-fail-fast"]);
    let results = report(&out);
    let upper = entry(&results, "upper");
    assert_eq!(upper["cases_passed"], 2, "{upper:#}");
    assert_eq!(upper["case"], 2, "{upper:#}");
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// Several samples per task, pass@k
// ---------------------------------------------------------------------------

/// A folder `gen/<id>/` holds samples; each is judged like a candidate (in
/// parallel with the others), and the entry gives n, c and pass@k. Samples
/// sbx could not judge are left out of n and counted apart.
#[test]
fn samples_give_n_c_and_pass_at_k() {
    let run = Run::new("samples");
    for i in 0..10 {
        // Samples 0-6 double the input (right), 7-9 add one (wrong).
        let body = if i < 7 {
            "read n; echo $((n * 2))\n"
        } else {
            "read n; echo $((n + 1))\n"
        };
        run.file(&format!("gen/double/s{i}.sh"), body, 0o644);
    }
    run.file("gen/double/unknown.txt", "puts 1\n", 0o644);
    run.file("gen/single.sh", "read n; echo $((n * 2))\n", 0o644);
    fs::create_dir_all(run.path("gen/empty")).expect("mkdir");
    let tasks = json!([
        {"id": "double", "stdin": "4\n", "expect": "8\n"},
        {"id": "single", "stdin": "4\n", "expect": "8\n"},
        {"id": "empty", "stdin": "", "expect": ""}
    ]);
    let out = run.eval(&tasks, BUSYBOX, &["-j", "4"]);
    // The .txt sample could not be judged: an error, and errors make eval exit 2.
    assert_eq!(out.code(), 2, "{out:?}");
    assert!(
        out.stderr
            .contains("1 passed, 1 failed, 1 missing, 1 errors"),
        "{out:?}"
    );
    let results = report(&out);
    let double = entry(&results, "double");
    assert_eq!(double["status"], "fail", "{double:#}");
    assert_eq!(double["n"], 10, "{double:#}");
    assert_eq!(double["c"], 7, "{double:#}");
    assert_eq!(double["errors"], 1, "the .txt sample: {double:#}");
    // A sample not judged: the task is incomplete, its pass@k withheld,
    // its bounds given.
    assert_eq!(double["incomplete"], true, "{double:#}");
    assert!(double.get("pass@1").is_none(), "{double:#}");
    assert!(double.get("pass@10").is_none(), "{double:#}");
    assert_eq!(
        double["pass_at_k_bounds"]["pass@10"],
        json!({"lower": 1.0, "upper": 1.0}),
        "{double:#}"
    );
    let samples = double["samples"].as_array().expect("samples");
    let names: Vec<&str> = samples
        .iter()
        .filter_map(|s| s["sample"].as_str())
        .collect();
    assert_eq!(names.len(), 11, "{double:#}");
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted: {names:?}");
    assert_eq!(samples[10]["status"], "error", "{double:#}");
    assert_eq!(samples[10]["reason"], "unknown_extension", "{double:#}");
    // s1-s6 are s0's twins and s8-s9 s7's: judged once, each naming it.
    let same_as: Vec<Option<&str>> = samples.iter().map(|s| s["same_as"].as_str()).collect();
    let (right, wrong) = (Some("s0.sh"), Some("s7.sh"));
    assert_eq!(
        same_as,
        [None, right, right, right, right, right, right, None, wrong, wrong, None],
        "{double:#}"
    );
    assert!(
        out.stderr
            .contains("; 8 samples took the verdict of an identical one (same_as)"),
        "{out:?}"
    );
    // A plain candidate file keeps the single-candidate entry.
    let single = entry(&results, "single");
    assert_eq!(single["status"], "pass", "{single:#}");
    assert!(single.get("n").is_none(), "{single:#}");
    assert_eq!(entry(&results, "empty")["status"], "missing");
    assert!(
        out.stderr
            .contains("; not final, 1 sample not judged, in 1 task (double): mean pass@1 between 0.636 and 0.727 over 1 task; mean pass@10 between 1.000 and 1.000 over 1 task"),
        "{out:?}"
    );
    run.assert_clean();
}

/// A samples task whose image cannot run keeps its samples, each `error`
/// (before, the task was one `error` without samples, and left every mean
/// pass@k, raising it): it is in the bounds, named on the summary line,
/// and a partitioned run merges back to the same entry.
#[test]
fn samples_of_an_image_that_cannot_run_are_each_unjudged() {
    let run = Run::new("samplesnoimage");
    // Four runnable samples, so that each share has one to run.
    for i in 0..4 {
        run.file(&format!("gen/ok/{i}.sh"), "echo hi\n", 0o644);
    }
    run.file("gen/lost/0.sh", "echo hi\n", 0o644);
    run.file("gen/lost/1.sh", "echo hi\n", 0o644);
    let tasks = json!([
        {"id": "ok", "stdin": "", "expect": "hi\n"},
        {"id": "lost", "stdin": "", "expect": "hi\n", "image": "sbx-absent:none"}
    ]);
    let out = run.eval(&tasks, BUSYBOX, &[]);
    assert_eq!(out.code(), 2, "{out:?}");
    let results = report(&out);
    let lost = entry(&results, "lost");
    assert_eq!(lost["status"], "error", "{lost:#}");
    assert_eq!(lost["reason"], "all_samples_error", "{lost:#}");
    assert_eq!(
        (lost["n"].as_u64(), lost["errors"].as_u64()),
        (Some(0), Some(2))
    );
    assert_eq!(lost["samples"][1]["reason"], "image_missing", "{lost:#}");
    assert_eq!(
        lost["pass_at_k_bounds"],
        json!({"pass@1": {"lower": 0.0, "upper": 1.0}}),
        "{lost:#}"
    );
    assert!(
        out.stderr.contains(
            "; not final, 2 samples not judged, in 1 task (lost): mean pass@1 between 0.500 and 1.000 over 2 tasks"
        ),
        "{out:?}"
    );
    // Two shares, merged: the same entry.
    let mut shares = Vec::new();
    for share in ["count:1/2", "count:2/2"] {
        let out = run.eval(&tasks, BUSYBOX, &["--partition", share]);
        assert!(matches!(out.code(), 0 | 2), "{share}: {out:?}");
        assert!(!report(&out).is_empty(), "{share}: {out:?}");
        let name = format!("share{}.json", &share[6..7]);
        run.file(&name, out.stdout.as_bytes(), 0o644);
        shares.push(run.path(&name));
    }
    let mut cmd = run.sbx();
    cmd.arg("merge").args(&shares);
    let merged = finish(cmd, None, RUN_LIMIT);
    assert_eq!(merged.code(), 2, "{merged:?}");
    let merged_lost = entry(&report(&merged), "lost").clone();
    assert_eq!(
        (merged_lost["n"].as_u64(), merged_lost["errors"].as_u64()),
        (Some(0), Some(2)),
        "{merged:?}"
    );
    assert!(
        merged
            .stderr
            .contains("mean pass@1 between 0.500 and 1.000 over 2 tasks"),
        "{merged:?}"
    );
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// The result cache
// ---------------------------------------------------------------------------

/// A second run is served from the cache with the same report, in a
/// fraction of the time, starting no container; changing one candidate
/// re-runs that one only; `--no-cache` runs everything.
#[test]
fn cache_serves_a_second_run_and_misses_what_changed() {
    let run = Run::new("cache");
    for id in ["a", "b", "c"] {
        run.file(&format!("gen/{id}.sh"), "read n; echo $((n * 2))\n", 0o644);
    }
    let tasks = json!([
        {"id": "a", "stdin": "1\n", "expect": "2\n"},
        {"id": "b", "stdin": "2\n", "expect": "4\n"},
        {"id": "c", "stdin": "3\n", "expect": "7\n"}
    ]);
    let cache = run.path("cache");
    let cache_arg = cache.to_str().expect("utf-8 path");
    let strip = |out: &Out| -> Vec<Value> {
        report(out)
            .into_iter()
            .map(|mut e| {
                let o = e.as_object_mut().expect("object");
                o.remove("cached");
                o.remove("duration_ms");
                e
            })
            .collect()
    };
    let first_clock = Instant::now();
    let first = run.eval(&tasks, BUSYBOX, &["--cache", cache_arg]);
    let first_time = first_clock.elapsed();
    assert_eq!(first.code(), 1, "{first:?}");
    assert!(
        report(&first).iter().all(|e| e.get("cached").is_none()),
        "{first:?}"
    );

    let second_clock = Instant::now();
    let second = run.eval(&tasks, BUSYBOX, &["--cache", cache_arg]);
    let second_time = second_clock.elapsed();
    assert_eq!(strip(&second), strip(&first), "{second:?}");
    assert!(
        report(&second).iter().all(|e| e["cached"] == true),
        "{second:?}"
    );
    assert!(
        second_time * 3 < first_time,
        "cached run took {second_time:?} against {first_time:?}"
    );

    // One candidate changes: only it runs again (and now passes).
    run.file("gen/c.sh", "read n; echo $((n * 2 + 1))\n", 0o644);
    let third = run.eval(&tasks, BUSYBOX, &["--cache", cache_arg]);
    let results = report(&third);
    assert_eq!(entry(&results, "a")["cached"], true, "{third:?}");
    assert_eq!(entry(&results, "b")["cached"], true, "{third:?}");
    assert!(entry(&results, "c").get("cached").is_none(), "{third:?}");
    assert_eq!(entry(&results, "c")["status"], "pass", "{third:?}");

    // A changed limit is a different sandbox: everything misses.
    let fourth = run.eval(&tasks, BUSYBOX, &["--cache", cache_arg, "--memory", "128m"]);
    assert!(
        report(&fourth).iter().all(|e| e.get("cached").is_none()),
        "{fourth:?}"
    );
    // --no-cache runs everything even with --cache.
    let fifth = run.eval(&tasks, BUSYBOX, &["--cache", cache_arg, "--no-cache"]);
    assert!(
        report(&fifth).iter().all(|e| e.get("cached").is_none()),
        "{fifth:?}"
    );
    run.assert_clean();
}

// ---------------------------------------------------------------------------
// A cut connection to the engine is never the candidate's failure
// ---------------------------------------------------------------------------

/// The attached docker client of a run is SIGKILLed from outside while the
/// program runs, as when the connection to the engine is cut: the client
/// ends with a code of its own, the engine has no record of the program
/// ending that way, so the run is not judged; it runs again and passes.
#[test]
fn a_cut_client_connection_runs_the_task_again() {
    let run = Run::new("cut-client");
    run.file("gen/slow_ok.sh", "sleep 2\necho ok\n", 0o644);
    let tasks = json!([{"id": "slow_ok", "stdin": "", "expect": "ok\n", "timeout": 30}]);
    // Case mode's path: a container per case, confirmed by the engine's
    // record (a lost runner is tested in isolate.rs).
    let eval = start(
        run.eval_cmd(&tasks, &run.path("gen"), BUSYBOX, &["--isolate", "case"]),
        None,
    );
    let pattern = format!("start -a -i -- sbx-{}-0$", run.id);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = Command::new("pkill")
            .args(["-KILL", "-f", &pattern])
            .status()
            .expect("pkill");
        if found.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the run's docker client never appeared"
        );
        thread::sleep(Duration::from_millis(50));
    }
    let out = eval.wait(RUN_LIMIT).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.code(), 0, "{out:?}");
    let report = report(&out);
    let e = entry(&report, "slow_ok");
    assert_eq!(e["status"], "pass", "{e:#}");
    let moved = e["requeued"].as_array().expect("the cut run is recorded");
    assert_eq!(moved.len(), 1, "{e:#}");
    assert_eq!(moved[0]["engine"], "default", "{e:#}");
    assert!(
        moved[0]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("killed by a signal"),
        "{e:#}"
    );
    run.assert_clean();
}
