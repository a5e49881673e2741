//! What `sbx eval` says while and after it runs, through the binary and the
//! fake docker (no engine): one line when no task can run (an unreachable
//! engine, no docker CLI, a missing image), the failures printed as they
//! happen and the recap at a terminal, long runs of `MISSING` folded there,
//! and `--save-output`'s files. Terminal runs go through `script`, which
//! gives sbx a pty as stdout and stderr.

use crate::support;

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use support::terminal::under_script;
use support::{assert_exit, entry, report, run, show, stderr, stdout, task, Fake};

/// `cmd` under `script`, so that its stdout and stderr are one terminal;
/// what that terminal showed (`\r\n` made `\n`) and the exit code.
fn at_terminal(cmd: &Command) -> (i32, String) {
    let script = under_script(cmd);
    let out = run(script);
    let code = out.status.code().expect("script exits");
    (code, stdout(&out).replace("\r\n", "\n"))
}

/// The terminal's text without the progress line (`\r\x1b[K...`).
fn without_progress(text: &str) -> String {
    let re =
        regex::Regex::new(r"\r\x1b\[K(sbx: \d+/\d+ (candidates|samples) judged)?").expect("regex");
    re.replace_all(text, "").into_owned()
}

/// The lines of stderr that are not notes about options from sbx.toml.
fn error_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| !l.trim().is_empty()).collect()
}

// ---------------------------------------------------------------------------
// One line when the cause is one.
// ---------------------------------------------------------------------------

/// Three tasks with candidates, one without.
fn three_and_a_missing(fake: &Fake) -> Value {
    for id in ["a", "b", "c"] {
        fake.file(format!("gen/{id}.sh"), b"echo hi\n");
    }
    json!([
        task("a", "", "hi\n"),
        task("b", "", "hi\n"),
        task("c", "", "hi\n"),
        task("none", "", "")
    ])
}

#[test]
fn no_docker_cli_is_one_line_and_127() {
    let fake = Fake::new();
    let tasks = three_and_a_missing(&fake);
    let mut cmd = fake.eval("one-cli", &tasks);
    cmd.env("SBX_DOCKER", "/nonexistent/docker");
    let out = run(cmd);
    assert_exit(&out, 127);
    assert!(out.stdout.is_empty(), "no report: {}", show(&out));
    let err = stderr(&out);
    let lines = error_lines(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("sbx: no task was judged (3 tasks with candidates need image")
            && lines[0].contains("docker CLI `/nonexistent/docker` not found"),
        "{err}"
    );
    // Nothing was created.
    assert!(
        !fake.commands().iter().any(|c| c == "create"),
        "{:?}",
        fake.commands()
    );
}

#[test]
fn an_unreachable_engine_is_one_line_saying_what_to_do_and_125() {
    let fake = Fake::new();
    let tasks = three_and_a_missing(&fake);
    let mut cmd = fake.eval("one-down", &tasks);
    cmd.env("FAKE_DAEMON", "down");
    let out = run(cmd);
    assert_exit(&out, 125);
    assert!(out.stdout.is_empty(), "no report: {}", show(&out));
    let err = stderr(&out);
    let lines = error_lines(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("Cannot connect to the Docker daemon"),
        "{err}"
    );
    assert!(
        lines[0].contains("start the engine") && lines[0].contains("DOCKER_HOST"),
        "{err}"
    );
}

#[test]
fn a_missing_image_is_one_line_and_125_and_never_blames_a_candidate() {
    let fake = Fake::new();
    let tasks = three_and_a_missing(&fake);
    let mut cmd = fake.eval("one-image", &tasks);
    cmd.env("FAKE_IMAGE", "missing").args(["--pull", "never"]);
    let out = run(cmd);
    assert_exit(&out, 125);
    let err = stderr(&out);
    let lines = error_lines(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("--pull never forbids pulling it; build or pull it first"),
        "{err}"
    );
    assert!(!err.contains("ERROR") && !err.contains("FAIL"), "{err}");

    // Tasks of that image that have no candidate are `missing`, not a
    // reason to stop, and never `error`.
    let tasks = json!([task("x", "", ""), task("y", "", "")]);
    let mut cmd = fake.eval("one-image-none", &tasks);
    cmd.env("FAKE_IMAGE", "missing").args(["--pull", "never"]);
    let out = run(cmd);
    assert_exit(&out, 1);
    let results = report(&out);
    assert!(
        results.iter().all(|r| r["status"] == "missing"),
        "{results:?}"
    );
}

#[test]
fn human_evals_files_get_the_same_one_line_and_keep_their_results() {
    let fake = Fake::new();
    let problems = fake.one_problem();
    let sample = json!({"task_id": "T/0", "completion": "    return 1\n"});
    let samples = fake.file("samples.jsonl", format!("{sample}\n{sample}\n").as_bytes());
    let results = fake.file("samples.jsonl_results.jsonl", b"good results\n");
    for (var, value, code) in [("FAKE_DAEMON", "down", 125), ("FAKE_IMAGE", "missing", 125)] {
        let mut cmd = fake.sbx("one-he");
        cmd.arg("eval")
            .arg("--problems")
            .arg(&problems)
            .arg("--samples")
            .arg(&samples)
            .args(["--pull", "never", "--isolate", "case"])
            .env(var, value);
        let out = run(cmd);
        assert_exit(&out, code);
        let err = stderr(&out);
        assert_eq!(error_lines(&err).len(), 1, "{var}: {err}");
        assert!(
            err.contains("no task was judged (1 task with candidates need image"),
            "{var}: {err}"
        );
        assert_eq!(fs::read(&results).expect("results"), b"good results\n");
    }
}

