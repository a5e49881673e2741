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
//! Run with: `cargo test --test engine doctor_gc:: -- --test-threads 2`

use crate::common;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use common::{
    assert_nothing_left, docker, finish, labelled, ps, try_finish, Cleanup, Out, BUSYBOX,
    DOCKER_LIMIT, PYTHON,
};

/// Bound on one `sbx doctor` (about 8 s normally).
const DOCTOR_LIMIT: Duration = Duration::from_secs(120);
/// Bound on one `sbx gc`.
const GC_LIMIT: Duration = Duration::from_secs(60);

/// The doctor's checks, in the order it reports them.
const CHECKS: [&str; 17] = [
    "engine",
    "image",
    "network",
    "read-only root",
    "/tmp",
    "capabilities",
    "runtime kernel",
    "memory cap",
    "pids cap",
    "timeout",
    "output cap",
    "languages",
    "isolate modes",
    "runner reset",
    "runner ptrace",
    "candidate identity",
    "nothing left",
];

/// The `--tmpfs` value sbx passes with the default limits.
const TMPFS_ARG: &str = "/tmp:rw,noexec,nosuid,size=64m";

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
        common::require_engine();
        let docker = std::env::var_os("PATH")
            .and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join("docker"))
                    .find(|p| p.is_file())
            })
            .unwrap_or_else(|| panic!("no `docker` executable on PATH"));
        let mut cmd = Command::new("python3");
        cmd.args(["-c", "import sys; print(sys.executable)"]);
        let out = try_finish(cmd, DOCKER_LIMIT).unwrap_or_else(|e| {
            panic!("python3 is required on the host (for the docker wrapper): {e}")
        });
        let python = PathBuf::from(out.stdout.trim());
        assert!(
            out.status.success() && python.is_absolute() && python.is_file(),
            "python3 is required on the host (for the docker wrapper): {out:?}"
        );
        Env { docker, python }
    })
}

/// A run id unique to this test and this process: `dg-<tag>-<pid>`.
fn run_id(tag: &str) -> String {
    common::run_id("dg", tag)
}

/// A fresh run id for `tag` and the guard of its containers, once every
/// precondition holds.
fn guarded(tag: &str) -> (String, Cleanup) {
    let id = run_id(tag);
    let guard = guard(&[&id]);
    (id, guard)
}

/// The guard of the containers labelled with one of `run_ids`, once every
/// precondition holds.
fn guard(run_ids: &[&str]) -> Cleanup {
    env();
    Cleanup::new(run_ids)
}

/// Full IDs of every container on the engine, in any state.
fn all_containers() -> BTreeSet<String> {
    ps(&["-a"]).into_iter().collect()
}

// ---------------------------------------------------------------------------
// sbx doctor
// ---------------------------------------------------------------------------

/// One `sbx doctor --json` run.
struct Doctor {
    code: i32,
    report: Value,
    out: Out,
}

impl std::fmt::Debug for Doctor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.out, f)
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

    /// Asserts that the detail of check `name` is `text`.
    fn assert_detail_is(&self, name: &str, text: &str) {
        assert_eq!(self.detail(name), text, "{self:?}");
    }

    /// Asserts that the detail of check `name` contains `part`.
    fn assert_detail_has(&self, name: &str, part: &str) {
        assert!(self.detail(name).contains(part), "{self:?}");
    }

    /// Asserts that sbx itself left no container labelled `run_id`.
    fn assert_nothing_left(&self, run_id: &str) {
        assert_nothing_left(run_id, &format!("{self:?}"));
    }
}

/// Runs `sbx doctor --json --pull never ARGS` with `SBX_RUN_ID=run_id` and
/// the given environment; checks the report's shape and its exit code.
fn doctor(run_id: &str, envs: &[(&str, &str)], args: &[&str]) -> Doctor {
    env();
    let mut cmd = common::sbx(Some(run_id));
    cmd.args(["doctor", "--json", "--pull", "never"])
        .args(args)
        .envs(envs.iter().copied());
    let out = finish(cmd, None, DOCTOR_LIMIT);
    let code = out.code();
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("sbx doctor --json printed no JSON ({e}): {out:?}"));
    let d = Doctor { code, report, out };
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

