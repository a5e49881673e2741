//! What a hostile or careless candidate, user or engine can hand sbx: odd
//! regexes, bytes, file names, planted symlinks, labels, FIFOs, huge values
//! and candidates, each refused or survived with the documented exit code.

use super::*;

// ------------------------------------------------ faults found in review

#[test]
fn eval_regex_expectation_cannot_escape_its_anchoring() {
    let fake = Fake::new();
    fake.candidate("wrong", "echo 'a completely wrong answer'\n");
    // Wrapped as text, `expected)|(.*` closed sbx's group and matched
    // anything: a wrong pass. Parsed on its own, it is not a regex.
    let tasks = json!([
        {"id": "wrong", "prompt": "p", "stdin": "", "expect": "expected)|(.*", "compare": "regex"}
    ]);
    let out = fake
        .eval("t-regex-escape", &tasks)
        .output()
        .expect("run sbx");
    assert_one_line_error(&out, 2, "invalid regex");
    // A top-level alternation is anchored as a whole.
    let tasks = json!([
        {"id": "wrong", "prompt": "p", "stdin": "", "expect": "expected|(.*)right", "compare": "regex"}
    ]);
    let out = fake
        .eval("t-regex-escape", &tasks)
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    assert_verdict(&report(&out)[0], "fail", "wrong_output");
}

#[test]
fn eval_verbose_regex_may_end_in_a_comment() {
    let fake = Fake::new();
    fake.candidate("hello", "echo 'hello 42'\n");
    let tasks = json!([
        {"id": "hello", "prompt": "p", "stdin": "", "expect": "(?x) hello \\s \\d+ \\n  # a greeting", "compare": "regex"}
    ]);
    let out = fake.eval("t-regex-x", &tasks).output().expect("run sbx");
    assert_exit(&out, 0);
    assert_verdict(&report(&out)[0], "pass", "");
}

#[test]
fn eval_compares_bytes_not_their_lossy_decoding() {
    let fake = Fake::new();
    // The byte 0xff is not U+FFFD, which a lossy decoding turns it into.
    fake.candidate("ff", "printf '\\377\\n'\n");
    fake.candidate("fffd", "printf '\\357\\277\\275\\n'\n");
    let tasks = json!([task("ff", "", "\u{fffd}\n"), task("fffd", "", "\u{fffd}\n")]);
    let out = fake.eval("t-bytes", &tasks).output().expect("run sbx");
    assert_exit(&out, 1);
    let results = report(&out);
    assert_verdict(result_of(&results, "ff"), "fail", "wrong_output");
    assert_verdict(result_of(&results, "fffd"), "pass", "");
}

/// Whether python3's XML parser accepts `path`; `Err` with its message.
fn parse_xml(path: &Path) -> Result<(), String> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])",
        ])
        .arg(path)
        .output()
        .expect("python3 must be installed for this test");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn eval_junit_stays_well_formed_xml_whatever_a_candidate_writes() {
    let fake = Fake::new();
    // U+FFFF, U+FFFE, a C0 control, an invalid byte (lossy: U+FFFD, which
    // XML allows), then exit 1: a failure whose stderr goes into the XML.
    fake.candidate(
        "odd",
        "printf 'a\\357\\277\\277b\\357\\277\\276c\\001d\\377e\\n' >&2\nprintf '\\357\\277\\277\\n'\nexit 1\n",
    );
    fake.candidate("wrong", "printf 'x\\357\\277\\277\\033y\\n'\n");
    let tasks = json!([task("odd", "", ""), task("wrong", "", "z\n")]);
    let junit = fake.root().join("junit.xml");
    let out = fake
        .eval("t-junit-xml", &tasks)
        .arg("--junit")
        .arg(&junit)
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    if let Err(e) = parse_xml(&junit) {
        panic!(
            "--junit wrote XML that does not parse: {e}\n{}",
            String::from_utf8_lossy(&fs::read(&junit).unwrap_or_default())
        );
    }
}

