//! One eval spread over two real engines: the first (the current context,
//! named `default` on the command line) and a second dockerd on loopback
//! started by `scripts/second-engine.sh` (see `common::second`). Nothing is
//! pulled, nothing leaves loopback; each test removes what it made on both
//! engines and asserts that sbx left nothing.
//!
//! The kill test (the second engine SIGKILLed mid-eval) is in
//! `engine_kill.rs`: it needs the second engine to itself.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use common::second::{self, at, baked_at, labelled_at, CleanupAt};
use common::{finish, report, Cleanup, Out, BUSYBOX, PYTHON};

const LIMIT: Duration = Duration::from_secs(180);

struct Run {
    _here: Cleanup,
    _there: CleanupAt,
    id: String,
    dir: tempfile::TempDir,
    e2: String,
}

impl Run {
    fn new(test: &str) -> Run {
        let e2 = second::engine2().url;
        let id = common::run_id("e", test);
        Run {
            _here: Cleanup::new(&[&id]),
            _there: CleanupAt {
                hosts: vec![e2.clone()],
                run_id: id.clone(),
            },
            dir: tempfile::Builder::new()
                .prefix("sbx-engines-")
                .tempdir()
                .expect("scratch folder"),
            id,
            e2,
        }
    }

    fn file(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.dir.path().join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, content).expect("write");
        path
    }

    /// `sbx eval` over `tasks` and `gen/`, with `--pull never` and `extra`.
    fn eval_with(&self, docker: Option<&Path>, tasks: &Value, extra: &[&str]) -> Out {
        finish(self.eval_cmd(docker, tasks, extra), None, LIMIT)
    }

    /// `sbx eval` over `tasks` and `gen/`, busybox, `--pull never`, `extra`.
    fn eval_cmd(&self, docker: Option<&Path>, tasks: &Value, extra: &[&str]) -> Command {
        let tasks_file = self.file("tasks.json", &tasks.to_string());
        let mut cmd: Command = common::sbx(Some(&self.id));
        if let Some(docker) = docker {
            cmd.env("SBX_DOCKER", docker);
        }
        cmd.arg("eval")
            .arg("--tasks")
            .arg(tasks_file)
            .arg("--gen")
            .arg(self.dir.path().join("gen"))
            .args(["--image", BUSYBOX, "--pull", "never"])
            .args(extra);
        cmd
    }

    fn eval(&self, tasks: &Value, extra: &[&str]) -> Out {
        self.eval_with(None, tasks, extra)
    }

    /// Nothing of this run on either engine: no container, no baked image.
    fn assert_clean(&self) {
        common::assert_nothing_left(&self.id, "");
        let here = common::docker(&second::BAKED_LS);
        assert_eq!(
            second::baked_of(&here.stdout, &self.id),
            Vec::<String>::new()
        );
        assert_eq!(labelled_at(&self.e2, &self.id), Vec::<String>::new());
        assert_eq!(baked_at(&self.e2, &self.id), Vec::<String>::new());
    }
}

/// SIGINT to a running eval, which must stop with 130.
fn interrupt(eval: common::Running) {
    let sent = Command::new("kill")
        .args(["-INT", &eval.pid().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let out = eval.wait(LIMIT).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.code(), 130, "{out:?}");
}

/// `(id, status, reason, exit_code)` of each entry, in order.
fn verdicts(report: &[Value]) -> Vec<(String, String, String, Value)> {
    report
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("id"), s("status"), s("reason"), e["exit_code"].clone())
        })
        .collect()
}

