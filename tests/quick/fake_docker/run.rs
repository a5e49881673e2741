//! `sbx run` against the fake engine: exit codes, output and stdin passed
//! through, the exact argv, and the container removed on every path.

use super::*;

// ---------------------------------------------------------------- sbx run

#[test]
fn run_timeout_kills_client_and_removes_container() {
    let fake = Fake::new();
    let file = fake.file("sleep.sh", SLEEPER);
    let clock = Instant::now();
    let out = fake.run("t-timeout", &file, &["python:3.12-slim", "1"]);
    let elapsed = clock.elapsed();
    assert_exit(&out, 124);
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert!(elapsed >= Duration::from_millis(900), "took {elapsed:?}");
    assert!(stderr(&out).contains("timed out"), "{}", show(&out));
    let name = "sbx-t-timeout-0";
    assert_stopped_and_removed(&fake, name);
    assert_eq!(commands(&fake.calls()), ["create", "start", "rm"]);
    assert_stage_empty(&fake);
}

#[test]
fn run_exit_code_and_output_pass_through() {
    let fake = Fake::new();
    let three = fake.file(
        "three.sh",
        "#!/bin/sh\necho out-line\necho err-line >&2\nexit 3\n",
    );
    let out = fake.run("t-code", &three, &[]);
    assert_exit(&out, 3);
    assert_eq!(stdout(&out), "out-line\n");
    assert_eq!(stderr(&out), "err-line\n");
    assert_removed_after_start(&fake, "sbx-t-code-0");

    let zero = fake.file("zero.sh", "#!/bin/sh\necho fine\n");
    let out = fake.run("t-code", &zero, &[]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "fine\n");
    assert_eq!(stderr(&out), "");
    assert_eq!(
        commands(&fake.calls()),
        ["create", "start", "rm", "create", "start"]
    );
    assert_stage_empty(&fake);
}

#[test]
fn run_stdin_passes_through() {
    let fake = Fake::new();
    let file = fake.file("cat.sh", "#!/bin/sh\nexec cat\n");
    let out = fake
        .run_cmd("t-stdin", &file)
        .write_stdin("line one\nline two\n")
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "line one\nline two\n");
    // The stdin reaches the program through `create -i` and `start -a -i`.
    let calls = fake.calls();
    assert!(fake.created("sbx-t-stdin-0").interactive, "{calls:?}");
    start_of(&calls, "sbx-t-stdin-0");
}

#[test]
fn run_program_exit_125_passes_through_and_removes_container() {
    let fake = Fake::new();
    let file = fake.file(
        "fail.sh",
        "#!/bin/sh\necho 'docker: Error response from daemon: oops.' >&2\nexit 125\n",
    );
    let out = fake.run("t-125", &file, &[]);
    assert_exit(&out, 125);
    assert!(stderr(&out).contains("oops"), "{}", show(&out));
    assert_removed_after_start(&fake, "sbx-t-125-0");
}

#[test]
fn run_start_failure_gets_the_code_docker_run_gives() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let cases = [
        ("t-notfound", START_NOT_FOUND, 127),
        ("t-denied", START_DENIED, 126),
        ("t-other", START_OTHER, 125),
    ];
    for (id, message, code) in cases {
        let out = fake
            .run_cmd(id, &file)
            .env("FAKE_START_FAIL", message)
            .output()
            .expect("run sbx");
        assert_eq!(out.status.code(), Some(code), "{message}: {}", show(&out));
        // docker's line reaches the user, and nothing else ran.
        assert_eq!(stderr(&out), format!("{message}\n"), "{}", show(&out));
        assert_eq!(stdout(&out), "", "{}", show(&out));
        let name = format!("sbx-{id}-0");
        assert!(!fake.pid_file(&name).exists(), "the program ran");
        // A container that could not start stays `Created`: sbx removes it.
        assert_removed_after_start(&fake, &name);
    }
    // No docker call after the run: whether the program started at all
    // comes from each run's event stream.
    assert_eq!(
        commands(&fake.calls()),
        ["create", "start", "rm", "create", "start", "rm", "create", "start", "rm"]
    );
    assert_eq!(fake.streams().len(), 3, "{:?}", fake.all_calls());
    assert_stage_empty(&fake);
}

