//! gVisor (`--runtime runsc`) as a tested runtime, on the engine that
//! `scripts/gvisor-engine.sh start` runs (`SBX_GVISOR_SOCK`; scripts/test.sh
//! starts it). Without that engine these tests panic with what to do, never
//! skip. Every container is labelled with the test's run id and removed,
//! on that engine, even when the test fails.
//!
//! - the example suite gives runc's verdicts under runsc in every mode;
//! - one hostile candidate per mode: the kernel it sees is gVisor's, not
//!   the host's (`case`); a fork bomb (`candidate`) and an OOM (`worker`)
//!   are the candidate's `fail`, never an infrastructure `error`.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use common::{report, sbx, second::try_at, try_finish, Out};

/// A whole eval under gVisor (the example suite takes about 5 s).
const EVAL_LIMIT: Duration = Duration::from_secs(240);

/// The gVisor engine's socket, checked once: it answers, knows the runtime
/// `runsc` and has the images.
fn engine() -> String {
    static CHECKED: OnceLock<Result<String, String>> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let sock = std::env::var("SBX_GVISOR_SOCK").map_err(|_| {
                "SBX_GVISOR_SOCK is not set: these tests need the gVisor engine; run `eval $(scripts/gvisor-engine.sh start)` first (scripts/test.sh does)".to_string()
            })?;
            if !sock.starts_with("unix://") {
                return Err(format!("SBX_GVISOR_SOCK `{sock}` is not a unix socket"));
            }
            let info = try_at(
                &sock,
                &[
                    "info",
                    "--format",
                    "{{range $k, $v := .Runtimes}}{{$k}} {{end}}",
                ],
            )?;
            if info.code() != 0 || !info.stdout.split_whitespace().any(|r| r == "runsc") {
                return Err(format!(
                    "the engine at {sock} does not answer or has no runtime runsc: {info:?}"
                ));
            }
            for image in [common::BUSYBOX, common::PYTHON] {
                let found = try_at(&sock, &["image", "inspect", "--", image])?;
                if found.code() != 0 {
                    return Err(format!(
                        "the gVisor engine lacks {image}: scripts/gvisor-engine.sh start loads it"
                    ));
                }
            }
            Ok(sock)
        })
        .clone()
        .unwrap_or_else(|message| panic!("{message}"))
}

/// Removes, when dropped, the gVisor engine's containers of one run.
struct Cleanup {
    sock: String,
    run: String,
}

