//! What a supervised run's end means, as data: the exit code of `sbx run`,
//! the verdict of `sbx eval`, and the docker-side failures that must not be
//! blamed on the program. Facts only the engine knows (an `oom` or `start`
//! event) come through `Record`, asked only when they can change the answer.

use std::os::unix::process::ExitStatusExt;

use crate::docker::events::ContainerRecord;
use crate::docker::process::{Ended, Finished};
use crate::exit;

/// What the engine recorded about one container.
pub(crate) trait Record {
    /// The container hit its memory cap (an `oom` event).
    fn oom_killed(&self) -> bool;
    /// The program was started at all (a `start` event).
    fn started(&self) -> bool;
}

/// `sbx run`'s exit code: the program's own code passes through, docker's
/// own failures get the codes `docker run` gives them (125/126/127, as with
/// the script), 124 on timeout, 128+N when sbx was interrupted by signal N
/// or the client died of it.
pub(crate) fn run_exit_code(finished: &Finished, record: &impl Record) -> i32 {
    if let Some(failure) = docker_failure(finished, record) {
        return failure.code;
    }
    match finished.ended {
        Ended::Exited(status) => status
            .code()
            .unwrap_or_else(|| exit::for_signal(status.signal().unwrap_or(9))),
        Ended::TimedOut => exit::TIMEOUT,
        // `run` streams its output and sets no limit: unreachable there.
        Ended::OutputLimit => exit::ENGINE,
        Ended::Interrupted(signal) => exit::for_signal(signal),
    }
}

/// Docker itself failed to run the program (it never started).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DockerFailure {
    /// The code `docker run` gives this failure: 127 not found, 126 cannot
    /// execute, 125 anything else.
    pub code: i32,
    /// Docker's line.
    pub message: String,
}

