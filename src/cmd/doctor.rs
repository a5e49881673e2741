//! `sbx doctor`: adversarial probes through the real sandbox (the same argv
//! and supervision as `sbx run`), one check each, to prove on this host that
//! the isolation holds. No probe sends network traffic: isolation is shown
//! by what the container can see.

use std::time::Duration;

use serde::Serialize;

use crate::config::DoctorRequest;
use crate::console;
use crate::docker::control;
use crate::docker::events::{ContainerRecord, EventStream};
use crate::docker::process::{
    self, ContainerGuard, Ended, Finished, OutputSink, StdinSource, CONTROL_TIMEOUT,
};
use crate::docker::{argv, Docker};
use crate::error::{Error, Result};
use crate::exit;
use crate::judge::outcome::{self, FailReason, Verdict};
use crate::session::{Candidate, Delivery, Prepared, Session};
use crate::signals;
use crate::spec::{self, Pull};

/// Time for probes that should finish (generous: the host may be loaded).
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// The deadline of the timeout probe, and the slack allowed for cleanup.
const TIMEOUT_PROBE: Duration = Duration::from_secs(2);
const TIMEOUT_SLACK: Duration = Duration::from_secs(3);
/// Output kept by the output-cap probe.
const OUTPUT_CAP: usize = 64 << 10;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Ok,
    Failed,
    Skipped,
}

/// One line of the doctor's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub state: State,
    /// What the probe saw.
    pub detail: String,
}

impl Check {
    fn new(name: &'static str, state: State, detail: impl Into<String>) -> Check {
        Check {
            name,
            state,
            detail: detail.into(),
        }
    }

    /// `ok` when `held`, `FAILED` otherwise.
    fn held(name: &'static str, held: bool, detail: impl Into<String>) -> Check {
        Check::new(name, if held { State::Ok } else { State::Failed }, detail)
    }
}

/// The doctor's whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub ok: bool,
    pub checks: Vec<Check>,
    pub summary: String,
}

impl Report {
    pub fn new(checks: Vec<Check>, allow_skips: bool) -> Report {
        let count = |s| checks.iter().filter(|c| c.state == s).count();
        let (ok, failed, skipped) = (
            count(State::Ok),
            count(State::Failed),
            count(State::Skipped),
        );
        Report {
            ok: failed == 0 && (skipped == 0 || allow_skips),
            summary: format!("{ok} ok, {failed} failed, {skipped} skipped"),
            checks,
        }
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let state = match c.state {
                State::Ok => "ok",
                State::Failed => "FAILED",
                State::Skipped => "skipped",
            };
            out.push_str(&format!("{state:<8}{}: {}\n", c.name, c.detail));
        }
        let verdict = if self.checks.iter().any(|c| c.state == State::Failed) {
            "the sandbox does NOT fully hold on this host"
        } else if self.ok {
            "the sandbox holds on this host"
        } else {
            "some checks were skipped (--allow-skips accepts that)"
        };
        out.push_str(&format!("doctor: {}; {verdict}\n", self.summary));
        out
    }
}

/// Runs every check and prints the report; exit 0 only if every check held.
pub fn doctor(req: DoctorRequest) -> Result<i32> {
    let (checks, engine_code) = run_checks(&req)?;
    let report = Report::new(checks, req.allow_skips);
    let text = if req.json {
        serde_json::to_string_pretty(&report).expect("the report serializes") + "\n"
    } else {
        report.text()
    };
    console::out(&text, "the doctor report")?;
    // The report is printed either way; a docker CLI that is missing (127)
    // or an engine that does not answer (125) is said by the exit code too.
    if let Some(code) = engine_code {
        return Ok(code);
    }
    Ok(if report.ok {
        exit::SUCCESS
    } else {
        exit::NOT_ALL_PASSED
    })
}