// ---------------------------------------------------------------------------
// At a terminal: failures as they happen, the recap, MISSING folded.
// ---------------------------------------------------------------------------

#[test]
fn at_a_terminal_failures_show_as_they_happen_and_the_report_ends_with_a_recap() {
    let fake = Fake::new();
    fake.file("gen/good.sh", b"echo hi\n");
    fake.file("gen/wrong.sh", b"echo bye\n");
    fake.file("gen/crash.sh", b"echo boom >&2\nexit 3\n");
    let tasks = json!([
        task("good", "", "hi\n"),
        task("wrong", "", "hi\n"),
        task("crash", "", "hi\n"),
    ]);
    let cmd = fake.eval("tty-live", &tasks);
    let (code, text) = at_terminal(&cmd);
    assert_eq!(code, 1, "{text}");
    let shown = without_progress(&text);
    let live = regex::Regex::new(
        r"(?m)^ +FAIL \[ *\d+\.\d\ds\] (wrong  wrong_output|crash  exit_code 3)$",
    )
    .expect("regex");
    // Each failure twice: as it happened, and in the recap; never a pass.
    assert_eq!(live.find_iter(&shown).count(), 4, "{shown}");
    assert!(!shown.contains("PASS ["), "{shown}");
    let report_at = shown.find("PASS     good").expect("the report");
    let first_live = live.find(&shown).expect("a live line").start();
    assert!(
        first_live < report_at,
        "live lines come before the report: {shown}"
    );
    let recap = shown.find("Not passed (2):").expect("the recap");
    assert!(recap > report_at, "{shown}");
    let slowest = regex::Regex::new(r"(?m)^Slowest: (good|wrong|crash) \d+\.\d\ds, (good|wrong|crash) \d+\.\d\ds, (good|wrong|crash) \d+\.\d\ds$").expect("regex");
    assert!(slowest.is_match(&shown), "{shown}");
    // The summary is the last line.
    let last = shown.trim_end().lines().last().unwrap_or_default();
    assert!(last.starts_with("1 passed, 2 failed"), "{shown}");

    // Piped: neither live lines nor a recap, in text or JSON.
    let mut cmd = fake.eval("tty-live-piped", &tasks);
    cmd.args(["--format", "text"]);
    let out = run(cmd);
    assert_exit(&out, 1);
    for text in [stdout(&out), stderr(&out)] {
        assert!(
            !live.is_match(&text) && !text.contains("Not passed") && !text.contains("Slowest"),
            "{}",
            show(&out)
        );
    }
    let out = run(fake.eval("tty-live-json", &tasks));
    assert_eq!(report(&out).len(), 3, "{}", show(&out));
    assert!(!live.is_match(&stderr(&out)), "{}", show(&out));
}

#[test]
fn at_a_terminal_long_runs_of_missing_are_one_line() {
    let fake = Fake::new();
    fake.file("gen/here.sh", b"echo hi\n");
    fake.file("gen/last.sh", b"echo hi\n");
    let mut tasks = vec![task("here", "", "hi\n"), task("m1", "", "")];
    for i in 2..=6 {
        tasks.push(task(&format!("gone{i}"), "", ""));
    }
    tasks.push(task("last", "", "hi\n"));
    // Three in a row stay three lines.
    for id in ["s1", "s2", "s3"] {
        tasks.push(task(id, "", ""));
    }
    let tasks = Value::Array(tasks);
    let (code, text) = at_terminal(&fake.eval("tty-fold", &tasks));
    assert_eq!(code, 1, "{text}");
    let shown = without_progress(&text);
    assert!(
        shown.contains("MISSING  6 tasks, from m1 to gone6  no_candidate\n"),
        "{shown}"
    );
    assert!(!shown.contains("MISSING  gone2"), "{shown}");
    for id in ["s1", "s2", "s3"] {
        assert!(shown.contains(&format!("MISSING  {id} ")), "{shown}");
    }
    assert!(shown.contains("2 passed, 0 failed, 9 missing"), "{shown}");

    // Piped text and the JSON report keep one line, one entry, per task.
    let mut cmd = fake.eval("tty-fold-piped", &tasks);
    cmd.args(["--format", "text"]);
    let out = run(cmd);
    let text = stdout(&out);
    assert_eq!(text.matches("MISSING  ").count(), 9, "{text}");
    assert!(!text.contains("tasks, from"), "{text}");
    assert_eq!(report(&run(fake.eval("tty-fold-json", &tasks))).len(), 11);
}

// ---------------------------------------------------------------------------
// --save-output
// ---------------------------------------------------------------------------

