//! sbx.toml: option defaults from a file. Precedence (flags, then
//! environment variables, then the file, then built-in defaults), the
//! drop-in `sbx run` without a file, and one line with exit 2 naming the
//! file and the key for every kind of bad file. Nothing here starts a
//! container: `sbx run --print-argv` shows the argv, and `sbx eval` is
//! stopped by what it reads before any engine.

use crate::support;

use std::fs;
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

use support::{after, assert_exit, one_line_error};

const LIMIT: Duration = Duration::from_secs(20);

/// A scratch folder holding a candidate `f.sh`, and `tmp/`, the TMPDIR
/// given to sbx (where `--print-argv` keeps its staged copies).
fn scratch() -> TempDir {
    let dir = tempfile::tempdir().expect("scratch");
    fs::write(dir.path().join("f.sh"), "#!/bin/sh\necho hi\n").expect("write");
    fs::create_dir(dir.path().join("tmp")).expect("mkdir tmp");
    dir
}

fn toml(dir: &Path, text: &str) {
    fs::write(dir.join("sbx.toml"), text).expect("write sbx.toml");
}

/// `sbx ARGS` in `dir`, with no docker setting from the environment and
/// `dir/tmp` as TMPDIR when there is one.
fn sbx(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sbx"));
    if dir.join("tmp").is_dir() {
        cmd.env("TMPDIR", dir.join("tmp"));
    }
    cmd.current_dir(dir)
        .env_remove("SBX_DOCKER")
        .env_remove("SBX_RUN_ID")
        .args(args)
        .timeout(LIMIT)
        .output()
        .expect("run sbx")
}

/// The docker argv `sbx run --print-argv ARGS` prints in `dir`.
fn argv(dir: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["run", "--print-argv"];
    all.extend_from_slice(args);
    let out = sbx(dir, &all);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let value: Value = serde_json::from_slice(&out.stdout).expect("a JSON array");
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_str().expect("a string").to_string())
        .collect()
}

/// The image: the word after `--`.
fn image(argv: &[String]) -> &str {
    after(argv, "--")
}

/// The one line on stderr of a run that exited 2.
fn usage_line(out: &std::process::Output) -> String {
    assert_exit(out, 2);
    one_line_error(out).trim_end().to_string()
}

#[test]
fn run_without_a_file_is_the_drop_in() {
    let dir = scratch();
    let plain = argv(dir.path(), &["f.sh"]);
    assert_eq!(after(&plain, "--memory"), "256m");
    assert_eq!(image(&plain), "python:3.12-slim");
    let positional = argv(dir.path(), &["f.sh", "img:1", "3"]);
    assert_eq!(image(&positional), "img:1");
    // A file without a [run] table changes nothing of `sbx run` (the run
    // id is fixed so that the two argvs can be compared whole).
    let fixed = |dir: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_sbx"))
            .current_dir(dir)
            .env("TMPDIR", dir.join("tmp"))
            .env_remove("SBX_DOCKER")
            .env("SBX_RUN_ID", "settings-same")
            .args(["run", "--print-argv", "f.sh", "img:1", "3"])
            .timeout(LIMIT)
            .output()
            .expect("run sbx");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        // The staging folder's name is random.
        let staged = regex::Regex::new(r"/sbx-[^/]+/").expect("regex");
        let text = String::from_utf8(out.stdout).expect("UTF-8");
        staged.replace_all(&text, "/sbx-X/").into_owned()
    };
    let without = fixed(dir.path());
    toml(
        dir.path(),
        "[eval]
image = \"other:1\"\npull = \"never\"\n[doctor]\nmemory = \"1g\"\n",
    );
    assert_eq!(fixed(dir.path()), without);
}

#[test]
fn flags_beat_the_file_which_beats_the_defaults() {
    let dir = scratch();
    toml(
        dir.path(),
        "[run]\nmemory = \"512m\"\nimage = \"conf:1\"\npids-limit = 32\ninterpreter = \"sh\"\n[eval]\njobs = 3\n",
    );
    // Named with --config: a file the user chose may raise limits.
    let from_file = argv(dir.path(), &["--config", "sbx.toml", "f.sh"]);
    assert_eq!(after(&from_file, "--memory"), "512m");
    assert_eq!(after(&from_file, "--pids-limit"), "32");
    assert_eq!(image(&from_file), "conf:1");
    assert_eq!(from_file.last().map(String::as_str), Some("/work/task"));
    assert_eq!(from_file[from_file.len() - 2], "sh");
    // A flag wins over the file, key by key.
    let flagged = argv(
        dir.path(),
        &[
            "f.sh", "--memory", "1g", "--image", "opt:1", "--config", "sbx.toml",
        ],
    );
    assert_eq!(after(&flagged, "--memory"), "1g");
    assert_eq!(after(&flagged, "--pids-limit"), "32");
    assert_eq!(image(&flagged), "opt:1");
    // So does the positional IMAGE of the drop-in form, without a clash
    // with the file's `image`.
    assert_eq!(
        image(&argv(
            dir.path(),
            &["--config", "sbx.toml", "f.sh", "pos:1"]
        )),
        "pos:1"
    );
    // --config reads another file instead of ./sbx.toml.
    fs::write(dir.path().join("other.toml"), "[run]\ncpus = \"0.25\"\n").expect("write");
    let other = argv(dir.path(), &["--config", "other.toml", "f.sh"]);
    assert_eq!(after(&other, "--cpus"), "0.25");
    assert_eq!(after(&other, "--memory"), "256m");
}

