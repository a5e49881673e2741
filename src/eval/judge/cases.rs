//! Judging one candidate: each case of its task run in a fresh container
//! and compared, the run turned into a result.

use std::sync::Arc;

use super::compile::{compile, Build};
use super::saved;
use crate::docker::argv;
use crate::docker::events::{self, ContainerRecord};
use crate::docker::process::{Ended, Finished, OutputSink, StdinSource};
use crate::engines::pool::Member;
use crate::eval::humaneval::in_process;
use crate::eval::input::request::EvalRequest;
use crate::eval::input::tasks::{Task, TaskCase};
use crate::eval::plan::units::Unit;
use crate::eval::sealed;
use crate::report::result::{tail, STDERR_TAIL_CHARS};
use crate::report::{Status, TaskResult};
use crate::session::{ContainerArgs, Session, Staged, StagedCandidate};
use crate::verdict::outcome::{self, FailReason, Verdict};
use sbx_runner::supervise::{self, Why};

/// The `reason` of a result whose run lost its engine: never the
/// candidate's failure.
pub(crate) const ENGINE_LOST: &str = "engine_lost";

/// A result filled from a run; the caller sets status and reason.
pub(crate) fn result_from_run(id: &str, finished: &Finished) -> TaskResult {
    let exit_code = match finished.ended {
        Ended::Exited(status) => status.code(),
        _ => None,
    };
    TaskResult {
        stderr_tail: tail(
            &String::from_utf8_lossy(&finished.stderr.bytes),
            STDERR_TAIL_CHARS,
        ),
        exit_code,
        duration_ms: u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
        ..TaskResult::bare(id, Status::Fail)
    }
}

/// What judging one candidate on one engine needs: the eval's session and
/// request, the task, the candidate's unit and staged copy, the engine.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judging<'a> {
    pub session: &'a Session,
    pub req: &'a EvalRequest,
    pub task: &'a Task,
    pub unit: &'a Unit,
    pub staged: &'a Staged,
    pub member: &'a Member,
}

impl<'a> Judging<'a> {
    /// The staged candidate in its own container of the task's image, with
    /// a stdin, run by `interpreter`.
    fn candidate<'b>(&self, interpreter: &'b [String]) -> StagedCandidate<'b>
    where
        'a: 'b,
    {
        StagedCandidate {
            staged: self.staged,
            image: &self.task.image,
            interpreter,
            interactive: true,
        }
    }
}

/// Judges one candidate against each case of its task, each in a fresh
/// container. `None` when the eval was interrupted during a run.
pub(crate) fn judge(cx: &Judging<'_>) -> Option<TaskResult> {
    if cx.task.function.is_some() {
        return judge_function(cx);
    }
    match compile_unit(cx, false)? {
        Ok(built) => judge_built(cx, built.as_ref()),
        Err(result) => Some(result),
    }
}

/// A compiled unit's compile step (`None` for an interpreted one), once,
/// before its cases, outside their clocks; `Err` is the task's result (the
/// compiler's refusal, or why sbx could not compile), with the cases
/// counted as none passed. With `pack`, the build comes back for the
/// runner too (`Build::files`). `None` when interrupted.
pub(crate) fn compile_unit<'a>(
    cx: &Judging<'a>,
    pack: bool,
) -> Option<Result<Option<Build<'a>>, TaskResult>> {
    let task = cx.task;
    let Some(language) = cx.unit.language else {
        return Some(Ok(None));
    };
    match compile(
        cx.session,
        cx.member,
        &task.id,
        &task.image,
        language,
        cx.staged,
        &cx.req.compile,
        pack,
    )? {
        Ok(built) => Some(Ok(Some(built))),
        Err(mut result) => {
            if task.multi_case {
                result.cases_passed = Some(0);
                result.cases_total = Some(task.case_count());
            }
            Some(Err(result))
        }
    }
}

/// Judges one candidate (compiled already, if `built`) against each case of
/// its task, each in a fresh container.
pub(crate) fn judge_built(cx: &Judging<'_>, built: Option<&Build<'_>>) -> Option<TaskResult> {
    let Judging { req, task, .. } = *cx;
    let run_case = |k: usize, case: &TaskCase| {
        let candidate = cx.candidate(&cx.unit.interpreter);
        let case_number = task.multi_case.then_some(k + 1);
        judge_case(cx, &candidate, case, case_number, built)
    };
    let compile_ms = built.map(|b| b.compile_ms);
    over_cases(req, task, run_case).map(|mut result| {
        result.compile_ms = compile_ms;
        result
    })
}

