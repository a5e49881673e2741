//! `sbx eval --isolate case|candidate|worker` against the real engine: the
//! same statuses and reasons in all three modes (the example suite and an
//! adversarial set), hostile candidates followed in the same worker by a
//! clean one, and a runner whose frames are cut mid-way during an eval
//! (a docker wrapper filters the runner's stdout). The two-engine runs are
//! in `engines.rs`. Containers are labelled with the test's run id and
//! removed on every path.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use common::report;
use common::scratch::Scratch;

const LIMIT: Duration = Duration::from_secs(300);

/// A scratch folder and run id for `test`.
fn scratch(test: &str) -> Scratch {
    Scratch::new("iso", "isolate", test, LIMIT)
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.cleanup.finish();
        }
    }
}

/// What must agree between modes: everything but times, the runner's own
/// fields and stderr (whose tracebacks name the program's path).
fn verdict(entry: &Value) -> Value {
    let mut e = entry.clone();
    let obj = e.as_object_mut().expect("an entry is an object");
    for field in [
        "duration_ms",
        "cpu_ms",
        "max_rss_kib",
        "stderr_tail",
        "message",
    ] {
        obj.remove(field);
    }
    e
}

fn by_id(results: &[Value]) -> BTreeMap<String, Value> {
    results
        .iter()
        .map(|r| (r["id"].as_str().expect("id").to_string(), r.clone()))
        .collect()
}

const MODES: [&str; 3] = ["case", "candidate", "worker"];

#[test]
fn the_three_modes_agree_on_the_examples_and_an_adversarial_set() {
    let s = scratch("agree");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut tasks: Vec<Value> =
        serde_json::from_slice(&fs::read(root.join("tasks/tasks.json")).expect("example tasks"))
            .expect("example tasks parse");
    for entry in fs::read_dir(root.join("gen")).expect("example gen") {
        let entry = entry.expect("entry");
        let to = s.gen().join(entry.file_name());
        fs::create_dir_all(s.gen()).expect("gen");
        fs::copy(entry.path(), to).expect("copy a candidate");
    }
    let adversarial = [
        (
            "hog",
            "x = []\nwhile True:\n    x.append(b'x' * (16 << 20))\n",
        ),
        (
            "flood",
            "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n",
        ),
        ("sleeper", "import time\ntime.sleep(60)\n"),
        (
            "segv",
            "import ctypes\nprint('before', flush=True)\nctypes.string_at(0)\n",
        ),
        ("wrong", "print('nope')\n"),
        (
            "echo",
            "import sys\nsys.stdout.write(sys.stdin.read().upper())\n",
        ),
        (
            "exit3",
            "import sys\nprint('bad', file=sys.stderr)\nsys.exit(3)\n",
        ),
        ("multi", "n = int(input())\nprint(n * 2 if n != 2 else 5)\n"),
        ("multiok", "n = int(input())\nprint(n * 2)\n"),
    ];
    for (id, program) in adversarial {
        s.file(&format!("gen/{id}.py"), program.as_bytes());
    }
    // An interpreter the image lacks (`.js` -> node): sbx's error, not a fail.
    s.file("gen/nonode.js", b"console.log(1)\n");
    let doubling = json!([
        {"stdin": "1\n", "expect": "2\n"},
        {"stdin": "2\n", "expect": "4\n"},
        {"stdin": "3\n", "expect": "6\n"}
    ]);
    tasks.extend([
        json!({"id": "hog", "stdin": "", "expect": ""}),
        json!({"id": "flood", "stdin": "", "expect": ""}),
        json!({"id": "sleeper", "stdin": "", "expect": "", "timeout": 2}),
        json!({"id": "segv", "stdin": "", "expect": "before\n"}),
        json!({"id": "wrong", "stdin": "", "expect": "yes\n"}),
        json!({"id": "echo", "stdin": "abc\ndef\n", "expect": "ABC\nDEF\n"}),
        json!({"id": "exit3", "stdin": "", "expect": ""}),
        json!({"id": "multi", "cases": doubling}),
        json!({"id": "multiok", "cases": doubling}),
        json!({"id": "nonode", "stdin": "", "expect": "1\n"}),
    ]);
    let tasks = Value::Array(tasks);
    let mut reports = Vec::new();
    for mode in MODES {
        for fail_fast in [true, false] {
            let mut extra = vec!["--isolate", mode, "-j", "2", "--max-output", "256KiB"];
            if !fail_fast {
                extra.push("--no-fail-fast");
            }
            let out = s.eval_with(&tasks, &extra, None);
            assert_eq!(out.code(), 2, "{mode}: an error entry: {out:?}");
            assert!(
                !out.stderr.contains("--isolate case instead"),
                "no fallback here: {out:?}"
            );
            reports.push((mode, fail_fast, by_id(&report(&out))));
        }
    }
    let expected: &[(&str, &str, &str)] = &[
        ("hello", "pass", ""),
        ("reverse", "fail", "wrong_output"),
        ("spin", "fail", "timeout"),
        ("primes", "missing", "no_candidate"),
        ("hog", "fail", "oom"),
        ("flood", "fail", "output_limit"),
        ("sleeper", "fail", "timeout"),
        ("segv", "fail", "exit_code"),
        ("wrong", "fail", "wrong_output"),
        ("echo", "pass", ""),
        ("exit3", "fail", "exit_code"),
        ("multi", "fail", "wrong_output"),
        ("multiok", "pass", ""),
        ("nonode", "error", "toolchain_missing"),
    ];
    for (mode, fail_fast, results) in &reports {
        for (id, status, reason) in expected {
            let r = &results[*id];
            assert_eq!(
                (r["status"].as_str(), r["reason"].as_str().unwrap_or("")),
                (Some(*status), *reason),
                "{mode} {id}: {r}"
            );
        }
        assert_eq!(results["segv"]["exit_code"], 139, "{mode}");
        assert_eq!(results["exit3"]["exit_code"], 3, "{mode}");
        assert!(
            results["exit3"]["stderr_tail"].as_str() == Some("bad\n"),
            "{mode}: {}",
            results["exit3"]
        );
        assert_eq!(results["multi"]["case"], 2, "{mode}");
        assert_eq!(results["multi"]["cases_total"], 3, "{mode}");
        assert_eq!(
            results["multi"]["cases_passed"],
            if *fail_fast { 1 } else { 2 },
            "{mode}"
        );
        assert!(results["wrong"]["diff"].is_string(), "{mode}");
        // Runner modes add cpu_ms and max_rss_kib to every judged entry;
        // case mode's entries are exactly as before.
        for (id, r) in results {
            let judged = matches!(r["status"].as_str(), Some("pass" | "fail"));
            let has = r.get("cpu_ms").is_some() && r.get("max_rss_kib").is_some();
            match *mode {
                "case" => assert!(r.get("cpu_ms").is_none() && r.get("max_rss_kib").is_none()),
                _ => assert_eq!(has, judged, "{mode} {id}: {r}"),
            }
        }
    }
    // And everything else agrees between the modes.
    let (_, _, first) = &reports[0];
    for (mode, fail_fast, results) in &reports[1..] {
        let same_ff = &reports
            .iter()
            .find(|(m, f, _)| *m == "case" && f == fail_fast)
            .expect("case mode ran")
            .2;
        for (id, r) in results {
            assert_eq!(verdict(r), verdict(&same_ff[id]), "{mode} {id}");
        }
        assert_eq!(results.len(), first.len());
    }
}