/// When docker failed to start the program, as opposed to the program
/// exiting with some code.
///
/// `docker start -a` exits 1 and prints `Error response from daemon: ...` as
/// the first line of stderr when the process cannot be started. A program
/// can do the same, so the engine is asked too: a program that ran has a
/// `start` event, a failed start has none. The code follows the docker CLI's
/// own string rules.
pub(crate) fn docker_failure(finished: &Finished, record: &impl Record) -> Option<DockerFailure> {
    let Ended::Exited(status) = finished.ended else {
        return None;
    };
    if status.code() != Some(1) {
        return None;
    }
    let stderr = String::from_utf8_lossy(&finished.stderr.bytes);
    let first = stderr.lines().map(str::trim).find(|l| !l.is_empty())?;
    if !first.starts_with("Error response from daemon:") || record.started() {
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
pub(crate) enum Verdict {
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
pub(crate) enum FailReason {
    /// Exit 0, but the output did not match: the first difference.
    WrongOutput(String),
    ExitCode,
    Timeout,
    /// The wall-clock backstop of the CPU-time rule (case mode's
    /// supervisor), while the candidate was mostly not computing.
    WallTimeout,
    /// The engine reported an `oom` event: the memory cap was hit.
    Oom,
    OutputLimit,
    /// A function test's program exited 0 without its completion evidence:
    /// it ended (`sys.exit(0)`, `exit()`, `os._exit(0)`) before its test ran
    /// to the end.
    NoCompletion,
    /// A sealed function test's values did not pass its checks (`code`:
    /// `wrong_answer`, `raised`, `not_plain_data`, ...; `message`: which
    /// check and why).
    Sealed {
        code: &'static str,
        message: String,
    },
}

impl FailReason {
    /// The `reason` field of the report.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            FailReason::WrongOutput(_) => "wrong_output",
            FailReason::ExitCode => "exit_code",
            FailReason::Timeout => "timeout",
            FailReason::WallTimeout => "wall_timeout",
            FailReason::Oom => "oom",
            FailReason::OutputLimit => "output_limit",
            FailReason::NoCompletion => "no_completion",
            FailReason::Sealed { code, .. } => code,
        }
    }
}

/// Judges a finished run. `mismatch` compares stdout with the expectation
/// (`None` when it matches). A memory cap that was hit is the reason of any
/// failure but a cut output, a timeout included: a process that hangs after
/// its child was OOM-killed failed for memory, not for time.
pub(crate) fn judge(
    finished: &Finished,
    mismatch: impl FnOnce(&[u8]) -> Option<String>,
    record: &impl Record,
) -> Verdict {
    let status = match finished.ended {
        Ended::Interrupted(_) => return Verdict::Interrupted,
        Ended::OutputLimit => return Verdict::Fail(FailReason::OutputLimit),
        Ended::TimedOut if record.oom_killed() => return Verdict::Fail(FailReason::Oom),
        Ended::TimedOut => return Verdict::Fail(FailReason::Timeout),
        Ended::Exited(status) => status,
    };
    if let Some(failure) = docker_failure(finished, record) {
        return Verdict::DockerError(failure.message);
    }
    let difference = mismatch(&finished.stdout.bytes);
    match (status.code(), difference) {
        (Some(0), None) => Verdict::Pass,
        _ if record.oom_killed() => Verdict::Fail(FailReason::Oom),
        (Some(0), Some(diff)) => Verdict::Fail(FailReason::WrongOutput(diff)),
        _ => Verdict::Fail(FailReason::ExitCode),
    }
}

/// Judges a function test's run: a pass needs exit 0 *and* the completion
/// evidence on stdout (`completed`); exit 0 without it is `no_completion`
/// (or `oom` when the engine saw the memory cap hit).
pub(crate) fn judge_function(
    finished: &Finished,
    completed: impl FnOnce(&[u8]) -> bool,
    record: &impl Record,
) -> Verdict {
    match judge(finished, |_| None, record) {
        Verdict::Pass if !completed(&finished.stdout.bytes) => {
            Verdict::Fail(if record.oom_killed() {
                FailReason::Oom
            } else {
                FailReason::NoCompletion
            })
        }
        other => other,
    }
}

/// The engine's own record of a run's container: its events.
impl Record for ContainerRecord<'_> {
    fn oom_killed(&self) -> bool {
        ContainerRecord::oom_killed(self)
    }

    fn started(&self) -> bool {
        ContainerRecord::started(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docker::process::Captured;
    use std::process::ExitStatus;
    use std::time::Duration;

    /// An engine record; `None` means "must not be asked".
    struct Fake {
        oom: Option<bool>,
        started: Option<bool>,
    }

    impl Record for Fake {
        fn oom_killed(&self) -> bool {
            self.oom.expect("the oom event was not to be asked for")
        }
        fn started(&self) -> bool {
            self.started
                .expect("the start event was not to be asked for")
        }
    }

    const UNASKED: Fake = Fake {
        oom: None,
        started: None,
    };
    const NO_OOM: Fake = Fake {
        oom: Some(false),
        started: Some(true),
    };
    const OOM: Fake = Fake {
        oom: Some(true),
        started: Some(true),
    };
    const NEVER_STARTED: Fake = Fake {
        oom: Some(false),
        started: Some(false),
    };

    fn finished(code: i32, stderr: &str) -> Finished {
        Finished {
            ended: Ended::Exited(ExitStatus::from_raw(code << 8)),
            stdout: Captured::default(),
            stderr: Captured {
                bytes: stderr.as_bytes().to_vec(),
                total: stderr.len() as u64,
            },
            duration: Duration::ZERO,
        }
    }

    fn ended(ended: Ended) -> Finished {
        Finished {
            ended,
            ..finished(0, "")
        }
    }

    const DENIED: &str = "Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"/work/task\": permission denied: unknown";
    const NOT_FOUND: &str = "Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"node\": executable file not found in $PATH: unknown";

    #[test]
    fn run_codes() {
        assert_eq!(run_exit_code(&finished(0, ""), &UNASKED), 0);
        assert_eq!(run_exit_code(&finished(3, "boom"), &UNASKED), 3);
        assert_eq!(run_exit_code(&finished(125, "docker: x"), &UNASKED), 125);
        assert_eq!(run_exit_code(&finished(1, "Traceback"), &UNASKED), 1);
        assert_eq!(
            run_exit_code(&ended(Ended::Exited(ExitStatus::from_raw(9))), &UNASKED),
            137
        );
        assert_eq!(run_exit_code(&ended(Ended::TimedOut), &UNASKED), 124);
        assert_eq!(run_exit_code(&ended(Ended::Interrupted(2)), &UNASKED), 130);
        assert_eq!(run_exit_code(&ended(Ended::Interrupted(15)), &UNASKED), 143);
        assert_eq!(run_exit_code(&ended(Ended::Interrupted(1)), &UNASKED), 129);
        // docker start's exit 1 for a process that never started becomes
        // what docker run would have said.
        assert_eq!(run_exit_code(&finished(1, DENIED), &NEVER_STARTED), 126);
        assert_eq!(run_exit_code(&finished(1, NOT_FOUND), &NEVER_STARTED), 127);
        let other = "Error response from daemon: something else";
        assert_eq!(run_exit_code(&finished(1, other), &NEVER_STARTED), 125);
        // The same words from a program that did start are the program's.
        assert_eq!(run_exit_code(&finished(1, NOT_FOUND), &NO_OOM), 1);
    }

    #[test]
    fn docker_failures_need_exit_1_first_line_and_no_start() {
        assert_eq!(
            docker_failure(&finished(1, DENIED), &NEVER_STARTED),
            Some(DockerFailure {
                code: 126,
                message: DENIED.into()
            })
        );
        // Other codes, other first lines: never asks the engine.
        for (code, stderr) in [
            (125, "docker: invalid reference format."),
            (126, DENIED),
            (3, "Error response from daemon: mine"),
            (1, "oops\nError response from daemon: later"),
            (1, "docker: fake"),
            (0, DENIED),
        ] {
            assert!(docker_failure(&finished(code, stderr), &UNASKED).is_none());
        }
        // A spoof: the program printed docker's words, but it started.
        assert!(docker_failure(&finished(1, DENIED), &NO_OOM).is_none());
    }

    #[test]
    fn verdicts() {
        let same = |_: &[u8]| None;
        let differs = |_: &[u8]| Some("line 1".to_string());
        assert_eq!(judge(&finished(0, ""), same, &UNASKED), Verdict::Pass);
        assert_eq!(
            judge(&finished(0, ""), differs, &NO_OOM),
            Verdict::Fail(FailReason::WrongOutput("line 1".into()))
        );
        assert_eq!(
            judge(&finished(1, ""), same, &NO_OOM),
            Verdict::Fail(FailReason::ExitCode)
        );
        assert_eq!(
            judge(&finished(137, ""), same, &OOM),
            Verdict::Fail(FailReason::Oom)
        );
        // A child OOM-killed while PID 1 survives: exit 0, wrong output, oom.
        assert_eq!(
            judge(&finished(0, ""), differs, &OOM),
            Verdict::Fail(FailReason::Oom)
        );
        assert_eq!(
            judge(&finished(1, DENIED), same, &NEVER_STARTED),
            Verdict::DockerError(DENIED.into())
        );
        assert_eq!(
            judge(&finished(1, DENIED), same, &NO_OOM),
            Verdict::Fail(FailReason::ExitCode)
        );
        // A timeout after a child was OOM-killed is an oom.
        assert_eq!(
            judge(&ended(Ended::TimedOut), same, &NO_OOM),
            Verdict::Fail(FailReason::Timeout)
        );
        assert_eq!(
            judge(&ended(Ended::TimedOut), same, &OOM),
            Verdict::Fail(FailReason::Oom)
        );
        assert_eq!(
            judge(&ended(Ended::OutputLimit), same, &UNASKED),
            Verdict::Fail(FailReason::OutputLimit)
        );
        assert_eq!(
            judge(&ended(Ended::Interrupted(2)), same, &UNASKED),
            Verdict::Interrupted
        );
    }

    #[test]
    fn function_verdicts_need_the_evidence() {
        let done = |_: &[u8]| true;
        let not_done = |_: &[u8]| false;
        assert_eq!(
            judge_function(&finished(0, ""), done, &UNASKED),
            Verdict::Pass
        );
        // Exit 0 alone (sys.exit(0) before the test) is not a pass.
        assert_eq!(
            judge_function(&finished(0, ""), not_done, &NO_OOM),
            Verdict::Fail(FailReason::NoCompletion)
        );
        assert_eq!(FailReason::NoCompletion.code(), "no_completion");
        assert_eq!(
            judge_function(&finished(0, ""), not_done, &OOM),
            Verdict::Fail(FailReason::Oom)
        );
        // The evidence never turns a failure into a pass.
        assert_eq!(
            judge_function(&finished(1, "AssertionError"), done, &NO_OOM),
            Verdict::Fail(FailReason::ExitCode)
        );
        assert_eq!(
            judge_function(&ended(Ended::TimedOut), done, &NO_OOM),
            Verdict::Fail(FailReason::Timeout)
        );
    }
}
