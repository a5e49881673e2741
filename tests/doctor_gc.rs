//! Real-engine tests of `sbx doctor` and `sbx gc`.
//!
//! They need a reachable Docker engine, the two local images built by
//! `scripts/build-images.sh` (`sbx-busybox:latest`, `sbx-python:bookworm`)
//! and a host python3 (for the docker wrapper); without them every test
//! panics with a message saying what is missing, never skips. Nothing is
//! pulled (`--pull never` everywhere) and nothing sends network traffic.
//!
//! The doctor must be able to say FAILED: each guarantee is broken on
//! purpose through a docker wrapper (`SBX_DOCKER`), a small python3 script
//! that rewrites the argv of `docker run` / `docker create` and execs the
//! real docker, and the test asserts that exactly the matching check fails.
//!
//! Every test has its own run id (`SBX_RUN_ID`); a guard removes every
//! container carrying its label (and any container the test planted), even
//! when the test fails, and each test asserts that none is left. `sbx gc` is
//! only ever run with `--run` or `--dry-run`, so it never touches the
//! containers of tests running in parallel.
//!
//! Run with: `cargo test --test doctor_gc -- --test-threads 2`

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command as StdCommand, Output, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;
use wait_timeout::ChildExt;

const BUSYBOX: &str = "sbx-busybox:latest";
const PYTHON: &str = "sbx-python:bookworm";

/// Bound on one `sbx doctor` (about 8 s normally).
const DOCTOR_LIMIT: Duration = Duration::from_secs(120);
/// Bound on one `sbx gc`.
const GC_LIMIT: Duration = Duration::from_secs(60);
/// Bound on one docker command run by the tests themselves.
const DOCKER_LIMIT: Duration = Duration::from_secs(60);
/// How long the guard keeps retrying `docker rm -f` (a fork bomb without a
/// pids cap can keep the engine from killing a container for a while).
const CLEANUP_LIMIT: Duration = Duration::from_secs(90);

/// The doctor's checks, in the order it reports them.
const CHECKS: [&str; 11] = [
    "engine",
    "image",
    "network",
    "read-only root",
    "/tmp",
    "capabilities",
    "memory cap",
    "pids cap",
    "timeout",
    "output cap",
    "nothing left",
];

/// The `--tmpfs` value sbx passes with the default limits.
const TMPFS_ARG: &str = "/tmp:rw,noexec,nosuid,size=64m";

// ---------------------------------------------------------------------------
// Bounded processes and docker
// ---------------------------------------------------------------------------

fn clip(s: &str) -> String {
    const MAX: usize = 4000;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes in all)", &s[..end], s.len())
}

/// Runs `cmd` to its end within `limit` (killed and an error otherwise).
fn run_bounded(mut cmd: StdCommand, limit: Duration) -> Result<Output, String> {
    let what = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = match child.wait_timeout(limit) {
        Ok(Some(status)) => status,
        Ok(None) | Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what} did not finish within {limit:?}; killed it"));
        }
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

fn try_docker(args: &[&str]) -> Result<Output, String> {
    let mut cmd = StdCommand::new("docker");
    cmd.args(args);
    run_bounded(cmd, DOCKER_LIMIT)
}

