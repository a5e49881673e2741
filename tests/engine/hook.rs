//! The pre-commit hook through the real `pre-commit` (from PyPI, in the
//! throwaway virtualenv `scripts/pre-commit-venv.sh` makes) on a scratch git
//! repository whose options live in its sbx.toml: a passing commit exits 0,
//! and a failing candidate blocks the commit, the text report in its
//! output.
//!
//! The hook is declared `language: rust` in `.pre-commit-hooks.yaml`, which
//! makes pre-commit build sbx from this repository with `cargo install` (a
//! release build: minutes). So the test runs the README's `repo: local` /
//! `language: system` hook, as a user copies it, whose entry's `sbx` is the
//! binary under test, and checks that it is the manifest's hook (id, name,
//! entry, pass_filenames, always_run).

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use common::{finish, Cleanup, Out, BUSYBOX};

const LIMIT: Duration = Duration::from_secs(300);

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The virtualenv's pre-commit, made if needed.
fn pre_commit() -> PathBuf {
    let mut cmd = Command::new(repo_root().join("scripts/pre-commit-venv.sh"));
    cmd.current_dir(repo_root());
    let out = finish(cmd, None, LIMIT);
    assert_eq!(out.code(), 0, "could not install pre-commit: {out:?}");
    PathBuf::from(out.stdout.trim())
}

/// The hooks of `.pre-commit-hooks.yaml`, read by pre-commit's own YAML
/// parser (the virtualenv's Python has it).
fn manifest(pre_commit: &Path) -> Vec<Value> {
    let python = pre_commit.with_file_name("python");
    let mut cmd = Command::new(python);
    cmd.args([
        "-c",
        "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
    ])
    .arg(repo_root().join(".pre-commit-hooks.yaml"));
    let out = finish(cmd, None, LIMIT);
    assert_eq!(out.code(), 0, "{out:?}");
    serde_json::from_str::<Value>(&out.stdout)
        .expect("the manifest as JSON")
        .as_array()
        .expect("a list of hooks")
        .clone()
}

