//! Function tests that run in the candidate's own process (see
//! `humaneval::RUNNER`), against a corpus of hostile candidates on the real
//! engine, in all three isolate modes: every hack fails and every honest
//! control passes. The corpus is `tests/fixtures/inprocess/`: one task whose
//! test is a loop (not a plain list of assertions, so it stays in-process),
//! and in `gen/add/` one sample per file: `hack_*` try to produce the
//! evidence of a pass (read the token from the command line, the
//! environment, `__main__`, frames, `gc`, fds, files, the process's memory,
//! a child process; ask the harness's hook for it; trace or monkeypatch
//! their way past the assertion; guess it), `exit_*` end early in every way,
//! and `honest_*` are correct programs that close or redirect their fds,
//! print more than `--max-output`, leave a thread or an exit hook behind, or
//! use the standard library's frame-looking parts. Needs an engine and
//! `sbx-python:bookworm`; fails (never skips) without them.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use common::{finish, report, Cleanup, PYTHON};

const LIMIT: Duration = Duration::from_secs(600);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inprocess")
}

/// The corpus's file names, sorted.
fn corpus() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(fixtures().join("gen/add"))
        .expect("the corpus folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn no_hack_passes_and_every_honest_program_does_in_every_mode() {
    let names = corpus();
    let honest = names.iter().filter(|n| n.starts_with("honest_")).count();
    assert!(
        honest >= 8 && names.len() >= 35,
        "the corpus is all there: {names:?}"
    );
    let id = common::run_id("inproc", "corpus");
    let guard = Cleanup::new(&[&id]);
    for isolate in ["case", "candidate", "worker"] {
        let mut cmd = common::sbx(Some(&id));
        cmd.arg("eval")
            .arg("--tasks")
            .arg(fixtures().join("tasks.json"))
            .arg("--gen")
            .arg(fixtures().join("gen"))
            .args(["--image", PYTHON, "--pull", "never", "-j", "4"])
            .args(["--timeout", "30", "--isolate", isolate]);
        let out = finish(cmd, None, LIMIT);
        // The hacks fail; a pass@k run exits 0 once scored.
        assert_eq!(out.code(), 0, "{isolate}: the hacks fail: {out:?}");
        let results = report(&out);
        let samples = results[0]["samples"].as_array().expect("samples");
        let judged: Vec<&str> = samples
            .iter()
            .map(|s| s["sample"].as_str().expect("sample"))
            .collect();
        assert_eq!(judged, names, "{isolate}: one entry per file");
        let wrong: Vec<String> = samples
            .iter()
            .filter(|s| {
                let name = s["sample"].as_str().unwrap_or_default();
                let want = if name.starts_with("honest_") {
                    "pass"
                } else {
                    "fail"
                };
                s["status"] != want
            })
            .map(describe)
            .collect();
        assert!(
            wrong.is_empty(),
            "{isolate}: {} wrong verdicts:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
        assert!(
            out.stderr.contains(&format!(
                "mean pass@1 {:.3} over 1 task",
                honest as f64 / names.len() as f64
            )),
            "{isolate}: {out:?}"
        );
    }
    guard.finish();
}

fn describe(sample: &Value) -> String {
    let tail = sample["stderr_tail"].as_str().unwrap_or_default();
    let tail: String = tail
        .chars()
        .rev()
        .take(400)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!(
        "  {}: {} {}\n{}",
        sample["sample"], sample["status"], sample["reason"], tail
    )
}