/// A docker command that must succeed; returns its stdout.
fn docker_ok(args: &[&str]) -> String {
    let out = try_docker(args).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "docker {args:?} failed ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Full IDs of the containers (any state) carrying `sbx.run=<run_id>`.
fn try_labelled(run_id: &str) -> Result<Vec<String>, String> {
    let filter = format!("label=sbx.run={run_id}");
    let out = try_docker(&["ps", "-a", "-q", "--no-trunc", "--filter", &filter])?;
    if !out.status.success() {
        return Err(format!(
            "docker ps failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

fn labelled(run_id: &str) -> Vec<String> {
    try_labelled(run_id).unwrap_or_else(|e| panic!("{e}"))
}

/// Full IDs of every container on the engine, in any state.
fn all_containers() -> BTreeSet<String> {
    docker_ok(&["ps", "-a", "-q", "--no-trunc"])
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Full ID of the container named exactly `name`, if it exists.
fn try_named(name: &str) -> Result<Option<String>, String> {
    let filter = format!("name=^/{name}$");
    let out = try_docker(&["ps", "-a", "-q", "--no-trunc", "--filter", &filter])?;
    if !out.status.success() {
        return Err(format!(
            "docker ps failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .map(str::to_string))
}

// ---------------------------------------------------------------------------
// Preconditions, run ids, cleanup
// ---------------------------------------------------------------------------

struct Env {
    /// Absolute path of the real docker CLI (the wrapper execs it).
    docker: PathBuf,
    /// Absolute path of a real python3 interpreter on the host.
    python: PathBuf,
}

/// Panics, with what is missing, unless the engine answers, both local
/// images exist and the host has python3.
fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let info = try_docker(&["info", "--format", "{{.ServerVersion}}"]).unwrap_or_else(|e| {
            panic!("the Docker engine is required for these tests: {e} (run scripts/ensure-engine.sh)")
        });
        assert!(
            info.status.success() && !info.stdout.is_empty(),
            "the Docker engine is not reachable (`docker info` failed: {}); run scripts/ensure-engine.sh",
            String::from_utf8_lossy(&info.stderr).trim()
        );
        for image in [BUSYBOX, PYTHON] {
            let out = try_docker(&["image", "inspect", "--format", "{{.Id}}", "--", image])
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                out.status.success(),
                "the local image {image} is missing ({}); build it with scripts/build-images.sh (nothing is ever pulled)",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let docker = std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join("docker"))
                    .find(|p| p.is_file())
            })
            .unwrap_or_else(|| panic!("no `docker` executable on PATH"));
        let mut cmd = StdCommand::new("python3");
        cmd.args(["-c", "import sys; print(sys.executable)"]);
        let out = run_bounded(cmd, DOCKER_LIMIT)
            .unwrap_or_else(|e| panic!("python3 is required on the host (for the docker wrapper): {e}"));
        let python = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        assert!(
            out.status.success() && python.is_absolute() && python.is_file(),
            "python3 is required on the host (for the docker wrapper): {out:?}"
        );
        Env { docker, python }
    })
}

/// A run id unique to this test and this process: `dg-<tag>-<pid>`.
fn run_id(tag: &str) -> String {
    format!("dg-{tag}-{}", std::process::id())
}

/// Removes, on drop, every container labelled with one of `run_ids` and
/// every container named in `names`, retrying while the engine refuses.
struct Cleanup {
    run_ids: Vec<String>,
    names: Vec<String>,
}

impl Cleanup {
    fn new(run_ids: &[&str]) -> Cleanup {
        env();
        Cleanup {
            run_ids: run_ids.iter().map(|s| s.to_string()).collect(),
            names: Vec::new(),
        }
    }

    /// Containers of this test that still exist.
    fn remaining(&self) -> Result<Vec<String>, String> {
        let mut ids = Vec::new();
        for run in &self.run_ids {
            ids.extend(try_labelled(run)?);
        }
        for name in &self.names {
            ids.extend(try_named(name)?);
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    fn remove_all(&self) -> Result<(), String> {
        let deadline = Instant::now() + CLEANUP_LIMIT;
        loop {
            let last = match self.remaining() {
                Ok(ids) if ids.is_empty() => return Ok(()),
                Ok(ids) => {
                    let mut args = vec!["rm", "-f", "--"];
                    args.extend(ids.iter().map(String::as_str));
                    match try_docker(&args) {
                        Ok(out) => {
                            format!("{ids:?}: {}", String::from_utf8_lossy(&out.stderr).trim())
                        }
                        Err(e) => e,
                    }
                }
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "containers of runs {:?} / names {:?} could not be removed within {CLEANUP_LIMIT:?}: {last}",
                    self.run_ids, self.names
                ));
            }
            thread::sleep(Duration::from_millis(500));
        }
    }

    /// Removes what is left and asserts that nothing of this test remains.
    fn finish(&self) {
        if let Err(e) = self.remove_all() {
            panic!("{e}");
        }
        for run in &self.run_ids {
            assert_eq!(
                labelled(run),
                Vec::<String>::new(),
                "containers labelled sbx.run={run} remain"
            );
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Err(e) = self.remove_all() {
            eprintln!("cleanup: {e}");
        }
    }
}

// ---------------------------------------------------------------------------
// sbx doctor
// ---------------------------------------------------------------------------

/// One `sbx doctor --json` run.
struct Doctor {
    code: i32,
    report: Value,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl std::fmt::Debug for Doctor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n  exit code: {}\n  elapsed: {:?}\n  stdout: {}\n  stderr: {}",
            self.code,
            self.elapsed,
            clip(&self.stdout),
            clip(&self.stderr)
        )
    }
}

impl Doctor {
    /// The state and detail of the check `name`.
    fn check(&self, name: &str) -> (&str, &str) {
        let check = self.report["checks"]
            .as_array()
            .and_then(|checks| checks.iter().find(|c| c["name"] == name))
            .unwrap_or_else(|| panic!("no check {name:?} in the report: {self:?}"));
        (
            check["state"].as_str().unwrap_or("?"),
            check["detail"].as_str().unwrap_or("?"),
        )
    }

    fn state(&self, name: &str) -> &str {
        self.check(name).0
    }

    fn detail(&self, name: &str) -> &str {
        self.check(name).1
    }

    /// Asserts the state of every listed check, and that every other check
    /// not in `ignore` is `ok`.
    fn assert_states(&self, expected: &[(&str, &str)], ignore: &[&str]) {
        for name in CHECKS {
            let want = expected.iter().find(|(n, _)| *n == name).map(|(_, s)| *s);
            match want {
                Some(state) => assert_eq!(
                    self.state(name),
                    state,
                    "check {name:?} should be {state}: {self:?}"
                ),
                None if ignore.contains(&name) => {}
                None => assert_eq!(
                    self.state(name),
                    "ok",
                    "check {name:?} should be ok: {self:?}"
                ),
            }
        }
    }
}

/// Runs `sbx doctor --json --pull never ARGS` with `SBX_RUN_ID=run_id` and
/// the given environment; checks the report's shape and its exit code.
fn doctor(run_id: &str, envs: &[(&str, &str)], args: &[&str]) -> Doctor {
    env();
    let mut cmd = Command::cargo_bin("sbx").expect("the sbx binary is built");
    cmd.env("SBX_RUN_ID", run_id)
        .env_remove("SBX_DOCKER")
        .args(["doctor", "--json", "--pull", "never"])
        .args(args)
        .timeout(DOCTOR_LIMIT);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let out = cmd.output().expect("start sbx doctor");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        elapsed < DOCTOR_LIMIT,
        "sbx doctor {args:?} did not finish within {DOCTOR_LIMIT:?}; killed it\n  stdout: {}\n  stderr: {}",
        clip(&stdout),
        clip(&stderr)
    );
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("sbx doctor died of a signal: {:?}", out.status));
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "sbx doctor --json printed no JSON ({e}); exit {code}\n  stdout: {}\n  stderr: {}",
            clip(&stdout),
            clip(&stderr)
        )
    });
    let d = Doctor {
        code,
        report,
        stdout,
        stderr,
        elapsed,
    };
    let names: Vec<&str> = d.report["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no checks array: {d:?}"))
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        names, CHECKS,
        "the report lists every check, in order: {d:?}"
    );
    for name in CHECKS {
        assert!(
            ["ok", "failed", "skipped"].contains(&d.state(name)),
            "bad state of {name:?}: {d:?}"
        );
    }
    let ok = d.report["ok"]
        .as_bool()
        .unwrap_or_else(|| panic!("no boolean `ok`: {d:?}"));
    assert_eq!(
        d.code,
        if ok { 0 } else { 1 },
        "exit code follows `ok`: {d:?}"
    );
    assert!(d.report["summary"].is_string(), "no summary: {d:?}");
    d
}