#[test]
fn run_lock_never_writes_through_a_planted_symlink() {
    let fake = Fake::new();
    let file = fake.file("ran.sh", PRINTS_RAN);
    let victim = fake.file("victim", "precious\n");
    let id = "t-lock-link";
    // Anyone can create the shared `<tmp>/sbx-runs` first and plant a link
    // there: sbx used it and truncated the file the link points to.
    let shared = fake.tmp().join("sbx-runs");
    fs::create_dir(&shared).expect("shared dir");
    std::os::unix::fs::symlink(&victim, shared.join(format!("{id}.lock"))).expect("plant");
    let out = fake.run(id, &file, &[]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "ran\n");
    assert_eq!(fs::read_to_string(&victim).expect("victim"), "precious\n");

    // A link in the private directory itself is refused, not followed.
    let private = fake.lock_dir();
    assert!(private.is_dir(), "sbx creates its private lock directory");
    let mode = fs::metadata(&private)
        .expect("lock dir")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    std::os::unix::fs::symlink(&victim, private.join(format!("{id}.lock"))).expect("plant");
    let out = fake.run(id, &file, &[]);
    assert_one_line_error(&out, 2, "run lock");
    assert_eq!(fs::read_to_string(&victim).expect("victim"), "precious\n");
    fs::remove_file(private.join(format!("{id}.lock"))).expect("unplant");

    // A lock directory others can write to is refused...
    fs::set_permissions(&private, fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = fake.run(id, &file, &[]);
    assert_one_line_error(&out, 2, "open to other users");
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).expect("chmod");

    // ...and so is one another user owns (this part needs root, as CI has).
    let chown = std::process::Command::new("chown")
        .arg("65534")
        .arg(&private)
        .status()
        .expect("run chown");
    assert!(
        chown.success(),
        "chown needs root: run these tests as root, as CI does"
    );
    let out = fake.run(id, &file, &[]);
    assert_one_line_error(&out, 2, "owned by uid 65534");
    let _ = fs::remove_dir(&private);
}

#[test]
fn eval_refuses_a_run_id_a_live_run_holds() {
    let fake = Fake::new();
    fake.candidate("slow", "sleep 3\necho ok\n");
    let tasks = json!([task("slow", "", "ok\n")]);
    let first_out = fake.root().join("first.out");
    let mut first = spawn(
        &mut fake.eval_std("t-dup", &tasks),
        fs::File::create(&first_out).expect("stdout file"),
        fake.stderr_file(),
    );
    assert!(
        wait_for(&fake.pid_file("sbx-t-dup-0"), LIMIT),
        "the first eval never started its container"
    );
    let second = fake.eval("t-dup", &tasks).output().expect("run sbx");
    assert_one_line_error(&second, 2, "in use by another sbx");
    // The second eval removed nothing: the first one's verdict stands.
    let status = first.wait(LIMIT);
    assert_eq!(status.code(), Some(0), "{}", fake.stderr_text());
    let report: Value =
        serde_json::from_slice(&fs::read(&first_out).expect("report")).expect("JSON report");
    assert_verdict(&report[0], "pass", "");
    assert_not_called(&fake, "rm");
    assert_stage_empty(&fake);
}

/// `sbx gc ARGS` against the fake, with `FAKE_PS` listing `containers`.
fn fake_gc(fake: &Fake, containers: &str, args: &[&str]) -> Output {
    let mut cmd = fake.sbx("t-gc-unused");
    cmd.env_remove("SBX_RUN_ID")
        .env("FAKE_PS", containers)
        .arg("gc")
        .args(args);
    cmd.output().expect("run sbx gc")
}

