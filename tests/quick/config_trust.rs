//! An `sbx.toml` that sbx found on its own (in the current directory, not
//! named with `--config`) may be the tree's, as untrusted as a candidate:
//! it may tighten the sandbox, never loosen it or reach out of it. Each
//! refused key is one line naming the file and the key, exit 2, before any
//! docker call; the same key from `--config FILE` or the command line is
//! taken. A hostile `docker = "./evil.sh"` must never run: its log file is
//! never created. Nothing here starts a container.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use tempfile::TempDir;

const LIMIT: Duration = Duration::from_secs(20);

/// A tree with a candidate, a tasks file, the `evil.sh` that logs its
/// arguments to `evil.log` then runs docker, and `tmp/` for TMPDIR.
fn tree() -> TempDir {
    let dir = tempfile::tempdir().expect("scratch");
    let write = |rel: &str, text: &str| fs::write(dir.path().join(rel), text).expect("write");
    write("f.sh", "#!/bin/sh\necho hi\n");
    write(
        "tasks.json",
        r#"[{"id": "f", "stdin": "", "expect": "hi\n"}]"#,
    );
    fs::create_dir(dir.path().join("gen")).expect("mkdir");
    write("gen/f.sh", "echo hi\n");
    let evil = dir.path().join("evil.sh");
    fs::write(
        &evil,
        "#!/bin/sh\necho \"$@\" >> \"$(dirname \"$0\")/evil.log\"\nexec docker \"$@\"\n",
    )
    .expect("write evil.sh");
    fs::set_permissions(&evil, fs::Permissions::from_mode(0o755)).expect("chmod");
    fs::create_dir(dir.path().join("tmp")).expect("mkdir tmp");
    dir
}

fn sbx(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sbx"))
        .current_dir(dir)
        .env("TMPDIR", dir.join("tmp"))
        .env_remove("SBX_DOCKER")
        .env_remove("SBX_RUN_ID")
        .args(args)
        .timeout(LIMIT)
        .output()
        .expect("run sbx")
}

/// The one line of a refusal: exit 2, nothing on stdout, naming the file
/// and the key, and saying how to allow it.
/// The found file is `file` as seen from the current folder (`sbx.toml`,
/// `../sbx.toml`).
fn refused_from(out: &std::process::Output, file: &str, table: &str, key: &str) {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let prefix = format!(
        "sbx: config file `{file}`: [{table}] {key}: refused from a file sbx found on its own ("
    );
    assert!(stderr.starts_with(&prefix), "{stderr}");
    assert!(
        stderr.contains(&format!("--config {file}"))
            && stderr.contains(&format!("--{key} on the command line")),
        "{stderr}"
    );
}

/// Every key that runs a program, chooses the engine, opens the sandbox,
/// raises a limit or writes outside the folder, in `[run]` and `[eval]`.
#[test]
fn a_found_file_cannot_loosen_the_sandbox() {
    hostile_files_are_refused(Path::new(""));
}

/// The same hostile files, found in the parent folder of the current one
/// (`gen/`): the upward search gives them no more power. Written paths are
/// checked from the file's folder, where they would land.
#[test]
fn a_file_found_above_cannot_loosen_the_sandbox_either() {
    hostile_files_are_refused(Path::new("gen"));
}

