//! What a supervised run's end means, as data: the exit code of `sbx run`
//! and the docker-side failures that must not be blamed on the program.

use std::os::unix::process::ExitStatusExt;

use crate::exit;
use crate::supervise::{Ended, Finished};

/// `sbx run`'s exit code: the program's own code passes through, docker's
/// own failures get the codes `docker run` gives them (125/126/127, as with
/// the script), 124 on timeout, 130/143 when sbx was interrupted, 128+N when
/// the client died of signal N.
pub fn run_exit_code(finished: &Finished) -> i32 {
    if let Some(failure) = docker_failure(finished) {
        return failure.code;
    }
    match finished.ended {
        Ended::Exited(status) => status
            .code()
            .unwrap_or_else(|| exit::for_signal(status.signal().unwrap_or(9))),
        Ended::TimedOut => exit::TIMEOUT,
        // `run` streams its output and has no limit; kept total for safety.
        Ended::OutputLimit => exit::ENGINE,
        Ended::Interrupted(signal) => exit::for_signal(signal),
    }
}

/// Docker itself failed to run the program (it never started).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerFailure {
    /// The code `docker run` gives this failure: 127 not found, 126 cannot
    /// execute, 125 anything else.
    pub code: i32,
    /// Docker's line.
    pub message: String,
}

/// When docker itself failed to run the container, as opposed to the
/// program exiting with some code.
///
/// `docker start -a` exits 1 and `docker run` exits 125-127 when the process
/// cannot be started; both print docker's message (`Error response from
/// daemon: ...`, `docker: ...`) as the first line of stderr, before any
/// output of a program that never ran. Both that exit code and that first
/// line are required; a program that exits 1 and prints such a line first is
/// taken for docker (documented). The code follows the docker CLI's own
/// string rules.
pub fn docker_failure(finished: &Finished) -> Option<DockerFailure> {
    let Ended::Exited(status) = finished.ended else {
        return None;
    }; // `docker start -a` says 1, `docker run` 125-127; any other code is the
       // program's own, whatever it printed.
    if !matches!(status.code(), Some(1 | 125..=127)) {
        return None;
    }
    let stderr = String::from_utf8_lossy(&finished.stderr.bytes);
    let first = stderr.lines().map(str::trim).find(|l| !l.is_empty())?;
    let docker_said = [
        "docker:",
        "Error response from daemon:",
        "Error: No such container",
    ]
    .iter()
    .any(|p| first.starts_with(p));
    if !docker_said {
        return None;
    }
    let code = if first.contains("executable file not found")
        || first.contains("no such file or directory")
    {
        exit::NOT_FOUND
    } else if first.contains("permission denied") || first.contains("is a directory") {
        exit::CANNOT_EXECUTE
    } else {
        exit::ENGINE
    };
    Some(DockerFailure {
        code,
        message: first.to_string(),
    })
}

/// What a finished run says about the candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Exit 0 and the output matched.
    Pass,
    /// The candidate ran and did not pass.
    Fail(FailReason),
    /// Docker could not run the container (its message); not the candidate's fault.
    DockerError(String),
    /// sbx was interrupted during the run.
    Interrupted,
}

/// Why a candidate failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailReason {
    /// Exit 0, but the output did not match: the first difference.
    WrongOutput(String),
    ExitCode,
    Timeout,
    /// The engine reported an `oom` event: the memory cap was hit.
    Oom,
    OutputLimit,
}

impl FailReason {
    /// The `reason` field of the report.
    pub fn code(&self) -> &'static str {
        match self {
            FailReason::WrongOutput(_) => "wrong_output",
            FailReason::ExitCode => "exit_code",
            FailReason::Timeout => "timeout",
            FailReason::Oom => "oom",
            FailReason::OutputLimit => "output_limit",
        }
    }
}