#[test]
fn run_program_own_stderr_and_exit_1_are_the_programs() {
    let fake = Fake::new();
    // docker's words after the program's own first line are the program's.
    let body = format!(
        "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\necho '{START_NOT_FOUND}' >&2\nexit 1\n"
    );
    let file = fake.file("own.sh", &body);
    let out = fake.run("t-own1", &file, &[]);
    assert_exit(&out, 1);
    assert_eq!(
        stderr(&out),
        format!("Traceback (most recent call last):\n{START_NOT_FOUND}\n")
    );
    assert!(
        fake.pid_file("sbx-t-own1-0").exists(),
        "the program never ran"
    );
    assert_removed_after_start(&fake, "sbx-t-own1-0");
}

#[test]
fn run_removes_the_container_only_after_a_start_that_did_not_exit_0() {
    let fake = Fake::new();
    let zero = fake.file("zero.sh", "#!/bin/sh\necho zero\n");
    let out = fake.run("t-rm0", &zero, &[]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "zero\n");
    let calls = fake.calls();
    // A clean exit 0: `--rm` removed the container, sbx calls nothing more.
    assert_eq!(commands(&calls), ["create", "start"], "{calls:?}");
    assert_eq!(calls[1], start_argv("sbx-t-rm0-0"));
    assert_not_removed(&calls, "sbx-t-rm0-0");

    let three = fake.file("three.sh", "#!/bin/sh\necho three\nexit 3\n");
    let out = fake.run("t-rm3", &three, &[]);
    assert_exit(&out, 3);
    assert_eq!(stdout(&out), "three\n");
    let calls = fake.calls();
    assert_eq!(
        commands(&calls),
        ["create", "start", "create", "start", "rm"],
        "{calls:?}"
    );
    assert_eq!(calls[4], rm_argv("sbx-t-rm3-0"));
    assert_removed_after_start(&fake, "sbx-t-rm3-0");
    assert_eq!(fake.removed(), ["sbx-t-rm3-0"]);
    assert_stage_empty(&fake);
}

#[test]
fn run_exact_argv() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", "#!/bin/sh\nexit 0\n");
    let out = fake
        .run_cmd("t-argv", &file)
        .write_stdin("")
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let calls = fake.calls();
    // The create is the image check: no `image inspect`, and a clean exit 0
    // needs no `rm` (`--rm` removed the container).
    assert_eq!(commands(&calls), ["create", "start"], "{calls:?}");
    let create = &calls[0];

    let staged = staged(create);
    assert!(
        staged.starts_with(fake.tmp()),
        "{staged:?} is not under TMPDIR"
    );
    assert_ne!(staged, file);
    let stage_dir = staged.parent().and_then(Path::parent).expect("stage dir");
    assert!(
        stage_dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .starts_with("sbx-"),
        "{staged:?}"
    );
    assert_eq!(stage_dir.parent(), Some(fake.tmp().as_path()));
    let volume = format!("{}:/work/task:ro", staged.display());
    let expected: Vec<&str> = vec![
        "create",
        "--rm",
        "-i",
        "--name",
        "sbx-t-argv-0",
        "--label",
        "sbx.run=t-argv",
        "--log-driver",
        "none",
        "--pull",
        "never",
        "--network",
        "none",
        "--read-only",
        "--tmpfs",
        "/tmp:rw,noexec,nosuid,size=64m",
        "--memory",
        "256m",
        "--cpus",
        "0.5",
        "--pids-limit",
        "64",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "-v",
        &volume,
        "--",
        "python:3.12-slim",
        "/work/task",
    ];
    assert_eq!(create, &expected);
    assert!(!create.iter().any(|a| a == "-t" || a == "--tty"));
    assert_eq!(calls[1], ["start", "-a", "-i", "--", "sbx-t-argv-0"]);
    // What the fake engine saw matches.
    let created = fake.created("sbx-t-argv-0");
    assert_eq!(created.staged, staged);
    assert!(created.interpreter.is_empty(), "{created:?}");
    assert!(created.interactive, "{created:?}");
    // sbx leaves nothing staged.
    assert_stage_empty(&fake);
}

