//! The eval report, as machines and people read it, on the real engine
//! (busybox candidates, nothing pulled):
//! - the JSON report when stdout is not a terminal, byte for byte against a
//!   golden file (`tests/golden/eval_report.json`) apart from `duration_ms`,
//!   which is written as 0 there. `SBX_BLESS=1` rewrites the golden file
//!   (then read the diff before committing it).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use tempfile::TempDir;

use common::{finish, Cleanup, Out, BUSYBOX};

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
            .args(["--image", BUSYBOX, "--pull", "never", "--no-fail-fast"]);
        cmd
    }
}

/// The report with every `"duration_ms": N` written as 0.
fn without_durations(report: &str) -> String {
    let re = regex::Regex::new(r#""duration_ms": \d+"#).expect("regex");
    re.replace_all(report, r#""duration_ms": 0"#).into_owned()
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