/// Asserts that sbx itself left no container labelled `run_id`.
fn assert_nothing_left(run_id: &str, d: &Doctor) {
    let left = labelled(run_id);
    assert!(
        left.is_empty(),
        "sbx doctor left containers labelled sbx.run={run_id}: {left:?}{d:?}"
    );
}

#[test]
fn doctor_python_every_check_holds() {
    let id = run_id("python");
    let guard = Cleanup::new(&[&id]);
    let d = doctor(&id, &[], &["--image", PYTHON]);
    assert_eq!(d.code, 0, "{d:?}");
    assert_eq!(d.report["ok"], true, "{d:?}");
    assert_eq!(
        d.report["checks"].as_array().map(Vec::len),
        Some(11),
        "{d:?}"
    );
    d.assert_states(&[], &[]);
    assert_eq!(d.report["summary"], "11 ok, 0 failed, 0 skipped", "{d:?}");
    assert_eq!(
        d.detail("network"),
        "interfaces in /sys/class/net: lo",
        "{d:?}"
    );
    assert!(d.detail("memory cap").contains("reported as oom"), "{d:?}");
    assert!(
        d.detail("pids cap")
            .contains("pids.max 64 (--pids-limit 64)"),
        "{d:?}"
    );
    assert!(d.detail("output cap").ends_with("log driver none"), "{d:?}");
    assert!(
        d.detail("nothing left").contains(&format!("sbx.run={id}")),
        "{d:?}"
    );
    assert_nothing_left(&id, &d);
    guard.finish();
}

