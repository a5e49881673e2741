//! One unit on one engine (`run_unit`), and the retry policy (`settle`): a
//! result that is not a pass stands only once the engine has answered
//! after it; a unit whose engine stopped answering goes back to the queue,
//! and the engine is marked down; a run that lost its engine is tried
//! again, at most `MAX_ATTEMPTS` times; a result that stands is kept in
//! the unit's tally.

use std::collections::BTreeMap;

use super::cache::{Cache, KeyInput};
use super::queue::Tally;
use crate::docker::events::EventStream;
use crate::engines::pool::{Member, Ping};
use crate::eval::input::request::EvalRequest;
use crate::eval::judge::cases::{compile_unit, judge, judge_built, Judging, ENGINE_LOST};
use crate::eval::judge::isolate::{judge_in_runner, Judged, WorkerRunner};
use crate::eval::plan::units::{ImageCheck, Unit};
use crate::report::{Requeue, Status, TaskResult};
use crate::session::{Delivery, Session, Staged};
use crate::spec::IsolateMode;

/// Runs of one unit at most when its engine keeps answering but its runs
/// keep losing the connection.
pub(crate) const MAX_ATTEMPTS: usize = 3;

/// What became of one unit on one engine.
#[derive(Debug)]
pub(crate) enum Step {
    Judged(Box<TaskResult>),
    Interrupted,
    /// The engine stopped answering: nothing it returned is judged.
    EngineDown(String),
    /// The engine answers, but the run lost its connection to it: run it
    /// again (this result stands only after `MAX_ATTEMPTS`).
    Retry(Box<TaskResult>),
}

/// A unit's result: from the cache when it holds one, else judged on
/// `member` (and stored). A result that is not a pass is only kept once the
/// engine has answered after it: a dying engine's exit codes and timeouts
/// are not the candidate's failures.
pub(crate) fn run_unit(
    session: &Session,
    req: &EvalRequest,
    cache: Option<&Cache>,
    images: &BTreeMap<&str, ImageCheck>,
    (unit, staged): (&Unit, &Staged),
    member: &Member,
    slot: &mut WorkerRunner,
) -> Step {
    // In the runner modes a compiled candidate is compiled in its own
    // container, then its build is delivered to the runner (`judge_compiled`).
    let runner = member.isolate != IsolateMode::Case;
    let task = &req.tasks[unit.task];
    let key = cache.and_then(|cache| {
        // Hashed from the staged copy, in a stream; a copy that cannot be
        // read again is simply not cached.
        let candidate_sha256 = crate::files::sha256(&staged.path).ok()?;
        // The ID on the engine that runs it (engines may disagree).
        let image_id = member
            .images
            .get(&task.image)
            .map(String::as_str)
            .or(images[task.image.as_str()].as_deref().ok())
            .unwrap_or("");
        // A compiled candidate's key also holds its compile command: with
        // the image ID and the source, it names the compile's result.
        let mut words = unit.interpreter.clone();
        if let Some(compile) = unit.language.and_then(|l| l.compile) {
            words.push("<compiled by>".into());
            words.extend(compile.iter().map(|w| w.to_string()));
            words.push(format!("{:?}", req.compile));
        }
        // A sealed test's expected values are not in the staged program:
        // its checks (and the harness that runs it) are in the key.
        if let Some(sealed) = &unit.sealed {
            words.push("<sealed>".into());
            words.push(sealed.digest.clone());
        }
        let key = KeyInput::new(
            cache.build(),
            task,
            &candidate_sha256,
            &words,
            image_id,
            &session.sandbox,
            req.max_output,
            req.fail_fast,
        );
        let key = if runner {
            key.in_runner(req.cpu_limit)
        } else if member.exec_wrapper {
            key.supervised()
        } else {
            key
        }
        .key();
        Some(key)
    });
    // `--save-output` wants every run's output: nothing is read from the
    // cache (what is judged is still stored).
    if let (Some(cache), Some(key), None) = (cache, &key, &req.save_output) {
        if let Some(mut hit) = cache.get(key, &task.id) {
            hit.output = None;
            return Step::Judged(Box::new(hit));
        }
    }
    let cx = Judging {
        session,
        req,
        task,
        unit,
        staged,
        member,
    };
    // The result, and whether a failure's verdict came whole from the
    // runner's answer, which crossed the engine after the case ended (see
    // `Judged`); what sbx judged otherwise is not vouched for.
    let unvouched = |result: Option<TaskResult>| result.map(|r| (r, false));
    let judged = if runner && unit.language.is_some() && task.function.is_none() {
        judge_compiled(&cx, slot)
    } else if runner {
        match judge_in_runner(&cx, slot, None) {
            Judged::Result { result, vouched } => Some((*result, vouched)),
            Judged::Interrupted => None,
            // A candidate the runner cannot start (an executable that cannot
            // run from a noexec /tmp) runs the `case` way where it can.
            Judged::Refused(_) if member.delivery == Delivery::Bind => unvouched(judge(&cx)),
            Judged::Refused(why) => unvouched(Some(TaskResult::error(
                &task.id,
                "runner_refused",
                format!("{why}; with --deliver image only --isolate case can run it"),
            ))),
        }
    } else {
        unvouched(judge(&cx))
    };
    let Some((result, vouched)) = judged else {
        return Step::Interrupted;
    };
    if result.status != Status::Pass {
        // Without the engine's record nothing but a pass can be judged.
        if let Some(why) = member.events.as_ref().and_then(EventStream::ended) {
            return Step::EngineDown(why);
        }
        // A failure stands once the engine answered after it: the
        // runner's own answer did, else the engine is asked.
        let ping = match vouched {
            true => Ok(()),
            false => member.ping(),
        };
        match ping {
            Err(Ping::Interrupted) => return Step::Interrupted,
            Err(Ping::Down(why)) => return Step::EngineDown(why),
            Ok(()) if result.reason.as_deref() == Some(ENGINE_LOST) => {
                return Step::Retry(Box::new(result))
            }
            Ok(()) => {}
        }
    }
    if let (Some(cache), Some(key)) = (cache, &key) {
        cache.put(key, &result);
    }
    Step::Judged(Box::new(result))
}

