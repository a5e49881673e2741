//! The second engine SIGKILLed in the middle of an eval spread over both.
//! Its own test binary: cargo runs test binaries one at a time, so no other
//! test uses the second engine while it is down. The test restarts it
//! (`scripts/second-engine.sh start`) and collects what the killed engine
//! kept with `sbx gc --engine`.
//!
//! What must hold: the eval finishes on the first engine; every task passes
//! (none is scored `fail`, or anything else, because its engine died); the
//! tasks that were in flight on the killed engine say so (`requeued`);
//! nothing of the eval is left on the first engine.
//!
//! In `--isolate case`, where every task needs the engine (a container
//! start, and its output through the daemon). A runner already at work
//! speaks to sbx over its control socket, which a dead daemon does not
//! cut: in the default mode, the killed engine's workers may finish every
//! task they have, and whether one is moved depends on the moment.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::second::{self, labelled_at, try_at, CleanupAt};
use common::{finish, start, Cleanup, BUSYBOX};

/// Restarts the second engine after the test, whatever happened.
struct Restart;

impl Drop for Restart {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/second-engine.sh");
        let mut cmd = Command::new(script);
        cmd.arg("start");
        if let Err(e) = common::try_finish(cmd, Duration::from_secs(300)) {
            eprintln!("could not restart the second engine: {e}");
        }
    }
}

#[test]
fn second_engine_killed_mid_eval() {
    let e2 = second::engine2();
    let run_id = common::run_id("k", "kill");
    let _here = Cleanup::new(&[&run_id]);
    // Dropped after the restart (declared first, dropped last): collects
    // whatever the killed engine kept, once it answers again.
    let _there = CleanupAt {
        hosts: vec![e2.url.clone()],
        run_id: run_id.clone(),
    };
    let restart = Restart;

    let dir = tempfile::tempdir().expect("scratch");
    let gen = dir.path().join("gen");
    std::fs::create_dir_all(&gen).expect("gen");
    let mut tasks = Vec::new();
    for i in 0..16 {
        let id = format!("t{i:02}");
        std::fs::write(
            gen.join(format!("{id}.sh")),
            format!("sleep 1\necho {id}\n"),
        )
        .expect("write");
        tasks.push(json!({"id": id, "stdin": "", "expect": format!("{id}\n"), "timeout": 30}));
    }
    let tasks_file = dir.path().join("tasks.json");
    std::fs::write(&tasks_file, Value::Array(tasks).to_string()).expect("tasks");

    let mut cmd = common::sbx(Some(&run_id));
    cmd.arg("eval")
        .arg("--tasks")
        .arg(&tasks_file)
        .arg("--gen")
        .arg(&gen)
        .args(["--image", BUSYBOX, "--pull", "never"])
        .args(["--isolate", "case"])
        .args(["--engine", "default,jobs=2"])
        .args(["--engine", &format!("{},jobs=2", e2.url)]);
    let eval = start(cmd, None);

    // Once the second engine runs a task of this eval, SIGKILL its dockerd.
    let filter = format!("label=sbx.run={run_id}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let running = try_at(&e2.url, &["ps", "-q", "--filter", &filter])
            .map(|o| o.stdout.split_whitespace().count())
            .unwrap_or(0);
        if running > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the second engine never ran a task"
        );
        thread::sleep(Duration::from_millis(50));
    }
    let pid = std::fs::read_to_string(&e2.pidfile).expect("pid file");
    let killed = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .expect("kill");
    assert!(killed.success(), "kill -KILL {pid}");
    let killed_at = Instant::now();

    let out = eval
        .wait(Duration::from_secs(240))
        .unwrap_or_else(|e| panic!("{e}"));
    println!("eval finished {:?} after the kill", killed_at.elapsed());
    println!("stderr:\n{}", out.stderr);
    println!("report:\n{}", out.stdout);
    let report = common::report(&out);
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(report.len(), 16);
    let mut moved = 0;
    for e in &report {
        assert_eq!(e["status"], "pass", "{e}");
        if let Some(requeued) = e["requeued"].as_array() {
            moved += 1;
            assert_eq!(requeued[0]["engine"], e2.url.as_str(), "{e}");
            assert_eq!(e["engine"], "default", "{e}");
        }
    }
    assert!(
        moved >= 1,
        "no task was moved off the killed engine: {report:#?}"
    );
    assert!(
        out.stderr
            .contains(&format!("engine `{}` stopped answering", e2.url)),
        "{out:?}"
    );
    common::assert_nothing_left(&run_id, "on the first engine after the kill");

    // Back up, the second engine is cleaned by `sbx gc --engine`.
    drop(restart);
    let mut gc = common::sbx(None);
    gc.args(["gc", "--engine", &e2.url, "--run", &run_id]);
    let out = finish(gc, None, Duration::from_secs(120));
    println!("gc after the restart:\n{}{}", out.stdout, out.stderr);
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(labelled_at(&e2.url, &run_id), Vec::<String>::new());
}