#[test]
fn doctor_busybox_skips_memory_without_python3() {
    let id = run_id("busybox");
    let guard = Cleanup::new(&[&id]);

    let d = doctor(&id, &[], &["--image", BUSYBOX]);
    assert_eq!(d.code, 1, "a skip fails without --allow-skips: {d:?}");
    assert_eq!(d.report["ok"], false, "{d:?}");
    d.assert_states(&[("memory cap", "skipped")], &[]);
    assert_eq!(d.detail("memory cap"), "image has no python3", "{d:?}");
    assert_eq!(d.report["summary"], "10 ok, 0 failed, 1 skipped", "{d:?}");
    assert_nothing_left(&id, &d);

    let d = doctor(&id, &[], &["--image", BUSYBOX, "--allow-skips"]);
    assert_eq!(d.code, 0, "--allow-skips accepts the skip: {d:?}");
    assert_eq!(d.report["ok"], true, "{d:?}");
    d.assert_states(&[("memory cap", "skipped")], &[]);
    assert_eq!(d.detail("memory cap"), "image has no python3", "{d:?}");
    assert_nothing_left(&id, &d);
    guard.finish();
}

#[test]
fn doctor_network_host_fails_the_network_check() {
    // `host` creates no interface and sends nothing: the container only
    // sees the host's interfaces.
    let id = run_id("nethost");
    let guard = Cleanup::new(&[&id]);
    let d = doctor(&id, &[], &["--image", PYTHON, "--network", "host"]);
    assert_eq!(d.code, 1, "{d:?}");
    assert_eq!(d.report["ok"], false, "{d:?}");
    d.assert_states(&[("network", "failed")], &[]);
    let detail = d.detail("network");
    let interfaces: Vec<&str> = detail
        .strip_prefix("interfaces in /sys/class/net:")
        .unwrap_or_else(|| panic!("unexpected network detail: {d:?}"))
        .split_whitespace()
        .collect();
    assert!(interfaces.contains(&"lo"), "{d:?}");
    assert!(interfaces.len() > 1, "the host has more than lo: {d:?}");
    assert_nothing_left(&id, &d);
    guard.finish();
}

// ---------------------------------------------------------------------------
// Breaking each guarantee through a docker wrapper
// ---------------------------------------------------------------------------

/// The wrapper: for `docker run` and `docker create` only, it rewrites the
/// options (never what follows `--`), logs the new argv as one JSON line,
/// and execs the real docker; any other command passes through untouched.
/// Rules, one per line in each variable:
/// - `WRAP_DROP=FLAG`: drop FLAG and its value;
/// - `WRAP_DROP_FLAG=FLAG`: drop a lone FLAG;
/// - `WRAP_REPLACE=OLD=>NEW`: replace an exact argument;
/// - `WRAP_SET=FLAG=>VALUE`: replace the value following FLAG;
/// - `WRAP_SUFFIX=FLAG=>TEXT`: append TEXT to the value following FLAG.
const WRAPPER: &str = r#"#!@PYTHON@
import json, os, sys