/// A mixed suite: pass, stdin, wrong output, exit code, timeout, missing,
/// and a Python task with stdin.
fn mixed_suite(run: &Run) -> Value {
    run.file("gen/pass.sh", "echo ok\n");
    run.file("gen/echo.sh", "exec cat\n");
    run.file("gen/wrong.sh", "echo wrong\n");
    run.file("gen/exit.sh", "echo oops >&2\nexit 3\n");
    run.file("gen/slow.sh", "while :; do :; done\n");
    run.file(
        "gen/sum.py",
        "import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))\n",
    );
    json!([
        {"id": "pass", "stdin": "", "expect": "ok\n", "timeout": 30},
        {"id": "echo", "stdin": "line one\nline two\n", "expect": "line one\nline two\n", "timeout": 30},
        {"id": "wrong", "stdin": "", "expect": "right\n", "timeout": 30},
        {"id": "exit", "stdin": "", "expect": "", "timeout": 30},
        {"id": "slow", "stdin": "", "expect": "", "timeout": 2},
        {"id": "missing", "stdin": "", "expect": "x\n"},
        {"id": "sum", "stdin": "1 2 3 4\n", "expect": "10\n", "timeout": 30, "image": PYTHON},
    ])
}

fn expected_mixed() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        ("pass", "pass", ""),
        ("echo", "pass", ""),
        ("wrong", "fail", "wrong_output"),
        ("exit", "fail", "exit_code"),
        ("slow", "fail", "timeout"),
        ("missing", "missing", "no_candidate"),
        ("sum", "pass", ""),
    ]
}

fn short(v: &[(String, String, String, Value)]) -> Vec<(&str, &str, &str)> {
    v.iter()
        .map(|(i, s, r, _)| (i.as_str(), s.as_str(), r.as_str()))
        .collect()
}

#[test]
fn two_engines_give_the_same_report_as_one() {
    let run = Run::new("same-report");
    let tasks = mixed_suite(&run);
    let one = run.eval(&tasks, &["-j", "4"]);
    assert_eq!(one.code(), 1, "{one:?}");
    let two = run.eval(
        &tasks,
        &[
            "--engine",
            "default,jobs=2",
            "--engine",
            &format!("{},jobs=2", run.e2),
        ],
    );
    assert_eq!(two.code(), 1, "{two:?}");
    let (one, two) = (report(&one), report(&two));
    assert_eq!(short(&verdicts(&one)), expected_mixed(), "{one:#?}");
    // Same statuses, reasons, exit codes and order on two engines as on one.
    assert_eq!(
        verdicts(&one),
        verdicts(&two),
        "one: {one:#?}\ntwo: {two:#?}"
    );
    // Every run entry names its engine, and both engines ran tasks.
    let engines: Vec<&str> = two
        .iter()
        .filter(|e| e["status"] != "missing")
        .map(|e| {
            e["engine"]
                .as_str()
                .unwrap_or_else(|| panic!("no engine: {e}"))
        })
        .collect();
    assert!(engines.contains(&"default"), "{engines:?}");
    assert!(engines.contains(&run.e2.as_str()), "{engines:?}");
    assert!(one.iter().all(|e| e.get("engine").is_none()), "{one:#?}");
    run.assert_clean();
}

#[test]
fn the_three_isolate_modes_on_two_engines_judge_alike() {
    let run = Run::new("isolate-modes");
    let tasks = mixed_suite(&run);
    for mode in ["case", "candidate", "worker"] {
        let two = run.eval(
            &tasks,
            &[
                "--isolate",
                mode,
                "--engine",
                "default,jobs=2",
                "--engine",
                &format!("{},jobs=2", run.e2),
            ],
        );
        assert_eq!(two.code(), 1, "{mode}: {two:?}");
        assert!(!two.stderr.contains("instead of"), "no fallback: {two:?}");
        let two = report(&two);
        assert_eq!(short(&verdicts(&two)), expected_mixed(), "{mode}: {two:#?}");
        assert_eq!(verdicts(&two)[3].3, 3, "{mode}: exit code of `exit`");
        let engines: Vec<&str> = two.iter().filter_map(|e| e["engine"].as_str()).collect();
        assert!(engines.contains(&"default"), "{mode}: {engines:?}");
        assert!(engines.contains(&run.e2.as_str()), "{mode}: {engines:?}");
        for e in two.iter().filter(|e| e["status"] != "missing") {
            // Every mode counts CPU time (case mode by its supervisor).
            assert!(e.get("cpu_ms").is_some(), "{mode}: {e}");
        }
    }
    run.assert_clean();
}

