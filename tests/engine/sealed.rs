//! Sealed function tests on the real engine, in all three modes: a corpus
//! of our own (`tests/sealed/`), tasks whose tests are lists of checks and,
//! for each, candidates that try to pass without being right (`hack_*`:
//! always-true `__eq__`, builtin subclasses that lie, stack walks, reading
//! the program, memoising from memory, forged result frames, early exits,
//! `sys.settrace`, monkeypatched builtins, sets and dicts of keys that lie
//! about their equality) and honest ones (`honest_*`:
//! `Counter`, `OrderedDict`, `defaultdict`, a namedtuple, a float for an
//! int, fd 1 closed, a frozenset for a set). Forged frames built to blow up
//! sbx's memory (`tests/sealed/blowup/`) fail, never `error`. Every hack must fail and every honest one pass, and
//! every entry must say it was judged sealed. Needs an engine and
//! `sbx-python:bookworm`; fails (never skips) without them.

use crate::common;

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
    assert_eq!(results.len(), 8, "{out:?}");
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
    assert_eq!(count, 42, "{out:?}");
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
            .contains("function tests: 42 sealed, 0 in-process"),
        "{out:?}"
    );
    // Keys that lie about their equality: refused as not plain data.
    let sample = |task: &str, name: &str| -> Value {
        results
            .iter()
            .find(|r| r["id"] == task)
            .and_then(|r| r["samples"].as_array())
            .and_then(|s| s.iter().find(|s| s["sample"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{task}/{name}: {out:?}"))
    };
    for (task, name, said) in [
        (
            "evens_from",
            "hack_lying_int_set.py",
            "a set whose members are not distinct",
        ),
        (
            "evens_from",
            "hack_cross_type_set.py",
            "a set whose members are not distinct",
        ),
        ("evens_from", "hack_lying_frozensets.py", "not distinct"),
        (
            "count",
            "hack_lying_dict_keys.py",
            "a dict whose keys are not distinct",
        ),
    ] {
        let s = sample(task, name);
        assert_eq!(s["reason"], "not_plain_data", "{s:#}");
        assert!(
            s["message"].as_str().is_some_and(|m| m.contains(said)),
            "{s:#}"
        );
    }
    assert_eq!(
        sample("evens_from", "hack_nan_set.py")["reason"],
        "wrong_answer"
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

/// Forged result frames of every shape we could think of to blow up what
/// sbx holds (millions of tiny values, nesting millions deep, a 15 MB
/// string, an int of 30 million digits, millions of dict entries or
/// results), each just under `--max-output 32MiB`: every one is the
/// candidate's failure, never `error`, in every mode. (sbx's memory on
/// them is measured in `scripts/bench.sh`, part `sealed_memory`.)
fn forged_frames(isolate: &str) {
    let id = common::run_id("sealed", &format!("blowup-{isolate}"));
    let guard = Cleanup::new(&[&id]);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sealed/blowup");
    let mut cmd = common::sbx(Some(&id));
    cmd.arg("eval")
        .arg("--tasks")
        .arg(fixture.join("tasks.json"))
        .arg("--gen")
        .arg(fixture.join("gen"))
        .args(["--image", PYTHON, "--pull", "never", "--timeout", "60"])
        .args(["--max-output", "32MiB", "-j", "2", "--k", "1"])
        .args(["--isolate", isolate]);
    let out = finish(cmd, None, LIMIT);
    // A pass@k run (samples per task) exits 0 once every sample is judged.
    assert_eq!(out.code(), 0, "{out:?}");
    let results = report(&out);
    let samples = results[0]["samples"].as_array().expect("samples");
    assert_eq!(samples.len(), 11, "{out:?}");
    let want = [
        ("deep.py", "not_plain_data", "nested deeper than 128"),
        (
            "dict_entries.py",
            "not_plain_data",
            "more than 1048576 parts",
        ),
        (
            "empty_lists.py",
            "not_plain_data",
            "more than 1048576 parts",
        ),
        ("equal_keys.py", "not_plain_data", "keys are not distinct"),
        ("flat_nulls.py", "not_plain_data", "more than 1048576 parts"),
        (
            "huge_int.py",
            "wrong_answer",
            "check 1: `add(2, 3)` returned",
        ),
        (
            "huge_string.py",
            "wrong_answer",
            "check 1: `add(2, 3)` returned",
        ),
        ("many_results.py", "bad_frame", "more results than checks"),
        (
            "set_at_the_bound.py",
            "wrong_answer",
            "check 1: `add(2, 3)` returned",
        ),
        (
            "strings_at_the_bound.py",
            "wrong_answer",
            "check 1: `add(2, 3)` returned",
        ),
        ("tiny_ints.py", "not_plain_data", "more than 1048576 parts"),
    ];
    for (name, reason, said) in want {
        let s = samples
            .iter()
            .find(|s| s["sample"] == name)
            .unwrap_or_else(|| panic!("{name}: {out:?}"));
        assert_eq!(
            (&s["status"], &s["reason"], &s["judged"]),
            (&"fail".into(), &reason.into(), &"sealed".into()),
            "--isolate {isolate} {name}: {s:#}"
        );
        assert!(
            s["message"].as_str().is_some_and(|m| m.contains(said)),
            "--isolate {isolate} {name}: {s:#}"
        );
    }
    guard.finish();
}

#[test]
fn forged_frames_that_would_blow_up_memory_fail_a_container_per_case() {
    forged_frames("case");
}

#[test]
fn forged_frames_that_would_blow_up_memory_fail_a_runner_per_candidate() {
    forged_frames("candidate");
}

#[test]
fn forged_frames_that_would_blow_up_memory_fail_in_a_reused_worker() {
    forged_frames("worker");
}