if os.environ.get("WRAP_PROBE"):
    sys.exit(0)
real = os.environ["WRAP_REAL_DOCKER"]
args = sys.argv[1:]


def rules(var):
    return [r for r in os.environ.get(var, "").split("\n") if r]


def pairs(var):
    return dict(r.split("=>", 1) for r in rules(var))


if args and args[0] in ("run", "create"):
    drop, drop_flag = set(rules("WRAP_DROP")), set(rules("WRAP_DROP_FLAG"))
    replace, set_value, suffix = pairs("WRAP_REPLACE"), pairs("WRAP_SET"), pairs("WRAP_SUFFIX")
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            out.extend(args[i:])
            break
        if a in drop:
            i += 2
        elif a in drop_flag:
            i += 1
        elif a in set_value and i + 1 < len(args):
            out += [a, set_value[a]]
            i += 2
        elif a in suffix and i + 1 < len(args):
            out += [a, args[i + 1] + suffix[a]]
            i += 2
        else:
            out.append(replace.get(a, a))
            i += 1
    log = os.environ.get("WRAP_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps(out) + "\n")
    args = out
os.execv(real, [real] + args)
"#;

struct Wrapper {
    _dir: TempDir,
    path: PathBuf,
    log: PathBuf,
}

impl Wrapper {
    fn new() -> Wrapper {
        let env = env();
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("docker-wrapper");
        let python = env.python.to_str().expect("python3 path is UTF-8");
        fs::write(&path, WRAPPER.replace("@PYTHON@", python)).expect("write the wrapper");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod the wrapper");
        let wrapper = Wrapper {
            log: dir.path().join("argv.jsonl"),
            path,
            _dir: dir,
        };
        wrapper.wait_executable();
        wrapper
    }

    /// Another thread's fork may still hold the file open for writing
    /// (ETXTBSY) for a moment after it was written; wait until it runs.
    fn wait_executable(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut cmd = StdCommand::new(&self.path);
            cmd.env("WRAP_PROBE", "1");
            match run_bounded(cmd, DOCKER_LIMIT) {
                Ok(out) if out.status.success() => return,
                Err(e) if e.contains("Text file busy") && Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(20));
                }
                other => panic!("the docker wrapper does not run: {other:?}"),
            }
        }
    }

    /// The environment that makes sbx use the wrapper with these rules.
    fn envs<'a>(&'a self, rules: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut envs = vec![
            ("SBX_DOCKER", self.path.to_str().expect("UTF-8 path")),
            (
                "WRAP_REAL_DOCKER",
                env().docker.to_str().expect("UTF-8 path"),
            ),
            ("WRAP_LOG", self.log.to_str().expect("UTF-8 path")),
        ];
        envs.extend_from_slice(rules);
        envs
    }

    /// Every rewritten `run`/`create` argv, as logged.
    fn rewritten(&self) -> Vec<Vec<String>> {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad log line {l:?}: {e}")))
            .collect()
    }

    /// Asserts that the wrapper rewrote several containers' argv and that
    /// `holds` is true of every one of them.
    fn assert_applied(&self, what: &str, holds: impl Fn(&[String]) -> bool) {
        let argvs = self.rewritten();
        assert!(
            argvs.len() >= 8,
            "the wrapper saw too few run/create commands: {argvs:?}"
        );
        for argv in &argvs {
            assert!(holds(argv), "{what} did not apply to {argv:?}");
        }
    }
}

/// The options part of an argv (before `--`).
fn options(argv: &[String]) -> &[String] {
    let end = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    &argv[..end]
}

/// The value following `flag` in the options.
fn value_of<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    let opts = options(argv);
    opts.iter()
        .position(|a| a == flag)
        .and_then(|i| opts.get(i + 1))
        .map(String::as_str)
}

/// The limits of the pids run (and of its control): a fork bomb without a
/// pids cap is then held by a 32 MiB memory cap (a few hundred processes)
/// and has a whole CPU, so that the engine can still kill it. Measured: with
/// the default 256m and 0.5 CPU it reached ~2100 processes, the probe timed
/// out, `docker rm -f` failed ("tried to kill container, but did not receive
/// an exit event") and the container outlived the doctor by minutes.
const BOMB_SAFE_LIMITS: [&str; 4] = ["--memory", "32m", "--cpus", "1"];

