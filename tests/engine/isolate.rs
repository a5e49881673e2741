//! `sbx eval --isolate case|candidate|worker` against the real engine: the
//! same statuses and reasons in all three modes (the example suite and an
//! adversarial set), hostile candidates followed in the same worker by a
//! clean one, and a runner whose frames are cut mid-way during an eval
//! (a docker wrapper filters the runner's stdout). The two-engine runs are
//! in `engines.rs`. Containers are labelled with the test's run id and
//! removed on every path.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use common::scratch::Scratch;
use common::{by_id, corpus, report, verdict};

const LIMIT: Duration = Duration::from_secs(300);

/// A scratch folder and run id for `test`.
fn scratch(test: &str) -> Scratch {
    Scratch::new("iso", "isolate", test, LIMIT)
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
    for (id, program) in corpus::ADVERSARIAL {
        s.file(&format!("gen/{id}.py"), program.as_bytes());
    }
    s.file("gen/nonode.js", b"console.log(1)\n");
    tasks.extend(corpus::adversarial_tasks());
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
    for (mode, fail_fast, results) in &reports {
        for (id, status, reason) in &corpus::expected(mode) {
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
        // case mode's supervisor reports cpu_ms (not where it never
        // reported: a cut output, a compile failure), never max_rss_kib.
        for (id, r) in results {
            let judged = matches!(r["status"].as_str(), Some("pass" | "fail"));
            let has = r.get("cpu_ms").is_some() && r.get("max_rss_kib").is_some();
            match *mode {
                "case" => {
                    assert!(r.get("max_rss_kib").is_none(), "{mode} {id}: {r}");
                    assert!(judged || r.get("cpu_ms").is_none(), "{mode} {id}: {r}");
                }
                _ => assert_eq!(has, judged, "{mode} {id}: {r}"),
            }
        }
        if *mode == "case" {
            for id in ["hello", "exit3"] {
                assert!(results[id]["cpu_ms"].is_u64(), "{id}: {}", results[id]);
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

#[test]
fn hostile_candidates_in_one_worker_leave_nothing_for_the_next() {
    let s = scratch("hostile");
    let (tasks, files) = corpus::hostile_tasks();
    for (path, program) in files {
        s.file(&path, program.as_bytes());
    }
    let out = s.eval_with(
        &Value::Array(tasks),
        &["--isolate", "worker", "-j", "1"],
        None,
    );
    assert_eq!(out.code(), 1, "{out:?}");
    let results = by_id(&report(&out));
    let mut hosts = Vec::new();
    for (id, _) in corpus::HOSTILE {
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
/// A docker that keeps the runner on stdin and stdout
/// (`common::WRAPPER_KEEPS_STDIO`) and cuts the stream of `start` mid-frame
/// through `cut.py`.
const WRAPPER: &str = r#"#!/bin/sh
@KEEP_STDIO@if [ "$1" = start ]; then
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
            .replace("@KEEP_STDIO@", common::WRAPPER_KEEPS_STDIO)
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

/// Busy loops, each in a session of its own (as unrelated jobs are): each
/// session is killed whole when dropped, and ends by itself after
/// `HOG_LIFE` should the test be killed before that.
struct Load(Vec<std::process::Child>);

const HOG_LIFE: &str = "600";

impl Load {
    fn start(n: usize) -> Load {
        let mut load = Load(Vec::new());
        for _ in 0..n {
            // `setsid` execs in place: the child's pid is its session's
            // and its process group's.
            let child = std::process::Command::new("setsid")
                .args(["timeout", "-s", "KILL", HOG_LIFE])
                .args(["sh", "-c", "while :; do :; done"])
                .stdin(std::process::Stdio::null())
                .spawn()
                .expect("start a CPU hog");
            load.0.push(child);
        }
        load
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        use nix::sys::signal::{killpg, Signal};
        use nix::unistd::Pid;
        for hog in &mut self.0 {
            if let Ok(pid) = i32::try_from(hog.id()) {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
            let _ = hog.wait();
        }
    }
}

/// The same candidates get the same statuses and reasons on an idle
/// machine and with 16 busy sessions on it (8 per core here): a slow but
/// correct program (a third of its CPU limit), a sleeper, a busy loop,
/// four forked burners (stopped by the sum of their CPU time), a memory
/// hog, and a sleeper that fakes contention with its own forks.
#[test]
fn verdicts_are_the_same_idle_and_loaded() {
    let s = scratch("steady");
    let programs = [
        (
            "slow",
            "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n    pass\nprint('ok')\n",
        ),
        ("sleeper", "import time\ntime.sleep(60)\nprint('ok')\n"),
        ("spin", "while True:\n    pass\n"),
        (
            "burners",
            "import os\nfor _ in range(3):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass\n",
        ),
        (
            "hog",
            "x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n",
        ),
        // Fakes contention: thirty forks queue behind each other on the
        // container's quota for 0.3 s (about 9 s of run-queue wait in all),
        // then sleep; the program sleeps 8 s and would pass if its
        // backstop clock subtracted its own tasks' summed waits.
        (
            "faker",
            "import os, time\nstop = time.time() + 0.3\nfor _ in range(30):\n    if os.fork() == 0:\n        while time.time() < stop:\n            pass\n        time.sleep(60)\n        os._exit(0)\ntime.sleep(8)\nprint('ok')\n",
        ),
    ];
    let expected = [
        ("slow", "pass", ""),
        ("sleeper", "fail", "wall_timeout"),
        ("spin", "fail", "timeout"),
        ("burners", "fail", "timeout"),
        ("hog", "fail", "oom"),
        ("faker", "fail", "wall_timeout"),
    ];
    let mut tasks = Vec::new();
    for (id, program) in programs {
        s.file(&format!("gen/{id}.py"), program.as_bytes());
        tasks.push(json!({"id": id, "stdin": "", "expect": "ok\n", "timeout": 1.5}));
    }
    let tasks = Value::Array(tasks);
    for mode in MODES {
        let args = ["--isolate", mode, "-j", "6"];
        let idle = by_id(&report(&s.eval(&tasks, &args)));
        let loaded = {
            // Tests whose verdicts rest on a wall clock (the compile step's
            // limit) wait while the machine is loaded on purpose.
            let _alone = common::loading_the_machine();
            let _load = Load::start(16);
            by_id(&report(&s.eval(&tasks, &args)))
        };
        for (id, status, reason) in expected {
            for (when, results) in [("idle", &idle), ("loaded", &loaded)] {
                let r = &results[id];
                assert_eq!(
                    (r["status"].as_str(), r["reason"].as_str().unwrap_or("")),
                    (Some(status), reason),
                    "{mode} {when} {id}: {r}"
                );
            }
        }
        // The CPU time is the whole candidate's: four burners' sum.
        assert!(
            loaded["burners"]["cpu_ms"].as_u64() >= Some(1_500),
            "{}",
            loaded["burners"]
        );
    }
}
