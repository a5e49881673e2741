//! `sbx eval --partition` and `sbx merge` on the real engine: the shares of
//! the example suite, of a multi-sample suite and of a human-eval run,
//! merged, give the report one run gives (byte for byte once `duration_ms`
//! and the per-case measurements are taken out) and the same exit code; a
//! human-eval run's results files merge into the single run's results file
//! exactly. Needs an engine and the local images; fails (never skips)
//! without them.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use common::{finish, sbx, Cleanup, Out, BUSYBOX, PYTHON};

/// Bound on one eval or merge.
const LIMIT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The report without what differs from run to run: durations and the
/// per-case measurements, at every depth.
fn stripped(report: &str) -> String {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for key in [
                    "duration_ms",
                    "compile_ms",
                    "cpu_ms",
                    "wait_ms",
                    "max_rss_kib",
                    // Which identical sample a twin's verdict came from:
                    // a share folds only the twins it holds.
                    "same_as",
                ] {
                    map.shift_remove(key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(list) => list.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value: Value = serde_json::from_str(report)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}): {report}"));
    strip(&mut value);
    serde_json::to_string_pretty(&value).expect("serializes")
}

fn eval(run_id: &str, dir: &Path, args: &[&str]) -> Out {
    let mut cmd = sbx(Some(run_id));
    cmd.current_dir(dir)
        .args(["eval", "--pull", "never", "--format", "json", "-j", "4"])
        .args(args);
    finish(cmd, None, LIMIT)
}

fn merge(dir: &Path, files: &[PathBuf], extra: &[&str]) -> Out {
    let mut cmd = sbx(None);
    cmd.current_dir(dir).arg("merge").args(files).args(extra);
    finish(cmd, None, LIMIT)
}

/// Runs the eval once whole and once in each share of each of `specs`
/// ("hash:_/3" style, `_` for K), and checks that every merge gives the
/// single run's report and exit code. Returns the single run's report.
fn shares_merge_to_the_single_run(
    cleanup: &mut Cleanup,
    tag: &str,
    dir: &Path,
    args: &[&str],
    specs: &[(&str, usize)],
) -> Value {
    let id = common::run_id("part", tag);
    cleanup.add_run(&id);
    let single = eval(&id, dir, args);
    assert!(
        [0, 1].contains(&single.code()),
        "the single run failed: {single:?}"
    );
    let whole: Value = serde_json::from_str(&single.stdout).expect("a JSON report");
    let entries = whole.as_array().expect("a list").clone();
    assert!(
        entries.iter().all(|e| e.get("partition").is_none()),
        "an unpartitioned report carries no partition: {}",
        single.stdout
    );
    for (method, n) in specs {
        let mut files = Vec::new();
        let mut nonempty = Vec::new();
        let mut held = 0;
        for k in 1..=*n {
            let spec = format!("{method}:{k}/{n}");
            let share_id = format!("{id}-{method}-{k}");
            cleanup.add_run(&share_id);
            let out = eval(&share_id, dir, &[args, &["--partition", &spec]].concat());
            assert!([0, 1].contains(&out.code()), "share {spec}: {out:?}");
            assert!(out.stderr.contains(&format!("; share {spec}")), "{out:?}");
            let report: Value = serde_json::from_str(&out.stdout).expect("a JSON report");
            nonempty.push(report.as_array().is_some_and(|l| !l.is_empty()));
            for entry in report.as_array().expect("a list") {
                assert_eq!(entry["partition"]["spec"], spec.as_str(), "{entry}");
                held += entry["samples"].as_array().map_or(1, Vec::len);
            }
            let file = dir.join(format!("{tag}-{method}-{k}.json"));
            fs::write(&file, &out.stdout).expect("write a share");
            files.push(file);
        }
        let units: usize = entries
            .iter()
            .map(|e| e["samples"].as_array().map_or(1, |s| s.len().max(1)))
            .sum();
        assert_eq!(
            held, units,
            "{method}:_/{n}: the shares hold every unit once"
        );
        let merged_file = dir.join(format!("{tag}-{method}-merged.json"));
        let out = merge(
            dir,
            &files,
            &[
                "--format",
                "json",
                "-o",
                merged_file.to_str().expect("UTF-8"),
            ],
        );
        assert_eq!(
            out.code(),
            single.code(),
            "{method}:_/{n}: merge's exit code is the single run's: {out:?}"
        );
        assert_eq!(
            stripped(&out.stdout),
            stripped(&single.stdout),
            "{method}:_/{n}: the merged report is the single run's"
        );
        assert_eq!(
            fs::read_to_string(&merged_file).expect("merge -o"),
            out.stdout,
            "-o holds what stdout got"
        );
        // A share missing (one that holds something) is refused, naming the gap.
        if let Some(gone) = nonempty.iter().position(|&held| held) {
            let mut fewer = files.clone();
            fewer.remove(gone);
            let out = merge(dir, &fewer, &[]);
            assert_eq!(out.code(), 2, "{out:?}");
            assert!(
                out.stderr.trim().lines().count() == 1 && out.stderr.contains("a share is missing"),
                "{out:?}"
            );
            assert!(out.stdout.is_empty(), "{out:?}");
        }
    }
    whole
}