#[test]
fn run_limits_reach_the_argv() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", "#!/bin/sh\nexit 0\n");
    let out = fake
        .sbx("t-limits")
        .args(["run", "--memory", "512m", "--cpus", "1.5"])
        .args(["--pids-limit", "32", "--tmpfs-size", "16m"])
        .args(["--network", "bridge", "--image", "busybox"])
        .arg(&file)
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let calls = fake.calls();
    let create = only_create(&calls);
    assert_eq!(after(create, "--memory"), "512m");
    assert_eq!(after(create, "--cpus"), "1.5");
    assert_eq!(after(create, "--pids-limit"), "32");
    assert_eq!(after(create, "--tmpfs"), "/tmp:rw,noexec,nosuid,size=16m");
    assert_eq!(after(create, "--network"), "bridge");
    assert_eq!(&create[create.len() - 3..], ["--", "busybox", "/work/task"]);
    // The limits are the create's business: the start only names the container.
    assert_eq!(calls_of(&calls, "start"), [&start_argv("sbx-t-limits-0")]);
}

#[test]
fn run_print_argv_prints_json_and_runs_nothing() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", "#!/bin/sh\necho hi\n");
    let out = fake
        .sbx("t-print")
        .arg("run")
        .arg("--print-argv")
        .arg(&file)
        .arg("busybox:1.36")
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    let argv: Vec<String> = serde_json::from_str(&text).expect("a JSON list of strings");
    assert_eq!(argv[0], fake.docker().to_str().expect("utf-8"));
    assert_eq!(argv[1], "run");
    let dashes = argv
        .iter()
        .position(|a| a == "--")
        .expect("`--` in the argv");
    assert_eq!(argv[dashes + 1], "busybox:1.36");
    assert_eq!(argv.last().map(String::as_str), Some("/work/task"));
    assert_eq!(after(&argv, "--name"), "sbx-t-print-0");
    // The staged copy it names is kept, holds the file, and is not the file.
    let staged = staged(&argv);
    assert_ne!(staged, file);
    assert_eq!(
        fs::read(&staged).expect("staged copy kept"),
        b"#!/bin/sh\necho hi\n"
    );
    let calls = fake.calls();
    assert!(calls.is_empty(), "--print-argv ran something: {calls:?}");

    // It is the create of a real run with `create` replaced by `run` (the
    // staging directory differs from one session to the next).
    let out = fake.run("t-print", &file, &["busybox:1.36"]);
    assert_exit(&out, 0);
    let calls = fake.calls();
    let create = only_create(&calls);
    let without_volume = |args: &[String]| -> Vec<String> {
        let v = args.iter().position(|a| a == "-v").expect("-v") + 1;
        let mut args = args.to_vec();
        args[v] = "VOLUME".into();
        args
    };
    let mut printed = without_volume(&argv[1..]);
    printed[0] = "create".into();
    assert_eq!(printed, without_volume(create));
}