#[test]
fn save_output_keeps_each_runs_whole_output_named_safely_in_the_report() {
    let fake = Fake::new();
    // 3000 lines on stdout: far more than the report keeps.
    fake.file(
        "gen/big.sh",
        b"i=0; while [ $i -lt 3000 ]; do echo line $i; i=$((i+1)); done\necho oops >&2\n",
    );
    fake.file("gen/up..é %.sh", b"echo up; echo warn >&2\n");
    fake.file("gen/multi.sh", b"read x; echo $x\n");
    fake.file("gen/samp/s1.sh", b"echo one\n");
    fake.file("gen/samp/s2.sh", b"echo two\n");
    let tasks = json!([
        task("big", "", "line 0\n"),
        task("up..é %", "", "up\n"),
        {"id": "multi", "cases": [{"stdin": "p\n", "expect": "p\n"}, {"stdin": "q\n", "expect": "x\n"}]},
        task("samp", "", "one\n"),
    ]);
    let dir = fake.root().join("out");
    fs::create_dir(&dir).expect("mkdir");
    // A symlink planted where a file goes is replaced, never written through.
    let precious = fake.file("precious", b"keep");
    std::os::unix::fs::symlink(&precious, dir.join("big.stdout")).expect("symlink");
    let mut cmd = fake.eval("save", &tasks);
    cmd.arg("--save-output").arg(&dir).args(["--no-fail-fast"]);
    let out = run(cmd);
    assert_exit(&out, 1);
    assert_eq!(fs::read(&precious).expect("precious"), b"keep");
    let results = report(&out);
    let files = |entry: &Value| -> (String, String) {
        let output = &entry["output"];
        let path = |key: &str| {
            output[key]
                .as_str()
                .unwrap_or_else(|| panic!("{entry}"))
                .to_string()
        };
        (path("stdout"), path("stderr"))
    };
    let inside = |path: &str| {
        let p = Path::new(path);
        assert_eq!(
            p.parent(),
            Some(dir.canonicalize().expect("dir").as_path()),
            "{path}"
        );
        assert!(!fs::symlink_metadata(p)
            .expect("saved")
            .file_type()
            .is_symlink());
    };
    let big = entry(&results, "big");
    let (out_path, err_path) = files(big);
    inside(&out_path);
    let text = fs::read_to_string(&out_path).expect("stdout file");
    assert_eq!(text.lines().count(), 3000);
    assert!(text.ends_with("line 2999\n"));
    assert_eq!(
        fs::read_to_string(&err_path).expect("stderr file"),
        "oops\n"
    );
    assert!(out_path.ends_with("/big.stdout"), "{out_path}");

    let (up_out, up_err) = files(entry(&results, "up..é %"));
    inside(&up_out);
    assert!(up_out.ends_with("/up%2E%2E%C3%A9%20%25.stdout"), "{up_out}");
    assert_eq!(fs::read_to_string(&up_err).expect("stderr"), "warn\n");

    // A task of several cases: a pair per case; the entry names the
    // failing one's.
    let (multi_out, _) = files(entry(&results, "multi"));
    assert!(multi_out.ends_with("/multi.case-2.stdout"), "{multi_out}");
    assert_eq!(
        fs::read_to_string(dir.join("multi.case-1.stdout")).expect("case 1"),
        "p\n"
    );
    assert_eq!(fs::read_to_string(&multi_out).expect("case 2"), "q\n");

    // Samples: a pair per sample, named in each sample's entry.
    let samp = entry(&results, "samp");
    let samples = samp["samples"].as_array().expect("samples");
    for s in samples {
        let (path, _) = files(s);
        inside(&path);
        let name = s["sample"].as_str().expect("sample name");
        assert!(
            path.ends_with(&format!("/samp.sample-{}.stdout", name.replace('.', "%2E"))),
            "{path}"
        );
    }
    // Nothing else in the folder (no temporary file left), no file outside.
    let mut names: Vec<String> = fs::read_dir(&dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2 * (1 + 1 + 2 + 2), "{names:?}");

    // Without the option, no entry has the field.
    let out = run(fake.eval("save-none", &tasks));
    assert!(
        report(&out).iter().all(|r| r.get("output").is_none()),
        "{}",
        show(&out)
    );
}

#[test]
fn save_output_refuses_a_symlink_or_a_file_as_its_folder() {
    let fake = Fake::new();
    fake.file("gen/a.sh", b"echo hi\n");
    let tasks = json!([task("a", "", "hi\n")]);
    let file = fake.file("plain", b"x");
    let link = fake.root().join("link");
    std::os::unix::fs::symlink(fake.root().join("tmp"), &link).expect("symlink");
    for bad in [&file, &link] {
        let mut cmd = fake.eval("save-bad", &tasks);
        cmd.arg("--save-output").arg(bad);
        let out = run(cmd);
        assert_exit(&out, 2);
        assert_eq!(error_lines(&stderr(&out)).len(), 1, "{}", show(&out));
        assert!(stderr(&out).contains("--save-output"), "{}", show(&out));
    }
}
