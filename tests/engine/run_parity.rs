//! `sbx run FILE [IMAGE] [TIMEOUT]` against the seed script it replaces
//! (`tests/seed/run_sandboxed.sh`, verbatim): `${2:-python:3.12-slim}`,
//! `${3:-10}` handed to GNU `timeout`. Every IMAGE and TIMEOUT form the
//! script takes behaves the same: an empty value is the default, `0` and
//! `inf` are no limit (sbx adds a note on stderr), whatever `timeout`
//! accepts is accepted, and what it refuses exits 125. The script runs only
//! where that is safe: a local image, never the default one (it would be
//! pulled), and never a timeout that could kill its docker client mid-start
//! (a container left in `Created`, unnamed). Its containers are labelled
//! by a `docker` wrapper on PATH so that the guard removes them whatever
//! happens. Real engine: fails loudly without one.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{Cleanup, BUSYBOX};

const LIMIT: Duration = Duration::from_secs(90);

/// A folder with `ok.sh` (prints `ok`), `slow.sh` (sleeps 30 s), and
/// `bin/docker`, which labels the script's containers with `run_id`.
fn scratch(run_id: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("scratch");
    let exe = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        fs::write(&path, text).expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    fs::create_dir(dir.path().join("bin")).expect("mkdir");
    fs::create_dir(dir.path().join("tmp")).expect("mkdir");
    exe("ok.sh", "#!/bin/sh\necho ok\n");
    exe("slow.sh", "#!/bin/sh\nsleep 30\necho late\n");
    let docker = docker_path();
    exe(
        "bin/docker",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = run ]; then shift; exec {docker} run --label sbx.run={run_id} \"$@\"; fi\nexec {docker} \"$@\"\n"
        ),
    );
    dir
}

/// The real docker CLI, from PATH (before the wrapper is put first).
fn docker_path() -> String {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|dir| Path::new(dir).join("docker"))
        .find(|path| path.is_file())
        .expect("a docker CLI on PATH")
        .display()
        .to_string()
}

/// The seed script's run of `args` in `dir`: (exit code, stdout).
fn script(dir: &Path, args: &[&str]) -> (i32, String) {
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/seed/run_sandboxed.sh");
    let mut cmd = Command::new(seed);
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.current_dir(dir).env("PATH", path).args(args);
    let out = common::finish(cmd, None, LIMIT);
    (out.code(), out.stdout)
}

/// sbx's run of `args` in `dir`: (exit code, stdout, stderr).
fn sbx(dir: &Path, run_id: &str, args: &[&str]) -> (i32, String, String) {
    let mut cmd = common::sbx(Some(run_id));
    cmd.current_dir(dir)
        .env("TMPDIR", dir.join("tmp"))
        .arg("run")
        .args(args);
    let out = common::finish(cmd, None, LIMIT);
    (out.code(), out.stdout, out.stderr)
}

#[test]
fn image_and_timeout_forms_behave_as_the_script() {
    let run_id = common::run_id("rp", "forms");
    let sbx_id = format!("{run_id}-sbx");
    let cleanup = Cleanup::new(&[&run_id, &sbx_id]);
    let dir = scratch(&run_id);
    // (TIMEOUT, exit code): all with a local image and a program that
    // ends at once, so the script's `timeout` never fires mid-start.
    let cases: &[(&str, i32)] = &[
        ("", 0),
        ("0", 0),
        ("inf", 0),
        ("1e9", 0),
        ("0x1e", 0),
        ("1m", 0),
        (" 30", 0),
        ("+30s", 0),
        ("-1", 125),
        ("abc", 125),
        ("1x", 125),
        ("nan", 125),
        ("30 ", 125),
    ];
    for &(timeout, code) in cases {
        let args = ["ok.sh", BUSYBOX, timeout];
        let (script_code, script_out) = script(dir.path(), &args);
        assert_eq!(script_code, code, "the script, TIMEOUT {timeout:?}");
        let (sbx_code, sbx_out, sbx_err) = sbx(dir.path(), &sbx_id, &args);
        assert_eq!(
            (sbx_code, sbx_out.as_str()),
            (script_code, script_out.as_str()),
            "TIMEOUT {timeout:?}: sbx vs the script; sbx's stderr: {sbx_err}"
        );
        let noted = sbx_err.contains("no time limit");
        let unlimited = ["0", "inf"].contains(&timeout);
        assert_eq!(noted, unlimited, "TIMEOUT {timeout:?}: {sbx_err}");
        if code == 125 {
            assert_eq!(sbx_err.lines().count(), 1, "{sbx_err}");
            assert!(sbx_err.contains("invalid time interval"), "{sbx_err}");
        }
    }
    // A missing FILE is 64 before TIMEOUT is read, in both.
    let args = ["absent.sh", BUSYBOX, "-1"];
    assert_eq!(script(dir.path(), &args).0, 64);
    assert_eq!(sbx(dir.path(), &sbx_id, &args).0, 64);
    cleanup.finish();
}

/// Too short to start anything: 124, and nothing left (sbx alone: the
/// script's killed client could leave its container in `Created`).
#[test]
fn a_tiny_timeout_is_a_timeout() {
    let run_id = common::run_id("rp", "tiny");
    let cleanup = Cleanup::new(&[&run_id]);
    let dir = scratch(&run_id);
    for timeout in ["0.0001", "1e-10"] {
        let (code, out, err) = sbx(dir.path(), &run_id, &["slow.sh", BUSYBOX, timeout]);
        assert_eq!(code, 124, "TIMEOUT {timeout}: {out} {err}");
        common::assert_nothing_left(&run_id, timeout);
    }
    cleanup.finish();
}

/// An empty IMAGE is the default image (shown by --print-argv: a real run
/// would pull it), with or without an empty TIMEOUT.
#[test]
fn an_empty_image_is_the_default() {
    let dir = tempfile::tempdir().expect("scratch");
    fs::create_dir(dir.path().join("tmp")).expect("mkdir");
    fs::write(dir.path().join("ok.sh"), "#!/bin/sh\necho ok\n").expect("write");
    for args in [&["ok.sh", "", "5"][..], &["ok.sh", ""], &["ok.sh", "", ""]] {
        let mut cmd = common::sbx(None);
        cmd.current_dir(dir.path())
            .env("TMPDIR", dir.path().join("tmp"))
            .args(["run", "--print-argv"])
            .args(args);
        let out = common::finish(cmd, None, LIMIT);
        assert_eq!(out.code(), 0, "{args:?}: {out:?}");
        let argv: Vec<String> = serde_json::from_str(&out.stdout).expect("a JSON list");
        let image = argv.iter().position(|a| a == "--").map(|i| &argv[i + 1]);
        assert_eq!(
            image.map(String::as_str),
            Some("python:3.12-slim"),
            "{args:?}"
        );
    }
}