#[test]
fn runner_images_hold_only_the_runner() {
    let run = Run::new("runner-image");
    let tasks = mixed_suite(&run);
    let log = run.dir.path().join("calls.log");
    let shim = run.file(
        "docker-shim",
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec docker \"$@\"\n",
            log.display()
        ),
    );
    fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = run.eval_with(
        Some(&shim),
        &tasks,
        &[
            "--isolate",
            "worker",
            "--engine",
            &format!("{},jobs=2", run.e2),
            "--deliver",
            "image",
        ],
    );
    assert_eq!(out.code(), 1, "{out:?}");
    assert_eq!(short(&verdicts(&report(&out))), expected_mixed());
    let calls = fs::read_to_string(&log).expect("calls log");
    let creates: Vec<&str> = calls.lines().filter(|l| l.contains(" create ")).collect();
    // Two workers, each one container per image (busybox, python) at most.
    assert!(!creates.is_empty() && creates.len() <= 4, "{calls}");
    for create in &creates {
        assert!(!create.contains(" -v "), "{create}");
        assert!(create.contains("--entrypoint /.sbx/sbx"), "{create}");
        assert!(
            create.contains(&format!(" -- sbx-deliver:{}-", run.id)),
            "{create}"
        );
    }
    // Each build's context is the runner's own directory: its Dockerfile
    // copies the runner and nothing else (no candidate reaches an image).
    let builds: Vec<&str> = calls.lines().filter(|l| l.contains(" build ")).collect();
    assert_eq!(builds.len(), 2, "{calls}");
    for build in builds {
        assert!(build.ends_with("/runner"), "{build}");
    }
    run.assert_clean();
}

#[test]
fn deliver_image_runs_without_a_bind_mount_and_judges_alike() {
    let run = Run::new("deliver-image");
    let tasks = mixed_suite(&run);
    // A docker that logs each call's argv, one line each, then is docker.
    let log = run.dir.path().join("calls.log");
    let shim = run.file(
        "docker-shim",
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec docker \"$@\"\n",
            log.display()
        ),
    );
    fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = run.eval_with(
        Some(&shim),
        &tasks,
        &[
            "--engine",
            &format!("{},jobs=3", run.e2),
            "--deliver",
            "image",
            // A runner container per candidate: six creates to count.
            "--isolate",
            "candidate",
        ],
    );
    assert_eq!(out.code(), 1, "{out:?}");
    let report = report(&out);
    assert_eq!(short(&verdicts(&report)), expected_mixed(), "{report:#?}");
    for e in report.iter().filter(|e| e["status"] != "missing") {
        assert_eq!(e["engine"], run.e2.as_str(), "{e}");
    }
    let calls = fs::read_to_string(&log).expect("calls log");
    let creates: Vec<&str> = calls.lines().filter(|l| l.contains(" create ")).collect();
    assert_eq!(creates.len(), 6, "{calls}");
    for create in &creates {
        assert!(
            create.starts_with(&format!("--host {} create ", run.e2)),
            "{create}"
        );
        assert!(
            !create.contains(" -v "),
            "a bind mount in image delivery: {create}"
        );
        assert!(!create.contains("/work/task:ro"), "{create}");
        assert!(
            create.contains(&format!(" -- sbx-deliver:{}-", run.id)),
            "{create}"
        );
        // The hardening flags are the same as with a bind mount.
        for flag in [
            "--network none",
            "--read-only",
            "--cap-drop ALL",
            "--security-opt no-new-privileges",
            "--pids-limit",
            "--memory",
            "--log-driver none",
            "--pull never",
        ] {
            assert!(create.contains(flag), "{flag} missing: {create}");
        }
    }
    // One bake per task image (busybox, python), each removed at the end.
    let builds = calls.lines().filter(|l| l.contains(" build ")).count();
    assert_eq!(builds, 2, "{calls}");
    run.assert_clean();
}

