//! `sbx diff` through the binary, on report files each test writes into its
//! own temp directory. No engine is involved and every run is bounded.

use crate::support;

use std::fs;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{json, Value};
use tempfile::TempDir;

use support::{stderr, stdout};

/// Upper bound for any one sbx invocation: a hang fails instead of hanging CI.
const LIMIT: Duration = Duration::from_secs(20);

/// A temp directory holding report files.
struct Reports {
    dir: TempDir,
}

impl Reports {
    fn new() -> Reports {
        Reports {
            dir: tempfile::tempdir().expect("a temp directory"),
        }
    }

    /// Writes `value` as the report `name` and returns its path.
    fn write(&self, name: &str, value: &Value) -> PathBuf {
        self.write_raw(
            name,
            &serde_json::to_string_pretty(value).expect("a report serializes"),
        )
    }

    fn write_raw(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        fs::write(&path, text).expect("the report is written");
        path
    }

    /// `sbx diff ARGS...`, run in the temp directory (so file names print short).
    fn diff(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sbx"));
        cmd.current_dir(self.dir.path())
            .arg("diff")
            .args(args)
            .timeout(LIMIT);
        cmd.output().expect("sbx runs")
    }
}

fn code(out: &Output) -> i32 {
    out.status
        .code()
        .unwrap_or_else(|| panic!("killed: {out:?}"))
}

/// A report as `sbx eval` prints it.
fn eval_report(entries: &[(&str, &str, Option<&str>)]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|&(id, status, reason)| {
                let mut e = json!({
                    "id": id, "status": status, "stderr_tail": "", "exit_code": 0, "duration_ms": 10
                });
                if let Some(reason) = reason {
                    e["reason"] = json!(reason);
                }
                e
            })
            .collect(),
    )
}