#[test]
fn doctor_python_every_check_holds() {
    let (id, guard) = guarded("python");
    let d = doctor(&id, &[], &["--image", PYTHON]);
    assert_eq!(d.code, 0, "{d:?}");
    assert_eq!(d.report["ok"], true, "{d:?}");
    assert_eq!(
        d.report["checks"].as_array().map(Vec::len),
        Some(17),
        "{d:?}"
    );
    d.assert_states(&[], &[]);
    assert_eq!(d.report["summary"], "17 ok, 0 failed, 0 skipped", "{d:?}");
    d.assert_detail_is("network", "interfaces in /sys/class/net: lo");
    d.assert_detail_has("runtime kernel", "(the engine host's, shared: ");
    d.assert_detail_has(
        "runner reset",
        "a background process, a /tmp file, a /dev/shm file",
    );
    d.assert_detail_has("runner reset", "the next saw none");
    // The runner speaks over its control socket here (a local engine,
    // runc), as eval's runners do: made in the session's private folder.
    d.assert_detail_has("isolate modes", "over its control socket");
    d.assert_detail_has("runner ptrace", "refused (EPERM)");
    d.assert_detail_has("candidate identity", "uid:gid 65534:65534, no capability");
    d.assert_detail_has("memory cap", "reported as oom");
    d.assert_detail_has("pids cap", "pids.max 64 (--pids-limit 64)");
    assert!(d.detail("output cap").ends_with("log driver none"), "{d:?}");
    assert!(
        d.detail("nothing left").contains(&format!("sbx.run={id}")),
        "{d:?}"
    );
    d.assert_nothing_left(&id);
    guard.finish();
}

#[test]
fn doctor_busybox_skips_memory_without_python3() {
    let (id, guard) = guarded("busybox");

    let d = doctor(&id, &[], &["--image", BUSYBOX]);
    assert_eq!(d.code, 1, "a skip fails without --allow-skips: {d:?}");
    assert_eq!(d.report["ok"], false, "{d:?}");
    // The identity probes are sbx's own binary: they run without python3.
    d.assert_states(&[("memory cap", "skipped")], &[]);
    d.assert_detail_is("memory cap", "image has no python3");
    d.assert_detail_has("runner ptrace", "refused (EPERM)");
    d.assert_detail_has("candidate identity", "no capability, no_new_privs");
    d.assert_detail_has("runner reset", "the next saw none");
    assert_eq!(d.report["summary"], "16 ok, 0 failed, 1 skipped", "{d:?}");
    d.assert_nothing_left(&id);

    let d = doctor(&id, &[], &["--image", BUSYBOX, "--allow-skips"]);
    assert_eq!(d.code, 0, "--allow-skips accepts the skip: {d:?}");
    assert_eq!(d.report["ok"], true, "{d:?}");
    d.assert_states(&[("memory cap", "skipped")], &[]);
    d.assert_detail_is("memory cap", "image has no python3");
    d.assert_nothing_left(&id);
    guard.finish();
}

