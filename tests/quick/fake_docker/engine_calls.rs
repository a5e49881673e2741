//! The docker processes sbx starts: one event stream per engine, kills
//! that reach the process group, the open-file limit, how many calls a task
//! costs, and a refused removal asked again.

use super::*;

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
    // still there?), and per eval: the context, the image, the engine's
    // architecture (can sbx run there, as the `--supervise` wrapper of case
    // containers?), one event stream, the final sweep of the run's label.
    let mut per_eval = commands(&calls);
    per_eval.retain(|c| !matches!(*c, "create" | "start" | "rm"));
    per_eval.sort_unstable();
    assert_eq!(
        per_eval,
        ["context", "events", "image", "ps", "version", "version", "version", "version"],
        "{calls:?}"
    );
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