#[test]
fn identical_reports_exit_0() {
    let r = Reports::new();
    let report = eval_report(&[
        ("hello", "pass", None),
        ("reverse", "fail", Some("wrong_output")),
        ("primes", "missing", Some("no_candidate")),
    ]);
    r.write("a.json", &report);
    r.write("b.json", &report);
    let out = r.diff(&["a.json", "b.json"]);
    assert_eq!(code(&out), 0, "{out:?}");
    let text = stdout(&out);
    assert!(
        text.contains("OLD         3     1     1        1      0     33.3%  a.json"),
        "{text}"
    );
    assert!(
        text.contains("NEW         3     1     1        1      0     33.3%  b.json"),
        "{text}"
    );
    assert!(text.contains("3 tasks shared: 1 pass on both, 2 fail on both, 0 pass→fail, 0 fail→pass, 0 not judged"), "{text}");
    assert!(
        text.contains("McNemar exact p = 1 (0 pass→fail, 0 fail→pass): no shared task changed"),
        "{text}"
    );
    assert!(!text.contains("only in"), "{text}");
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_regression_exits_1_and_is_listed() {
    let r = Reports::new();
    r.write(
        "a.json",
        &eval_report(&[("hello", "pass", None), ("reverse", "pass", None)]),
    );
    let mut new = eval_report(&[
        ("hello", "pass", None),
        ("reverse", "fail", Some("wrong_output")),
    ]);
    new[1]["diff"] = json!("line 1: expected \"xobdnas\\n\", got \"sandbox\\n\"");
    r.write("b.json", &new);
    let out = r.diff(&["a.json", "b.json"]);
    assert_eq!(code(&out), 1, "{out:?}");
    let text = stdout(&out);
    assert!(
        text.contains("pass→fail (1), NEW's status and reason:\n  reverse  fail, wrong_output: line 1: expected \"xobdnas\\n\", got \"sandbox\\n\"\n"),
        "{text}"
    );
    assert!(
        text.contains("change     +0    -1    +1       +0     +0  -50.0 pp"),
        "{text}"
    );
    assert!(
        text.contains("McNemar exact p = 1 (1 pass→fail, 0 fail→pass)"),
        "{text}"
    );
    // A missing candidate where OLD passed is a regression too.
    r.write(
        "c.json",
        &eval_report(&[
            ("hello", "missing", Some("no_candidate")),
            ("reverse", "pass", None),
        ]),
    );
    let out = r.diff(&["a.json", "c.json"]);
    assert_eq!(code(&out), 1, "{out:?}");
    assert!(
        stdout(&out).contains("  hello  missing, no_candidate\n"),
        "{out:?}"
    );
}

#[test]
fn fixes_only_exit_0() {
    let r = Reports::new();
    let ids: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
    let old: Vec<(&str, &str, Option<&str>)> = ids
        .iter()
        .map(|id| (id.as_str(), "fail", Some("timeout")))
        .collect();
    let new: Vec<(&str, &str, Option<&str>)> =
        ids.iter().map(|id| (id.as_str(), "pass", None)).collect();
    r.write("a.json", &eval_report(&old));
    r.write("b.json", &eval_report(&new));
    let out = r.diff(&["a.json", "b.json"]);
    assert_eq!(code(&out), 0, "{out:?}");
    let text = stdout(&out);
    assert!(
        text.contains("fail→pass (8), OLD's status and reason:\n  t0  fail, timeout\n"),
        "{text}"
    );
    assert!(!text.contains("pass→fail (")); // no regression list
                                            // 8 fixes, no regression: 2 / 2^8.
    assert!(
        text.contains("McNemar exact p = 0.0078 (0 pass→fail, 8 fail→pass): NEW is better, and unlikely to be noise (p < 0.05)"),
        "{text}"
    );
}

#[test]
fn one_side_only_tasks_are_listed_not_counted() {
    let r = Reports::new();
    r.write(
        "a.json",
        &eval_report(&[("shared", "pass", None), ("dropped", "pass", None)]),
    );
    r.write(
        "b.json",
        &eval_report(&[
            ("added", "fail", Some("exit_code")),
            ("shared", "pass", None),
        ]),
    );
    // A task dropped from NEW is no regression, but the gate is not green
    // unless told that fewer tasks are fine.
    let out = r.diff(&["a.json", "b.json"]);
    assert_eq!(code(&out), 2, "{out:?}");
    assert_eq!(
        stderr(&out),
        "sbx diff: not green: NEW lacks 1 of OLD's 2 tasks (--allow-missing accepts it)\n"
    );
    let out = r.diff(&["a.json", "b.json", "--allow-missing"]);
    assert_eq!(code(&out), 0, "{out:?}");
    let text = stdout(&out);
    assert!(
        text.contains("only in OLD (1):\n  dropped  pass\n"),
        "{text}"
    );
    assert!(
        text.contains("only in NEW (1):\n  added    fail, exit_code\n"),
        "{text}"
    );
    assert!(text.contains("1 task shared: 1 pass on both"), "{text}");
}

/// A task that passed before and could not be judged now is no regression,
/// but the gate cannot pass on it either: exit 2 (an engine that was down
/// must not let a CI job go green).
#[test]
fn pass_to_error_is_not_judged_and_fails_the_gate() {
    let r = Reports::new();
    r.write(
        "a.json",
        &eval_report(&[("a", "pass", None), ("b", "fail", None)]),
    );
    let mut new = eval_report(&[("a", "error", Some("image_missing")), ("b", "error", None)]);
    new[0]["message"] = json!("image `x` is not present locally");
    r.write("b.json", &new);
    let out = r.diff(&["a.json", "b.json", "--json"]);
    assert_eq!(code(&out), 2, "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["regressions"], json!([]));
    assert_eq!(v["not_judged"].as_array().unwrap().len(), 2);
    assert_eq!(v["mcnemar"]["n"], 0);
    let text = stdout(&r.diff(&["a.json", "b.json"]));
    assert!(
        text.contains("  a  pass → error, image_missing: image `x` is not present locally\n"),
        "{text}"
    );
}

#[test]
fn unreadable_input_exits_2_with_one_line() {
    let r = Reports::new();
    r.write("good.json", &eval_report(&[("a", "pass", None)]));
    r.write_raw("broken.json", "[{\"id\": \"a\", \"status\": \"pass\"},");
    r.write_raw("object.json", "{\"results\": []}");
    r.write_raw("nostatus.json", "[{\"id\": \"a\"}]");
    r.write_raw(
        "badstatus.json",
        "[{\"id\": \"a\", \"status\": \"PASSED\"}]",
    );
    for (args, expected) in [
        (
            ["broken.json", "good.json"],
            "sbx: report `broken.json`: not JSON: ",
        ),
        (
            ["good.json", "nope.json"],
            "sbx: report `nope.json`: cannot read it: ",
        ),
        (
            ["object.json", "good.json"],
            "sbx: report `object.json`: expected a JSON list",
        ),
        (
            ["good.json", "nostatus.json"],
            "sbx: report `nostatus.json`: entry 1 (`a`): missing field `status`",
        ),
        (
            ["badstatus.json", "good.json"],
            "sbx: report `badstatus.json`: entry 1 (`a`): unknown status `PASSED`",
        ),
    ] {
        let out = r.diff(&args);
        assert_eq!(code(&out), 2, "{args:?}: {out:?}");
        let err = stderr(&out);
        assert!(err.starts_with(expected), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert_eq!(stdout(&out), "", "{args:?}");
    }
    // A missing argument is clap's usage error, exit 2 too.
    assert_eq!(code(&r.diff(&["good.json"])), 2);
}

#[test]
fn original_eval_loop_reports_work() {
    let r = Reports::new();
    r.write_raw(
        "old.json",
        r#"[{"id": "a", "status": "pass", "stderr_tail": ""},
            {"id": "b", "status": "pass", "stderr_tail": ""},
            {"id": "c", "status": "missing"}]"#,
    );
    r.write_raw(
        "new.json",
        r#"[{"id": "a", "status": "pass", "stderr_tail": ""},
            {"id": "b", "status": "fail", "stderr_tail": "Traceback (most recent call last):\n  File \"/work/task\"\nZeroDivisionError: division by zero\n"},
            {"id": "c", "status": "pass", "stderr_tail": ""}]"#,
    );
    let out = r.diff(&["old.json", "new.json"]);
    assert_eq!(code(&out), 1, "{out:?}");
    let text = stdout(&out);
    assert!(
        text.contains("  b  fail, ZeroDivisionError: division by zero\n"),
        "{text}"
    );
    assert!(
        text.contains("fail→pass (1), OLD's status and reason:\n  c  missing\n"),
        "{text}"
    );
}

#[test]
fn json_output_parses_and_has_the_fields() {
    let r = Reports::new();
    r.write(
        "a.json",
        &eval_report(&[
            ("x", "pass", None),
            ("y", "fail", Some("timeout")),
            ("z", "pass", None),
        ]),
    );
    r.write(
        "b.json",
        &eval_report(&[
            ("x", "fail", Some("oom")),
            ("y", "pass", None),
            ("w", "pass", None),
        ]),
    );
    let out = r.diff(&["--json", "a.json", "b.json"]);
    assert_eq!(code(&out), 1, "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["old"],
        json!({"file": "a.json", "tasks": 3, "passed": 2, "failed": 1, "missing": 0, "errors": 0,
               "pass_rate": 2.0 / 3.0})
    );
    assert_eq!(v["new"]["file"], "b.json");
    assert_eq!(v["new"]["passed"], 2);
    assert_eq!(v["change"]["tasks"], 0);
    assert_eq!(v["change"]["passed"], 0);
    assert_eq!(v["shared"], 2);
    assert_eq!(
        (v["both_pass"].clone(), v["both_fail"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(
        v["regressions"],
        json!([{"id": "x", "old": {"status": "pass"}, "new": {"status": "fail", "reason": "oom"}}])
    );
    assert_eq!(
        v["fixes"],
        json!([{"id": "y", "old": {"status": "fail", "reason": "timeout"}, "new": {"status": "pass"}}])
    );
    assert_eq!(v["not_judged"], json!([]));
    assert_eq!(v["only_old"], json!([{"id": "z", "status": "pass"}]));
    assert_eq!(v["only_new"], json!([{"id": "w", "status": "pass"}]));
    assert_eq!(v["pass_at_1"], Value::Null);
    assert_eq!(v["mcnemar"]["b"], 1);
    assert_eq!(v["mcnemar"]["c"], 1);
    assert_eq!(v["mcnemar"]["p"], 1.0);
    assert!(v["mcnemar"]["interpretation"]
        .as_str()
        .unwrap()
        .contains("too few"));
    assert_eq!(v["regressed"], true);
}

#[test]
fn multi_sample_reports_show_pass_at_1() {
    let r = Reports::new();
    r.write(
        "a.json",
        &json!([
            {"id": "a", "status": "pass", "n": 10, "c": 8, "pass@1": 0.8},
            {"id": "b", "status": "fail", "n": 10, "c": 2, "pass@1": 0.2},
            {"id": "c", "status": "pass", "n": 10, "c": 10, "pass@1": 1.0}
        ]),
    );
    r.write(
        "b.json",
        &json!([
            // As `sbx eval` writes a multi-sample entry: errors, pass@10, samples.
            {"id": "a", "status": "pass", "stderr_tail": "", "exit_code": null, "duration_ms": 30,
             "n": 10, "c": 9, "errors": 1, "pass@1": 0.9, "pass@10": 1.0,
             "samples": [{"id": "a", "status": "error", "stderr_tail": "", "reason": "image_missing",
                          "message": "no image", "exit_code": null, "duration_ms": 0, "sample": "0.py"}]},
            {"id": "b", "status": "pass", "n": 10, "c": 6, "pass@1": 0.6},
            {"id": "c", "status": "pass", "n": 10, "c": 10, "pass@1": 1.0}
        ]),
    );
    // `a` has a sample sbx could not judge: not judged, and it passed in
    // OLD, so it could hide a regression (exit 2).
    let out = r.diff(&["a.json", "b.json"]);
    assert_eq!(code(&out), 2, "{out:?}");
    assert_eq!(
        stderr(&out),
        "sbx diff: not green: 1 task not judged could hide a regression\n"
    );
    let text = stdout(&out);
    for want in [
        "        tasks  pass  fail  missing  error       pass@1\n",
        "OLD         3     2     1        0      0        0.667  a.json\n",
        // `a` has a sample not judged on NEW: NEW's mean is not final but
        // a range, `a`'s unjudged sample counted as a failure (9/11) and
        // as a pass (10/11).
        "NEW         3     3     0        0      0  0.806–0.836  b.json\n",
        "change     +0    +1    -1       +0     +0    not final\n",
        "NEW's mean pass@1 is not final: 1 task not judged; between 0.806 (counted as failures) and 0.836 (as passes)\n",
        "mean pass@1 over 2 tasks judged on both sides: 0.600 → 0.800 (+0.200)\n",
        "3 tasks shared: pass@1 rose on 1, fell on 0, unchanged on 1 (1 of them at 1.000), 1 not judged\n",
        "pass@1 rose (1), old → new:\n  b  0.200 → 0.600 (+0.400)\n",
        "paired sign-flip permutation test on per-task pass@1 differences (exact): p = 1 (1 rose, 0 fell)",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    assert!(!text.contains("McNemar"), "{text}");
    let out = r.diff(&["a.json", "b.json", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pass_at_1"]["tasks"], 3);
    assert_eq!(
        v["pass_at_1"]["per_task"][1],
        json!({"id": "b", "old": 0.2, "new": 0.6})
    );
    assert_eq!(
        v["fixes"][0]["new"],
        json!({"status": "pass", "pass@1": 0.6, "n": 10, "c": 6})
    );
    assert_eq!(v["not_judged"][0]["id"], "a");
    assert_eq!(v["mcnemar"], Value::Null);
    assert_eq!(v["pass_at_k"]["k"], 1);
    assert_eq!(v["pass_at_k"]["tasks"], 2);
    assert_eq!(
        v["pass_at_k"]["test"]["method"],
        "paired sign-flip permutation test"
    );
    assert_eq!(
        v["not_green"],
        json!(["1 task not judged could hide a regression"])
    );
}

/// The issue's gate: an honest run of a task (one good sample of four:
/// fail, pass@1 0.25) against one where the three wrong samples made their
/// runner die. Written as an older sbx wrote it (`pass`, 1/1, `errors` 3)
/// or as sbx writes it now (`error`, `incomplete`), NEW must not be a fix
/// and the gate must not go green.
#[test]
fn unjudged_samples_never_make_a_green_diff() {
    let r = Reports::new();
    r.write(
        "honest.json",
        &json!([{"id": "t", "status": "fail", "reason": "wrong_output", "n": 4, "c": 1,
                 "errors": 0, "pass@1": 0.25}]),
    );
    r.write(
        "older.json",
        &json!([{"id": "t", "status": "pass", "n": 1, "c": 1, "errors": 3, "pass@1": 1.0}]),
    );
    r.write(
        "now.json",
        &json!([{"id": "t", "status": "error", "reason": "samples_not_judged", "n": 1, "c": 1,
                 "errors": 3, "incomplete": true}]),
    );
    for new in ["older.json", "now.json"] {
        let out = r.diff(&["honest.json", new]);
        assert_eq!(code(&out), 2, "{new}: {out:?}");
        let text = stdout(&out);
        assert!(
            text.contains(
                "pass@1 rose on 0, fell on 0, unchanged on 0 (0 of them at 1.000), 1 not judged"
            ),
            "{new}: {text}"
        );
        assert!(text.contains("(3 samples not judged)"), "{new}: {text}");
    }
}

/// `sbx diff OLD NEW` with NEW `[]` (an eval that produced nothing) is not
/// green unless `--allow-missing` says so.
#[test]
fn an_empty_new_report_is_not_green() {
    let r = Reports::new();
    r.write("a.json", &eval_report(&[("a", "pass", None)]));
    r.write_raw("empty.json", "[]");
    let out = r.diff(&["a.json", "empty.json"]);
    assert_eq!(code(&out), 2, "{out:?}");
    assert_eq!(
        stderr(&out),
        "sbx diff: not green: NEW has no tasks (--allow-missing accepts it)\n"
    );
    let out = r.diff(&["a.json", "empty.json", "--allow-missing", "--json"]);
    assert_eq!(code(&out), 0, "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["not_green"], json!([]));
}

/// A report that repeats a key is refused with one line: serde_json alone
/// takes the last `status`, a pass, where another reader sees a fail.
#[test]
fn a_report_with_a_duplicate_key_is_refused() {
    let r = Reports::new();
    r.write("a.json", &eval_report(&[("a", "fail", None)]));
    r.write_raw(
        "dup.json",
        r#"[{"id": "a", "status": "fail", "status": "pass"}]"#,
    );
    for args in [["a.json", "dup.json"], ["dup.json", "a.json"]] {
        let out = r.diff(&args);
        assert_eq!(code(&out), 2, "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("dup.json") && err.contains("duplicate key `status`"),
            "{err}"
        );
    }
}

#[test]
fn closed_stdout_ends_quietly() {
    // Enough regressions that the text far exceeds a pipe's buffer, and a
    // reader that closes the pipe without reading: sbx must still exit with
    // the diff's code and print nothing on stderr.
    let r = Reports::new();
    let ids: Vec<String> = (0..20_000).map(|i| format!("task-{i}")).collect();
    let old: Vec<_> = ids.iter().map(|id| (id.as_str(), "pass", None)).collect();
    let new: Vec<_> = ids
        .iter()
        .map(|id| (id.as_str(), "fail", Some("wrong_output")))
        .collect();
    r.write("a.json", &eval_report(&old));
    r.write("b.json", &eval_report(&new));
    let mut cmd = Command::new("bash");
    cmd.current_dir(r.dir.path())
        .env("SBX", env!("CARGO_BIN_EXE_sbx"))
        .args([
            "-c",
            r#""$SBX" diff a.json b.json | exec 0<&-; echo "${PIPESTATUS[0]}""#,
        ])
        .timeout(LIMIT);
    let out = cmd.output().unwrap();
    assert_eq!(stdout(&out).trim(), "1", "{out:?}");
    assert_eq!(stderr(&out), "", "{out:?}");
}

/// A multi-sample report: `(id, n, c)`, as `sbx eval` writes each task.
fn sampled(entries: &[(&str, u64, u64)]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|&(id, n, c)| {
                let status = if c == n { "pass" } else { "fail" };
                json!({"id": id, "status": status, "stderr_tail": "", "exit_code": 0,
                       "duration_ms": 10, "n": n, "c": c, "errors": 0,
                       "pass@1": c as f64 / n as f64})
            })
            .collect(),
    )
}

/// The issue's case, by hand (the engine test judges it for real): `a`
/// 0.1 → 0.6, `b` 1.0 → 0.8, mean 0.42 → 0.48. By status `b` is
/// pass→fail; by mean pass@1 NEW is better: exit 0, and the reverse 1.
#[test]
fn multi_sample_gate_follows_mean_pass_at_k() {
    let r = Reports::new();
    r.write(
        "old.json",
        &sampled(&[
            ("a", 10, 1),
            ("b", 10, 10),
            ("c", 10, 0),
            ("d", 10, 0),
            ("e", 10, 10),
        ]),
    );
    r.write(
        "new.json",
        &sampled(&[
            ("a", 10, 6),
            ("b", 10, 8),
            ("c", 10, 0),
            ("d", 10, 0),
            ("e", 10, 10),
        ]),
    );
    let out = r.diff(&["old.json", "new.json"]);
    assert_eq!(code(&out), 0, "{out:?}");
    assert_eq!(stderr(&out), "");
    let text = stdout(&out);
    for want in [
        "OLD         5     2     3        0      0     0.420  old.json\n",
        "NEW         5     1     4        0      0     0.480  new.json\n",
        "change     +0    -1    +1       +0     +0    +0.060\n",
        "mean pass@1 over 5 tasks judged on both sides: 0.420 → 0.480 (+0.060)\n",
        "pass@1 fell (1), old → new, NEW's status and reason:\n  b  1.000 → 0.800 (-0.200), fail\n",
        "pass@1 rose (1), old → new:\n  a  0.100 → 0.600 (+0.500)\n",
        "(exact): p = 1 (1 rose, 1 fell): too few changed tasks (2)",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let out = r.diff(&["old.json", "new.json", "--json"]);
    assert_eq!(code(&out), 0, "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["regressed"], false);
    assert_eq!(v["pass_at_k"]["tasks"], 5);
    assert!((v["pass_at_k"]["change"].as_f64().unwrap() - 0.06).abs() < 1e-9);
    assert_eq!(v["pass_at_k"]["test"]["p"], 1.0);
    assert_eq!(v["pass_at_k"]["test"]["exact"], true);
    assert_eq!(v["regressions"][0]["id"], "b");

    // The other way round: the mean fell, NEW regressed.
    let out = r.diff(&["new.json", "old.json"]);
    assert_eq!(code(&out), 1, "{out:?}");
    assert!(
        stdout(&out).contains("0.480 → 0.420 (-0.060): NEW regressed\n"),
        "{}",
        stdout(&out)
    );
    // pass@10: every task with a passing sample is at 1 on both sides.
    let out = r.diff(&["old.json", "new.json", "--k", "10"]);
    assert_eq!(code(&out), 0, "{out:?}");
    assert!(
        stdout(&out)
            .contains("mean pass@10 over 5 tasks judged on both sides: 0.600 → 0.600 (+0.000)"),
        "{}",
        stdout(&out)
    );
}

/// A k the reports cannot give is refused with one line and exit 2; so is
/// any k but 1 on reports of one sample per task.
#[test]
fn a_k_the_reports_cannot_give_exits_2() {
    let r = Reports::new();
    r.write("old.json", &sampled(&[("a", 10, 1), ("b", 5, 5)]));
    r.write("new.json", &sampled(&[("a", 10, 6), ("b", 5, 4)]));
    r.write("one.json", &eval_report(&[("a", "pass", None)]));
    for (args, want) in [
        (
            &["old.json", "new.json", "--k", "6"][..],
            "sbx: --k 6: task `b` in OLD `old.json` has 5 judged samples (pass@6 needs at least 6)\n",
        ),
        (
            &["old.json", "new.json", "--k", "0"][..],
            "sbx: --k 0: pass@k needs k >= 1\n",
        ),
        (
            &["one.json", "one.json", "--k", "2"][..],
            "sbx: --k 2: these reports have one sample per task (no `n` on any entry), so they give pass@1 only\n",
        ),
    ] {
        let out = r.diff(args);
        assert_eq!(code(&out), 2, "{args:?}: {out:?}");
        assert_eq!(stderr(&out), want, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // --k 5 they can give.
    assert_eq!(code(&r.diff(&["old.json", "new.json", "--k", "5"])), 0);
}

/// Two reports of different suites share no task: one line says so,
/// instead of every task of each listed as "only in"; not green (exit 2).
#[test]
fn unrelated_reports_are_said_in_one_line() {
    let r = Reports::new();
    let many = |prefix: &str| {
        let ids: Vec<String> = (0..164).map(|i| format!("{prefix}/{i}")).collect();
        let entries: Vec<(&str, &str, Option<&str>)> =
            ids.iter().map(|id| (id.as_str(), "pass", None)).collect();
        eval_report(&entries)
    };
    r.write("a.json", &many("HumanEval"));
    r.write("b.json", &many("Mbpp"));
    let out = r.diff(&["a.json", "b.json"]);
    assert_eq!(code(&out), 2, "{out:?}");
    let text = stdout(&out);
    assert_eq!(
        text,
        "a.json and b.json share no task (164 only in a.json, 164 only in b.json, such as `HumanEval/0` and `Mbpp/0`): reports of different suites, nothing to compare\n"
    );
}

/// `sbx report` (the HTML page; tests/engine/html_report.rs renders it in a
/// browser): what is not a JSON report of `sbx eval` is refused in one
/// line with exit 2, and the page of two reports is one file that names no
/// outside resource and carries the diff's verdict as data.
#[test]
fn report_refuses_what_is_not_a_report_and_writes_one_file() {
    let r = Reports::new();
    let a = r.write(
        "a.json",
        &eval_report(&[("x", "pass", None), ("y", "pass", None)]),
    );
    let b = r.write(
        "b.json",
        &eval_report(&[("x", "pass", None), ("y", "fail", Some("wrong_output"))]),
    );
    let bad = r.write_raw("bad.json", "{\"not\": \"a list\"}");
    let report = |args: &[&std::path::Path]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sbx"));
        cmd.current_dir(r.dir.path())
            .arg("report")
            .args(args)
            .timeout(LIMIT);
        cmd.output().expect("sbx runs")
    };
    let out = report(&[&bad]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.json") && err.contains("not a JSON report"),
        "{err}"
    );
    let out = report(&[&a, &b, &a]);
    assert_eq!(code(&out), 2, "three reports: {}", stderr(&out));

    let page_path = r.dir.path().join("ab.html");
    let out = report(&[&a, &b, std::path::Path::new("-o"), &page_path]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    let page = fs::read_to_string(&page_path).expect("the page");
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains(
        "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-"
    ));
    for outside in [
        "src=\"http",
        "href=\"http",
        "src=\"//",
        "href=\"//",
        "@import",
    ] {
        assert!(!page.contains(outside), "the page loads {outside}");
    }
    assert!(page.contains("\"regressed\":true"), "the diff's verdict");
}