#[test]
fn run_odd_file_paths() {
    let fake = Fake::new();
    let body = "#!/bin/sh\necho odd-ok\n";
    let mut paths: Vec<PathBuf> = ["colon:dir", "comma,dir", "space dir", "a:b,c d"]
        .iter()
        .map(|d| fake.file(Path::new(d).join("x:y,z w.sh"), body))
        .collect();
    let non_utf8 = fake
        .root()
        .join(OsStr::from_bytes(b"bytes\xff\xfe dir"))
        .join(OsStr::from_bytes(b"f\xff.sh"));
    fs::create_dir_all(non_utf8.parent().expect("parent")).expect("mkdir");
    fs::write(&non_utf8, body).expect("write");
    paths.push(non_utf8);

    for (i, path) in paths.iter().enumerate() {
        let id = format!("t-odd{i}");
        let out = fake.run(&id, path, &[]);
        assert_eq!(out.status.code(), Some(0), "{path:?}: {}", show(&out));
        assert_eq!(stdout(&out), "odd-ok\n", "{path:?}");
        let calls = fake.calls();
        let name = format!("sbx-{id}-0");
        let create = &calls[create_of(&calls, &name)];
        let staged = staged(create);
        assert!(staged.starts_with(fake.tmp()), "{staged:?}");
        let volume = after(create, "-v");
        assert_eq!(volume.matches(':').count(), 2, "{volume}");
        assert!(!volume.contains(','), "{volume}");
        assert!(!volume.contains(' '), "{volume}");
        assert_eq!(fake.created(&name).staged, staged);
        start_of(&calls, &name);
    }
    // No argument of any call carries a user path (compared as bytes).
    let log = fake.raw_log();
    for path in &paths {
        let user = path.as_os_str().as_bytes();
        assert!(
            !log.windows(user.len()).any(|w| w == user),
            "{path:?} reached the docker argv"
        );
        let dir = path.parent().expect("dir").file_name().expect("name");
        let dir = dir.as_bytes();
        assert!(
            !log.windows(dir.len()).any(|w| w == dir),
            "{path:?} reached the docker argv"
        );
    }
}

#[test]
fn run_missing_file_is_64_with_the_seed_message() {
    let fake = Fake::new();
    let missing = fake.root().join("nope.py");
    let out = fake.run("t-missing", &missing, &[]);
    assert_exit(&out, 64);
    assert_eq!(
        stderr(&out),
        format!("No such file: {}\n", missing.display())
    );
    assert_eq!(stdout(&out), "");
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());

    let dir = fake.root().join("a-dir");
    fs::create_dir(&dir).expect("mkdir");
    let out = fake.run("t-missing", &dir, &[]);
    assert_exit(&out, 64);
    assert_eq!(stderr(&out), format!("No such file: {}\n", dir.display()));
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
}

#[test]
fn run_refuses_bad_arguments_before_running_anything() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let f = file.to_str().expect("utf-8");
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", f, "--", "--privileged"],
        vec!["run", f, "--privileged"],
        vec!["run", "--memory", "1g,exec", f],
        vec!["run", "--tmpfs-size", "64m,exec", f],
        vec!["run", "--network", "container:x", f],
        vec!["run", "--image", "-v=/:/host", f],
        vec!["run", f, "img:1", "--image", "img:2"],
        vec!["run", "--interpreter", "--x", f],
    ];
    for args in cases {
        let out = fake.sbx("t-bad").args(&args).output().expect("run sbx");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", show(&out));
        assert!(!stdout(&out).contains("ran"), "{args:?}");
        assert!(
            fake.calls().is_empty(),
            "{args:?} called docker: {:?}",
            fake.calls()
        );
    }
    // A TIMEOUT that GNU timeout refuses: its code, 125, as the script.
    for args in [
        vec!["run", f, "python:3.12-slim", "-1"],
        vec!["run", f, "python:3.12-slim", "abc"],
        vec!["run", "--timeout=-1", f],
    ] {
        let out = fake.sbx("t-bad").args(&args).output().expect("run sbx");
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", show(&out));
        assert!(fake.calls().is_empty(), "{args:?}: {:?}", fake.calls());
    }
}

#[test]
fn run_docker_cli_missing_is_127() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .run_cmd("t-nodocker", &file)
        .env("SBX_DOCKER", "/nonexistent/docker")
        .output()
        .expect("run sbx");
    assert_exit(&out, 127);
    let err = one_line_error(&out);
    assert!(err.ends_with('\n'), "{err}");
    assert!(err.contains("docker"), "{err}");
    assert!(err.contains("/nonexistent/docker"), "{err}");
}

#[test]
fn run_daemon_down_is_125_one_line() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .run_cmd("t-down", &file)
        .env("FAKE_DAEMON", "down")
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    let err = one_line_error(&out);
    assert!(err.contains("Cannot connect to the Docker daemon"), "{err}");
    // The failed create is the only call: no pull, no start.
    let calls = fake.calls();
    assert_eq!(commands(&calls), ["create"], "{calls:?}");
}