impl Cleanup {
    /// Requires the gVisor engine (see [`engine`]).
    fn new(run: &str) -> Cleanup {
        Cleanup {
            sock: engine(),
            run: run.to_string(),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let sock = &self.sock;
        let filter = format!("label=sbx.run={}", self.run);
        for _ in 0..60 {
            let Ok(ps) = try_at(sock, &["ps", "-aq", "--filter", &filter]) else {
                return;
            };
            let ids: Vec<&str> = ps.stdout.split_whitespace().collect();
            if ids.is_empty() {
                return;
            }
            let mut args = vec!["rm", "-f", "--"];
            args.extend(ids);
            let _ = try_at(sock, &args);
            std::thread::sleep(Duration::from_millis(500));
        }
        if !std::thread::panicking() {
            panic!("containers of run {} left on the gVisor engine", self.run);
        }
    }
}

/// `sbx eval` on the gVisor engine under `runtime` in `dir`, with `args`.
fn eval(dir: &Path, run: &str, runtime: &str, isolate: &str, args: &[&str]) -> Out {
    let mut cmd = sbx(Some(run));
    cmd.current_dir(dir)
        .args(["eval", "--engine", &engine(), "--runtime", runtime])
        .args(["--isolate", isolate])
        .args(args);
    let out = try_finish(cmd, EVAL_LIMIT).unwrap_or_else(|e| panic!("{e}"));
    let left = try_at(
        &engine(),
        &["ps", "-aq", "--filter", &format!("label=sbx.run={run}")],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(left.stdout.trim(), "", "containers left behind: {out:?}");
    out
}

/// Each task's id and status.
fn verdicts(out: &Out) -> BTreeMap<String, String> {
    report(out)
        .iter()
        .map(|e| {
            (
                e["id"].as_str().expect("an id").into(),
                e["status"].as_str().expect("a status").into(),
            )
        })
        .collect()
}

fn example_suite(isolate: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = common::run_id("gvisor", &format!("example-{isolate}"));
    let _cleanup = Cleanup::new(&run);
    let runc = eval(root, &run, "runc", isolate, &[]);
    let runsc = eval(root, &run, "runsc", isolate, &[]);
    assert_eq!(runc.code(), 1, "runc: {runc:?}");
    assert_eq!(runsc.code(), 1, "runsc: {runsc:?}");
    let (runc_v, runsc_v) = (verdicts(&runc), verdicts(&runsc));
    assert_eq!(runsc_v, runc_v, "runsc: {runsc:?}\nrunc: {runc:?}");
    // The stdin-fed shell candidate once crashed gVisor itself.
    assert_eq!(runsc_v["word_count"], "pass", "{runsc:?}");
    assert!(!runsc_v.values().any(|s| s == "error"), "{runsc:?}");
}

#[test]
fn example_suite_gives_runcs_verdicts_in_case_mode() {
    example_suite("case");
}

#[test]
fn example_suite_gives_runcs_verdicts_in_candidate_mode() {
    example_suite("candidate");
}

#[test]
fn example_suite_gives_runcs_verdicts_in_worker_mode() {
    example_suite("worker");
}

/// A suite of one task `id` (stdin, expected stdout) and its candidate.
fn one_task(id: &str, stdin: &str, expect: &str, file: &str, program: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("sbx-gvisor-")
        .tempdir()
        .expect("a scratch folder");
    let tasks = serde_json::json!([{
        "id": id, "prompt": "hostile", "stdin": stdin, "expect": expect, "compare": "trim"
    }]);
    fs::write(dir.path().join("tasks.json"), tasks.to_string()).expect("write tasks.json");
    fs::create_dir(dir.path().join("gen")).expect("make gen/");
    fs::write(dir.path().join("gen").join(file), program).expect("write the candidate");
    dir
}

fn only_status(out: &Out) -> String {
    let entries = report(out);
    assert_eq!(entries.len(), 1, "{out:?}");
    entries[0]["status"].as_str().expect("a status").to_string()
}

const SUITE: [&str; 6] = [
    "--tasks",
    "tasks.json",
    "--gen",
    "gen",
    "--image",
    "sbx-python:bookworm",
];

#[test]
fn the_candidate_sees_gvisors_kernel_not_the_hosts() {
    // uname(2), not /proc/sys/kernel/osrelease: gVisor's /proc has no
    // such file, so reading it would fail under runsc for another reason.
    let host = fs::read_to_string("/proc/sys/kernel/osrelease").expect("the host kernel release");
    let dir = one_task(
        "kernel",
        "",
        host.trim(),
        "kernel.py",
        "import os\nprint(os.uname().release)\n",
    );
    let run = common::run_id("gvisor", "kernel");
    let _cleanup = Cleanup::new(&run);
    // The same engine under runc shows the host's kernel: the task passes.
    let runc = eval(dir.path(), &run, "runc", "case", &SUITE);
    assert_eq!(only_status(&runc), "pass", "{runc:?}");
    let runsc = eval(dir.path(), &run, "runsc", "case", &SUITE);
    assert_eq!(only_status(&runsc), "fail", "{runsc:?}");
    assert_eq!(runsc.code(), 1, "{runsc:?}");
}

#[test]
fn a_fork_bomb_is_the_candidates_fail_under_gvisor() {
    let bomb =
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n";
    let dir = one_task("bomb", "", "done", "bomb.py", bomb);
    let run = common::run_id("gvisor", "bomb");
    let _cleanup = Cleanup::new(&run);
    let mut args = SUITE.to_vec();
    args.extend(["--timeout", "5"]);
    let out = eval(dir.path(), &run, "runsc", "candidate", &args);
    assert_eq!(only_status(&out), "fail", "{out:?}");
    assert_eq!(out.code(), 1, "{out:?}");
}

#[test]
fn an_oom_is_the_candidates_fail_under_gvisor() {
    let hog = "x = []\nwhile True:\n    x.append(bytearray(8 << 20))\n";
    let dir = one_task("hog", "", "done", "hog.py", hog);
    let run = common::run_id("gvisor", "oom");
    let _cleanup = Cleanup::new(&run);
    let mut args = SUITE.to_vec();
    args.extend(["--timeout", "30"]);
    let out = eval(dir.path(), &run, "runsc", "worker", &args);
    assert_eq!(only_status(&out), "fail", "{out:?}");
    assert_eq!(out.code(), 1, "{out:?}");
}

/// A SysV segment under a fixed key: candidate `a` leaves a secret in it,
/// candidate `b` (same uid, judged next by the same worker) looks for it.
const SHM_LEAVE: &str = r#"import ctypes
l = ctypes.CDLL(None)
l.shmat.restype = ctypes.c_void_p
i = l.shmget(0x5B5, 4096, 0o1000 | 0o666)
if i >= 0:
    ctypes.memmove(l.shmat(i, None, 0), b"secret-from-a\0", 14)
print("ok")
"#;
const SHM_LOOK: &str = r#"import ctypes
l = ctypes.CDLL(None)
l.shmat.restype = ctypes.c_void_p
i = l.shmget(0x5B5, 4096, 0o666)
print("ok" if i < 0 else "LEAK %r" % ctypes.string_at(l.shmat(i, None, 0)))
"#;

#[test]
fn a_sysv_segment_never_reaches_the_next_candidate_in_worker_mode() {
    let dir = one_task("a", "", "ok", "a.py", SHM_LEAVE);
    let tasks = serde_json::json!([
        {"id": "a", "prompt": "hostile", "stdin": "", "expect": "ok", "compare": "trim"},
        {"id": "b", "prompt": "hostile", "stdin": "", "expect": "ok", "compare": "trim"},
    ]);
    fs::write(dir.path().join("tasks.json"), tasks.to_string()).expect("write tasks.json");
    fs::write(dir.path().join("gen").join("b.py"), SHM_LOOK).expect("write b.py");
    let run = common::run_id("gvisor", "sysv");
    let _cleanup = Cleanup::new(&run);
    let mut args = SUITE.to_vec();
    args.extend(["--jobs", "1"]);
    let out = eval(dir.path(), &run, "runsc", "worker", &args);
    let v = verdicts(&out);
    // gVisor lets `a` make its segment (its kernel ignores the IPC sysctls);
    // `b` must not find it.
    assert_eq!(v["a"], "pass", "{out:?}");
    assert_eq!(v["b"], "pass", "{out:?}");
    assert_eq!(out.code(), 0, "{out:?}");
}

#[test]
fn doctor_finds_only_lo_under_gvisor() {
    // gVisor has no /sys/class/net; the probe reads /proc/net/dev there.
    let mut cmd = sbx(None);
    cmd.env("DOCKER_HOST", engine()).args([
        "doctor",
        "--runtime",
        "runsc",
        "--image",
        common::PYTHON,
    ]);
    let out = try_finish(cmd, EVAL_LIMIT).unwrap_or_else(|e| panic!("{e}"));
    let line = out
        .stdout
        .lines()
        .chain(out.stderr.lines())
        .find(|l| l.contains("network:"))
        .unwrap_or_else(|| panic!("no network check: {out:?}"))
        .to_string();
    assert!(line.starts_with("ok"), "{line}\n{out:?}");
    assert!(line.ends_with("interfaces in /proc/net/dev: lo"), "{line}");
}