#[test]
fn gc_never_builds_host_paths_from_labels() {
    let fake = Fake::new();
    let created = "2026-11-29 15:40:27 +0000 UTC";
    // A label `<root>/fifo` named the FIFO `<root>/fifo.lock` as a run lock:
    // gc opened it and blocked forever.
    let fifo = fake.root().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(fifo.with_extension("lock"))
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    let line = format!("c1\tsbx-x-0\t{created}\t{}", fifo.display());
    let out = fake_gc(&fake, &line, &["--dry-run"]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("is not a run id"), "{}", show(&out));
    assert!(!stdout(&out).contains("c1"), "{}", show(&out));

    // A label `<root>/victim` made gc delete `<root>/victim.lock`.
    let victim = fake.file("victim.lock", "precious\n");
    let label = victim.with_extension("");
    let line = format!("c2\tsbx-y-0\t{created}\t{}", label.display());
    let out = fake_gc(&fake, &line, &[]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("is not a run id"), "{}", show(&out));
    assert!(victim.exists(), "gc deleted a file named by a label");
    assert_not_called(&fake, "rm");
    // ...and `--run` takes only a run id.
    let out = fake_gc(&fake, &line, &["--run", &label.to_string_lossy()]);
    assert_one_line_error(&out, 2, "invalid --run");
    assert!(victim.exists(), "gc deleted a file named by --run");
    assert_not_called(&fake, "rm");
}

#[test]
fn gc_survives_an_odd_created_at() {
    let fake = Fake::new();
    // A non-ASCII byte inside the offset: gc sliced there and panicked.
    let out = fake_gc(
        &fake,
        "c1\tsbx-r1-0\t2026-11-29 15:40:27 +0\u{e9}0 UTC\tr1",
        &["--older-than", "1s"],
    );
    assert_exit(&out, 0);
    assert!(!stderr(&out).contains("panicked"), "{}", show(&out));
    let out = fake_gc(
        &fake,
        "c1\tsbx-r1-0\t2026-11-29 15:40:27 +0\u{e9}0 UTC\tr1",
        &[],
    );
    assert_exit(&out, 0);
    assert_eq!(calls_of(&fake.calls(), "rm").len(), 1, "{:?}", fake.calls());
}

/// Rows of the README's exit-code table that the code did not keep.
#[test]
fn exit_code_tmpdir_missing_is_2() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    // TMPDIR pointing at a missing directory: a setting of the caller, 2.
    let out = fake
        .run_cmd("t-exit-tmp", &file)
        .env("TMPDIR", fake.root().join("missing"))
        .output()
        .expect("run sbx");
    assert_one_line_error(&out, 2, "TMPDIR");
}

#[test]
fn exit_code_cache_naming_a_file_is_2() {
    let fake = Fake::new();
    fake.candidate("a", PRINTS_RAN);
    let not_a_dir = fake.file("cache-file", "x");
    let out = fake
        .eval("t-exit-cache", &json!([task("a", "", "ran\n")]))
        .arg("--cache")
        .arg(&not_a_dir)
        .output()
        .expect("run sbx");
    assert_one_line_error(&out, 2, "--cache");
}

#[test]
fn exit_code_gc_and_doctor_without_docker_cli_is_127() {
    let fake = Fake::new();
    for command in [
        &["gc"][..],
        &["doctor", "--image", "sbx-busybox:latest"][..],
    ] {
        let out = fake
            .sbx("t-exit-nocli")
            .env("SBX_DOCKER", "/nonexistent/docker")
            .args(command)
            .output()
            .expect("run sbx");
        assert_exit(&out, 127);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(all.contains("/nonexistent/docker"), "{}", show(&out));
    }
}