#[test]
fn run_image_missing_with_pull_never_is_125_without_pull_or_run() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .sbx("t-never")
        .env("FAKE_IMAGE", "missing")
        .args(["run", "--pull", "never"])
        .arg(&file)
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    let err = one_line_error(&out);
    assert!(err.contains("python:3.12-slim"), "{err}");
    // The create is the image check; it fails, and nothing follows it.
    let calls = fake.calls();
    assert_eq!(commands(&calls), ["create"], "{calls:?}");
    assert_eq!(after(&calls[0], "--pull"), "never");
}

#[test]
fn run_image_missing_is_pulled_before_the_run() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .run_cmd("t-pull", &file)
        .env("FAKE_IMAGE", "missing")
        .arg("busybox:1.36")
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "ran\n");
    let calls = fake.calls();
    // create (no such image), pull, the same create again, start.
    assert_eq!(
        commands(&calls),
        ["create", "pull", "create", "start"],
        "{calls:?}"
    );
    assert_eq!(calls[1], ["pull", "--", "busybox:1.36"], "{calls:?}");
    assert_eq!(calls[0], calls[2], "the second create differs");
    assert_eq!(after(&calls[0], "--name"), "sbx-t-pull-0");
    assert_eq!(calls[3], start_argv("sbx-t-pull-0"));
}

#[test]
fn run_pull_failure_is_125_without_run() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    let out = fake
        .run_cmd("t-pullfail", &file)
        .env("FAKE_IMAGE", "missing")
        .env("FAKE_PULL", "fail")
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    assert!(
        stderr(&out).contains("pull access denied"),
        "{}",
        show(&out)
    );
    assert_eq!(stdout(&out), "");
    let calls = fake.calls();
    assert_eq!(commands(&calls), ["create", "pull"], "{calls:?}");
}

#[test]
fn run_without_shebang_needs_an_interpreter() {
    let fake = Fake::new();
    let file = fake.file("plain.py", "echo from-plain\n");
    let out = fake.run("t-interp", &file, &[]);
    assert_exit(&out, 126);
    assert!(stderr(&out).contains("--interpreter"), "{}", show(&out));
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());

    let out = fake
        .sbx("t-interp")
        .args(["run", "--interpreter", "python3"])
        .arg(&file)
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "from-plain\n");
    let calls = fake.calls();
    let create = only_create(&calls);
    assert_eq!(
        &create[create.len() - 4..],
        ["--", "python:3.12-slim", "python3", "/work/task"]
    );
    assert_eq!(fake.created("sbx-t-interp-0").interpreter, ["python3"]);
    assert_eq!(calls_of(&calls, "start"), [&start_argv("sbx-t-interp-0")]);
}

fn run_interrupted_by(signal: &str, code: i32, run_id: &str) {
    let fake = Fake::new();
    let file = fake.file("sleep.sh", SLEEPER);
    let mut sbx = spawn(
        fake.sbx_std(run_id)
            .arg("run")
            .arg(&file)
            .arg("python:3.12-slim")
            .arg("15"),
        Stdio::null(),
        fake.stderr_file(),
    );
    let name = format!("sbx-{run_id}-0");
    assert!(
        wait_for(&fake.pid_file(&name), Duration::from_secs(5)),
        "the fake start never ran the program: {:?}",
        fake.calls()
    );
    let pid = fake.pid(&name);
    assert!(alive(pid));
    let (status, elapsed) = sbx.stop(signal, Duration::from_secs(5));
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    let err = fake.stderr_text();
    assert_eq!(status.code(), Some(code), "stderr: {err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_gone(pid);
    assert_removed_after_start(&fake, &name);
    assert_eq!(commands(&fake.calls()), ["create", "start", "rm"]);
    assert_stage_empty(&fake);
}

#[test]
fn run_sigterm_kills_client_removes_container_exits_143() {
    run_interrupted_by("-TERM", 143, "t-sigterm");
}

#[test]
fn run_sigint_kills_client_removes_container_exits_130() {
    run_interrupted_by("-INT", 130, "t-sigint");
}