/// Judges a finished run. `mismatch` compares stdout with the expectation
/// (`None` when it matches); `oom` asks the engine whether the container hit
/// its memory cap, and is only called for runs that did not pass on their own.
pub fn judge(
    finished: &Finished,
    mismatch: impl FnOnce(&str) -> Option<String>,
    oom: impl FnOnce() -> bool,
) -> Verdict {
    let status = match finished.ended {
        Ended::Interrupted(_) => return Verdict::Interrupted,
        Ended::TimedOut => return Verdict::Fail(FailReason::Timeout),
        Ended::OutputLimit => return Verdict::Fail(FailReason::OutputLimit),
        Ended::Exited(status) => status,
    };
    if let Some(failure) = docker_failure(finished) {
        return Verdict::DockerError(failure.message);
    }
    let difference = mismatch(&String::from_utf8_lossy(&finished.stdout.bytes));
    match (status.code(), difference) {
        (Some(0), None) => Verdict::Pass,
        _ if oom() => Verdict::Fail(FailReason::Oom),
        (Some(0), Some(diff)) => Verdict::Fail(FailReason::WrongOutput(diff)),
        _ => Verdict::Fail(FailReason::ExitCode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervise::Captured;
    use std::process::ExitStatus;
    use std::time::{Duration, SystemTime};

    fn exited(code: i32) -> Ended {
        Ended::Exited(ExitStatus::from_raw(code << 8))
    }

    fn finished(code: i32, stderr: &str) -> Finished {
        Finished {
            ended: exited(code),
            stdout: Captured::default(),
            stderr: Captured {
                bytes: stderr.as_bytes().to_vec(),
                total: stderr.len() as u64,
            },
            started: SystemTime::now(),
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn run_codes() {
        let with = |ended| Finished {
            ended,
            ..finished(0, "")
        };
        assert_eq!(run_exit_code(&finished(0, "")), 0);
        assert_eq!(run_exit_code(&finished(3, "boom")), 3);
        assert_eq!(run_exit_code(&finished(125, "")), 125);
        assert_eq!(
            run_exit_code(&with(Ended::Exited(ExitStatus::from_raw(9)))),
            137
        );
        assert_eq!(run_exit_code(&with(Ended::TimedOut)), 124);
        assert_eq!(run_exit_code(&with(Ended::Interrupted(2))), 130);
        assert_eq!(run_exit_code(&with(Ended::Interrupted(15))), 143);
        // docker start's exit 1 for a process that could not start becomes
        // what docker run would have said.
        let denied = "Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"/work/task\": permission denied: unknown";
        assert_eq!(run_exit_code(&finished(1, denied)), 126);
        let missing = "Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"node\": executable file not found in $PATH: unknown";
        assert_eq!(run_exit_code(&finished(1, missing)), 127);
        assert_eq!(
            run_exit_code(&finished(1, "Error response from daemon: something else")),
            125
        );
    }

    #[test]
    fn verdicts() {
        let same = |_: &str| None;
        let differs = |_: &str| Some("line 1".to_string());
        let never = || false;
        assert_eq!(judge(&finished(0, ""), same, never), Verdict::Pass);
        assert_eq!(
            judge(&finished(0, ""), differs, never),
            Verdict::Fail(FailReason::WrongOutput("line 1".into()))
        );
        assert_eq!(
            judge(&finished(1, ""), same, never),
            Verdict::Fail(FailReason::ExitCode)
        );
        assert_eq!(
            judge(&finished(137, ""), same, || true),
            Verdict::Fail(FailReason::Oom)
        );
        // A child OOM-killed while PID 1 survives: exit 0, wrong output, oom.
        assert_eq!(
            judge(&finished(0, ""), differs, || true),
            Verdict::Fail(FailReason::Oom)
        );
        // A pass never asks the engine.
        assert_eq!(
            judge(&finished(0, ""), same, || panic!("asked")),
            Verdict::Pass
        );
        assert_eq!(
            judge(
                &finished(125, "docker: Error response from daemon: x"),
                same,
                || panic!("asked")
            ),
            Verdict::DockerError("docker: Error response from daemon: x".into())
        );
        let mut timed_out = finished(0, "");
        timed_out.ended = Ended::TimedOut;
        assert_eq!(
            judge(&timed_out, same, || panic!("asked")),
            Verdict::Fail(FailReason::Timeout)
        );
        timed_out.ended = Ended::OutputLimit;
        assert_eq!(
            judge(&timed_out, same, never),
            Verdict::Fail(FailReason::OutputLimit)
        );
        timed_out.ended = Ended::Interrupted(2);
        assert_eq!(judge(&timed_out, same, never), Verdict::Interrupted);
    }

    #[test]
    fn docker_failures_need_code_and_first_line() {
        let msg = "docker: Error response from daemon: failed to create task: exec: \"/work/task\": permission denied.";
        assert_eq!(
            docker_failure(&finished(126, msg)),
            Some(DockerFailure {
                code: 126,
                message: msg.into()
            })
        );
        assert_eq!(
            docker_failure(&finished(125, "docker: invalid reference format."))
                .unwrap()
                .code,
            125
        );
        assert_eq!(
            docker_failure(&finished(1, "Error: No such container: sbx-x-0"))
                .unwrap()
                .code,
            125
        );
        // The program's own 125 with its own message is the program's.
        assert!(docker_failure(&finished(125, "Traceback: boom")).is_none());
        // docker's words after the program's own first line are the program's.
        assert!(docker_failure(&finished(1, "oops\ndocker: fake")).is_none());
        assert!(docker_failure(&finished(0, "docker: fine")).is_none());
        assert!(docker_failure(&finished(3, "docker: my own usage line")).is_none());
        assert!(docker_failure(&finished(42, "Error response from daemon: mine")).is_none());
        assert!(docker_failure(&finished(0, "")).is_none());
    }
}