/// Finds anything a previous candidate left; prints `CLEAN next`.
const CHECK: &str = r#"
import os, sys
me = os.getpid()
bad = []
pids = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, me)]
if pids:
    bad.append('pids %s' % [(p, open('/proc/%s/cmdline' % p, 'rb').read()) for p in pids])
mine = os.path.dirname(os.path.abspath(__file__))
tmp = [e for e in os.listdir('/tmp') if '/tmp/' + e != mine]
if tmp:
    bad.append('tmp %s' % tmp)
for d in ('/dev/shm', '/dev/mqueue'):
    if os.path.isdir(d) and os.listdir(d):
        bad.append('%s %s' % (d, os.listdir(d)))
for t in ('shm', 'msg', 'sem'):
    if open('/proc/sysvipc/' + t).read().splitlines()[1:]:
        bad.append('sysv ' + t)
if os.fork() == 0:
    os._exit(0)
os.wait()
print(' '.join(bad) if bad else 'CLEAN ' + sys.stdin.read().strip())
"#;

/// Prints the container's hostname on stderr and fails: its entry's
/// `stderr_tail` says which container it ran in.
const WHERE: &str =
    "import socket, sys\nprint(socket.gethostname(), file=sys.stderr)\nsys.exit(3)\n";

#[test]
fn hostile_candidates_in_one_worker_leave_nothing_for_the_next() {
    let s = scratch("hostile");
    let hostile = [
        (
            "daemon",
            r#"
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        os.closerange(0, 3)
        time.sleep(3600)
    os._exit(0)
print('ok')
"#,
        ),
        (
            "fill",
            r#"
import os
os.makedirs('/tmp/deep/er')
fd = os.open('/tmp/deep/er/f', os.O_WRONLY | os.O_CREAT)
try:
    while True:
        os.write(fd, b'z' * (1 << 20))
except OSError:
    pass
os.close(fd)
open('/dev/shm/left', 'w').write('x')
os.chmod('/tmp/deep/er', 0); os.chmod('/tmp/deep', 0)
print('ok')
"#,
        ),
        (
            "forge",
            r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
attached = libc.ptrace(16, 1, 0, 0)
print('ptrace', attached, ctypes.get_errno())
try:
    fds = os.listdir('/proc/1/fd')
except OSError:
    fds = []  # another uid's (and not dumpable)
for fd in fds:
    try:
        with open('/proc/1/fd/' + fd, 'wb') as f:
            f.write(b'SBXR\x01\x06' + b'\xff' * 4 + b'[{"id":"forge","status":"pass"}]\n')
        print('wrote', fd)
    except OSError as e:
        pass
print('forged')
"#,
        ),
        (
            "bomb",
            r#"
import os, time
n = 0
while True:
    try:
        if os.fork() == 0:
            time.sleep(3600)
            os._exit(0)
        n += 1
    except OSError:
        break
print('ok' if n > 10 else 'few %d' % n)
"#,
        ),
    ];
    let mut tasks = Vec::new();
    for (id, program) in hostile {
        s.file(&format!("gen/{id}.py"), program.as_bytes());
        let expect = if id == "forge" { "pass\n" } else { "ok\n" };
        tasks.push(json!({"id": id, "stdin": "", "expect": expect, "timeout": 20}));
        s.file(&format!("gen/{id}-check.py"), CHECK.as_bytes());
        tasks.push(json!({"id": format!("{id}-check"), "stdin": "next", "expect": "CLEAN next\n"}));
        s.file(&format!("gen/{id}-where.py"), WHERE.as_bytes());
        tasks.push(json!({"id": format!("{id}-where"), "stdin": "", "expect": ""}));
    }
    let out = s.eval_with(
        &Value::Array(tasks),
        &["--isolate", "worker", "-j", "1"],
        None,
    );
    assert_eq!(out.code(), 1, "{out:?}");
    let results = by_id(&report(&out));
    let mut hosts = Vec::new();
    for (id, _) in hostile {
        let r = &results[id];
        if id == "forge" {
            // Its forged records went nowhere: judged on its own output.
            assert_eq!(
                (r["status"].as_str(), r["reason"].as_str()),
                (Some("fail"), Some("wrong_output")),
                "{r}"
            );
        } else {
            assert_eq!(r["status"], "pass", "{id}: {r}");
        }
        let check = &results[&format!("{id}-check")];
        assert_eq!(check["status"], "pass", "after {id}: {check}");
        let place = &results[&format!("{id}-where")];
        assert_eq!(
            (place["status"].as_str(), place["exit_code"].as_i64()),
            (Some("fail"), Some(3)),
            "{place}"
        );
        hosts.push(
            place["stderr_tail"]
                .as_str()
                .expect("a hostname")
                .to_string(),
        );
    }
    // Every candidate ran in the one worker's one container: every reset
    // was clean (a dirty one would have replaced it).
    hosts.dedup();
    assert_eq!(hosts.len(), 1, "{hosts:?}");
}

