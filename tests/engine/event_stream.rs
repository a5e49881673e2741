//! The engine's evidence of a run (its `oom`, `die` and `start` events)
//! against a real Docker engine, under load: the daemon keeps only its last
//! 256 events, so evidence asked for after a task ends can already be gone.
//! sbx reads one event stream for the whole eval instead.
//!
//! Needs a reachable engine and `sbx-busybox:latest` (built by
//! `scripts/build-images.sh`); without them the test panics with what is
//! missing, never skips.
//!
//! Run with: `cargo test --test engine event_stream:: -- --test-threads 2`

use crate::common;

use std::fs;
use std::time::Duration;

use serde_json::{json, Value};

use common::{finish, report, Cleanup, BUSYBOX};

/// Quick tasks run beside the OOM-killed one: at about 5 engine events
/// each (create, attach, start, die, destroy), far more than 256 events
/// happen between its `oom` and its end.
const QUICK_TASKS: usize = 100;

/// A task whose child is OOM-killed about 1 s into its run while its parent
/// lives on until the timeout, among 90 quick tasks at `-j 6`, is `oom`:
/// its `oom` event is long out of the daemon's ring of 256 when it ends.
#[test]
fn an_oom_long_before_the_end_survives_hundreds_of_later_events() {
    common::require_engine();
    let id = common::run_id("t", "oom-ring");
    let _guard = Cleanup::new(&[&id]);
    let dir = tempfile::Builder::new()
        .prefix("sbx-events-")
        .tempdir()
        .expect("create a scratch folder");
    let gen = dir.path().join("gen");
    fs::create_dir(&gen).expect("create gen/");
    // `dd` allocates a 400 MiB buffer and fills it: the kernel kills it at
    // the 256m cap; the shell (PID 1) survives and sleeps past the timeout.
    fs::write(
        gen.join("hog.sh"),
        "sleep 1\ndd if=/dev/zero of=/dev/null bs=400M count=1\necho survived\nsleep 60\n",
    )
    .expect("write the hog");
    let mut tasks = vec![json!({"id": "hog", "stdin": "", "expect": "never\n", "timeout": 30})];
    for k in 0..QUICK_TASKS {
        let id = format!("quick{k}");
        fs::write(gen.join(format!("{id}.sh")), "echo ok\n").expect("write a quick task");
        tasks.push(json!({"id": id, "stdin": "", "expect": "ok\n", "timeout": 30}));
    }
    let tasks_file = dir.path().join("tasks.json");
    fs::write(&tasks_file, Value::Array(tasks).to_string()).expect("write tasks");
    let mut cmd = common::sbx(Some(&id));
    cmd.arg("eval")
        .arg("--tasks")
        .arg(&tasks_file)
        .arg("--gen")
        .arg(&gen)
        .args(["--image", BUSYBOX, "--pull", "never", "-j", "6"])
        .args(["--interpreter", "sh"]);
    let out = finish(cmd, None, Duration::from_secs(240));
    let results = report(&out);
    let hog = results
        .iter()
        .find(|r| r["id"] == "hog")
        .unwrap_or_else(|| panic!("no hog in {out:?}"));
    assert_eq!(hog["status"], "fail", "{hog:#}");
    assert_eq!(hog["reason"], "oom", "{hog:#}");
    let passed = results.iter().filter(|r| r["status"] == "pass").count();
    assert_eq!(passed, QUICK_TASKS, "{out:?}");
    assert_eq!(out.code(), 1, "{out:?}");
    common::assert_nothing_left(&id, "");
}