/// Writes each hostile `sbx.toml` at the tree's root and runs sbx in
/// `sub` (a folder of the tree, or the root itself when empty): each is
/// refused, naming the file as found from there, and nothing is written
/// outside the tree.
fn hostile_files_are_refused(sub: &Path) {
    let dir = tree();
    fs::write(dir.path().join(sub).join("f.sh"), "#!/bin/sh\necho hi\n").expect("write");
    let file = if sub.as_os_str().is_empty() {
        "sbx.toml".to_string()
    } else {
        format!("{}sbx.toml", "../".repeat(sub.components().count()))
    };
    fs::write(
        dir.path().join("allow.json"),
        r#"{"defaultAction": "SCMP_ACT_ALLOW"}"#,
    )
    .expect("write");
    let outside = tempfile::tempdir().expect("outside");
    std::os::unix::fs::symlink(
        outside.path().join("victim"),
        dir.path().join("report.json"),
    )
    .expect("symlink");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).expect("symlink");
    let shared: &[(&str, &str)] = &[
        ("docker", "\"./evil.sh\""),
        ("network", "\"host\""),
        ("network", "\"bridge\""),
        ("security-opt", "\"seccomp=allow.json\""),
        ("security-opt", "[\"apparmor=docker-default\"]"),
        ("runtime", "\"runc\""),
        ("user", "\"0\""),
        ("user", "\"0:0\""),
        ("user", "\"1000:0\""),
        ("memory", "\"100g\""),
        ("memory", "\"257m\""),
        ("pids-limit", "100000"),
        ("tmpfs-size", "\"100g\""),
        ("cpus", "4"),
        ("timeout", "100"),
        ("timeout", "\"1h\""),
        ("timeout", "0"),
        ("timeout", "\"inf\""),
    ];
    let run_only: &[(&str, &str)] = &[("engine", "\"tcp://127.0.0.1:9\"")];
    let eval_only: &[(&str, &str)] = &[
        ("engine", "[\"tcp://127.0.0.1:9\"]"),
        ("jobs", "100000"),
        ("max-output", "\"1GiB\""),
        ("compile-timeout", "3600"),
        ("compile-memory", "\"100g\""),
        ("output", "\"report.json\""),
        ("output", "\"../x.json\""),
        ("output", "\"/tmp/x.json\""),
        ("junit", "\"../x.xml\""),
        ("junit", "\"out/x.xml\""),
        ("cache", "\"../cache\""),
        ("cache", "\"out\""),
        ("summary", "\"../s.json\""),
        ("summary", "\"out/s.json\""),
        ("samples", "\"out/samples.jsonl\""),
    ];
    let cases = shared
        .iter()
        .map(|kv| ("run", kv))
        .chain(shared.iter().map(|kv| ("eval", kv)))
        .chain(run_only.iter().map(|kv| ("run", kv)))
        .chain(eval_only.iter().map(|kv| ("eval", kv)));
    for (table, (key, value)) in cases {
        fs::write(
            dir.path().join("sbx.toml"),
            format!("[{table}]\n{key} = {value}\n"),
        )
        .expect("write sbx.toml");
        let args: &[&str] = if table == "run" {
            &["run", "--print-argv", "f.sh"]
        } else {
            &["eval"]
        };
        let out = sbx(&dir.path().join(sub), args);
        refused_from(&out, &file, table, key);
    }
    assert!(
        !dir.path().join("evil.log").exists(),
        "evil.sh ran: {:?}",
        fs::read_to_string(dir.path().join("evil.log"))
    );
    assert!(!outside.path().join("victim").exists());
    assert_eq!(fs::read_dir(outside.path()).expect("ls").count(), 0);
}