#[test]
fn doctor_network_host_fails_the_network_check() {
    // `host` creates no interface and sends nothing: the container only
    // sees the host's interfaces.
    let (id, guard) = guarded("nethost");
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
    d.assert_nothing_left(&id);
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
            let mut cmd = Command::new(&self.path);
            cmd.env("WRAP_PROBE", "1");
            match try_finish(cmd, DOCKER_LIMIT) {
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

    /// `sbx doctor` (see [`doctor`]) through the wrapper with these rules.
    fn doctor(&self, run_id: &str, rules: &[(&str, &str)], args: &[&str]) -> Doctor {
        doctor(run_id, &self.envs(rules), args)
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

/// The python image with the limits of the pids run (and of its control): a
/// fork bomb without a pids cap is then held by a 32 MiB memory cap (a few hundred processes)
/// and has a whole CPU, so that the engine can still kill it. Measured: with
/// the default 256m and 0.5 CPU it reached ~2100 processes, the probe timed
/// out, `docker rm -f` failed ("tried to kill container, but did not receive
/// an exit event") and the container outlived the doctor by minutes.
const PYTHON_BOMB_SAFE: [&str; 6] = ["--image", PYTHON, "--memory", "32m", "--cpus", "1"];

#[test]
fn doctor_through_a_passthrough_wrapper_holds() {
    // The control for every wrapper test: the wrapper with no rule (and the
    // limits of the pids run) changes nothing, so each failure below comes
    // from its rule alone.
    let (id, guard) = guarded("wrap-none");
    let wrapper = Wrapper::new();
    let d = wrapper.doctor(&id, &[], &PYTHON_BOMB_SAFE);
    assert_eq!(d.code, 0, "{d:?}");
    d.assert_states(&[], &[]);
    d.assert_detail_has("pids cap", "pids.max 64 (--pids-limit 64)");
    wrapper.assert_applied("the pass-through", |argv| {
        argv.iter().any(|a| a == "--memory")
            && value_of(argv, "--name").is_some_and(|n| n.starts_with(&format!("sbx-{id}-")))
    });
    d.assert_nothing_left(&id);
    guard.finish();
}

#[test]
fn doctor_fails_memory_and_read_only_when_dropped() {
    let (id, guard) = guarded("wrap-mem-ro");
    let wrapper = Wrapper::new();
    let rules = [("WRAP_DROP", "--memory"), ("WRAP_DROP_FLAG", "--read-only")];
    let d = wrapper.doctor(&id, &rules, &["--image", PYTHON]);
    assert_eq!(d.code, 1, "{d:?}");
    d.assert_states(
        &[("memory cap", "failed"), ("read-only root", "failed")],
        &["pids cap"],
    );
    assert_eq!(d.state("pids cap"), "ok", "{d:?}");
    d.assert_detail_has("memory cap", "without being killed");
    d.assert_detail_is("read-only root", "writing /sbx-probe succeeded");
    wrapper.assert_applied("dropping --memory and --read-only", |argv| {
        !argv.iter().any(|a| a == "--memory" || a == "--read-only")
    });
    d.assert_nothing_left(&id);
    guard.finish();
}

#[test]
fn doctor_fails_pids_and_output_cap_when_broken() {
    // The pids cap is dropped; the log driver becomes json-file (only the
    // value after --log-driver: `none` is also the value of --network).
    let (id, guard) = guarded("wrap-pids-log");
    let wrapper = Wrapper::new();
    let rules = [
        ("WRAP_DROP", "--pids-limit"),
        ("WRAP_SET", "--log-driver=>json-file"),
    ];
    let d = wrapper.doctor(&id, &rules, &PYTHON_BOMB_SAFE);
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
    let (id, guard) = guarded("wrap-tmp-cap");
    let wrapper = Wrapper::new();
    // Merely removing `noexec` is not enough: the engine mounts a --tmpfs
    // noexec unless told `exec` (measured: `rw,nosuid,size=64m` still gives
    // `noexec` in /proc/mounts, and the doctor rightly says ok).
    // The runner's /tmp is the candidate's (uid=, gid=): broken the same way.
    let tmp_rule = format!(
        "{TMPFS_ARG}=>/tmp:rw,exec,nosuid,size=64m\n{TMPFS_ARG},uid=65534,gid=65534=>/tmp:rw,exec,nosuid,size=64m,uid=65534,gid=65534"
    );
    let rules = [
        ("WRAP_REPLACE", tmp_rule.as_str()),
        ("WRAP_DROP", "--cap-drop"),
    ];
    let d = wrapper.doctor(&id, &rules, &["--image", PYTHON]);
    assert_eq!(d.code, 1, "{d:?}");
    d.assert_states(
        &[("/tmp", "failed"), ("capabilities", "failed")],
        &["pids cap"],
    );
    assert_eq!(d.state("pids cap"), "ok", "{d:?}");
    d.assert_detail_is("/tmp", "writable, a file in /tmp EXECUTED");
    assert!(
        d.detail("capabilities").starts_with("chown SUCCEEDED"),
        "{d:?}"
    );
    wrapper.assert_applied("exec on /tmp, no --cap-drop", |argv| {
        value_of(argv, "--tmpfs").is_some_and(|v| v.starts_with("/tmp:rw,exec,nosuid,size=64m"))
            && !argv.iter().any(|a| a == "--cap-drop")
    });
    d.assert_nothing_left(&id);
    guard.finish();
}

#[test]
fn doctor_fails_timeout_and_nothing_left_when_the_name_differs() {
    // The containers get a name sbx does not know, so it cannot remove them
    // by name: they stay behind, labelled. The guard removes them by label.
    let (id, guard) = guarded("wrap-name");
    let wrapper = Wrapper::new();
    let d = wrapper.doctor(&id, &[("WRAP_SUFFIX", "--name=>-x")], &["--image", PYTHON]);
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
    let mut cmd = common::sbx(None);
    cmd.arg("gc").args(args);
    let out = finish(cmd, None, GC_LIMIT);
    assert_eq!(out.code(), 0, "sbx gc {args:?}: {out:?}");
    (out.stdout, out.stderr)
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
    docker(&args).stdout.trim().to_string()
}

#[test]
fn gc_removes_only_labelled_containers_of_the_run() {
    let (a, b) = (run_id("gc-a"), run_id("gc-b"));
    let mut guard = guard(&[&a, &b]);
    let names = [
        format!("{a}-0"),
        format!("{a}-1"),
        format!("{b}-0"),
        format!("dg-unlabelled-{}", std::process::id()),
    ];
    guard.add_names(&names);
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
    docker(&["rm", "-f", "--", &free]);
    assert!(!all_containers().contains(&free));
    guard.finish();
}

/// A run whose sbx is still alive is not "left behind": gc keeps it. Once
/// that sbx is SIGKILLed (no cleanup possible), gc removes what it left.
#[test]
fn gc_keeps_live_runs_and_removes_them_once_their_sbx_is_killed() {
    let (id, guard) = guarded("gc-live");
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("busy.sh");
    std::fs::write(&script, "#!/bin/sh\nwhile :; do :; done\n").expect("write");
    let mut cmd = common::sbx(Some(&id));
    cmd.args(["run", "--pull", "never"])
        .arg(&script)
        .args([BUSYBOX, "120"]);
    let sbx = common::start(cmd, None);
    let deadline = Instant::now() + Duration::from_secs(30);
    while common::ps(&[
        "--filter",
        &common::label_filter(&id),
        "--filter",
        "status=running",
    ])
    .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the run's container never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let (out, err) = gc(&["--run", &id]);
    assert!(
        listed(&out, "removing").is_empty(),
        "gc removed a live run: {out}\n{err}"
    );
    assert!(err.contains("still running on this host"), "{out}\n{err}");
    assert_eq!(
        common::labelled(&id).len(),
        1,
        "the live container must stay"
    );

    // SIGKILL: sbx cannot clean up; its container keeps running.
    let killed = Command::new("kill")
        .args(["-KILL", &sbx.pid().to_string()])
        .status();
    assert!(killed.is_ok_and(|s| s.success()), "kill failed");
    let _ = sbx.wait(Duration::from_secs(30));
    assert_eq!(
        common::labelled(&id).len(),
        1,
        "expected the orphan to remain"
    );
    let (out, err) = gc(&["--run", &id]);
    // The container, and the staging directory the killed sbx left.
    assert_eq!(listed(&out, "removing").len(), 2, "{out}\n{err}");
    assert_eq!(out.matches("(staging directory, ").count(), 1, "{out}");
    assert!(
        common::labelled(&id).is_empty(),
        "gc left the orphan: {out}\n{err}"
    );
    guard.finish();
}

/// Removes the image tags it holds when dropped (`docker rmi`: an image
/// with other tags keeps them), so a failing test leaves none behind.
struct Tags(Vec<String>);

impl Drop for Tags {
    fn drop(&mut self) {
        for tag in &self.0 {
            if common::image_exists(tag).unwrap_or(false) {
                let _ = common::try_docker(&["rmi", "--", tag]);
            }
        }
    }
}

/// The `-FROM-` tag a bake puts on its base image for a moment: gc removes
/// it when it is not its image's last tag, even alone (`docker rmi -- TAG`
/// was skipped as "empty" for having three words), and keeps it, without
/// counting it as removed, when it is.
#[test]
fn gc_removes_a_lone_base_tag_and_keeps_a_last_one() {
    let (id, mut guard) = guarded("gc-base");
    let shared = format!("sbx-deliver:{id}-FROM-0");
    let last = format!("sbx-deliver:{id}-FROM-1");
    let _tags = Tags(vec![shared.clone(), last.clone()]);
    docker(&["tag", BUSYBOX, &shared]);
    let (out, err) = gc(&["--run", &id]);
    assert!(
        !common::image_exists(&shared).expect("docker"),
        "gc left the lone tag {shared}: {out}\n{err}"
    );
    assert!(
        common::image_exists(BUSYBOX).expect("docker"),
        "gc removed {BUSYBOX}"
    );
    assert!(
        err.contains("0 container(s) and 1 baked image(s) removed"),
        "{out}\n{err}"
    );

    // An image whose only tag is the base tag is not sbx's to remove.
    let name = format!("{id}-commit");
    guard.add_names(std::slice::from_ref(&name));
    plant(&name, None);
    docker(&["commit", &name, &last]);
    docker(&["rm", "-f", "--", &name]);
    let (out, err) = gc(&["--run", &id]);
    assert!(
        common::image_exists(&last).expect("docker"),
        "gc removed an image that is not sbx's: {out}\n{err}"
    );
    assert!(
        err.contains("it is the last tag of its image"),
        "{out}\n{err}"
    );
    // Nothing to remove: the kept tag is not counted.
    assert!(
        err.contains("0 container(s) and 0 baked image(s) (and 0 build volume(s)) to remove"),
        "{out}\n{err}"
    );
    docker(&["rmi", "--", &last]);
    guard.finish();
}