#[test]
fn environment_beats_the_file() {
    let dir = scratch();
    toml(dir.path(), "[run]\ndocker = \"from-file\"\n");
    assert_eq!(
        argv(dir.path(), &["--config", "sbx.toml", "f.sh"])[0],
        "from-file"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_sbx"))
        .current_dir(dir.path())
        .env("TMPDIR", dir.path().join("tmp"))
        .env("SBX_DOCKER", "from-env")
        .args(["run", "--print-argv", "--config", "sbx.toml", "f.sh"])
        .timeout(LIMIT)
        .output()
        .expect("run sbx");
    let value: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(value[0], "from-env", "{out:?}");
}

#[test]
fn eval_takes_its_table_and_flags_win() {
    let dir = scratch();
    toml(dir.path(), "[eval]\ntasks = \"from-file.json\"\n");
    let line = usage_line(&sbx(dir.path(), &["eval"]));
    assert!(line.contains("`from-file.json`"), "{line}");
    let line = usage_line(&sbx(dir.path(), &["eval", "--tasks", "flag.json"]));
    assert!(line.contains("`flag.json`"), "{line}");
}

#[test]
fn bad_files_are_one_line_naming_the_file_and_the_key() {
    let dir = scratch();
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "[run]\nmemroy = \"1g\"\n",
            &["run", "f.sh"],
            "sbx: config file `sbx.toml`: [run] unknown key `memroy` (keys are the long options of `sbx run`)",
        ),
        (
            "[eval]\njobs = true\n",
            &["eval"],
            "sbx: config file `sbx.toml`: [eval] jobs: expected a string or a number, found a boolean",
        ),
        (
            "[eval]\nno-cache = 1\n",
            &["eval"],
            "sbx: config file `sbx.toml`: [eval] no-cache: expected true or false, found an integer",
        ),
        (
            "[eval]\njobs = \"many\"\n",
            &["eval"],
            "sbx: config file `sbx.toml`: [eval] jobs: invalid value 'many' for '--jobs <N>': invalid digit found in string",
        ),
        (
            "[doctor]\npull = \"sometimes\"\n",
            &["doctor"],
            "sbx: config file `sbx.toml`: [doctor] pull: invalid value 'sometimes' for '--pull <PULL>'",
        ),
        (
            "[run]\nmemory = \"lots\"\n",
            &["run", "f.sh"],
            "sbx: invalid --memory `lots`: expected a positive size such as 256m (from `sbx.toml`, [run] memory)",
        ),
        (
            "[gc]\nrun = \"x\"\n",
            &["run", "f.sh"],
            "sbx: config file `sbx.toml`: unknown table `gc` (tables: [eval], [run], [doctor], [languages.EXT])",
        ),
        // Another table's mistake stops every subcommand that reads the file.
        (
            "[eval]\ntimeout = [1]\n",
            &["run", "f.sh"],
            "sbx: config file `sbx.toml`: [eval] timeout: expected a string or a number, found an array",
        ),
        (
            "[run\n",
            &["run", "f.sh"],
            "sbx: config file `sbx.toml`: not valid TOML: line 1: unclosed table, expected `]`",
        ),
    ];
    for (text, args, expected) in cases {
        toml(dir.path(), text);
        let line = usage_line(&sbx(dir.path(), args));
        assert_eq!(&line, expected, "for {text:?}");
    }
    fs::remove_file(dir.path().join("sbx.toml")).expect("rm");
    let line = usage_line(&sbx(
        dir.path(),
        &["run", "--config", "absent.toml", "f.sh"],
    ));
    assert!(
        line.starts_with("sbx: config file `absent.toml`: cannot read it: "),
        "{line}"
    );
}

#[test]
fn gc_and_diff_do_not_read_the_file() {
    let dir = scratch();
    toml(dir.path(), "[gc]\nbroken = 1\n");
    // One task: diff refuses a NEW report with none.
    fs::write(
        dir.path().join("a.json"),
        r#"[{"id":"t","status":"pass","duration_ms":1}]"#,
    )
    .expect("write");
    let out = sbx(dir.path(), &["diff", "a.json", "a.json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// The repository's own sbx.toml is valid and points `sbx eval` at the
/// example suite: with a docker CLI that does not exist, eval gets past
/// the tasks file and the candidates folder and stops at the engine, in
/// one line.
#[test]
fn the_repository_sbx_toml_runs_the_example_suite() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = sbx(root, &["eval", "--docker", "/nonexistent/docker"]);
    // The seven candidates of gen/ were found for the tasks of tasks/, and
    // sbx.toml's image named: then the one line for the missing CLI.
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sbx: no task was judged (7 tasks with candidates need image `sbx-python:bookworm`): docker CLI `/nonexistent/docker` not found"),
        "{out:?}"
    );
    // Without it, the default tasks.json is not there.
    let out = sbx(
        root,
        &[
            "eval",
            "--config",
            "/dev/null",
            "--docker",
            "/nonexistent/docker",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`tasks.json`"), "{stderr}");
}