/// The container probes, in order: name, script (run with `sh`), what to
/// make of the result. Also the exit code of an engine that could not be
/// reached (125, or 127 / 126 for the docker CLI).
fn run_checks(req: &DoctorRequest) -> Result<(Vec<Check>, Option<i32>)> {
    let session = Session::new(req.sandbox.clone())?;
    let docker_cli = session.sandbox.docker.clone();
    let mut checks = Vec::new();

    let (engine, engine_code) = engine_facts(&docker_cli);
    let reachable = engine.state == State::Ok;
    checks.push(engine);
    let image = match reachable {
        false => Check::new("image", State::Failed, "not checked: the engine is unreachable"),
        true => match control::ensure_image(&docker_cli, &req.image, Pull::Never) {
            Ok(id) => Check::new("image", State::Ok, format!("{} present ({})", req.image, short_id(&id))),
            Err(e) => Check::new(
                "image",
                State::Failed,
                format!("{e}; build the local test images with scripts/build-images.sh, or `docker pull {}` where a registry is reachable", req.image),
            ),
        },
    };
    let usable = image.state == State::Ok;
    checks.push(image);

    // The probes' containers are judged on the engine's record of them.
    let events = if usable {
        EventStream::start(&session.sandbox.docker, &session.run_id).ok()
    } else {
        None
    };
    let p = Prober {
        session: &session,
        image: &req.image,
        events: events.as_ref(),
    };
    // One table: the name reported when the probe cannot run, and the probe.
    let probes: [(&'static str, &dyn Fn() -> Check); 9] = [
        ("network", &|| p.network()),
        ("read-only root", &|| p.read_only_root()),
        ("/tmp", &|| p.tmp()),
        ("capabilities", &|| p.capabilities()),
        ("memory cap", &|| p.memory()),
        ("pids cap", &|| p.pids()),
        ("timeout", &|| p.timeout()),
        ("output cap", &|| p.output_cap()),
        ("languages", &|| p.languages()),
    ];
    if !usable {
        for (name, _) in probes {
            checks.push(Check::new(
                name,
                State::Failed,
                "not run: no usable engine and image",
            ));
        }
        return Ok((checks, engine_code));
    }
    for (_, probe) in probes {
        // An interrupted doctor stops; it never reports a probe it cut
        // short as a sandbox that does not hold.
        if let Some(signal) = signals::received() {
            return Err(Error::Interrupted(signal));
        }
        checks.push(probe());
    }
    checks.extend(runner_checks(&session, &req.image));
    checks.push(nothing_left(&docker_cli, &session.run_id));
    Ok((checks, engine_code))
}

/// The first candidate of the reset probe: leaves a background process
/// that ignores SIGTERM and SIGHUP, a `/tmp` file, a `/dev/shm` file, and a
/// SysV segment if one can be made at all.
const LEAVE: &str = r#"(trap '' TERM HUP; exec sleep 3600) &
echo left > /tmp/left-behind
echo left > /dev/shm/left-behind 2>/dev/null && echo shm-made
echo "shmmni $(cat /proc/sys/kernel/shmmni)"
if command -v python3 >/dev/null 2>&1; then
  python3 -c "import ctypes; l = ctypes.CDLL(None); print('sysv-made' if l.shmget(0, 4096, 0o1600) >= 0 else 'sysv-refused')"
fi
echo done
"#;

/// The next candidate in the same container: what it can see of them.
const FIND: &str = r#"for p in /proc/[0-9]*; do
  p=${p#/proc/}
  [ "$p" = 1 ] || [ "$p" = $$ ] || echo "process $p $(tr '\000' ' ' < /proc/$p/cmdline 2>/dev/null)"
done
for f in /tmp/* /dev/shm/*; do
  [ -e "$f" ] && [ "$f" != "${0%/*}" ] && echo "file $f"
done
[ "$(wc -l < /proc/sysvipc/shm)" -gt 1 ] && echo "sysv segment"
echo done
"#;

/// `--isolate`: which modes work here, and the runner's reset and safety,
/// proven through a runner session the way eval uses one.
fn runner_checks(session: &Session, image: &str) -> Vec<Check> {
    use crate::runner::host::{runner_unsupported, Loaded, ResetOutcome, RunnerSession};
    use sbx_runner::protocol::{Candidate as Program, Case, Status};

    let (modes, reset, ptrace) = ("isolate modes", "runner reset", "runner ptrace");
    let docker = &session.sandbox.docker;
    if let Some(why) = runner_unsupported(docker) {
        let skip = |name| Check::new(name, State::Skipped, format!("no runner here: {why}"));
        return vec![
            Check::new(
                modes,
                State::Ok,
                format!("case only (eval falls back to it, saying so): {why}"),
            ),
            skip(reset),
            skip(ptrace),
            skip(IDENTITY),
        ];
    }
    let started = session
        .stage_runner()
        .map_err(|e| e.to_string())
        .and_then(|runner| {
            let name = format!(
                "{}{}-{}",
                argv::NAME_PREFIX,
                session.run_id,
                session.next_container()
            );
            let args = argv::runner_create_args(
                &argv::Container {
                    name: &name,
                    run_id: &session.run_id,
                    interactive: true,
                    mount: argv::Mount::Bind(&runner),
                    image,
                    limits: &session.sandbox.limits,
                    hardening: &session.sandbox.hardening,
                    interpreter: &[],
                },
                sbx_runner::SUBCOMMAND,
            );
            RunnerSession::start(docker, &args, &name).map_err(|e| e.to_string())
        });
    let mut runner = match started {
        Ok(runner) => runner,
        Err(why) => {
            let failed = |name| {
                Check::new(
                    name,
                    State::Failed,
                    format!("the runner did not start: {why}"),
                )
            };
            return vec![
                failed(modes),
                failed(reset),
                failed(ptrace),
                failed(IDENTITY),
            ];
        }
    };
    let mut run_as =
        |script: &str, interpreter: Vec<String>| -> std::result::Result<String, String> {
            let program = Program {
                file_name: "probe".into(),
                program: script.as_bytes().to_vec(),
                interpreter: Some(interpreter),
                build: None,
            };
            match runner.load(&program).map_err(|e| e.to_string())? {
                Loaded::Ready => {}
                Loaded::Refused(why) => return Err(why),
            }
            let case = Case {
                stdin: Vec::new(),
                wall_ms: PROBE_TIMEOUT.as_millis() as u64,
                max_output: OUTPUT_CAP as u64,
                cpu_limit_s: None,
            };
            let result = runner.run_case(&case).map_err(|e| e.to_string())?;
            if result.status != Status::Ok {
                return Err(format!("the probe ended {}", result.status.code()));
            }
            match runner.reset().map_err(|e| e.to_string())? {
                ResetOutcome::Clean => Ok(String::from_utf8_lossy(&result.stdout).into_owned()),
                ResetOutcome::Dirty(why) => Err(format!("the reset was not clean: {why}")),
            }
        };
    let first = run_as(LEAVE, vec!["sh".into()]);
    let second = first
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|_| run_as(FIND, vec!["sh".into()]));
    // sbx's own static binary, as the candidate: no need of the image's
    // shell or Python.
    let probe_words = [argv::RUNNER_PATH, sbx_runner::SUBCOMMAND, sbx_runner::PROBE];
    let probed = run_as("", probe_words.map(String::from).to_vec());
    runner.close();
    let (left, found) = match (first, second) {
        (Ok(left), Ok(found)) => (left, found),
        (Err(why), _) | (_, Err(why)) => {
            let failed = |name| Check::new(name, State::Failed, why.clone());
            return vec![
                Check::new(
                    modes,
                    State::Ok,
                    "case, candidate, worker (the runner starts here)",
                ),
                failed(reset),
                failed(ptrace),
                failed(IDENTITY),
            ];
        }
    };
    let sysv = if left.contains("sysv-made") {
        "a SysV segment"
    } else if left.contains("sysv-refused") || left.contains("shmmni 0") {
        "no SysV segment (none can be made: kernel.shmmni=0)"
    } else {
        "no SysV segment (none was tried)"
    };
    let shm = if left.contains("shm-made") {
        "a /dev/shm file, "
    } else {
        ""
    };
    let seen: Vec<&str> = found
        .lines()
        .filter(|l| !l.starts_with("ptrace") && *l != "done")
        .collect();
    let reset_check = Check::held(
        reset,
        left.contains("done") && found.contains("done") && seen.is_empty(),
        if seen.is_empty() {
            format!("a background process, a /tmp file, {shm}{sysv} left by one candidate; the next saw none")
        } else {
            format!("the next candidate saw: {}", seen.join("; "))
        },
    );
    let (ptrace_check, identity_check) = match probed {
        Ok(report) => identity_checks(ptrace, IDENTITY, &report, &session.sandbox.hardening),
        Err(why) => (
            Check::new(ptrace, State::Failed, why.clone()),
            Check::new(IDENTITY, State::Failed, why),
        ),
    };
    vec![
        Check::new(
            modes,
            State::Ok,
            "case, candidate, worker (the runner starts and resets here)",
        ),
        reset_check,
        ptrace_check,
        identity_check,
    ]
}

/// The name of the check of the candidate's identity in the runner.
const IDENTITY: &str = "candidate identity";

/// The runner ptrace and candidate identity checks from the report of
/// `sbx __runner --probe`, run as a candidate: the uid and gid asked for
/// (never root), no capability in any set, no_new_privs, and every way to
/// PID 1 and /dev refused.
fn identity_checks(
    ptrace: &'static str,
    identity: &'static str,
    report: &str,
    hardening: &crate::spec::Hardening,
) -> (Check, Check) {
    let get = |key: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .unwrap_or("?")
            .to_string()
    };
    let traced = get("ptrace");
    let ptrace_check = Check::held(
        ptrace,
        traced != "ok" && traced != "?",
        match traced.as_str() {
            "ok" => "PTRACE_ATTACH to the runner (PID 1) succeeded".to_string(),
            "?" => format!("the probe said nothing of ptrace: {report:?}"),
            errno => format!("PTRACE_ATTACH to the runner (PID 1) refused ({errno})"),
        },
    );
    let want = argv::candidate_identity(hardening);
    let (uid, gid) = want.split_once(':').unwrap_or((&want, &want));
    let mut wrong = Vec::new();
    if get("uid") != format!("{uid} {uid}") || get("gid") != format!("{gid} {gid}") {
        wrong.push(format!("uid {} gid {}, not {want}", get("uid"), get("gid")));
    }
    if !matches!(get("groups").as_str(), "" | "?") && get("groups") != gid {
        wrong.push(format!("groups {}", get("groups")));
    }
    for key in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
        if !get(key).trim_start_matches('0').is_empty() {
            wrong.push(format!("{key} {}", get(key)));
        }
    }
    if get("NoNewPrivs") != "1" {
        wrong.push(format!("NoNewPrivs {}", get("NoNewPrivs")));
    }
    for key in ["kill", "prlimit", "setpriority", "oom_score_adj", "dev"] {
        let got = get(key);
        if got == "ok" || got == "?" {
            wrong.push(format!("{key} of PID 1 {got}"));
        }
    }
    let identity_check = Check::held(
        identity,
        wrong.is_empty(),
        if wrong.is_empty() {
            format!(
                "uid:gid {want}, no capability, no_new_privs; kill, prlimit, setpriority, ptrace and the OOM score of PID 1 and writing /dev refused ({}, {}, {}, {}, {}, {})",
                get("kill"),
                get("prlimit"),
                get("setpriority"),
                traced,
                get("oom_score_adj"),
                get("dev")
            )
        } else {
            wrong.join("; ")
        },
    );
    (ptrace_check, identity_check)
}

/// The programs the language table needs, each once: the first word of
/// each compile and run command (a compiled program's own path excepted).
fn language_programs() -> Vec<&'static str> {
    let mut programs: Vec<&'static str> = Vec::new();
    for language in spec::languages::table() {
        let firsts = language
            .compile
            .map(|c| c[0])
            .into_iter()
            .chain([language.run[0]]);
        for program in firsts {
            if !program.starts_with('{') && !programs.contains(&program) {
                programs.push(program);
            }
        }
    }
    programs
}

/// `compile and run: C (.c), ...; run: ...; missing: ...` for the programs
/// found in the image.
fn languages_detail(found: &[&str]) -> String {
    let has = |p: &str| p.starts_with('{') || found.contains(&p);
    let (mut compiled, mut interpreted, mut missing) = (Vec::new(), Vec::new(), Vec::new());
    for language in spec::languages::table() {
        let label = format!("{} (.{})", language.name, language.extension);
        let needs: Vec<&str> = language
            .compile
            .map(|c| c[0])
            .into_iter()
            .chain([language.run[0]])
            .collect();
        let lacking: Vec<&str> = needs.iter().copied().filter(|p| !has(p)).collect();
        if !lacking.is_empty() {
            missing.push(format!("{label} needs {}", lacking.join(", ")));
        } else if language.is_compiled() {
            compiled.push(label);
        } else {
            interpreted.push(label);
        }
    }
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    format!(
        "compile and run: {}; run: {}; missing: {}",
        list(&compiled),
        list(&interpreted),
        list(&missing)
    )
}

fn short_id(id: &str) -> &str {
    let id = id.trim_start_matches("sha256:");
    &id[..id.len().min(12)]
}

fn engine_facts(docker_cli: &Docker) -> (Check, Option<i32>) {
    let version = process::control(docker_cli, &argv::version_args(), CONTROL_TIMEOUT);
    let version = match version {
        Ok(v) if v.success() => v.stdout.trim().to_string(),
        Ok(v) => {
            return (
                Check::new(
                    "engine",
                    State::Failed,
                    format!("unreachable: {}", v.stderr_line()),
                ),
                Some(exit::ENGINE),
            )
        }
        Err(e) => {
            return (
                Check::new("engine", State::Failed, e.to_string()),
                Some(e.exit_code()),
            )
        }
    };
    let info = process::control(docker_cli, &argv::info_args(), CONTROL_TIMEOUT)
        .map(|i| i.stdout.trim().to_string())
        .unwrap_or_default();
    let v: Vec<&str> = version.split('|').collect();
    let i: Vec<&str> = info.split('|').collect();
    let get = |v: &[&str], n: usize| v.get(n).copied().unwrap_or("?").to_string();
    let facts = Check::new(
        "engine",
        State::Ok,
        format!(
            "CLI {}, engine {}, cgroup v{}, runtime {}, storage {}",
            get(&v, 0),
            get(&v, 1),
            get(&i, 0),
            get(&i, 1),
            get(&i, 2)
        ),
    );
    (facts, None)
}

struct Prober<'a> {
    session: &'a Session,
    image: &'a str,
    events: Option<&'a EventStream>,
}

/// What a probe run gave: the run, or why it could not be judged.
enum Probe {
    Ran(Finished, String),
    Skip(String),
    Broken(String),
}

impl Prober<'_> {
    /// Stages `script` and builds the argv that runs it with `sh`, exactly
    /// as `sbx run` would.
    fn prepare(&self, script: &[u8]) -> crate::error::Result<Prepared> {
        let staged = self.session.stage(script)?;
        let sh = ["sh".to_string()];
        self.session.prepare(
            &Candidate {
                staged: &staged,
                image: self.image,
                interpreter: &sh,
                interactive: false,
            },
            &Delivery::Bind,
        )
    }

    /// Runs `script` with `sh` in the sandbox, exactly as `sbx run` would.
    fn run(&self, script: &str, timeout: Duration, max_output: usize) -> Probe {
        let run = self.prepare(script.as_bytes()).and_then(|prepared| {
            let name = prepared.name.clone();
            self.session
                .execute(
                    &self.session.sandbox.docker,
                    prepared,
                    StdinSource::Null,
                    OutputSink::Capture { max: max_output },
                    timeout,
                )
                .map(|f| (f, name))
        });
        match run {
            Err(e) => Probe::Broken(e.to_string()),
            Ok((finished, name)) => {
                match outcome::docker_failure(&finished, &ContainerRecord::new(self.events, &name))
                {
                    Some(failure) if failure.code == exit::NOT_FOUND => {
                        Probe::Skip("image has no sh".into())
                    }
                    Some(failure) => Probe::Broken(failure.message),
                    None => Probe::Ran(finished, name),
                }
            }
        }
    }

    /// Runs a probe and turns its stdout into a check with `judge`.
    fn check(&self, name: &'static str, script: &str, judge: impl FnOnce(&str) -> Check) -> Check {
        match self.run(script, PROBE_TIMEOUT, OUTPUT_CAP) {
            Probe::Ran(f, _) if f.ended == Ended::TimedOut => {
                Check::new(name, State::Failed, "the probe did not finish in time")
            }
            Probe::Ran(f, _) => judge(&String::from_utf8_lossy(&f.stdout.bytes)),
            Probe::Skip(why) => Check::new(name, State::Skipped, why),
            Probe::Broken(why) => Check::new(
                name,
                State::Failed,
                format!("the probe could not run: {why}"),
            ),
        }
    }

    /// Which of the language table's languages the image has the programs
    /// for (`command -v`): compiler and runner, or interpreter. Informative:
    /// never a failure of the sandbox.
    fn languages(&self) -> Check {
        let programs = language_programs();
        let mut script = String::from("for p in");
        for program in &programs {
            script.push(' ');
            script.push_str(program);
        }
        script.push_str("; do command -v \"$p\" >/dev/null 2>&1 && echo \"$p\"; done; true\n");
        self.check("languages", &script, |out| {
            let found: Vec<&str> = out.split_whitespace().collect();
            Check::new("languages", State::Ok, languages_detail(&found))
        })
    }

    fn network(&self) -> Check {
        // gVisor's sysfs has no /sys/class/net (listing it fails): there the
        // network namespace's own list, /proc/net/dev, is the evidence.
        let script = "if ls /sys/class/net 2>/dev/null | grep -q .; then\n\
                      echo FROM /sys/class/net; ls /sys/class/net\n\
                      else echo FROM /proc/net/dev; sed -n 's/^ *\\([^ :|]*\\):.*/\\1/p' /proc/net/dev; fi\n";
        self.check("network", script, |out| {
            let mut words = out.split_whitespace();
            let from = match (words.next(), words.next()) {
                (Some("FROM"), Some(from)) => from,
                _ => "?",
            };
            let interfaces: Vec<&str> = words.collect();
            Check::held(
                "network",
                from != "?" && interfaces == ["lo"],
                format!("interfaces in {from}: {}", interfaces.join(" ")),
            )
        })
    }

    fn read_only_root(&self) -> Check {
        let script =
            "if touch /sbx-probe 2>/dev/null; then echo WRITABLE; else echo READONLY; fi\n";
        self.check("read-only root", script, |out| {
            Check::held(
                "read-only root",
                out.trim() == "READONLY",
                if out.contains("WRITABLE") {
                    "writing /sbx-probe succeeded"
                } else {
                    "writing under / fails"
                },
            )
        })
    }

    fn tmp(&self) -> Check {
        let script = "printf '#!/bin/sh\\necho EXECUTED\\n' > /tmp/sbx-probe && chmod +x /tmp/sbx-probe && echo WRITABLE\n\
                      /tmp/sbx-probe 2>/dev/null || echo NOEXEC\n";
        self.check("/tmp", script, |out| {
            let writable = out.contains("WRITABLE");
            let noexec = out.contains("NOEXEC") && !out.contains("EXECUTED");
            Check::held(
                "/tmp",
                writable && noexec,
                format!(
                    "{}, {}",
                    if writable { "writable" } else { "NOT writable" },
                    if noexec {
                        "not executable"
                    } else {
                        "a file in /tmp EXECUTED"
                    }
                ),
            )
        })
    }

    fn capabilities(&self) -> Check {
        let script = "echo x > /tmp/sbx-cap; if chown 1:1 /tmp/sbx-cap 2>/dev/null; then echo CHOWNED; else echo DENIED; fi\n\
                      grep CapEff /proc/self/status\n";
        self.check("capabilities", script, |out| {
            let denied = out.contains("DENIED");
            let cap_eff = out
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .map(str::trim)
                .unwrap_or("?")
                .to_string();
            let none = cap_eff.chars().all(|c| c == '0') && !cap_eff.is_empty();
            Check::held(
                "capabilities",
                denied && none,
                format!(
                    "chown {}, CapEff {cap_eff}",
                    if denied { "fails" } else { "SUCCEEDED" }
                ),
            )
        })
    }

    fn memory(&self) -> Check {
        let cap = spec::size_in_bytes(&self.session.sandbox.limits.memory);
        if cap > 4 << 30 {
            return Check::new(
                "memory cap",
                State::Skipped,
                format!(
                    "cap {} is too large to probe safely",
                    self.session.sandbox.limits.memory
                ),
            );
        }
        let target_mib = ((cap * 2) >> 20) + 64;
        let script = format!(
            "command -v python3 >/dev/null 2>&1 || {{ echo NOPYTHON; exit 0; }}\n\
             exec python3 -c 'chunks = []\nfor _ in range({n}):\n    chunks.append(b\"x\" * (16 << 20))\nprint(\"ALLOCATED\", len(chunks) * 16)'\n",
            n = target_mib / 16
        );
        let name = "memory cap";
        match self.run(&script, PROBE_TIMEOUT, OUTPUT_CAP) {
            Probe::Skip(why) => Check::new(name, State::Skipped, why),
            Probe::Broken(why) => Check::new(
                name,
                State::Failed,
                format!("the probe could not run: {why}"),
            ),
            Probe::Ran(f, _) if String::from_utf8_lossy(&f.stdout.bytes).contains("NOPYTHON") => {
                Check::new(name, State::Skipped, "image has no python3")
            }
            Probe::Ran(f, container) => {
                let record = ContainerRecord::new(self.events, &container);
                let verdict = outcome::judge(&f, |_| None, &record);
                let limit = &self.session.sandbox.limits.memory;
                match verdict {
                    Verdict::Fail(FailReason::Oom) => Check::new(
                        name,
                        State::Ok,
                        format!("allocating {target_mib} MiB under --memory {limit} was killed and reported as oom"),
                    ),
                    Verdict::Pass => Check::new(
                        name,
                        State::Failed,
                        format!("allocated {target_mib} MiB under --memory {limit} without being killed"),
                    ),
                    other => Check::new(name, State::Failed, format!("expected an oom kill, saw {other:?}")),
                }
            }
        }
    }

    fn pids(&self) -> Check {
        // A real fork bomb for 2 s, then stopped from inside. A count of
        // processes at one instant proves little (shells die when fork
        // fails); the kernel's own count of refused forks does. Once the
        // bomb runs, every pid is taken: the timer is started before it, and
        // everything after it is a shell builtin (no fork that could be
        // refused and kill the probe).
        let script = "sleep 2 &\n\
                      timer=$!\n\
                      bomb() { bomb & bomb & wait; }\n\
                      bomb 2>/dev/null &\n\
                      wait $timer\n\
                      cd /sys/fs/cgroup/pids 2>/dev/null || cd /sys/fs/cgroup\n\
                      read max < pids.max\n\
                      refused=0\n\
                      while read key value; do [ \"$key\" = max ] && refused=$value; done < pids.events\n\
                      echo MAX $max\n\
                      echo REFUSED $refused\n\
                      kill -9 -1 2>/dev/null\n";
        let limit = self.session.sandbox.limits.pids_limit.clone();
        let check = self.check("pids cap", script, |out| {
            let field = |key: &str| {
                out.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .unwrap_or("?")
                    .to_string()
            };
            let (max, refused) = (field("MAX "), field("REFUSED "));
            let held = max == limit && refused.parse::<u64>().is_ok_and(|n| n > 0);
            Check::held(
                "pids cap",
                held,
                format!("a fork bomb had {refused} forks refused at pids.max {max} (--pids-limit {limit})"),
            )
        });
        // The host must still be able to start processes.
        if check.state == State::Ok && !process::can_start_a_process() {
            return Check::new(
                "pids cap",
                State::Failed,
                "the host cannot start processes after the fork bomb",
            );
        }
        check
    }

    fn timeout(&self) -> Check {
        let name = "timeout";
        let script = "trap '' TERM\nwhile :; do :; done\n";
        match self.run(script, TIMEOUT_PROBE, OUTPUT_CAP) {
            Probe::Skip(why) => Check::new(name, State::Skipped, why),
            Probe::Broken(why) => Check::new(
                name,
                State::Failed,
                format!("the probe could not run: {why}"),
            ),
            Probe::Ran(f, container) => {
                let gone = container_gone(&self.session.sandbox.docker, &container);
                let in_time = f.duration < TIMEOUT_PROBE + TIMEOUT_SLACK;
                Check::held(
                    name,
                    f.ended == Ended::TimedOut && in_time && gone,
                    format!(
                        "a loop ignoring SIGTERM with a {} s timeout ended as {:?} after {:.1} s; container {}",
                        TIMEOUT_PROBE.as_secs(),
                        f.ended,
                        f.duration.as_secs_f64(),
                        if gone { "gone" } else { "STILL PRESENT" }
                    ),
                )
            }
        }
    }

    fn output_cap(&self) -> Check {
        let name = "output cap";
        let flood = match self.run("yes\n", PROBE_TIMEOUT, OUTPUT_CAP) {
            Probe::Skip(why) => return Check::new(name, State::Skipped, why),
            Probe::Broken(why) => {
                return Check::new(
                    name,
                    State::Failed,
                    format!("the probe could not run: {why}"),
                )
            }
            Probe::Ran(f, _) => f,
        };
        let cut = flood.ended == Ended::OutputLimit && flood.stdout.bytes.len() <= OUTPUT_CAP;
        let log = self.log_driver();
        Check::held(
            name,
            cut && log.as_deref() == Ok("none"),
            format!(
                "a flood was {} after {:.1} s ({} bytes kept); log driver {}",
                if cut { "cut at the limit" } else { "NOT cut" },
                flood.duration.as_secs_f64(),
                flood.stdout.bytes.len(),
                match &log {
                    Ok(driver) => driver.clone(),
                    Err(e) => format!("unknown ({e})"),
                }
            ),
        )
    }

    /// The log driver the engine records for a container of this argv:
    /// created (never started) with the same argv, inspected, removed.
    fn log_driver(&self) -> std::result::Result<String, String> {
        let prepared = self.prepare(b"true\n").map_err(|e| e.to_string())?;
        let docker_cli = &self.session.sandbox.docker;
        // Removed whatever happens, a create that timed out included.
        let _guard = ContainerGuard::new(docker_cli, &prepared.name);
        // Created the way every run's container is, so a missing image is
        // pulled (or refused) the same way.
        let created = control::create_container(
            docker_cli,
            &prepared.create,
            self.image,
            self.session.sandbox.pull,
        );
        let inspected = process::control(
            docker_cli,
            &argv::log_driver_args(&prepared.name),
            CONTROL_TIMEOUT,
        );
        match created {
            Ok(()) => {}
            // The engine's own line, as before.
            Err(Error::CreateFailed(line) | Error::EngineUnreachable(line)) => return Err(line),
            Err(e) => return Err(e.to_string()),
        }
        match inspected {
            Ok(i) if i.success() => Ok(i.stdout.trim().to_string()),
            Ok(i) => Err(i.stderr_line()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Whether no container of this name exists, in any state.
fn container_gone(docker_cli: &Docker, name: &str) -> bool {
    matches!(process::control(docker_cli, &argv::container_exists_args(name), CONTROL_TIMEOUT), Ok(c) if c.success() && c.stdout.trim().is_empty())
}

fn nothing_left(docker_cli: &Docker, run_id: &str) -> Check {
    let name = "nothing left";
    match process::control(docker_cli, &argv::list_run_args(run_id), CONTROL_TIMEOUT) {
        Ok(c) if c.success() => {
            let left = c.stdout.split_whitespace().count();
            Check::held(
                name,
                left == 0,
                format!("{left} container(s) labelled sbx.run={run_id} remain"),
            )
        }
        Ok(c) => Check::new(name, State::Failed, c.stderr_line()),
        Err(e) => Check::new(name, State::Failed, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_are_reported_from_the_programs_found() {
        assert_eq!(
            language_programs(),
            ["python3", "sh", "node", "ruby", "gcc", "g++", "go", "rustc", "javac", "java"]
        );
        let detail = languages_detail(&["sh", "gcc", "python3", "javac"]);
        assert_eq!(
            detail,
            "compile and run: C (.c); run: Python (.py), shell (.sh); missing: JavaScript (.js) needs node, Ruby (.rb) needs ruby, C++ (.cpp) needs g++, C++ (.cc) needs g++, Go (.go) needs go, Rust (.rs) needs rustc, Java (.java) needs java"
        );
    }

    #[test]
    fn report_verdicts() {
        let ok = Check::new("a", State::Ok, "x");
        let skipped = Check::new("b", State::Skipped, "image has no python3");
        let failed = Check::new("c", State::Failed, "interfaces: lo eth0");
        assert!(Report::new(vec![ok.clone()], false).ok);
        assert!(!Report::new(vec![ok.clone(), skipped.clone()], false).ok);
        assert!(Report::new(vec![ok.clone(), skipped.clone()], true).ok);
        let bad = Report::new(vec![ok, skipped, failed], true);
        assert!(!bad.ok);
        assert_eq!(bad.summary, "1 ok, 1 failed, 1 skipped");
        let text = bad.text();
        assert!(text.contains("FAILED  c: interfaces: lo eth0\n"), "{text}");
        assert!(text.contains("skipped b: image has no python3\n"), "{text}");
        assert!(text.ends_with(
            "doctor: 1 ok, 1 failed, 1 skipped; the sandbox does NOT fully hold on this host\n"
        ));
        let json: serde_json::Value = serde_json::to_value(&bad).unwrap();
        assert_eq!(
            json["checks"][2],
            serde_json::json!({"name": "c", "state": "failed", "detail": "interfaces: lo eth0"})
        );
        assert_eq!(json["ok"], false);
    }
}