#[test]
fn exit_code_doctor_with_a_failing_docker_cli_is_125() {
    let fake = Fake::new();
    // The report is still printed; the exit code says the engine.
    let out = fake
        .sbx("t-exit-fails")
        .env("FAKE_FAIL_ALL", "1")
        .args(["doctor", "--image", "sbx-busybox:latest"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    assert!(stdout(&out).contains("Cannot connect"), "{}", show(&out));
}

#[test]
fn doctor_without_the_default_image_says_it_is_missing_not_failed() {
    let fake = Fake::new();
    // No sbx.toml in the folder: the default image, which is absent.
    assert!(!fake.root().join("sbx.toml").exists());
    // Offline (the pull fails), as a user of the wheel: no build script
    // to suggest, and nothing said of --pull never.
    for json in [false, true] {
        let mut cmd = fake.sbx("t-doctor-noimage");
        cmd.env("FAKE_IMAGE", "missing")
            .env("FAKE_PULL", "fail")
            .arg("doctor");
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().expect("run sbx");
        assert_exit(&out, 125);
        let text = stdout(&out);
        assert!(text.contains("nothing was checked"), "{}", show(&out));
        assert!(text.contains("could not be pulled"), "{}", show(&out));
        assert!(
            text.contains("docker pull python:3.12-slim"),
            "{}",
            show(&out)
        );
        assert!(!text.contains("--pull never"), "{}", show(&out));
        assert!(!text.contains("scripts/build-images.sh"), "{}", show(&out));
        assert!(!text.contains("does NOT fully hold"), "{}", show(&out));
        assert!(
            !text.contains("network"),
            "no probe is reported: {}",
            show(&out)
        );
        if !json {
            let last = text.lines().last().expect("a last line");
            assert!(
                last.starts_with(
                    "doctor: nothing was checked: image python:3.12-slim is not on this engine"
                ),
                "{last}"
            );
        }
    }
    // Nothing was created.
    assert_not_called(&fake, "create");
    // In a checkout of sbx (its build script there), with --pull never:
    // that, and the script.
    fake.file("scripts/build-images.sh", "#!/bin/sh\n");
    let out = fake
        .sbx("t-doctor-noimage-never")
        .env("FAKE_IMAGE", "missing")
        .args(["doctor", "--pull", "never"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    let text = stdout(&out);
    assert!(
        text.contains("--pull never forbids pulling it"),
        "{}",
        show(&out)
    );
    assert!(
        text.contains("scripts/build-images.sh") && text.contains("--image sbx-python:bookworm"),
        "{}",
        show(&out)
    );
}

#[test]
fn doctor_with_a_runtime_the_engine_lacks_says_so_in_one_line() {
    let fake = Fake::new();
    let out = fake
        .sbx("t-doctor-noruntime")
        .env("FAKE_RUNTIMES", "runc io.containerd.runc.v2")
        .args([
            "doctor",
            "--image",
            "sbx-busybox:latest",
            "--runtime",
            "runsc",
        ])
        .output()
        .expect("run sbx");
    assert_exit(&out, 125);
    let text = stdout(&out);
    let last = text.lines().last().expect("a last line");
    assert_eq!(
        last,
        "doctor: nothing was checked: the engine has no runtime `runsc` (it has: runc, io.containerd.runc.v2); register it in the engine's daemon.json (for gVisor, scripts/gvisor-engine.sh runs an engine with runsc)",
        "{}",
        show(&out)
    );
    assert_not_called(&fake, "create");
}

#[test]
fn eval_samples_with_non_utf8_names_are_run_by_their_real_names() {
    use std::ffi::OsStr;
    let fake = Fake::new();
    let samples = fake.gen().join("s");
    fs::create_dir_all(&samples).expect("samples dir");
    // Two names that decode lossily to the same `\u{fffd}.py`.
    for (name, body) in [
        (&b"\xff.py"[..], "echo ok\n"),
        (&b"\xfe.py"[..], "echo no\n"),
    ] {
        fs::write(samples.join(OsStr::from_bytes(name)), body).expect("sample");
    }
    let out = fake
        .eval("t-non-utf8", &json!([task("s", "", "ok\n")]))
        .output()
        .expect("run sbx");
    assert_exit(&out, 0); // a pass@k run: scored
    let entry = &report(&out)[0];
    assert_eq!(entry["n"], 2, "{entry}");
    assert_eq!(entry["c"], 1, "{entry}");
    assert_eq!(entry["errors"], 0, "{entry}");
    let statuses: Vec<&str> = entry["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| field(s, "status"))
        .collect();
    assert_eq!(statuses, ["fail", "pass"], "{entry}");
}

/// Makes a FIFO at `path` (nobody ever writes to it).
fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Spawns `cmd`, lets it reach its blocking read, sends `signal` and
/// asserts that it exits with `code` promptly.
fn assert_read_interrupted(fake: &Fake, cmd: &mut std::process::Command, signal: &str, code: i32) {
    // A stdin pipe whose write end the test keeps open and never writes.
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(fake.stderr_file())
        .spawn()
        .expect("spawn sbx");
    let stdin = child.stdin.take();
    let mut sbx = Spawned(child);
    thread::sleep(Duration::from_millis(500));
    let (status, took) = sbx.stop(signal, Duration::from_secs(5));
    assert_eq!(status.code(), Some(code), "stderr: {}", fake.stderr_text());
    assert!(took < Duration::from_secs(3), "took {took:?}");
    drop(stdin);
}

#[test]
fn eval_tasks_from_a_silent_pipe_or_fifo_end_on_a_signal() {
    let fake = Fake::new();
    // `sleep 30 | sbx eval --tasks /dev/stdin`: SIGTERM must end it.
    let mut cmd = fake.sbx_std("t-read-pipe");
    cmd.args(["eval", "--tasks", "/dev/stdin", "--gen"])
        .arg(fake.root());
    assert_read_interrupted(&fake, &mut cmd, "-TERM", 143);
    // A FIFO no one writes: SIGINT must end it.
    let fifo = fake.root().join("tasks.fifo");
    mkfifo(&fifo);
    let mut cmd = fake.sbx_std("t-read-fifo");
    cmd.args(["eval", "--tasks"])
        .arg(&fifo)
        .arg("--gen")
        .arg(fake.root());
    assert_read_interrupted(&fake, &mut cmd, "-INT", 130);
}

#[test]
fn diff_of_a_silent_fifo_ends_on_a_signal() {
    let fake = Fake::new();
    let fifo = fake.root().join("old.fifo");
    mkfifo(&fifo);
    let new = fake.file("new.json", "[]");
    let mut cmd = fake.sbx_std("t-read-diff");
    cmd.arg("diff").arg(&fifo).arg(&new);
    assert_read_interrupted(&fake, &mut cmd, "-TERM", 143);
}

#[test]
fn eval_cache_entry_that_is_not_a_file_is_a_miss() {
    let fake = Fake::new();
    fake.candidate("a", PRINTS_RAN);
    let tasks = json!([task("a", "", "ran\n")]);
    let cache = fake.root().join("cache");
    let out = fake
        .eval("t-cache-fifo", &tasks)
        .arg("--cache")
        .arg(&cache)
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let entries: Vec<PathBuf> = fs::read_dir(&cache)
        .expect("cache dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    // A FIFO planted as the entry hung the next eval for ever.
    fs::remove_file(&entries[0]).expect("remove entry");
    mkfifo(&entries[0]);
    let out = fake
        .eval("t-cache-fifo", &tasks)
        .arg("--cache")
        .arg(&cache)
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    let entry = &report(&out)[0];
    assert_verdict(entry, "pass", "");
    assert!(entry.get("cached").is_none(), "{entry}");
}

#[test]
fn interpreter_with_quotes_is_refused_not_run() {
    let fake = Fake::new();
    let file = fake.file("prog.sh", PRINTS_RAN);
    // Split on whitespace, `python3 -c "import sys; ..."` ran a broken
    // command and blamed the candidate.
    let out = fake.run(
        "t-interp-quotes",
        &file,
        &[
            "--interpreter",
            r#"python3 -c "import sys; exec(open(sys.argv[1]).read())""#,
        ],
    );
    assert_one_line_error(&out, 2, "quotes");
    fake.candidate("a", PRINTS_RAN);
    let out = fake
        .eval("t-interp-quotes", &json!([task("a", "", "ran\n")]))
        .args(["--interpreter", "sh -c 'exec sh \"$0\"'"])
        .output()
        .expect("run sbx");
    assert_one_line_error(&out, 2, "quotes");
    assert_not_called(&fake, "create");
}

#[test]
fn error_lines_cut_huge_values() {
    let fake = Fake::new();
    let huge = |n: usize| "x".repeat(n);
    let assert_short = |out: &Output| {
        assert_exit(out, 2);
        let line = one_line_error(out);
        assert!(
            line.len() < 1000,
            "{} bytes: {}",
            line.len(),
            &line[..300.min(line.len())]
        );
        assert!(line.contains("bytes in all"), "{line}");
    };
    // A 10 MB id, a 1 MB field of the tasks file.
    let out = fake
        .eval("t-huge", &json!([task(&huge(10 << 20), "", "")]))
        .output()
        .expect("run sbx");
    assert_short(&out);
    let out = fake
        .eval(
            "t-huge",
            &json!([{"id": "a", "prompt": "p", "stdin": "", "expect": "", "compare": huge(1 << 20)}]),
        )
        .output()
        .expect("run sbx");
    assert_short(&out);
    let out = fake
        .eval(
            "t-huge",
            &json!([{"id": "a", "prompt": "p", "stdin": "", "expect": "", &huge(1 << 20): 1}]),
        )
        .output()
        .expect("run sbx");
    assert_short(&out);
    // Options and the run id (an argument is at most 128 KiB).
    let file = fake.file("prog.sh", PRINTS_RAN);
    let big = huge(100_000);
    // A TIMEOUT GNU timeout refuses exits 125, as the script does.
    let out = fake.run("t-huge", &file, &["--timeout", big.as_str()]);
    assert_exit(&out, 125);
    let line = one_line_error(&out);
    assert!(line.len() < 1000 && line.contains("bytes in all"), "{line}");
    for args in [
        vec!["--image", big.as_str()],
        vec!["--memory", big.as_str()],
        vec!["--engine", &format!("{big}:,x")],
    ] {
        assert_short(&fake.run("t-huge", &file, &args));
    }
    let out = fake
        .run_cmd("t-huge", &file)
        .env("SBX_RUN_ID", &big)
        .output()
        .expect("run sbx");
    assert_short(&out);
}

/// The peak resident memory (VmHWM, KiB) of a running process, polled
/// until it exits; returns the last value seen and the exit status.
fn peak_rss_kib(mut child: Child, limit: Duration) -> (u64, ExitStatus) {
    let deadline = Instant::now() + limit;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(text) = fs::read_to_string(&status_file) {
            if let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
        }
        if let Some(status) = child.try_wait().expect("try_wait") {
            return (peak, status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sbx did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// A candidate of `size` bytes (sparse: nothing is written but its first
/// line) whose shell body prints `ok`, sleeps a second and exits before the
/// NUL bytes that follow.
fn big_candidate(path: &Path, size: u64) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("candidate dir");
    }
    fs::write(path, "echo ok; sleep 1; exit 0\n").expect("write candidate");
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(size))
        .expect("grow candidate");
}

#[test]
fn memory_stays_bounded_whatever_the_candidate_size() {
    const MIB: u64 = 1 << 20;
    const BOUND_KIB: u64 = 64 * 1024;
    let fake = Fake::new();
    // Three 100 MiB samples at -j 1: all were read into memory and held
    // until the eval ended (300 MiB and more). Above the 8 MiB candidate
    // limit, each now fails `candidate_too_large`, told by its size alone.
    for n in 0..3 {
        big_candidate(&fake.gen().join(format!("big/{n}.sh")), 100 * MIB);
    }
    let child = fake
        .eval_std("t-big", &json!([task("big", "", "ok\n")]))
        .args(["-j", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sbx");
    let (peak, status) = peak_rss_kib(child, LIMIT);
    // A pass@k run (every task from samples) exits 0 once scored.
    assert_eq!(status.code(), Some(0), "eval of big candidates");
    assert!(peak > 0, "no VmHWM read");
    assert!(peak < BOUND_KIB, "sbx eval peaked at {peak} KiB");
    // `sbx run` of one 200 MiB file.
    let file = fake.root().join("big.sh");
    big_candidate(&file, 200 * MIB);
    let child = fake
        .sbx_std("t-big-run")
        .arg("run")
        .arg(&file)
        .args(["--interpreter", "sh"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sbx");
    let (peak, status) = peak_rss_kib(child, LIMIT);
    assert_eq!(status.code(), Some(0), "run of a big candidate");
    assert!(peak < BOUND_KIB, "sbx run peaked at {peak} KiB");
    assert_stage_empty(&fake);
}
