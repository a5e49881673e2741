//! `sbx merge` on hand-made reports (no engine): one run's report from its
//! shares, and every refusal one line with exit 2.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use common::{finish, sbx, Out};

fn share(spec: &str, task: usize, build: &str) -> Value {
    json!({"spec": spec, "task": task, "tasks": 2, "k": [],
           "inputs": {"tasks": "t", "candidates": "c", "options": "o", "build": build}})
}

fn entry(id: &str, status: &str, partition: Value) -> Value {
    json!({"id": id, "status": status, "stderr_tail": "", "exit_code": 0,
           "duration_ms": 5, "partition": partition})
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).expect("write a report");
    path
}

fn merge(dir: &Path, args: &[&Path], extra: &[&str]) -> Out {
    let mut cmd = sbx(None);
    cmd.current_dir(dir).arg("merge").args(args).args(extra);
    finish(cmd, None, Duration::from_secs(30))
}

fn refused(out: &Out, needle: &str) {
    assert_eq!(out.code(), 2, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(out.stderr.contains(needle), "{needle}: {out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
}

#[test]
fn shares_merge_and_conflicts_are_refused_in_one_line() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    let one = write(
        d,
        "one.json",
        &json!([entry("a", "pass", share("count:1/2", 0, "b"))]).to_string(),
    );
    let two = write(
        d,
        "two.json",
        &json!([entry("b", "fail", share("count:2/2", 1, "b"))]).to_string(),
    );
    let out = merge(d, &[&two, &one], &["--format", "json"]);
    assert_eq!(out.code(), 1, "one task failed: {out:?}");
    let merged: Value = serde_json::from_str(&out.stdout).expect("a JSON report");
    assert_eq!(
        merged,
        json!([
            {"id": "a", "status": "pass", "stderr_tail": "", "exit_code": 0, "duration_ms": 5},
            {"id": "b", "status": "fail", "stderr_tail": "", "exit_code": 0, "duration_ms": 5}
        ])
    );
    assert_eq!(
        out.stderr,
        "1 passed, 1 failed, 0 missing, 0 errors, merged from 2 reports\n"
    );
    let text = merge(d, &[&one, &two], &["--format", "text", "--color", "never"]);
    assert_eq!(text.code(), 1, "{text:?}");
    assert!(text.stdout.contains("merged from 2 reports"), "{text:?}");

    refused(
        &merge(d, &[&one], &[]),
        "task 2 of 2 is in none of the reports",
    );
    refused(&merge(d, &[&one, &one], &[]), "are both share count:1/2");
    let other_build = write(
        d,
        "other.json",
        &json!([entry("b", "fail", share("count:2/2", 1, "x"))]).to_string(),
    );
    refused(
        &merge(d, &[&one, &other_build], &[]),
        "are of different sbx builds",
    );
    let plain = write(
        d,
        "plain.json",
        &json!([{"id": "b", "status": "pass", "stderr_tail": "", "exit_code": 0, "duration_ms": 1}])
            .to_string(),
    );
    refused(
        &merge(d, &[&one, &plain], &[]),
        "not a report of `sbx eval --partition`",
    );
    let lines = write(d, "r.jsonl", "{\"task_id\": \"T/0\"}\n");
    refused(&merge(d, &[&one, &lines], &[]), "merge one kind at a time");
    let junk = write(d, "junk.txt", "not json\n");
    refused(
        &merge(d, &[&junk], &[]),
        "neither a JSON report nor a results file",
    );
    refused(&merge(d, &[&d.join("absent.json")], &[]), "cannot read");
    let broken = write(d, "broken.json", "[{\"id\": 1}]");
    refused(&merge(d, &[&broken], &[]), "not a JSON report of sbx eval");
}