#[test]
fn example_suite_shares_merge_to_the_single_run() {
    let mut cleanup = Cleanup::new(&[]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let tasks = repo().join("tasks/tasks.json");
    let gen = repo().join("gen");
    let args = [
        "--tasks",
        tasks.to_str().expect("UTF-8"),
        "--gen",
        gen.to_str().expect("UTF-8"),
        "--image",
        PYTHON,
    ];
    let whole = shares_merge_to_the_single_run(
        &mut cleanup,
        "example",
        dir.path(),
        &args,
        &[("hash", 3), ("count", 2)],
    );
    assert!(whole.as_array().is_some_and(|l| l.len() >= 8), "{whole}");
    cleanup.finish();
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("a folder");
    }
    fs::write(path, text).expect("write a fixture");
}

#[test]
fn multi_sample_suite_shares_merge_to_the_single_run() {
    let mut cleanup = Cleanup::new(&[]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    write(
        &d.join("tasks.json"),
        r#"[
  {"id": "echo", "stdin": "", "expect": "hi\n"},
  {"id": "solo", "stdin": "", "expect": "one\n"},
  {"id": "none", "stdin": "", "expect": "x\n"},
  {"id": "add", "stdin": "2 3\n", "expect": "5\n"}
]"#,
    );
    // `echo`: 7 samples, 4 pass (pass@k is not the mean of the shares');
    // `add`: 5 samples, 1 passes; `solo` one candidate; `none` missing.
    let pass = "#!/bin/sh\necho hi\n";
    let fail = "#!/bin/sh\necho ho\n";
    for (name, body) in [
        ("a.sh", pass),
        ("b.sh", fail),
        ("c.sh", pass),
        ("d.sh", "#!/bin/sh\nexit 3\n"),
        ("e.sh", pass),
        ("f.sh", fail),
        ("g.sh", pass),
    ] {
        write(&d.join("gen/echo").join(name), body);
    }
    for (i, body) in [
        "#!/bin/sh\nread a b; echo $((a + b))\n",
        "#!/bin/sh\nread a b; echo $((a * b))\n",
        "#!/bin/sh\necho 6\n",
        "#!/bin/sh\nread a b; echo $((a - b))\n",
        "#!/bin/sh\necho 4\n",
    ]
    .iter()
    .enumerate()
    {
        write(&d.join(format!("gen/add/s{i}.sh")), body);
    }
    write(&d.join("gen/solo.sh"), "#!/bin/sh\necho one\n");
    let args = [
        "--tasks",
        "tasks.json",
        "--gen",
        "gen",
        "--image",
        BUSYBOX,
        "--k",
        "1,2,5",
    ];
    let whole = shares_merge_to_the_single_run(
        &mut cleanup,
        "samples",
        d,
        &args,
        &[("hash", 3), ("count", 4)],
    );
    assert_eq!(whole[0]["n"], 7, "{whole}");
    assert_eq!(whole[0]["c"], 4, "{whole}");
    assert_eq!(whole[3]["c"], 1, "{whole}");
    cleanup.finish();
}

/// A small human-eval problems file and samples for it: three problems
/// (one without samples), ten sample lines in mixed order.
fn human_eval_fixture(d: &Path) {
    let problem = |id: &str, name: &str, body: &str| {
        serde_json::json!({
            "task_id": id,
            "prompt": format!("def {name}(a, b):\n"),
            "entry_point": name,
            "test": format!("def check(f):\n    assert f(2, 3) == {body}\n"),
        })
        .to_string()
    };
    let problems = [
        problem("T/0", "add", "5"),
        problem("T/1", "mul", "6"),
        problem("T/2", "sub", "-1"),
    ]
    .join("\n");
    write(&d.join("problems.jsonl"), &format!("{problems}\n"));
    let sample = |id: &str, code: &str| {
        serde_json::json!({"task_id": id, "completion": format!("    return {code}\n")}).to_string()
    };
    let samples = [
        sample("T/0", "a + b"),
        sample("T/1", "a * b"),
        sample("T/0", "a - b"),
        sample("T/0", "a + b"),
        sample("T/1", "a + b + 1"),
        sample("T/1", "1 / 0"),
        sample("T/0", "b + a"),
        sample("T/1", "a * b"),
        sample("T/0", "a * b"),
        sample("T/1", "b * a"),
    ]
    .join("\n");
    write(&d.join("samples.jsonl"), &format!("{samples}\n"));
}

