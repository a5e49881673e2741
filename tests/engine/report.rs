//! The eval report, as machines and people read it, on the real engine
//! (busybox candidates, nothing pulled):
//! - the JSON report when stdout is not a terminal, byte for byte against a
//!   golden file (`tests/golden/eval_report.json`) apart from `duration_ms`,
//!   which is written as 0 there. `SBX_BLESS=1` rewrites the golden files
//!   (then read the diff before committing them);
//! - the text report when stdout is a terminal: a real pseudo-terminal made
//!   by `script` (util-linux), against `tests/golden/eval_report.txt`
//!   (durations written as 0.00s), coloured unless `NO_COLOR`, with `-o`
//!   writing the same JSON as a pipe gets.

use crate::common;
use crate::support::terminal;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use tempfile::TempDir;

use common::{finish, Cleanup, Out, BUSYBOX};
use terminal::under_script;

/// Bound on one eval of the suite below.
const LIMIT: Duration = Duration::from_secs(120);

/// A scratch suite covering every shape of entry: pass, wrong output,
/// a crash with stderr, a timeout, no candidate, a multi-case task, a
/// folder of samples, and a task whose image is missing.
struct Suite {
    dir: TempDir,
    id: String,
}

impl Suite {
    fn new(tag: &str) -> Suite {
        common::require_engine();
        let dir = tempfile::tempdir().expect("scratch");
        let suite = Suite {
            dir,
            id: common::run_id("rep", tag),
        };
        let tasks = json!([
            {"id": "hello", "stdin": "", "expect": "hello\n"},
            {"id": "wrong", "stdin": "", "expect": "hello\n"},
            {"id": "crash", "stdin": "", "expect": "x\n"},
            {"id": "spin", "stdin": "", "expect": "x\n", "timeout": 1},
            {"id": "absent", "stdin": "", "expect": ""},
            {"id": "upper", "cases": [
                {"stdin": "a\n", "expect": "a\n"},
                {"stdin": "b\n", "expect": "c\n"},
                {"stdin": "d\n", "expect": "d\n"}
            ]},
            {"id": "twice", "stdin": "2\n", "expect": "4\n"},
            {"id": "noimage", "stdin": "", "expect": "", "image": "sbx-absent:none"}
        ]);
        suite.write(
            "tasks.json",
            &serde_json::to_string_pretty(&tasks).expect("tasks"),
        );
        suite.write("gen/hello.sh", "echo hello\n");
        suite.write("gen/wrong.sh", "echo world\n");
        suite.write(
            "gen/crash.sh",
            "echo partial\necho 'oops: it broke' >&2\nexit 3\n",
        );
        suite.write("gen/spin.sh", "while :; do :; done\n");
        suite.write("gen/upper.sh", "cat\n");
        suite.write("gen/twice/a.sh", "echo 4\n");
        suite.write("gen/twice/b.sh", "echo 5\n");
        suite.write("gen/twice/c.sh", "read n; echo $((n * 2))\n");
        suite.write("gen/noimage.sh", "echo\n");
        suite
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    /// `sbx eval` over the suite, in the suite's folder (so no sbx.toml but
    /// the test's own is read), with busybox and nothing pulled.
    fn eval(&self) -> Command {
        let mut cmd = common::sbx(Some(&self.id));
        cmd.current_dir(self.dir.path())
            .args(["eval", "--tasks", "tasks.json", "--gen", "gen", "-j", "4"])
            .args(["--image", BUSYBOX, "--pull", "never", "--no-fail-fast"])
            // The drop-in contract: `--isolate case`'s report keeps every
            // field it had before the runner; its supervisor adds `cpu_ms`
            // and `wait_ms` (runner modes add `max_rss_kib` too).
            .args(["--isolate", "case"])
            // Generous for the tasks that should finish (spin has its own
            // 1 s): load must not turn a pass into a timeout.
            .args(["--timeout", "60"]);
        cmd
    }
}

/// The report with every measurement (`"duration_ms"`, `"cpu_ms"`,
/// `"wait_ms"`: N) written as 0.
fn without_durations(report: &str) -> String {
    let re = regex::Regex::new(r#""(duration_ms|cpu_ms|wait_ms)": \d+"#).expect("regex");
    re.replace_all(report, r#""$1": 0"#).into_owned()
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// `actual` equals the golden file `name`, or (with `SBX_BLESS=1`) becomes it.
fn assert_golden(name: &str, actual: &str) {
    let path = golden(name);
    if std::env::var_os("SBX_BLESS").is_some() {
        fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("golden file {}: {e}", path.display()));
    assert!(
        expected == actual,
        "the report differs from {}:\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

#[test]
fn json_report_is_byte_for_byte_the_golden_file() {
    let suite = Suite::new("golden");
    let _cleanup = Cleanup::new(&[&suite.id]);
    let out: Out = finish(suite.eval(), None, LIMIT);
    // Errors (the missing image) make the exit code 2.
    assert_eq!(out.code(), 2, "{out:?}");
    assert_golden("eval_report.json", &without_durations(&out.stdout));
    assert!(
        out.stderr
            .contains("1 passed, 5 failed, 1 missing, 1 errors in "),
        "{out:?}"
    );
    common::assert_nothing_left(&suite.id, "after the golden eval");
}

/// `cmd` run by `script` under a new pseudo-terminal: its stdout and stderr
/// are that terminal, whose output (`\r\n` line ends made `\n`) is the
/// captured stdout. The command's exit code is script's (`-e`).
fn under_terminal(cmd: &Command) -> Out {
    let script = under_script(cmd);
    let mut out = finish(script, None, LIMIT);
    out.stdout = out.stdout.replace("\r\n", "\n");
    out
}

/// The terminal's text without the live progress line (written to stderr,
/// the same terminal, and erased with `\r\x1b[K`).
fn without_progress(text: &str) -> String {
    let re =
        regex::Regex::new(r"\r\x1b\[K(sbx: \d+/\d+ (candidates|samples) judged)?").expect("regex");
    re.replace_all(text, "").into_owned()
}

/// A terminal's report as a pipe gets it: without the failures printed as
/// they happened and the recap (`Not passed (N):`, those lines again,
/// `Slowest: ...`), which only a terminal shows (tests/quick/eval_progress.rs
/// checks them).
fn as_piped(text: &str) -> String {
    let live = regex::Regex::new(
        r"(?m)^ +(\x1b\[[0-9;]*m)?(FAIL|ERROR|MISSING)(\x1b\[0m)? \[ *\d+\.\d\ds\] .*\n",
    )
    .expect("regex");
    let text = live.replace_all(text, "");
    let recap = regex::Regex::new(r"\nNot passed \(\d+\):\n").expect("regex");
    let text = recap.replace_all(&text, "");
    let slowest = regex::Regex::new(r"(?m)^Slowest: .*\n").expect("regex");
    let text = slowest.replace_all(&text, "").into_owned();
    // The summary, wrapped to the terminal's width there, is one line.
    match text.trim_end().rfind("\n\n") {
        Some(i) => {
            let (report, summary) = text.split_at(i + 2);
            format!("{report}{}\n", summary.trim_end().replace('\n', " "))
        }
        None => text,
    }
}

/// The text report with its durations written as 0.00s (the column keeps
/// its width: they are right-aligned) and the summary's time as 0.0 s.
fn text_without_durations(text: &str) -> String {
    let column = regex::Regex::new(r"( *)\d+\.\d\ds").expect("regex");
    let text = column.replace_all(text, |caps: &regex::Captures| {
        let width = caps[0].len();
        format!("{:>width$}", "0.00s")
    });
    let total = regex::Regex::new(r" in \d+\.\d s").expect("regex");
    let text = total.replace_all(&text, " in 0.0 s");
    // The machine's contention, said when candidates waited for a CPU: a
    // fact of the machine at the time, like a duration.
    let busy = regex::Regex::new(r"; busy machine: candidates waited \d+% of their run time for a CPU \(not counted: verdicts count CPU time\)").expect("regex");
    busy.replace_all(&text, "").into_owned()
}

#[test]
fn the_golden_comparison_drops_the_machines_contention() {
    // The clause as sbx writes it (src/report/summary.rs) on a busy
    // machine; a change of its words must change the regex above.
    let busy = "1 passed, 0 failed, 0 missing, 0 errors in 2.5 s; busy machine: candidates waited 48% of their run time for a CPU (not counted: verdicts count CPU time); mean pass@1 0.667 over 1 task\n";
    assert_eq!(
        text_without_durations(busy),
        "1 passed, 0 failed, 0 missing, 0 errors in 0.0 s; mean pass@1 0.667 over 1 task\n"
    );
}

#[test]
fn text_report_at_a_terminal_and_json_in_the_output_file() {
    let suite = Suite::new("tty");
    let _cleanup = Cleanup::new(&[&suite.id]);
    let mut cmd = suite.eval();
    cmd.args(["-o", "report.json"]).env_remove("NO_COLOR");
    let out = under_terminal(&cmd);
    assert_eq!(out.code(), 2, "{out:?}");
    let shown = without_progress(&out.stdout);
    // Coloured by default at a terminal, as cargo does.
    assert!(
        shown.contains("\x1b[1;32mPASS   \x1b[0m  hello"),
        "{shown:?}"
    );
    assert!(
        shown.contains("\x1b[1;31mFAIL   \x1b[0m  wrong"),
        "{shown:?}"
    );
    let plain = regex::Regex::new(r"\x1b\[[0-9;]*m")
        .expect("regex")
        .replace_all(&shown, "")
        .into_owned();
    assert!(!plain.contains('\x1b'), "{plain:?}");
    assert!(plain.contains("\nNot passed ("), "{plain:?}");
    assert_golden(
        "eval_report.txt",
        &text_without_durations(&as_piped(&plain)),
    );
    // The JSON report went to the file, exactly as a pipe gets it.
    let written = fs::read_to_string(suite.path("report.json")).expect("the -o file");
    assert_golden("eval_report.json", &without_durations(&written));

    // NO_COLOR: the same report, without colour.
    let mut cmd = suite.eval();
    cmd.env("NO_COLOR", "1");
    let out = under_terminal(&cmd);
    let shown = without_progress(&out.stdout);
    assert!(!shown.contains('\x1b'), "{shown:?}");
    assert_golden(
        "eval_report.txt",
        &text_without_durations(&as_piped(&shown)),
    );
    common::assert_nothing_left(&suite.id, "after the terminal evals");
}

#[test]
fn format_forces_either_report() {
    let suite = Suite::new("format");
    let _cleanup = Cleanup::new(&[&suite.id]);
    // Text into a pipe, never coloured there unless asked.
    let mut cmd = suite.eval();
    cmd.args(["--format", "text"]);
    let out = finish(cmd, None, LIMIT);
    assert_eq!(out.code(), 2, "{out:?}");
    assert_golden("eval_report.txt", &text_without_durations(&out.stdout));
    // The summary is the report's last line, not repeated on stderr.
    assert!(!out.stderr.contains(" passed, "), "{out:?}");
    let mut cmd = suite.eval();
    cmd.args(["--format", "text", "--color", "always"]);
    let out = finish(cmd, None, LIMIT);
    assert!(out.stdout.contains("\x1b[1;31mFAIL"), "{out:?}");
    // JSON at a terminal.
    let mut cmd = suite.eval();
    cmd.args(["--format", "json", "--color", "always"]);
    let out = under_terminal(&cmd);
    let shown = as_piped(&without_progress(&out.stdout));
    let (report, summary) = shown.split_at(shown.rfind("]\n").expect("a JSON list") + 2);
    assert_golden("eval_report.json", &without_durations(report));
    assert!(summary.starts_with("1 passed, 5 failed"), "{summary:?}");
    common::assert_nothing_left(&suite.id, "after the forced formats");
}