/// A task's entry from its cases, each judged by `run_case` (given its
/// 0-based index; `None` when the eval was interrupted). A single case is the entry. Several cases:
/// the task passes when every case passes; the entry carries the first
/// failing case's details; an `error` in any case makes the task an
/// `error` (sbx could not judge it); with fail-fast, the first failure
/// ends it. Runner modes' `cpu_ms` add up and `max_rss_kib` is the largest.
pub(crate) fn over_cases(
    req: &EvalRequest,
    task: &Task,
    mut run_case: impl FnMut(usize, &TaskCase) -> Option<TaskResult>,
) -> Option<TaskResult> {
    if !task.multi_case {
        return run_case(0, &task.cases[0]);
    }
    let mut passed = 0;
    let mut failed = 0;
    let mut duration_ms = 0;
    let mut cpu_ms: Option<u64> = None;
    let mut wait_ms: Option<u64> = None;
    let mut max_rss_kib: Option<u64> = None;
    let mut first_failure: Option<TaskResult> = None;
    let mut last_pass: Option<TaskResult> = None;
    // A streamed task's cases are read one at a time, and each one's
    // outcome is kept (`case_reasons`).
    let mut reasons: Vec<String> = Vec::new();
    let cases: Box<dyn Iterator<Item = Result<std::borrow::Cow<'_, TaskCase>, String>>> =
        match &task.stream {
            Some(stream) => Box::new(stream.cases().map(|c| c.map(std::borrow::Cow::Owned))),
            None => Box::new(task.cases.iter().map(|c| Ok(std::borrow::Cow::Borrowed(c)))),
        };
    for (k, case) in cases.enumerate() {
        let case = match case {
            Ok(case) => case,
            Err(why) => {
                first_failure = Some(TaskResult::error(&task.id, "unreadable_tests", why));
                break;
            }
        };
        let mut result = run_case(k, &case)?;
        if task.stream.is_some() {
            reasons.push(match result.status {
                Status::Pass => "pass".to_string(),
                _ => result.reason.clone().unwrap_or_default(),
            });
        }
        duration_ms += result.duration_ms;
        if let Some(ms) = result.cpu_ms {
            cpu_ms = Some(cpu_ms.unwrap_or(0) + ms);
        }
        if let Some(ms) = result.wait_ms {
            wait_ms = Some(wait_ms.unwrap_or(0) + ms);
        }
        if let Some(kib) = result.max_rss_kib {
            max_rss_kib = Some(max_rss_kib.unwrap_or(0).max(kib));
        }
        result.case = Some(k + 1);
        match result.status {
            Status::Pass => {
                passed += 1;
                last_pass = Some(result);
            }
            Status::Error => {
                first_failure = Some(result);
                break;
            }
            Status::Fail | Status::Missing => {
                failed += 1;
                first_failure.get_or_insert(result);
                if req.fail_fast {
                    break;
                }
            }
        }
    }
    let mut result = match first_failure.or(last_pass) {
        Some(result) => result,
        None => TaskResult::error(&task.id, "no_case", "the task has no case".into()),
    };
    if result.status == Status::Pass {
        result.case = None;
    }
    result.cases_passed = Some(passed);
    result.cases_failed = (result.status == Status::Fail).then_some(failed);
    result.cases_total = Some(task.case_count());
    result.case_reasons = task.stream.is_some().then_some(reasons);
    result.duration_ms = duration_ms;
    if result.status != Status::Error {
        result.cpu_ms = cpu_ms;
        result.wait_ms = wait_ms;
        result.max_rss_kib = max_rss_kib;
    }
    Some(result)
}

/// Runs a function test's program (the unit's bytes) in its own container,
/// through the runner with a token fresh for this run on its stdin, and
/// judges it: a pass needs the token on stdout (see `in_process::RUNNER`).
fn judge_function(cx: &Judging<'_>) -> Option<TaskResult> {
    let Judging {
        req, task, unit, ..
    } = *cx;
    let token = match in_process::fresh_token() {
        Ok(token) => token,
        Err(e) => {
            let message = format!("cannot read /dev/urandom for a token: {e}");
            return Some(TaskResult::error(&task.id, "no_token", message));
        }
    };
    let mut interpreter = unit.interpreter.clone();
    let stdin = match &unit.sealed {
        Some(plan) => {
            // A fresh container per case: nothing is forked.
            interpreter.extend(sealed::harness::harness_args(
                &token,
                req.max_output / 2,
                plan,
                false,
            ));
            StdinSource::Null
        }
        None => {
            interpreter.extend(in_process::runner_args(req.max_output / 2));
            StdinSource::Bytes(in_process::evidence_stdin(&token).into())
        }
    };
    let candidate = cx.candidate(&interpreter);
    run_and_judge(
        cx,
        &candidate,
        stdin,
        None,
        None,
        |finished, record| match &unit.sealed {
            // A sealed test: exit 0, then the frame's values compared here.
            Some(plan) => match outcome::judge_function(finished, |_| true, record) {
                Verdict::Pass => match sealed::harness::judge(&finished.stdout.bytes, &token, plan)
                {
                    Ok(()) => Verdict::Pass,
                    Err(failure) if failure.reason == "no_completion" && record.oom_killed() => {
                        Verdict::Fail(FailReason::Oom)
                    }
                    Err(failure) => Verdict::Fail(FailReason::Sealed {
                        code: failure.reason,
                        message: failure.message,
                    }),
                },
                other => other,
            },
            None => outcome::judge_function(
                finished,
                |stdout| in_process::evidence_seen(stdout, &token),
                record,
            ),
        },
    )
    .map(|mut result| {
        result.judged = Some(judged_as(unit).into());
        result
    })
}