/// The README's `repo: local` example: the fenced YAML block that holds
/// `repo: local`.
fn readme_local_hook() -> String {
    let readme = fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    readme
        .split("```yaml\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .find(|block| block.contains("repo: local"))
        .expect("the README shows a `repo: local` hook")
        .to_string()
}

/// `text` read by pre-commit's own YAML parser, as JSON.
fn yaml(pre_commit: &Path, text: &str) -> Value {
    let python = pre_commit.with_file_name("python");
    let mut cmd = Command::new(python);
    cmd.args([
        "-c",
        "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.argv[1])))",
        text,
    ]);
    let out = finish(cmd, None, LIMIT);
    assert_eq!(out.code(), 0, "{out:?}");
    serde_json::from_str(&out.stdout).expect("YAML as JSON")
}

/// A git command in `dir`, pre-commit's home kept in the scratch folder.
fn git(dir: &Path, args: &[&str], run_id: &str) -> Out {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(args)
        .env("PRE_COMMIT_HOME", dir.join(".pre-commit-home"))
        .env("SBX_RUN_ID", run_id)
        .env_remove("SBX_DOCKER")
        .env_remove("NO_COLOR");
    finish(cmd, None, LIMIT)
}

fn ok(out: &Out) {
    assert_eq!(out.code(), 0, "{out:?}");
}

#[test]
fn hook_passes_a_good_commit_and_blocks_a_failing_one_with_the_text_report() {
    common::require_engine();
    let pre_commit = pre_commit();
    let hooks = manifest(&pre_commit);
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    let hook = &hooks[0];
    assert_eq!(hook["id"], "sbx-eval");
    assert_eq!(hook["language"], "rust");
    let entry = hook["entry"].as_str().expect("an entry");
    assert!(entry.starts_with("sbx "), "the entry runs sbx: {entry}");
    let sbx = env!("CARGO_BIN_EXE_sbx");
    assert!(!sbx.contains(' '), "the binary's path has no space: {sbx}");

    let run_id = common::run_id("hk", "hook");
    let _cleanup = Cleanup::new(&[&run_id]);
    let scratch = tempfile::tempdir().expect("scratch");
    let dir = scratch.path();
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    };
    write(
        "sbx.toml",
        &format!(
            "[eval]\ntasks = \"tasks/tasks.json\"\ngen = \"gen\"\nimage = \"{BUSYBOX}\"\npull = \"never\"\n"
        ),
    );
    write(
        "tasks/tasks.json",
        &json!([
            {"id": "hello", "stdin": "", "expect": "hello\n"},
            {"id": "shout", "stdin": "hi\n", "expect": "HI\n"}
        ])
        .to_string(),
    );
    write("gen/hello.sh", "echo hello\n");
    write("gen/shout.sh", "tr a-z A-Z\n");
    write(".gitignore", ".sbx-cache/\n.pre-commit-home/\n");
    // The README's `repo: local` hook, as a user would copy it, its `sbx`
    // the binary under test. It must be the manifest's hook (the same id,
    // arguments and flags), with language `system`.
    let local = readme_local_hook();
    let config: Value = yaml(&pre_commit, &local);
    let readme_hook = &config["repos"][0]["hooks"][0];
    assert_eq!(config["repos"][0]["repo"], "local", "{config}");
    assert_eq!(readme_hook["language"], "system", "{config}");
    for key in ["id", "name", "entry", "pass_filenames", "always_run"] {
        assert_eq!(readme_hook[key], hook[key], "README's {key}: {config}");
    }
    let copied = local.replacen("entry: sbx ", &format!("entry: {sbx} "), 1);
    assert_ne!(copied, local, "the README's hook has `entry: sbx ...`");
    write(".pre-commit-config.yaml", &copied);

    ok(&git(dir, &["init", "-q", "."], &run_id));
    ok(&git(
        dir,
        &["config", "user.email", "test@example.invalid"],
        &run_id,
    ));
    ok(&git(dir, &["config", "user.name", "test"], &run_id));
    let mut install = Command::new(&pre_commit);
    install
        .current_dir(dir)
        .arg("install")
        .env("PRE_COMMIT_HOME", dir.join(".pre-commit-home"));
    ok(&finish(install, None, LIMIT));

    ok(&git(dir, &["add", "-A"], &run_id));
    let good = git(dir, &["commit", "-q", "-m", "good"], &run_id);
    ok(&good);
    let all = format!("{}{}", good.stdout, good.stderr);
    assert!(
        all.contains("sbx eval") && all.contains("Passed"),
        "{good:?}"
    );
    let head = git(dir, &["rev-parse", "HEAD"], &run_id).stdout;

    write("gen/shout.sh", "cat\n");
    ok(&git(dir, &["add", "-A"], &run_id));
    let bad = git(dir, &["commit", "-q", "-m", "bad"], &run_id);
    assert_eq!(bad.code(), 1, "{bad:?}");
    let all = format!("{}{}", bad.stdout, bad.stderr);
    assert!(all.contains("Failed"), "{bad:?}");
    // The text report, not the JSON one: one line per task, the diff under
    // the failure, the summary.
    // hello is unchanged: the hook's --cache reused its verdict.
    let pass = regex::Regex::new(r"(?m)^PASS +hello +\d+\.\d\ds  \(cached\)$").expect("regex");
    assert!(pass.is_match(&all), "{bad:?}");
    let fail = regex::Regex::new(r"(?m)^FAIL +shout +\d+\.\d\ds  wrong_output\n +line 1: expected \x22HI\\n\x22, got \x22hi\\n\x22$")
        .expect("regex");
    assert!(fail.is_match(&all), "{bad:?}");
    assert!(
        all.contains("1 passed, 1 failed, 0 missing, 0 errors in "),
        "{bad:?}"
    );
    assert!(!all.contains("\"status\""), "{bad:?}");
    // The commit was blocked.
    assert_eq!(git(dir, &["rev-parse", "HEAD"], &run_id).stdout, head);
    common::assert_nothing_left(&run_id, "after the hook's evals");
}