#[test]
fn an_engine_without_the_image_is_reported_and_skipped() {
    let run = Run::new("no-image");
    let only_here = format!("sbx-only-here:{}", std::process::id());
    common::docker(&["tag", BUSYBOX, &only_here]);
    struct Untag(String);
    impl Drop for Untag {
        fn drop(&mut self) {
            let _ = common::try_docker(&["rmi", &self.0]);
        }
    }
    let _untag = Untag(only_here.clone());
    for i in 0..4 {
        run.file(&format!("gen/t{i}.sh"), "echo ok\n");
    }
    let tasks: Vec<Value> = (0..4)
        .map(|i| json!({"id": format!("t{i}"), "stdin": "", "expect": "ok\n", "timeout": 30, "image": only_here}))
        .collect();
    let out = run.eval(
        &Value::Array(tasks),
        &["--engine", "default", "--engine", &run.e2],
    );
    assert_eq!(out.code(), 0, "{out:?}");
    for e in report(&out) {
        assert_eq!(e["status"], "pass", "{e}");
        assert_eq!(e["engine"], "default", "{e}");
    }
    assert!(
        out.stderr.contains(&format!(
            "engine `{}` cannot run tasks of image `{only_here}`",
            run.e2
        )),
        "{out:?}"
    );
    run.assert_clean();
}

#[test]
fn gc_engine_cleans_that_engine_only() {
    let run = Run::new("gc-engine");
    let name = format!("sbx-{}-planted", run.id);
    let label = format!("sbx.run={}", run.id);
    for host in [None, Some(run.e2.as_str())] {
        let args = [
            "create", "--label", &label, "--name", &name, BUSYBOX, "true",
        ];
        match host {
            None => {
                common::docker(&args);
            }
            Some(h) => {
                at(h, &args);
            }
        }
    }
    // A baked image of this run on the second engine, as a killed eval leaves it.
    let ctx = run.dir.path().join("ctx");
    fs::create_dir_all(&ctx).expect("ctx");
    fs::write(ctx.join("Dockerfile"), format!("FROM {BUSYBOX}\n")).expect("Dockerfile");
    let tag = format!("sbx-deliver:{}-0", run.id);
    let ctx_str = ctx.to_str().expect("utf-8 path");
    at(
        &run.e2,
        &[
            "build",
            "--quiet",
            "--label",
            &label,
            "--label",
            &format!("sbx.bake={tag}"),
            "--tag",
            &tag,
            ctx_str,
        ],
    );
    assert_eq!(baked_at(&run.e2, &run.id), std::slice::from_ref(&tag));

    let mut cmd = common::sbx(None);
    cmd.args(["gc", "--engine", &run.e2, "--run", &run.id]);
    let out = finish(cmd, None, LIMIT);
    assert_eq!(out.code(), 0, "{out:?}");
    assert!(out.stdout.contains(&tag), "{out:?}");
    assert_eq!(labelled_at(&run.e2, &run.id), Vec::<String>::new());
    assert_eq!(baked_at(&run.e2, &run.id), Vec::<String>::new());
    // The first engine was not touched.
    assert_eq!(common::labelled(&run.id).len(), 1);
}