#[test]
fn doctor_through_a_passthrough_wrapper_holds() {
    // The control for every wrapper test: the wrapper with no rule (and the
    // limits of the pids run) changes nothing, so each failure below comes
    // from its rule alone.
    let id = run_id("wrap-none");
    let guard = Cleanup::new(&[&id]);
    let wrapper = Wrapper::new();
    let mut args = vec!["--image", PYTHON];
    args.extend(BOMB_SAFE_LIMITS);
    let d = doctor(&id, &wrapper.envs(&[]), &args);
    assert_eq!(d.code, 0, "{d:?}");
    d.assert_states(&[], &[]);
    assert!(
        d.detail("pids cap")
            .contains("pids.max 64 (--pids-limit 64)"),
        "{d:?}"
    );
    wrapper.assert_applied("the pass-through", |argv| {
        argv.iter().any(|a| a == "--memory")
            && value_of(argv, "--name").is_some_and(|n| n.starts_with(&format!("sbx-{id}-")))
    });
    assert_nothing_left(&id, &d);
    guard.finish();
}

#[test]
fn doctor_fails_memory_and_read_only_when_dropped() {
    let id = run_id("wrap-mem-ro");
    let guard = Cleanup::new(&[&id]);
    let wrapper = Wrapper::new();
    let envs = wrapper.envs(&[("WRAP_DROP", "--memory"), ("WRAP_DROP_FLAG", "--read-only")]);
    let d = doctor(&id, &envs, &["--image", PYTHON]);
    assert_eq!(d.code, 1, "{d:?}");
    d.assert_states(
        &[("memory cap", "failed"), ("read-only root", "failed")],
        &["pids cap"],
    );
    assert_eq!(d.state("pids cap"), "ok", "{d:?}");
    assert!(
        d.detail("memory cap").contains("without being killed"),
        "{d:?}"
    );
    assert_eq!(
        d.detail("read-only root"),
        "writing /sbx-probe succeeded",
        "{d:?}"
    );
    wrapper.assert_applied("dropping --memory and --read-only", |argv| {
        !argv.iter().any(|a| a == "--memory" || a == "--read-only")
    });
    assert_nothing_left(&id, &d);
    guard.finish();
}

#[test]
fn doctor_fails_pids_and_output_cap_when_broken() {
    // The pids cap is dropped; the log driver becomes json-file (only the
    // value after --log-driver: `none` is also the value of --network).
    let id = run_id("wrap-pids-log");
    let guard = Cleanup::new(&[&id]);
    let wrapper = Wrapper::new();
    let envs = wrapper.envs(&[
        ("WRAP_DROP", "--pids-limit"),
        ("WRAP_SET", "--log-driver=>json-file"),
    ]);
    let mut args = vec!["--image", PYTHON];
    args.extend(BOMB_SAFE_LIMITS);
    let d = doctor(&id, &envs, &args);
    assert_eq!(d.code, 1, "{d:?}");
    // The unbounded bomb may slow what follows it; the checks after it are
    // only required to be judged, the output cap by its log driver.
    d.assert_states(
        &[("pids cap", "failed"), ("output cap", "failed")],
        &["timeout", "nothing left"],
    );
    assert!(!d.detail("pids cap").contains("pids.max 64"), "{d:?}");
    assert!(
        d.detail("output cap").ends_with("log driver json-file"),
        "{d:?}"
    );
    wrapper.assert_applied("dropping --pids-limit, --log-driver json-file", |argv| {
        !argv.iter().any(|a| a == "--pids-limit")
            && value_of(argv, "--log-driver") == Some("json-file")
            && value_of(argv, "--network") == Some("none")
    });
    guard.finish();
}

