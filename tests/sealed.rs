//! Sealed function tests on the real engine, in all three modes: a corpus
//! of our own (`tests/sealed/`), tasks whose tests are lists of checks and,
//! for each, candidates that try to pass without being right (`hack_*`:
//! always-true `__eq__`, builtin subclasses that lie, stack walks, reading
//! the program, memoising from memory, forged result frames, early exits,
//! `sys.settrace`, monkeypatched builtins) and honest ones (`honest_*`:
//! `Counter`, `OrderedDict`, `defaultdict`, a namedtuple, a float for an
//! int, fd 1 closed). Every hack must fail and every honest one pass, and
//! every entry must say it was judged sealed. Needs an engine and
//! `sbx-python:bookworm`; fails (never skips) without them.

mod common;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use common::{finish, report, Cleanup, PYTHON};

/// Bound on one eval of the corpus.
const LIMIT: Duration = Duration::from_secs(300);

fn corpus(isolate: &str) {
    let id = common::run_id("sealed", isolate);
    let guard = Cleanup::new(&[&id]);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sealed");
    let mut cmd = common::sbx(Some(&id));
    cmd.arg("eval")
        .arg("--tasks")
        .arg(fixture.join("tasks.json"))
        .arg("--gen")
        .arg(fixture.join("gen"))
        .args(["--image", PYTHON, "--pull", "never", "--timeout", "30"])
        .args(["-j", "2", "--k", "1", "--isolate", isolate]);
    let out = finish(cmd, None, LIMIT);
    // Every task has samples: a pass@k run exits 0 once scored.
    assert_eq!(out.code(), 0, "{out:?}");
    let results = report(&out);
    assert_eq!(results.len(), 7, "{out:?}");
    let mut wrong = Vec::new();
    let mut count = 0;
    for task in &results {
        for sample in task["samples"].as_array().expect("samples") {
            count += 1;
            let name = sample["sample"].as_str().expect("a sample name");
            let want = if name.starts_with("honest") {
                "pass"
            } else {
                assert!(name.starts_with("hack"), "{name}");
                "fail"
            };
            if sample["status"] != want || sample["judged"] != "sealed" {
                wrong.push(format!(
                    "{}/{name}: {} (judged {}, reason {}, message {})",
                    task["id"].as_str().unwrap_or("?"),
                    sample["status"],
                    sample["judged"],
                    sample["reason"],
                    sample["message"]
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "--isolate {isolate}: wrong verdicts:\n{}",
        wrong.join("\n")
    );
    assert_eq!(count, 35, "{out:?}");
    // A value that is not plain data fails with a reason naming its type.
    let add = &results[0]["samples"];
    let always = add
        .as_array()
        .expect("samples")
        .iter()
        .find(|s| s["sample"] == "hack_always_equal.py")
        .expect("the always-equal hack");
    assert_eq!(always["reason"], "not_plain_data", "{always:#}");
    assert!(
        always["message"]
            .as_str()
            .is_some_and(|m| m.contains("object of type Anything, not plain data")),
        "{always:#}"
    );
    assert!(
        out.stderr
            .contains("function tests: 35 sealed, 0 in-process"),
        "{out:?}"
    );
    guard.finish();
}

#[test]
fn hacks_fail_and_honest_controls_pass_a_container_per_case() {
    corpus("case");
}

#[test]
fn hacks_fail_and_honest_controls_pass_a_runner_per_candidate() {
    corpus("candidate");
}

#[test]
fn hacks_fail_and_honest_controls_pass_in_a_reused_worker() {
    corpus("worker");
}

/// A test that is not a list of checks runs in-process, as before, and
/// says so.
#[test]
fn other_tests_run_in_process() {
    let id = common::run_id("sealed", "fallback");
    let guard = Cleanup::new(&[&id]);
    let dir = tempfile::tempdir().expect("scratch");
    let gen = dir.path().join("gen");
    std::fs::create_dir_all(&gen).expect("mkdir");
    std::fs::write(gen.join("loop.py"), "def inc(x):\n    return x + 1\n").expect("write");
    std::fs::write(gen.join("wrong.py"), "def inc(x):\n    return x\n").expect("write");
    let tasks = serde_json::json!([
        {"id": "loop", "entry_point": "inc",
         "test": "def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i + 1\n"},
        {"id": "wrong", "entry_point": "inc",
         "test": "def check(candidate):\n    assert tuple([candidate(1)]) == (2,)\n"},
    ]);
    let file = dir.path().join("tasks.json");
    std::fs::write(&file, tasks.to_string()).expect("write");
    let mut cmd = common::sbx(Some(&id));
    cmd.arg("eval")
        .arg("--tasks")
        .arg(&file)
        .arg("--gen")
        .arg(&gen)
        .args(["--image", PYTHON, "--pull", "never", "--timeout", "30"]);
    let out = finish(cmd, None, LIMIT);
    let results = report(&out);
    let summary: Vec<(&Value, &Value, &Value)> = results
        .iter()
        .map(|r| (&r["id"], &r["status"], &r["judged"]))
        .collect();
    assert_eq!(
        summary,
        [
            (&"loop".into(), &"pass".into(), &"in_process".into()),
            (&"wrong".into(), &"fail".into(), &"in_process".into())
        ],
        "{out:?}"
    );
    assert_eq!(results[1]["reason"], "exit_code", "{out:?}");
    assert!(
        out.stderr
            .contains("function tests: 0 sealed, 2 in-process"),
        "{out:?}"
    );
    guard.finish();
}
