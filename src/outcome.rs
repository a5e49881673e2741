//! What a supervised run's end means, as data: the exit code of `sbx run`
//! and the docker-side failures that must not be blamed on the program.

use std::os::unix::process::ExitStatusExt;

use crate::exit;
use crate::supervise::{Ended, Finished};

/// `sbx run`'s exit code: the program's own code passes through (docker's
/// 125/126/127 included, as with the script), 124 on timeout, 130/143 when
/// sbx was interrupted, 128+N when the client died of signal N.
pub fn run_exit_code(ended: &Ended) -> i32 {
    match ended {
        Ended::Exited(status) => status
            .code()
            .unwrap_or_else(|| exit::for_signal(status.signal().unwrap_or(9))),
        Ended::TimedOut => exit::TIMEOUT,
        // `run` streams its output and has no limit; kept total for safety.
        Ended::OutputLimit => exit::ENGINE,
        Ended::Interrupted(signal) => exit::for_signal(*signal),
    }
}

/// When docker itself failed to run the container (as opposed to the
/// program exiting with some code): the message docker printed.
///
/// The CLI exits 125 when the engine refused the request and 126/127 when
/// the command could not be started; it then prints a line starting with
/// `docker:` (or `Error response from daemon`). A program can exit with
/// those codes too, so both the code and the line are required.
pub fn docker_failure(finished: &Finished) -> Option<String> {
    let Ended::Exited(status) = finished.ended else {
        return None;
    };
    if !matches!(status.code(), Some(125..=127)) {
        return None;
    }
    let stderr = String::from_utf8_lossy(&finished.stderr.bytes);
    stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("docker:") || l.starts_with("Error response from daemon"))
        .map(str::to_string)
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
    if let Some(message) = docker_failure(finished) {
        return Verdict::DockerError(message);
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
        assert_eq!(run_exit_code(&exited(0)), 0);
        assert_eq!(run_exit_code(&exited(3)), 3);
        assert_eq!(run_exit_code(&exited(125)), 125);
        assert_eq!(run_exit_code(&Ended::Exited(ExitStatus::from_raw(9))), 137);
        assert_eq!(run_exit_code(&Ended::TimedOut), 124);
        assert_eq!(run_exit_code(&Ended::Interrupted(2)), 130);
        assert_eq!(run_exit_code(&Ended::Interrupted(15)), 143);
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
    fn docker_failures_need_code_and_line() {
        let msg = "docker: Error response from daemon: failed to create task: exec: \"/work/task\": permission denied.";
        assert_eq!(docker_failure(&finished(126, msg)).as_deref(), Some(msg));
        assert!(docker_failure(&finished(125, "docker: invalid reference format.")).is_some());
        // The program's own 125 with its own message is the program's.
        assert!(docker_failure(&finished(125, "Traceback: boom")).is_none());
        // A `docker:` line with an ordinary code is the program's too.
        assert!(docker_failure(&finished(1, "docker: fake")).is_none());
        assert!(docker_failure(&finished(0, "")).is_none());
    }
}