#[test]
fn human_eval_shares_merge_to_the_single_run_and_results_file() {
    let mut cleanup = Cleanup::new(&[]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    human_eval_fixture(d);
    let args = [
        "--problems",
        "problems.jsonl",
        "--samples",
        "samples.jsonl",
        "--image",
        PYTHON,
        "--timeout",
        "30",
        "--k",
        "1,3",
    ];
    let whole =
        shares_merge_to_the_single_run(&mut cleanup, "he", d, &args, &[("count", 4), ("hash", 2)]);
    assert_eq!(whole.as_array().map(Vec::len), Some(3), "{whole}");
    assert_eq!(whole[2]["status"], "missing", "{whole}");
    // The results files of the last shares run (hash:_/2) merge into the
    // single run's... which the shares' runs did not overwrite: the single
    // run's file is still the one beside the samples.
    let single = fs::read_to_string(d.join("samples.jsonl_results.jsonl")).expect("results");
    assert_eq!(single.lines().count(), 10);
    let mut files = Vec::new();
    for k in 1..=4 {
        let file = d.join(format!("samples.jsonl_results.count-{k}-of-4.jsonl"));
        let text = fs::read_to_string(&file).expect("a share's results file");
        for line in text.lines() {
            let value: Value = serde_json::from_str(line).expect("a JSON line");
            assert_eq!(value["partition"]["spec"], format!("count:{k}/4"), "{line}");
        }
        files.push(file);
    }
    let merged = d.join("merged_results.jsonl");
    let out = merge(d, &files, &["-o", merged.to_str().expect("UTF-8")]);
    // Some samples fail; merged, a pass@k run exits 0 as the run does.
    assert_eq!(out.code(), 0, "some samples fail: {out:?}");
    assert_eq!(
        out.stdout, single,
        "the merged results file is the single run's"
    );
    assert_eq!(fs::read_to_string(&merged).expect("-o"), single);
    // Overlap: one share twice.
    let twice = [files.clone(), vec![files[0].clone()]].concat();
    let out = merge(d, &twice, &[]);
    assert_eq!(out.code(), 2, "{out:?}");
    assert!(out.stderr.contains("the shares overlap"), "{out:?}");
    // A share of other options (another --timeout) is refused, named.
    let id = common::run_id("part", "he-other");
    cleanup.add_run(&id);
    let mut other_args = args.to_vec();
    other_args[7] = "29";
    let out = eval(
        &id,
        d,
        &[&other_args[..], &["--partition", "count:1/4"]].concat(),
    );
    assert!([0, 1].contains(&out.code()), "{out:?}");
    let other = d.join("other-1.json");
    fs::write(&other, &out.stdout).expect("write");
    let mut mixed = vec![other];
    mixed.extend((2..=4).map(|k| d.join(format!("he-count-{k}.json"))));
    let out = merge(d, &mixed, &[]);
    assert_eq!(out.code(), 2, "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        format!(
            "sbx: cannot merge: `{}` and `{}` are of different options",
            mixed[0].display(),
            mixed[1].display()
        )
    );
    cleanup.finish();
}

#[test]
fn bad_partition_values_get_one_line_and_exit_2() {
    for (bad, why) in [
        ("hash:0/3", "K is from 1 to N"),
        ("count:4/3", "K is from 1 to N"),
        ("foo:1/2", "the method is `hash` or `count`"),
        ("hash:1/0", "N is at least 1"),
    ] {
        let mut cmd = sbx(None);
        cmd.args(["eval", "--tasks", "nope.json", "--partition", bad]);
        let out = finish(cmd, None, Duration::from_secs(30));
        assert_eq!(out.code(), 2, "{bad}: {out:?}");
        assert_eq!(
            out.stderr,
            format!("sbx: invalid --partition `{bad}`: {why}\n"),
            "{bad}"
        );
        assert!(out.stdout.is_empty());
    }
    // And merge without a report is a usage error too.
    let out = finish(
        {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_sbx"));
            cmd.arg("merge");
            cmd
        },
        None,
        Duration::from_secs(30),
    );
    assert_eq!(out.code(), 2, "{out:?}");
}

#[test]
fn a_share_fills_the_cache_the_whole_run_reads() {
    let mut cleanup = Cleanup::new(&[]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    write(
        &d.join("tasks.json"),
        r#"[{"id": "one", "stdin": "", "expect": "1\n"}, {"id": "two", "stdin": "", "expect": "2\n"}]"#,
    );
    write(&d.join("gen/one.sh"), "#!/bin/sh\necho 1\n");
    write(&d.join("gen/two.sh"), "#!/bin/sh\necho 2\n");
    let args = [
        "--tasks",
        "tasks.json",
        "--gen",
        "gen",
        "--image",
        BUSYBOX,
        "--cache",
        "cache",
    ];
    let id = common::run_id("part", "cache");
    cleanup.add_run(&id);
    let share = eval(&id, d, &[&args[..], &["--partition", "count:2/2"]].concat());
    assert_eq!(share.code(), 0, "{share:?}");
    let id2 = common::run_id("part", "cache-whole");
    cleanup.add_run(&id2);
    let whole = eval(&id2, d, &args);
    assert_eq!(whole.code(), 0, "{whole:?}");
    let report: Value = serde_json::from_str(&whole.stdout).expect("a JSON report");
    // The share judged `two` (position 1): the whole run finds it cached,
    // under the same key; `one` it runs.
    assert_eq!(report[0]["id"], "one");
    assert!(report[0].get("cached").is_none(), "{report}");
    assert_eq!(report[1]["cached"], true, "{report}");
    cleanup.finish();
}