/// The retry policy, for what became of a unit on `member`: a result that
/// stands is kept in the unit's tally (naming its engine when engines were
/// named, unless it came from the cache); an engine that stopped answering
/// is marked down and the unit moved off it; a run that lost its engine is
/// moved and run again while attempts remain, its result kept after the
/// last. Whether the unit goes back to the queue.
pub(crate) fn settle(step: Step, tally: &mut Tally, member: &Member, explicit: bool) -> bool {
    let moved = |tally: &mut Tally, reason: String| {
        tally.requeued.push(Requeue {
            engine: member.label.clone(),
            reason,
        });
    };
    let keep = |tally: &mut Tally, mut result: Box<TaskResult>| {
        if explicit && result.cached.is_none() {
            result.engine = Some(member.label.clone());
        }
        tally.result = Some(*result);
    };
    match step {
        Step::Judged(result) => {
            keep(tally, result);
            false
        }
        Step::Interrupted => false,
        Step::EngineDown(reason) => {
            member.mark_down(reason.clone());
            moved(tally, reason);
            true
        }
        Step::Retry(result) => {
            // Moves off engines that went down do not count.
            tally.lost += 1;
            if tally.lost < MAX_ATTEMPTS {
                moved(tally, result.message.clone().unwrap_or_default());
                true
            } else {
                keep(tally, result);
                false
            }
        }
    }
}

