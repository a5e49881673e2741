//! Signals before and during a run, and a closed stderr: sbx stops what it
//! started, leaves nothing, and exits as documented.

use super::*;

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