/// A found file may tighten: lower limits, `none`, a non-root user, paths
/// inside its folder; and the refused keys are taken from the command
/// line or from a file named with `--config`.
#[test]
fn a_found_file_can_tighten_and_the_user_can_loosen() {
    let dir = tree();
    fs::write(
        dir.path().join("sbx.toml"),
        "[run]\nmemory = \"128m\"\npids-limit = 32\ncpus = \"0.25\"\nnetwork = \"none\"\nuser = \"1000:1000\"\ntimeout = 5\ntmpfs-size = \"16m\"\n",
    )
    .expect("write");
    let out = sbx(dir.path(), &["run", "--print-argv", "f.sh"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let argv = String::from_utf8_lossy(&out.stdout);
    assert!(argv.contains("\"--memory\",\"128m\""), "{argv}");
    // The same file named with --config may set what a found one may not.
    fs::write(
        dir.path().join("sbx.toml"),
        "[run]\nmemory = \"1g\"\ndocker = \"./evil.sh\"\n",
    )
    .expect("write");
    let out = sbx(
        dir.path(),
        &["run", "--print-argv", "--config", "sbx.toml", "f.sh"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let argv = String::from_utf8_lossy(&out.stdout);
    assert!(argv.contains("\"--memory\",\"1g\""), "{argv}");
    assert!(argv.contains("evil.sh"), "{argv}");
    // Given on the command line, the file's key is not used, so not refused.
    fs::write(dir.path().join("sbx.toml"), "[run]\nmemory = \"1g\"\n").expect("write");
    let out = sbx(
        dir.path(),
        &["run", "--print-argv", "--memory", "2g", "f.sh"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"--memory\",\"2g\""));
    // A written path inside the folder is taken (the eval then stops at
    // the missing docker, past the settings).
    fs::write(
        dir.path().join("sbx.toml"),
        "[eval]\noutput = \"reports/r.json\"\njunit = \"./j.xml\"\ncache = \".sbx-cache\"\nisolate = \"case\"\n",
    )
    .expect("write");
    let out = sbx(dir.path(), &["eval", "--docker", "/nonexistent/docker"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("refused from a file"), "{stderr}");
    // --print-argv never ran the evil script either.
    assert!(!dir.path().join("evil.log").exists());
}

/// `--security-opt seccomp=FILE` whose default action lets every call
/// through is as unconfined as `seccomp=unconfined`, and refused the same
/// way; an unreadable or malformed profile is one line, exit 2.
#[test]
fn an_allow_everything_seccomp_profile_is_unconfined() {
    let dir = tree();
    let write = |name: &str, text: &str| fs::write(dir.path().join(name), text).expect("write");
    write("allow.json", r#"{"defaultAction": "SCMP_ACT_ALLOW"}"#);
    write(
        "log.json",
        r#"{"defaultAction": "SCMP_ACT_LOG", "syscalls": []}"#,
    );
    write("upper.json", r#"{"DefaultAction": "SCMP_ACT_ALLOW"}"#);
    write("empty.json", "{}");
    write("broken.json", "{\"defaultAction\": ");
    write("errno.json", r#"{"defaultAction": "SCMP_ACT_ERRNO"}"#);
    for (profile, says) in [
        ("allow.json", "as seccomp=unconfined"),
        ("log.json", "as seccomp=unconfined"),
        ("upper.json", "as seccomp=unconfined"),
        ("empty.json", "as seccomp=unconfined"),
        ("broken.json", "not valid JSON"),
        ("absent.json", "cannot read the profile"),
    ] {
        let opt = format!("seccomp={profile}");
        let out = sbx(
            dir.path(),
            &["run", "--print-argv", "--security-opt", &opt, "f.sh"],
        );
        assert_eq!(out.status.code(), Some(2), "{profile}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("sbx: invalid --security-opt seccomp={profile}: ")),
            "{stderr}"
        );
        assert!(stderr.contains(says), "{profile}: {stderr}");
    }
    let out = sbx(
        dir.path(),
        &[
            "run",
            "--print-argv",
            "--security-opt",
            "seccomp=errno.json",
            "f.sh",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// An empty IMAGE or TIMEOUT positional is not given (the script's
/// `${2:-...}`): the file's value applies, as with no positional.
#[test]
fn an_empty_positional_leaves_the_files_value() {
    let dir = tree();
    fs::write(dir.path().join("sbx.toml"), "[run]\nimage = \"conf:1\"\n").expect("write");
    let out = sbx(dir.path(), &["run", "--print-argv", "f.sh", "", ""]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let argv: Vec<String> = serde_json::from_slice(&out.stdout).expect("a JSON list");
    assert_eq!(argv.last().map(String::as_str), Some("/work/task"));
    assert_eq!(argv[argv.len() - 2], "conf:1", "{argv:?}");
}

/// At a terminal, sbx says which file and keys it applied (run under
/// `script`, which gives sbx a terminal as stderr).
#[test]
fn at_a_terminal_the_applied_keys_are_printed() {
    let dir = tree();
    fs::write(
        dir.path().join("sbx.toml"),
        "[run]\nmemory = \"128m\"\npids-limit = 32\n",
    )
    .expect("write");
    let sbx_bin = env!("CARGO_BIN_EXE_sbx");
    let out = Command::new("script")
        .current_dir(dir.path())
        .env("TMPDIR", dir.path().join("tmp"))
        .env_remove("SBX_DOCKER")
        .args([
            "-qec",
            &format!("{sbx_bin} run --print-argv f.sh"),
            "/dev/null",
        ])
        .timeout(LIMIT)
        .output()
        .expect("run script");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("sbx: options from `sbx.toml`: [run] memory, pids-limit"),
        "{text}"
    );
    // Not a terminal: nothing but the argv.
    let out = sbx(dir.path(), &["run", "--print-argv", "f.sh"]);
    assert!(out.stderr.is_empty(), "{out:?}");
}

/// The search goes up from the current folder, as cargo's for
/// `Cargo.toml`: a file in the parent folder applies (and is named as
/// `../sbx.toml`), the nearest file wins, and the search stops at a folder
/// holding `.git` (a repository's root), whose own file still counts.
#[test]
fn the_file_is_searched_upward_to_the_repository_root() {
    let dir = tree();
    let sub = dir.path().join("gen");
    fs::write(sub.join("f.sh"), "#!/bin/sh\necho hi\n").expect("write");
    fs::create_dir(sub.join("tmp")).expect("mkdir");
    fs::write(dir.path().join("sbx.toml"), "[run]\nmemory = \"128m\"\n").expect("write");
    let argv = |cwd: &Path| {
        let out = sbx(cwd, &["run", "--print-argv", "f.sh"]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(argv(&sub).contains("\"--memory\",\"128m\""), "found above");
    // A bad file above is named as found from here.
    fs::write(dir.path().join("sbx.toml"), "[run]\nmemroy = \"1m\"\n").expect("write");
    let out = sbx(&sub, &["run", "--print-argv", "f.sh"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "sbx: config file `../sbx.toml`: [run] unknown key `memroy` (keys are the long options of `sbx run`)\n"
    );
    // The nearest file wins.
    fs::write(dir.path().join("sbx.toml"), "[run]\nmemory = \"128m\"\n").expect("write");
    fs::write(sub.join("sbx.toml"), "[run]\nmemory = \"64m\"\n").expect("write");
    assert!(argv(&sub).contains("\"--memory\",\"64m\""));
    fs::remove_file(sub.join("sbx.toml")).expect("rm");
    // `.git` in the current folder: the search stops here.
    fs::create_dir(sub.join(".git")).expect("mkdir");
    assert!(!argv(&sub).contains("128m"), "stopped at .git");
    // A repository root's own file counts; nothing above it does.
    fs::write(sub.join("sbx.toml"), "[run]\npids-limit = 32\n").expect("write");
    let inner = sub.join("deeper");
    fs::create_dir_all(inner.join("tmp")).expect("mkdir");
    fs::write(inner.join("f.sh"), "#!/bin/sh\necho hi\n").expect("write");
    let text = argv(&inner);
    assert!(
        text.contains("\"--pids-limit\",\"32\"") && !text.contains("128m"),
        "{text}"
    );
}

/// A found file's paths are relative to its folder: `[eval] tasks` and
/// `gen` of `../sbx.toml` are read from there, and a written path lands
/// there too (the eval then stops at the missing docker, past the
/// settings and the tasks file).
#[test]
fn a_found_files_paths_are_relative_to_it() {
    let dir = tree();
    fs::create_dir(dir.path().join("gen/tmp")).expect("mkdir");
    fs::write(
        dir.path().join("sbx.toml"),
        "[eval]\ntasks = \"tasks.json\"\ngen = \"gen\"\noutput = \"reports/r.json\"\n",
    )
    .expect("write");
    // `reports/` is the file's: `-o` is checked there.
    let out = sbx(
        &dir.path().join("gen"),
        &["eval", "--docker", "/nonexistent/docker"],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "cannot write -o `../reports/r.json`: no file can be created in `../reports`"
        ),
        "{out:?}"
    );
    fs::create_dir(dir.path().join("reports")).expect("mkdir");
    let out = sbx(
        &dir.path().join("gen"),
        &["eval", "--docker", "/nonexistent/docker"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // No docker CLI: one line and 127, before any task; it counts the
    // tasks of `../tasks.json` whose candidate it found in `../gen`.
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    assert!(!stderr.contains("tasks file"), "{stderr}");
    assert!(!stderr.contains("refused from a file"), "{stderr}");
    assert!(
        stderr.contains("no task was judged (1 task with candidates need image"),
        "{stderr}"
    );
    // Without the file, the same folder has no tasks file: one line.
    fs::remove_file(dir.path().join("sbx.toml")).expect("rm");
    let out = sbx(&dir.path().join("gen"), &["eval"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad tasks file `tasks.json`"),
        "{out:?}"
    );
}
