//! sbx's Python wheel, as a Python user gets it: `scripts/wheel.sh` builds it
//! (maturin from PyPI, `bindings = "bin"`), pip installs it into a throwaway
//! virtualenv, and the installed `sbx`, found on the virtualenv's PATH, judges
//! the shipped example suite (a copy of tasks/, gen/ and sbx.toml, away from
//! the repository and its target/) on the real engine. Its report must be
//! the example's, judged by the installed executable as the containers'
//! runner (a dynamically linked sbx would fall back to `--isolate case`).
//! Needs an engine, `sbx-python:bookworm` and PyPI for maturin the first
//! time; fails (never skips) without them or when the wheel cannot be built.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use common::{finish, report, Cleanup, Out};

/// Bound on the wheel's build: a cold release build on 2 loaded cores.
const BUILD_LIMIT: Duration = Duration::from_secs(40 * 60);
/// Bound on a virtualenv or a pip install of a local file.
const PIP_LIMIT: Duration = Duration::from_secs(300);
/// Bound on the example eval (about 5 s unloaded).
const EVAL_LIMIT: Duration = Duration::from_secs(300);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The wheel `scripts/wheel.sh` builds (it makes maturin's virtualenv first
/// if needed).
fn build_wheel() -> PathBuf {
    let out = finish(
        Command::new(root().join("scripts/wheel.sh")),
        None,
        BUILD_LIMIT,
    );
    assert_eq!(out.code(), 0, "scripts/wheel.sh failed: {out:?}");
    let wheel = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("SBX_WHEEL="))
        .unwrap_or_else(|| panic!("scripts/wheel.sh printed no SBX_WHEEL: {out:?}"));
    let wheel = PathBuf::from(wheel);
    assert!(
        wheel.is_file(),
        "{} is not a file: {out:?}",
        wheel.display()
    );
    wheel
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[test]
fn the_wheel_installs_sbx_and_runs_the_example_suite() {
    let id = common::run_id("whl", "example");
    let cleanup = Cleanup::new(&[&id]);
    let wheel = build_wheel();
    let name = wheel.file_name().expect("a name").to_string_lossy();
    assert!(
        name.starts_with(&format!(
            "sbx_judge-{}-py3-none-",
            env!("CARGO_PKG_VERSION")
        )) && name.contains("linux")
            && name.ends_with("_x86_64.whl"),
        "a wheel for any Python on x86_64 Linux: {name}"
    );

    let scratch = tempfile::Builder::new()
        .prefix("sbx-wheel-")
        .tempdir()
        .expect("scratch folder");
    let venv = scratch.path().join("venv");
    let made: Out = finish(
        {
            let mut c = Command::new("python3");
            c.args(["-m", "venv"]).arg(&venv);
            c
        },
        None,
        PIP_LIMIT,
    );
    assert_eq!(made.code(), 0, "python3 -m venv failed: {made:?}");
    let pip: Out = finish(
        {
            let mut c = Command::new(venv.join("bin/pip"));
            c.args(["install", "--no-index", "--no-deps", "--quiet"])
                .arg("--disable-pip-version-check")
                .arg(&wheel);
            c
        },
        None,
        PIP_LIMIT,
    );
    assert_eq!(pip.code(), 0, "pip install of the wheel failed: {pip:?}");

    // The executable itself is installed, not a Python launcher for it.
    let installed = venv.join("bin/sbx");
    let head = fs::read(&installed)
        .unwrap_or_else(|e| panic!("the wheel installed no {}: {e}", installed.display()));
    assert!(head.starts_with(b"\x7fELF"), "bin/sbx is not an executable");

    // The example suite, in a folder of its own: only the copy's sbx.toml
    // applies, and nothing of the repository's target/ is near.
    let suite = scratch.path().join("suite");
    copy_tree(&root().join("tasks"), &suite.join("tasks"));
    copy_tree(&root().join("gen"), &suite.join("gen"));
    fs::copy(root().join("sbx.toml"), suite.join("sbx.toml")).expect("copy sbx.toml");

    // `sbx` as an activated virtualenv finds it: first on PATH.
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let version = finish(
        {
            let mut c = Command::new(&installed);
            c.arg("--version");
            c
        },
        None,
        PIP_LIMIT,
    );
    // `sbx 0.1.0 (1a2b3c4d5e6f 2026-12-02)`: the wheel is built from
    // this checkout, so its version names a commit.
    let said = version.stdout.trim();
    assert!(
        said.starts_with(&format!("sbx {} (", env!("CARGO_PKG_VERSION"))) && said.ends_with(')'),
        "{version:?}"
    );
    let mut eval = Command::new("sbx");
    eval.current_dir(&suite)
        .env("PATH", &path)
        .env("SBX_RUN_ID", &id)
        .env_remove("SBX_DOCKER")
        .arg("eval");
    let out = finish(eval, None, EVAL_LIMIT);
    common::assert_nothing_left(&id, &format!("{out:?}"));

    // The example's report (README): five pass, a wrong output, a timeout,
    // a task without a candidate; exit 1.
    assert_eq!(out.code(), 1, "{out:?}");
    let entries = report(&out);
    let verdicts: BTreeMap<String, (String, String)> = entries
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("id"), (s("status"), s("reason")))
        })
        .collect();
    let expected: BTreeMap<String, (String, String)> = [
        ("hello", "pass", ""),
        ("fizzbuzz", "pass", ""),
        ("shout", "pass", ""),
        ("mean", "pass", ""),
        ("word_count", "pass", ""),
        ("reverse", "fail", "wrong_output"),
        ("spin", "fail", "timeout"),
        ("primes", "missing", "no_candidate"),
    ]
    .into_iter()
    .map(|(id, status, reason)| (id.to_string(), (status.to_string(), reason.to_string())))
    .collect();
    assert_eq!(verdicts, expected, "{out:?}");
    assert!(
        out.stderr
            .contains("5 passed, 2 failed, 1 missing, 0 errors in "),
        "{out:?}"
    );

    // Judged in runner mode: the installed sbx, copied into each container,
    // was the runner there (runner modes record the candidate's CPU time).
    assert!(
        !out.stderr.contains("--isolate case instead"),
        "the installed sbx could not be the runner: {out:?}"
    );
    for entry in entries.iter().filter(|e| e["status"] == "pass") {
        assert!(
            entry.get("cpu_ms").is_some_and(Value::is_u64),
            "no runner's cpu_ms in {entry}: {out:?}"
        );
    }
    cleanup.finish();
}
