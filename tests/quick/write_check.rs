//! Files `sbx eval` writes when it is done are checked before anything is
//! judged: `--samples <(...)` (its results file would go to /dev/fd), an
//! `-o` or `--junit` in a folder that does not exist or that is a file.
//! One line, exit 2, no report, and the docker CLI never started (it is a
//! script that logs its calls). Nothing here starts a container.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use assert_cmd::Command as AssertCommand;

use crate::support;

const LIMIT: Duration = Duration::from_secs(30);

const PROBLEM: &str = r#"{"task_id": "T/0", "prompt": "def f():\n", "canonical_solution": "    return 1\n", "test": "def check(candidate):\n    assert candidate() == 1\n", "entry_point": "f"}"#;
const SAMPLE: &str = r#"{"task_id": "T/0", "completion": "    return 1\n"}"#;

/// A folder with human-eval files, a tasks suite, and `docker`, a script
/// that logs its arguments to `docker.log`.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("scratch");
    let write = |rel: &str, text: &str| fs::write(dir.path().join(rel), text).expect("write");
    write("problems.jsonl", &format!("{PROBLEM}\n"));
    write("samples.jsonl", &format!("{SAMPLE}\n"));
    write(
        "tasks.json",
        r#"[{"id": "a", "stdin": "", "expect": "hi\n"}]"#,
    );
    fs::create_dir(dir.path().join("gen")).expect("mkdir");
    write("gen/a.sh", "echo hi\n");
    write("a-file", "");
    let docker = dir.path().join("docker");
    fs::write(
        &docker,
        "#!/bin/sh\necho \"$@\" >> \"$(dirname \"$0\")/docker.log\"\nexit 1\n",
    )
    .expect("write");
    fs::set_permissions(&docker, fs::Permissions::from_mode(0o755)).expect("chmod");
    fs::create_dir(dir.path().join("tmp")).expect("mkdir");
    dir
}

fn refused(dir: &Path, out: &std::process::Output, says: &str) {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "a report was printed: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("sbx: cannot write "), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
    assert!(
        !dir.join("docker.log").exists(),
        "docker ran: {:?}",
        fs::read_to_string(dir.join("docker.log"))
    );
}

#[test]
fn samples_from_a_pipe_are_refused_before_judging() {
    let dir = scratch();
    // bash's process substitution, exactly as a user types it.
    let sbx = env!("CARGO_BIN_EXE_sbx");
    let mut cmd = Command::new("bash");
    for key in support::ENGINE_VARS {
        cmd.env_remove(key);
    }
    cmd.current_dir(dir.path())
        .env("TMPDIR", dir.path().join("tmp"))
        .env_remove("SBX_DOCKER")
        .args([
            "-c",
            &format!(
                "exec {sbx} eval --config /dev/null --docker ./docker --problems problems.jsonl --samples <(cat samples.jsonl)"
            ),
        ]);
    let out = AssertCommand::from_std(cmd)
        .timeout(LIMIT)
        .output()
        .expect("run");
    refused(dir.path(), &out, "_results.jsonl`");
}

#[test]
fn reports_that_cannot_be_written_are_refused_before_judging() {
    let dir = scratch();
    for (args, says) in [
        (&["-o", "missing/r.json"][..], "-o `missing/r.json`"),
        (&["--junit", "a-file/j.xml"], "--junit `a-file/j.xml`"),
        (&["-o", "gen"], "it is a directory"),
    ] {
        let mut cmd = AssertCommand::new(env!("CARGO_BIN_EXE_sbx"));
        for key in support::ENGINE_VARS {
            cmd.env_remove(key);
        }
        let out = cmd
            .current_dir(dir.path())
            .env("TMPDIR", dir.path().join("tmp"))
            .env_remove("SBX_DOCKER")
            .args(["eval", "--config", "/dev/null", "--docker", "./docker"])
            .args(args)
            .timeout(LIMIT)
            .output()
            .expect("run");
        refused(dir.path(), &out, says);
    }
    // No probe file is left behind.
    let left: Vec<_> = fs::read_dir(dir.path())
        .expect("ls")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".sbx-probe"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