#[test]
fn doctor_fails_tmp_and_capabilities_when_broken() {
    let id = run_id("wrap-tmp-cap");
    let guard = Cleanup::new(&[&id]);
    let wrapper = Wrapper::new();
    // Merely removing `noexec` is not enough: the engine mounts a --tmpfs
    // noexec unless told `exec` (measured: `rw,nosuid,size=64m` still gives
    // `noexec` in /proc/mounts, and the doctor rightly says ok).
    let tmp_rule = format!("{TMPFS_ARG}=>/tmp:rw,exec,nosuid,size=64m");
    let envs = wrapper.envs(&[("WRAP_REPLACE", &tmp_rule), ("WRAP_DROP", "--cap-drop")]);
    let d = doctor(&id, &envs, &["--image", PYTHON]);
    assert_eq!(d.code, 1, "{d:?}");
    d.assert_states(
        &[("/tmp", "failed"), ("capabilities", "failed")],
        &["pids cap"],
    );
    assert_eq!(d.state("pids cap"), "ok", "{d:?}");
    assert_eq!(
        d.detail("/tmp"),
        "writable, a file in /tmp EXECUTED",
        "{d:?}"
    );
    assert!(
        d.detail("capabilities").starts_with("chown SUCCEEDED"),
        "{d:?}"
    );
    wrapper.assert_applied("exec on /tmp, no --cap-drop", |argv| {
        value_of(argv, "--tmpfs") == Some("/tmp:rw,exec,nosuid,size=64m")
            && !argv.iter().any(|a| a == "--cap-drop")
    });
    assert_nothing_left(&id, &d);
    guard.finish();
}

#[test]
fn doctor_fails_timeout_and_nothing_left_when_the_name_differs() {
    // The containers get a name sbx does not know, so it cannot remove them
    // by name: they stay behind, labelled. The guard removes them by label.
    let id = run_id("wrap-name");
    let guard = Cleanup::new(&[&id]);
    let wrapper = Wrapper::new();
    let envs = wrapper.envs(&[("WRAP_SUFFIX", "--name=>-x")]);
    let d = doctor(&id, &envs, &["--image", PYTHON]);
    assert_eq!(d.code, 1, "{d:?}");
    assert_eq!(d.state("engine"), "ok", "{d:?}");
    assert_eq!(d.state("image"), "ok", "{d:?}");
    assert_eq!(d.state("timeout"), "failed", "{d:?}");
    assert_eq!(d.state("nothing left"), "failed", "{d:?}");
    let left = labelled(&id);
    assert!(
        !left.is_empty(),
        "containers under other names remain: {d:?}"
    );
    let detail = d.detail("nothing left");
    assert!(
        detail.ends_with(&format!(" container(s) labelled sbx.run={id} remain"))
            && !detail.starts_with("0 "),
        "{d:?}"
    );
    wrapper.assert_applied("the renaming", |argv| {
        value_of(argv, "--name").is_some_and(|n| n.ends_with("-x"))
    });
    guard.finish();
}

// ---------------------------------------------------------------------------
// sbx gc
// ---------------------------------------------------------------------------

/// Runs `sbx gc ARGS`; only with `--run` or `--dry-run`, so that containers
/// of tests running in parallel are never removed.
fn gc(args: &[&str]) -> (String, String) {
    assert!(
        args.contains(&"--run") || args.contains(&"--dry-run"),
        "sbx gc without --run or --dry-run would remove other tests' containers"
    );
    let out = Command::cargo_bin("sbx")
        .expect("the sbx binary is built")
        .env_remove("SBX_DOCKER")
        .env_remove("SBX_RUN_ID")
        .arg("gc")
        .args(args)
        .timeout(GC_LIMIT)
        .output()
        .expect("start sbx gc");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "sbx gc {args:?}\n  stdout: {}\n  stderr: {}",
        clip(&stdout),
        clip(&stderr)
    );
    (stdout, stderr)
}

/// The container IDs of the `<verb> <id> (...)` lines.
fn listed(stdout: &str, verb: &str) -> BTreeSet<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(verb)?.strip_prefix(' '))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// Creates (never starts) a container; returns its full ID.
fn plant(name: &str, label: Option<&str>) -> String {
    let label_arg = label.map(|run| format!("sbx.run={run}"));
    let mut args = vec![
        "create",
        "--pull",
        "never",
        "--network",
        "none",
        "--name",
        name,
    ];
    if let Some(l) = &label_arg {
        args.extend(["--label", l.as_str()]);
    }
    args.extend(["--", BUSYBOX, "true"]);
    docker_ok(&args).trim().to_string()
}