/// How a function test is judged: `sealed` or `in_process`.
pub(crate) fn judged_as(unit: &Unit) -> &'static str {
    match unit.sealed {
        Some(_) => sealed::harness::SEALED,
        None => sealed::harness::IN_PROCESS,
    }
}

/// Runs one case of a task in its own container (with a compiled
/// candidate's build, if any) and judges it. `None` when the eval was
/// interrupted during the run.
fn judge_case(
    cx: &Judging<'_>,
    candidate: &StagedCandidate<'_>,
    case: &TaskCase,
    case_number: Option<usize>,
    built: Option<&Build<'_>>,
) -> Option<TaskResult> {
    run_and_judge(
        cx,
        candidate,
        StdinSource::Bytes(Arc::clone(&case.stdin)),
        built,
        case_number,
        |finished, record| outcome::judge(finished, |stdout| case.matcher.mismatch(stdout), record),
    )
}

/// The `--supervise` wrapper's own failure (the program could not be
/// executed, or the filter not installed): its exit code 125-127 and a
/// first stderr line `sbx runner: TOKEN: ...`, which only the wrapper can
/// write (the token is in its environment, which the program does not get
/// and cannot read: the wrapper is not dumpable). The line, without the
/// token.
fn wrapper_failure(finished: &Finished, token: &str) -> Option<String> {
    let Ended::Exited(status) = finished.ended else {
        return None;
    };
    if !matches!(status.code(), Some(125..=127)) {
        return None;
    }
    let stderr = String::from_utf8_lossy(&finished.stderr.bytes);
    let first = stderr.lines().find(|l| !l.trim().is_empty())?;
    let said = first.strip_prefix(&format!("sbx runner: {token}: "))?;
    Some(format!("sbx runner: {said}"))
}