#[test]
fn run_on_the_second_engine_with_image_delivery() {
    let run = Run::new("run-image");
    let file = run.file("echo.sh", "#!/bin/sh\ncat\necho done >&2\nexit 3\n");
    let sbx_run = |extra: &[&str], stdin: Option<Vec<u8>>| {
        let mut cmd = common::sbx(Some(&run.id));
        cmd.arg("run")
            .arg(&file)
            .args([BUSYBOX, "5", "--pull", "never", "--engine", &run.e2])
            .args(["--deliver", "image"])
            .args(extra);
        finish(cmd, stdin, LIMIT)
    };
    // stdin in, stdout and stderr out, the exit code through.
    let out = sbx_run(&[], Some(b"from stdin\n".to_vec()));
    assert_eq!(out.code(), 3, "{out:?}");
    assert_eq!(out.stdout, "from stdin\n", "{out:?}");
    assert!(out.stderr.contains("done"), "{out:?}");
    run.assert_clean();

    // The argv: the engine's --host, no bind mount, the baked image, the
    // candidate at its place in it; the image is kept for it, then gc'd.
    let out = sbx_run(&["--print-argv"], None);
    assert_eq!(out.code(), 0, "{out:?}");
    let argv: Vec<String> = serde_json::from_str(out.stdout.trim()).expect("argv JSON");
    assert_eq!(
        argv[..4],
        ["docker", "--host", run.e2.as_str(), "run"],
        "{argv:?}"
    );
    assert!(
        !argv
            .iter()
            .any(|a| a == "-v" || a.contains("/work/task:ro")),
        "{argv:?}"
    );
    let image = &argv[argv.iter().position(|a| a == "--").expect("--") + 1];
    assert!(
        image.starts_with(&format!("sbx-deliver:{}-", run.id)),
        "{argv:?}"
    );
    assert_eq!(argv.last().map(String::as_str), Some("/work/tasks/task-0"));
    assert_eq!(baked_at(&run.e2, &run.id), std::slice::from_ref(image));
    let mut gc = common::sbx(None);
    gc.args(["gc", "--engine", &run.e2, "--run", &run.id]);
    assert_eq!(finish(gc, None, LIMIT).code(), 0);

    // A timeout on the second engine: 124, nothing left there.
    let spin = run.file("spin.sh", "#!/bin/sh\nwhile :; do :; done\n");
    let mut cmd = common::sbx(Some(&run.id));
    cmd.arg("run")
        .arg(&spin)
        .args([BUSYBOX, "2", "--pull", "never", "--engine", &run.e2]);
    let out = finish(cmd, None, LIMIT);
    assert_eq!(out.code(), 124, "{out:?}");
    run.assert_clean();
}

#[test]
fn sigint_stops_a_two_engine_eval_and_cleans_both() {
    let run = Run::new("sigint-two");
    let mut tasks = Vec::new();
    for i in 0..6 {
        run.file(&format!("gen/spin{i}.sh"), "while :; do :; done\n");
        tasks.push(json!({"id": format!("spin{i}"), "stdin": "", "expect": "", "timeout": 120}));
    }
    let e2 = format!("{},jobs=2", run.e2);
    let cmd = run.eval_cmd(
        None,
        &Value::Array(tasks),
        &[
            "--engine",
            "default,jobs=2",
            "--engine",
            &e2,
            "--deliver",
            "image",
        ],
    );
    let eval = common::start(cmd, None);
    // Both engines are running tasks of this eval (running: a bake's
    // intermediate containers carry the label too, but never run).
    let filter = common::label_filter(&run.id);
    let running = ["--filter", filter.as_str(), "--filter", "status=running"];
    let running_there = || {
        let mut args = vec!["ps", "-q"];
        args.extend(running);
        at(&run.e2, &args).stdout.split_whitespace().count()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while common::ps(&running).is_empty() || running_there() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "both engines never ran tasks"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    interrupt(eval);
    run.assert_clean();
}

#[test]
fn sigint_while_baking_leaves_no_image_on_either_engine() {
    let run = Run::new("sigint-bake");
    for i in 0..4 {
        run.file(&format!("gen/t{i}.py"), "print('ok')\n");
    }
    let tasks: Vec<Value> = (0..4)
        .map(|i| json!({"id": format!("t{i}"), "stdin": "", "expect": "ok\n", "timeout": 30, "image": PYTHON}))
        .collect();
    let cmd = run.eval_cmd(
        None,
        &Value::Array(tasks),
        &[
            "--engine",
            "default",
            "--engine",
            &run.e2,
            "--deliver",
            "image",
        ],
    );
    let eval = common::start(cmd, None);
    // Baking the Python image takes seconds: the signal lands in it (or,
    // on a fast machine, just after); either way nothing may stay.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while common::labelled(&run.id).is_empty() && labelled_at(&run.e2, &run.id).is_empty() {
        assert!(std::time::Instant::now() < deadline, "no bake started");
        std::thread::sleep(Duration::from_millis(20));
    }
    interrupt(eval);
    run.assert_clean();
}