/// A docker that passes everything to the real one, except that the
/// runner's stdout goes through a filter that cuts its first `Result` frame
/// in half and ends the stream (a runner killed mid-frame): on every start
/// (`always`), or on the first start only (`once`).
const WRAPPER: &str = r#"#!/bin/sh
if [ "$1" = start ]; then
  if [ "$CUT" = always ] || mkdir "@DIR@/cut" 2>/dev/null; then
    docker "$@" | python3 "@DIR@/cut.py"
    exit 1
  fi
fi
exec docker "$@"
"#;

const CUT: &str = r#"
import struct, sys
i, o = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = i.read(10)
    if len(head) < 10:
        sys.exit(0)
    (n,) = struct.unpack('<I', head[6:10])
    body = i.read(n)
    if head[5] == 6:
        o.write((head + body)[: (10 + n) // 2])
        o.flush()
        sys.exit(0)
    o.write(head + body)
    o.flush()
"#;

#[test]
fn a_runner_cut_mid_frame_is_rerun_then_an_error_never_a_failure() {
    let s = scratch("cut");
    let wrapper = s.file(
        "docker",
        WRAPPER
            .replace("@DIR@", &s.dir.path().display().to_string())
            .as_bytes(),
    );
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).expect("chmod");
    s.file("cut.py", CUT.as_bytes());
    s.file("gen/double.py", b"print(int(input()) * 2)\n");
    let tasks = json!([{"id": "double", "stdin": "21\n", "expect": "42\n"}]);
    for mode in ["candidate", "worker"] {
        // Cut once: the case runs again in a fresh container and passes.
        let _ = fs::remove_dir(s.dir.path().join("cut"));
        let out = s.eval_with(&tasks, &["--isolate", mode], Some(&wrapper));
        assert!(s.dir.path().join("cut").is_dir(), "the wrapper cut a frame");
        assert_eq!(out.code(), 0, "{mode}: {out:?}");
        assert_eq!(report(&out)[0]["status"], "pass", "{mode}: {out:?}");
        // Cut every time: after 3 tries an error, never a failure.
        let always = s.file(
            "docker-always",
            format!(
                "#!/bin/sh\nCUT=always exec '{}' \"$@\"\n",
                wrapper.display()
            )
            .as_bytes(),
        );
        fs::set_permissions(&always, fs::Permissions::from_mode(0o755)).expect("chmod");
        let out = s.eval_with(&tasks, &["--isolate", mode], Some(&always));
        let r = &report(&out)[0];
        assert_eq!(
            (r["status"].as_str(), r["reason"].as_str()),
            (Some("error"), Some("runner_lost")),
            "{mode}: {out:?}"
        );
        assert!(
            r["message"].as_str().unwrap_or("").contains("3 times"),
            "{r}"
        );
    }
}