/// Runs a candidate in its own container and turns `verdict` of the run
/// into its result (its output saved with `--save-output`, as case
/// `case_number` of a task of several). `None` when the eval was
/// interrupted during the run.
fn run_and_judge(
    cx: &Judging<'_>,
    candidate: &StagedCandidate<'_>,
    stdin: StdinSource,
    built: Option<&Build<'_>>,
    case_number: Option<usize>,
    verdict: impl FnOnce(&Finished, &ContainerRecord<'_>) -> Verdict,
) -> Option<TaskResult> {
    let Judging {
        session,
        req,
        task,
        member,
        ..
    } = *cx;
    // The program runs under the runner's `--supervise` wrapper, which
    // installs the runner's seccomp filter and judges time by the runner
    // modes' CPU-time rule (see `sbx_runner::supervise`).
    let token = match in_process::fresh_token() {
        Ok(token) => token,
        Err(e) => {
            let message = format!("cannot read /dev/urandom for a token: {e}");
            return Some(TaskResult::error(&task.id, "no_token", message));
        }
    };
    let supervised = member.exec_wrapper;
    let runner = session.runner_dir().join("sbx-runner");
    let limit_ms = u64::try_from(task.timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    // Supervised, the wrapper decides; the host's clock is an
    // infrastructure guard as generous as the runner modes' one.
    let host_timeout = match supervised {
        true => task
            .timeout
            .saturating_mul(crate::runner::host::CPU_RULE_FACTOR)
            .saturating_add(crate::runner::host::CPU_RULE_GRACE),
        false => task.timeout,
    };
    let run = session
        .args_for(candidate, &member.delivery)
        .map(|container| match built {
            Some(built) => built.apply(container),
            None => container,
        })
        .map(|container| match supervised {
            true => ContainerArgs {
                create: argv::with_supervisor(
                    &container.create,
                    &runner,
                    (sbx_runner::SUBCOMMAND, supervise::SUPERVISE),
                    limit_ms,
                    (supervise::TOKEN_ENV, &token),
                ),
                ..container
            },
            false => container,
        })
        .and_then(|container| {
            let name = container.name.clone();
            session
                .execute(
                    &member.docker,
                    container,
                    stdin,
                    OutputSink::Capture {
                        max: req.max_output,
                    },
                    host_timeout,
                )
                .map(|finished| (name, finished))
        });
    let (name, mut finished) = match run {
        Ok(run) => run,
        Err(e) => return Some(TaskResult::error(&task.id, e.code(), e.to_string())),
    };
    if let Some(line) = wrapper_failure(&finished, &token) {
        // Nothing of the candidate ran, as when `docker start` fails.
        return Some(TaskResult::error(&task.id, "start_failed", line));
    }
    // The supervisor's last line: how the program ended and what it cost,
    // kept out of the candidate's stderr.
    let end = match supervised {
        true => supervise::parse_end(&finished.stderr.bytes, &token).map(|(end, kept)| {
            finished.stderr.bytes.truncate(kept);
            end
        }),
        false => None,
    };
    let mut result = result_from_run(&task.id, &finished);
    if let Some(end) = end {
        result.cpu_ms = Some(end.cpu_ms);
        result.wait_ms = Some(end.wait_ms);
        if end.why != Why::Exit {
            // Stopped, not exited: no exit code, as in the runner modes.
            result.exit_code = None;
        }
    }
    if let Some(saved) = save_output(
        cx,
        case_number,
        &finished.stdout.bytes,
        &finished.stderr.bytes,
        &mut result,
    ) {
        return Some(saved);
    }
    let record = ContainerRecord::new(member.events.as_ref(), &name);
    // A stop for time is the supervisor's; a memory kill beats it, as in
    // the runner modes.
    let verdict = match end.map(|e| e.why) {
        Some(Why::Timeout | Why::WallTimeout) if record.oom_killed() => {
            Verdict::Fail(FailReason::Oom)
        }
        Some(Why::Timeout) => Verdict::Fail(FailReason::Timeout),
        Some(Why::WallTimeout) => Verdict::Fail(FailReason::WallTimeout),
        Some(Why::Exit) | None => verdict(&finished, &record),
    };
    // A failure on the program's own exit is kept only if the engine
    // recorded that exit: a cut connection also ends the client.
    if let (Verdict::Fail(reason), Ended::Exited(status)) = (&verdict, finished.ended) {
        if !matches!(reason, FailReason::Oom) {
            if let Err(why) = events::confirm_exit(&record, status.code()) {
                return Some(TaskResult::error(&task.id, ENGINE_LOST, why));
            }
        }
    }
    // A timeout without the engine's record could have been a memory kill.
    if matches!(
        verdict,
        Verdict::Fail(FailReason::Timeout | FailReason::WallTimeout)
    ) && record.seen().is_none()
    {
        return Some(TaskResult::error(
            &task.id,
            ENGINE_LOST,
            record.why_unknown(),
        ));
    }
    match verdict {
        Verdict::Interrupted => return None,
        Verdict::DockerError(message) => {
            return Some(TaskResult::error(&task.id, "start_failed", message))
        }
        Verdict::Pass => {
            result.status = Status::Pass;
            result.stderr_tail.clear();
        }
        Verdict::Fail(reason) => {
            result.status = Status::Fail;
            result.reason = Some(reason.code().to_string());
            match reason {
                FailReason::WrongOutput(diff) => result.diff = Some(diff),
                FailReason::Sealed { message, .. } => result.message = Some(message),
                _ => {}
            }
        }
    }
    Some(result)
}

/// With `--save-output`: writes a run's whole stdout and stderr and names
/// the files in `result`. A file that cannot be written makes the run an
/// `error` (`save_failed`), never the candidate's failure: that result is
/// returned, to stand in `result`'s place.
pub(crate) fn save_output(
    cx: &Judging<'_>,
    case_number: Option<usize>,
    stdout: &[u8],
    stderr: &[u8],
    result: &mut TaskResult,
) -> Option<TaskResult> {
    let dir = cx.req.save_output.as_ref()?;
    let stem = saved::stem(&cx.task.id, cx.unit.sample.as_deref(), case_number);
    // A function test's result frame is the harness's, not the candidate's.
    let stdout = match cx.task.function {
        Some(_) => crate::eval::sealed::check_message::without_result_frame(stdout),
        None => stdout.into(),
    };
    match saved::save(dir, &stem, &stdout, stderr) {
        Ok(files) => {
            result.output = Some(files);
            None
        }
        Err(why) => Some(TaskResult::error(
            &cx.task.id,
            "save_failed",
            format!("--save-output could not write {why}"),
        )),
    }
}