#[test]
fn gc_removes_only_labelled_containers_of_the_run() {
    let (a, b) = (run_id("gc-a"), run_id("gc-b"));
    let mut guard = Cleanup::new(&[&a, &b]);
    let names = [
        format!("{a}-0"),
        format!("{a}-1"),
        format!("{b}-0"),
        format!("dg-unlabelled-{}", std::process::id()),
    ];
    guard.names.extend(names.iter().cloned());
    let planted_at = Instant::now();
    let a0 = plant(&names[0], Some(&a));
    let a1 = plant(&names[1], Some(&a));
    let b0 = plant(&names[2], Some(&b));
    let free = plant(&names[3], None);
    for id in [&a0, &a1, &b0, &free] {
        assert_eq!(id.len(), 64, "docker create prints the full ID: {id:?}");
    }
    let exist = |ids: &[&String]| {
        let all = all_containers();
        ids.iter().all(|id| all.contains(*id))
    };
    let set = |ids: &[&String]| ids.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();

    // Dry run of A: exactly A's two, nothing removed.
    let (out, err) = gc(&["--dry-run", "--run", &a]);
    assert_eq!(
        listed(&out, "would remove"),
        set(&[&a0, &a1]),
        "{out}\n{err}"
    );
    assert!(listed(&out, "removing").is_empty(), "{out}");
    assert!(
        out.contains(&format!(
            "would remove {a0} ({} sbx.run={a}, created ",
            names[0]
        )),
        "{out}"
    );
    assert!(
        exist(&[&a0, &a1, &b0, &free]),
        "a dry run removed something: {out}"
    );

    // Too young for --older-than 1h: nothing listed, nothing removed.
    let (out, err) = gc(&["--run", &a, "--older-than", "1h"]);
    assert!(listed(&out, "removing").is_empty(), "{out}\n{err}");
    assert!(listed(&out, "would remove").is_empty(), "{out}");
    assert!(
        exist(&[&a0, &a1, &b0, &free]),
        "--older-than 1h removed something: {out}"
    );

    // Old enough for --older-than 1s once two seconds have passed.
    thread::sleep(Duration::from_secs(2).saturating_sub(planted_at.elapsed()));
    let (out, err) = gc(&["--dry-run", "--run", &a, "--older-than", "1s"]);
    assert_eq!(
        listed(&out, "would remove"),
        set(&[&a0, &a1]),
        "{out}\n{err}"
    );
    assert!(exist(&[&a0, &a1, &b0, &free]), "{out}");

    // A's two removed; B's and the unlabelled one stay.
    let (out, err) = gc(&["--run", &a]);
    assert_eq!(listed(&out, "removing"), set(&[&a0, &a1]), "{out}\n{err}");
    let all = all_containers();
    assert!(
        !all.contains(&a0) && !all.contains(&a1),
        "A's containers remain: {out}"
    );
    assert!(
        all.contains(&b0) && all.contains(&free),
        "gc --run A removed another: {out}"
    );
    assert!(labelled(&a).is_empty(), "{out}");

    // Every run (dry): B's is listed, the unlabelled one never.
    let (out, err) = gc(&["--dry-run"]);
    let would = listed(&out, "would remove");
    assert!(
        would.contains(&b0),
        "B's container is not listed: {out}\n{err}"
    );
    assert!(
        !would.contains(&free),
        "an unlabelled container is listed: {out}"
    );
    assert!(!out.contains(&names[3]), "{out}");
    assert!(!would.contains(&a0) && !would.contains(&a1), "{out}");
    assert!(exist(&[&b0, &free]), "a dry run removed something: {out}");

    // Clean up: B by gc, the unlabelled one by hand.
    let (out, err) = gc(&["--run", &b]);
    assert_eq!(listed(&out, "removing"), set(&[&b0]), "{out}\n{err}");
    let all = all_containers();
    assert!(!all.contains(&b0), "{out}");
    assert!(
        all.contains(&free),
        "gc --run B removed the unlabelled container: {out}"
    );
    docker_ok(&["rm", "-f", "--", &free]);
    assert!(!all_containers().contains(&free));
    guard.finish();
}