/// A compiled candidate in the runner modes: compiled once in its own
/// container, its build delivered over the protocol and its cases run in
/// the runner like an interpreted candidate's. A build that cannot be
/// delivered (no `tar` in the image, larger than the protocol carries)
/// runs from its volume, a container per case, with the same verdicts.
/// Whether the result is vouched for, as `run_unit` says.
fn judge_compiled(cx: &Judging<'_>, slot: &mut WorkerRunner) -> Option<(TaskResult, bool)> {
    let built = match compile_unit(cx, true)? {
        Ok(built) => built.expect("a compiled unit"),
        Err(result) => return Some((result, false)),
    };
    if built.files.is_ok() {
        return match judge_in_runner(cx, slot, Some(&built)) {
            Judged::Result { result, vouched } => Some((*result, vouched)),
            Judged::Interrupted => None,
            // A build's command is given: the runner never reads a `#!`.
            Judged::Refused(why) => {
                Some((TaskResult::error(&cx.task.id, "runner_refused", why), false))
            }
        };
    }
    judge_built(cx, Some(&built)).map(|r| (r, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(id: &str, status: Status) -> Box<TaskResult> {
        Box::new(TaskResult::bare(id, status))
    }

    #[test]
    fn a_judged_result_is_kept_and_names_its_engine_when_engines_were_named() {
        let member = Member::for_tests("remote");
        let mut tally = Tally::default();
        assert!(!settle(
            Step::Judged(judged("a", Status::Fail)),
            &mut tally,
            &member,
            true
        ));
        let kept = tally.result.expect("kept");
        assert_eq!(kept.engine.as_deref(), Some("remote"));
        assert!(tally.requeued.is_empty());

        // Not named: no engine in the result.
        let mut tally = Tally::default();
        assert!(!settle(
            Step::Judged(judged("a", Status::Pass)),
            &mut tally,
            &member,
            false
        ));
        assert_eq!(tally.result.expect("kept").engine, None);

        // From the cache: judged elsewhere, named by no engine.
        let mut hit = judged("a", Status::Pass);
        hit.cached = Some(true);
        let mut tally = Tally::default();
        assert!(!settle(Step::Judged(hit), &mut tally, &member, true));
        assert_eq!(tally.result.expect("kept").engine, None);
    }

    #[test]
    fn an_engine_down_is_marked_and_its_unit_goes_back() {
        let member = Member::for_tests("remote");
        let mut tally = Tally::default();
        let again = settle(Step::EngineDown("gone".into()), &mut tally, &member, true);
        assert!(again);
        assert_eq!(member.down_reason().as_deref(), Some("gone"));
        assert!(tally.result.is_none());
        assert_eq!(tally.requeued.len(), 1);
        assert_eq!(tally.requeued[0].engine, "remote");
        assert_eq!(tally.requeued[0].reason, "gone");
        // Moves off an engine that went down are not lost runs.
        assert_eq!(tally.lost, 0);
    }

    #[test]
    fn a_lost_run_is_retried_until_the_last_attempt_keeps_its_result() {
        let member = Member::for_tests("default");
        let mut tally = Tally::default();
        let lost = || {
            let mut result = judged("a", Status::Error);
            result.message = Some("connection lost".into());
            Step::Retry(result)
        };
        for attempt in 1..MAX_ATTEMPTS {
            assert!(
                settle(lost(), &mut tally, &member, false),
                "attempt {attempt}"
            );
            assert!(tally.result.is_none());
        }
        assert!(!settle(lost(), &mut tally, &member, false));
        assert_eq!(tally.lost, MAX_ATTEMPTS);
        assert_eq!(tally.requeued.len(), MAX_ATTEMPTS - 1);
        assert!(tally.requeued.iter().all(|r| r.reason == "connection lost"));
        assert_eq!(tally.result.expect("kept").status, Status::Error);
        assert!(!member.is_down());
    }

    #[test]
    fn an_interrupted_unit_is_neither_kept_nor_moved() {
        let member = Member::for_tests("default");
        let mut tally = Tally::default();
        assert!(!settle(Step::Interrupted, &mut tally, &member, true));
        assert!(tally.result.is_none() && tally.requeued.is_empty());
    }
}
