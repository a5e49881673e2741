//! The runner's checks: which `--isolate` modes work, the reset between
//! candidates, and the candidate's identity, proven through a runner
//! session the way eval uses one.

use crate::docker::argv;
use crate::session::Session;

use super::prober::{OUTPUT_CAP, PROBE_TIMEOUT};
use super::report::{Check, State};

/// The first candidate of the reset probe: leaves a background process
/// that ignores SIGTERM and SIGHUP, a `/tmp` file, a `/dev/shm` file, and a
/// SysV segment under a fixed key if one can be made at all.
const LEAVE: &str = r#"(trap '' TERM HUP; exec sleep 3600) &
echo left > /tmp/left-behind
echo left > /dev/shm/left-behind 2>/dev/null && echo shm-made
echo "shmmni $(cat /proc/sys/kernel/shmmni)"
if command -v python3 >/dev/null 2>&1; then
  python3 -c "import ctypes; l = ctypes.CDLL(None, use_errno=True); r = l.shmget(0x5B5D, 4096, 0o1600); print('sysv-made' if r >= 0 else 'sysv-refused %d' % ctypes.get_errno())"
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
if [ -r /proc/sysvipc/shm ]; then
  [ "$(wc -l < /proc/sysvipc/shm)" -gt 1 ] && echo "sysv segment"
fi
if command -v python3 >/dev/null 2>&1; then
  python3 -c "import ctypes; l = ctypes.CDLL(None); print('sysv segment by key' if l.shmget(0x5B5D, 0, 0o600) >= 0 else '')"
fi
echo done
"#;

/// What the first candidate of the reset probe said of its SysV segment.
fn sysv_said(left: &str) -> String {
    if left.contains("sysv-made") {
        return "a SysV segment".into();
    }
    match left.lines().find_map(|l| l.strip_prefix("sysv-refused ")) {
        Some("38") => {
            "no SysV segment (none can be made: the runner's seccomp filter refuses shmget)".into()
        }
        Some(errno) => format!("no SysV segment (none can be made: shmget failed, errno {errno})"),
        None if left.contains("shmmni 0") => {
            "no SysV segment (none can be made: kernel.shmmni=0)".into()
        }
        None => "no SysV segment (none was tried)".into(),
    }
}

/// `--isolate`: which modes work here, and the runner's reset and safety,
/// proven through a runner session the way eval uses one.
pub(crate) fn runner_checks(session: &Session, image: &str) -> Vec<Check> {
    use crate::runner::host::{
        runner_unsupported, LoadOutcome, ResetOutcome, RunnerSession, Transport,
    };
    use sbx_runner::protocol::{Candidate as Program, Case, CaseStatus};

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
            // The runner is bound from the host here, as eval's are.
            let offer = session.runner_offer(true);
            RunnerSession::start_with(docker, &args, &name, offer).map_err(|e| e.to_string())
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
                LoadOutcome::Ready => {}
                LoadOutcome::Refused(why) => return Err(why),
            }
            let case = Case {
                stdin: Vec::new(),
                wall_ms: PROBE_TIMEOUT.as_millis() as u64,
                max_output: OUTPUT_CAP as u64,
                cpu_limit_s: None,
                rule: sbx_runner::protocol::TimeRule::Wall,
            };
            let result = runner.run_case(&case).map_err(|e| e.to_string())?;
            if result.status != CaseStatus::Ok {
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
    let over = match runner.transport() {
        Transport::Socket => "over its control socket",
        Transport::Stdio => "over the client's stdin and stdout",
    };
    runner.close();
    let (left, found) = match (first, second) {
        (Ok(left), Ok(found)) => (left, found),
        (Err(why), _) | (_, Err(why)) => {
            let failed = |name| Check::new(name, State::Failed, why.clone());
            return vec![
                Check::new(
                    modes,
                    State::Ok,
                    format!("case, candidate, worker (the runner starts here, {over})"),
                ),
                failed(reset),
                failed(ptrace),
                failed(IDENTITY),
            ];
        }
    };
    let sysv = sysv_said(&left);
    let shm = if left.contains("shm-made") {
        "a /dev/shm file, "
    } else {
        ""
    };
    let seen: Vec<&str> = found
        .lines()
        .filter(|l| !l.starts_with("ptrace") && *l != "done" && !l.is_empty())
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
            format!("case, candidate, worker (the runner starts and resets here, {over})"),
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
    let gvisor = argv::is_gvisor(hardening.runtime.as_deref());
    let zero = |key: &str| get(key).trim_start_matches('0').is_empty();
    for key in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
        // gVisor's /proc/self/status has no CapAmb line. The ambient set is
        // always within the permitted and inheritable sets, so with both
        // empty it is empty too.
        let implied =
            key == "CapAmb" && get(key) == "?" && gvisor && zero("CapPrm") && zero("CapInh");
        if !zero(key) && !implied {
            wrong.push(format!("{key} {}", get(key)));
        }
    }
    if get("NoNewPrivs") != "1" {
        wrong.push(format!("NoNewPrivs {}", get("NoNewPrivs")));
    }
    for key in ["kill", "prlimit", "setpriority", "oom_score_adj", "dev"] {
        let got = get(key);
        // gVisor's setpriority checks no permission (measured: a candidate
        // sets PID 1's nice value, even lowers it); its scheduler ignores
        // nice values (tasks are goroutines), so that reach changes nothing.
        if key == "setpriority" && gvisor && got == "ok" {
            continue;
        }
        if got == "ok" || got == "?" {
            wrong.push(format!("{key} of PID 1 {got}"));
        }
    }
    let identity_check = Check::held(
        identity,
        wrong.is_empty(),
        if wrong.is_empty() {
            format!(
                "uid:gid {want}, no capability, no_new_privs; kill, prlimit, setpriority, ptrace and the OOM score of PID 1 and writing /dev refused ({}, {}, {}, {}, {}, {}){}",
                get("kill"),
                get("prlimit"),
                get("setpriority"),
                traced,
                get("oom_score_adj"),
                get("dev"),
                if gvisor && get("setpriority") == "ok" {
                    "; under gVisor setpriority of PID 1 is allowed and changes nothing (its scheduler ignores nice values)"
                } else {
                    ""
                }
            )
        } else {
            wrong.join("; ")
        },
    );
    (ptrace_check, identity_check)
}
