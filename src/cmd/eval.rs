//! `sbx eval`: the eval_loop.py driver. Tasks in (validated before anything
//! runs), candidates through the same sandbox as `sbx run`, results out in
//! task order. This file is the orchestration; each step lives in `eval/`.

use std::collections::BTreeMap;
use std::fs;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::Instant;

use crate::console;
use crate::engines::pool::{self, Member, Setup};
use crate::engines::{bake, clean};
use crate::error::{Error, Result};
use crate::eval::attempt::{run_unit, Step, MAX_ATTEMPTS};
use crate::eval::cache::Cache;
use crate::eval::isolate::Slot;
use crate::eval::plan::{combine, plan, Plan};
use crate::eval::queue::{lock, take, Queue, Taken, Tally};
use crate::eval::request::EvalRequest;
use crate::eval::tasks::Task;
use crate::exit;
use crate::report::{self, Requeue, TaskResult};
use crate::runner::host::runner_unsupported;
use crate::runner::pid1::MAX_OUTPUT;
use crate::session::{Session, Staged};
use crate::signals;
use crate::spec::IsolateMode;

/// Runs the eval and returns the exit code. The report goes to stdout.
pub fn eval(req: EvalRequest) -> Result<i32> {
    let clock = Instant::now();
    let gen_root = fs::canonicalize(&req.gen)
        .map_err(|e| Error::Usage(format!("candidates folder `{}`: {e}", req.gen.display())))?;
    let session = Session::new(req.sandbox.clone())?;
    let cache = req.cache.clone().map(Cache::open).transpose()?;
    // Every engine is set up, and each image checked (and pulled if allowed)
    // on each, before any clock; an image's ID is part of every cache key.
    let mut distinct: Vec<&str> = Vec::new();
    for task in &req.tasks {
        if !distinct.contains(&task.image.as_str()) {
            distinct.push(&task.image);
        }
    }
    let explicit = !req.engines.is_empty();
    let mut setups = pool::set_up_all(
        &session.sandbox.docker,
        &req.engines,
        req.jobs,
        req.deliver,
        &distinct,
        session.sandbox.pull,
    )?;
    choose_isolation(&req, &session, &mut setups)?;
    let images = combine(&distinct, &setups, explicit);
    let (plans, units) = plan(&req, &gen_root, &images, &session)?;
    let staged: Vec<Staged> = units.iter().map(|unit| unit.staged.clone()).collect();
    let baked = if units.is_empty() {
        Ok(())
    } else {
        bake_all(&session, &mut setups, explicit)
    };
    let mut refusals = BTreeMap::new();
    let members: Vec<Member> = setups
        .into_iter()
        .filter(|s| s.left_out.is_none())
        .map(|s| {
            refusals.insert(s.member.label.clone(), s.refused);
            s.member
        })
        .collect();
    if let Err(e) = baked {
        // Interrupted while baking: what was baked already goes too.
        let _ = clean_all(&members, &session.run_id);
        return Err(e);
    }

    let tallies: Vec<Mutex<Tally>> = units.iter().map(|_| Mutex::default()).collect();
    let queue = Mutex::new(Queue {
        pending: (0..units.len()).collect(),
        in_flight: 0,
    });
    let wake = Condvar::new();
    let done = AtomicUsize::new(0);
    let progress = std::io::stderr().is_terminal();
    let total = units.len();
    let image_of = |i: usize| req.tasks[units[i].task].image.as_str();
    thread::scope(|scope| {
        for member in &members {
            for _ in 0..member.jobs.min(total) {
                scope.spawn(|| {
                    // This worker's runner container (`--isolate worker`).
                    let mut slot = Slot::default();
                    while let Some(i) = take(&queue, &wake, member, image_of) {
                        // Gives the unit back (or marks it done) however this
                        // iteration ends, a panic included.
                        let mut taken = Taken {
                            queue: &queue,
                            wake: &wake,
                            unit: i,
                            again: false,
                        };
                        let step = run_unit(
                            &session,
                            &req,
                            cache.as_ref(),
                            &images,
                            (&units[i], &staged[i]),
                            member,
                            &mut slot,
                        );
                        let mut tally = lock(&tallies[i]);
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
                        taken.again = match step {
                            Step::Judged(result) => {
                                keep(&mut tally, result);
                                false
                            }
                            Step::Interrupted => false,
                            Step::EngineDown(reason) => {
                                member.mark_down(reason.clone());
                                moved(&mut tally, reason);
                                true
                            }
                            Step::Retry(result) => {
                                // Moves off engines that went down do not count.
                                tally.lost += 1;
                                if tally.lost < MAX_ATTEMPTS {
                                    moved(&mut tally, result.message.clone().unwrap_or_default());
                                    true
                                } else {
                                    keep(&mut tally, result);
                                    false
                                }
                            }
                        };
                        drop(tally);
                        let again = taken.again;
                        drop(taken);
                        if again {
                            continue;
                        }
                        let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                        if progress {
                            console::progress(&format!(
                                "\r\x1b[Ksbx: {finished}/{total} candidates judged"
                            ));
                        }
                    }
                    slot.close();
                });
            }
        }
    });
    if progress {
        console::progress("\r\x1b[K");
    }
    // Whatever happened, nothing of this run stays on any engine that answers.
    let cleaned = clean_all(&members, &session.run_id);
    if let Some(signal) = signals::received() {
        let removed = match cleaned {
            Ok(n) => format!("{n} leftover containers removed"),
            Err(e) => format!("cleanup failed: {e}"),
        };
        console::note(&format!(
            "sbx: interrupted; every container of this eval was stopped ({removed})"
        ));
        return Ok(exit::for_signal(signal));
    }
    if let Err(e) = cleaned {
        console::note(&format!(
            "sbx: could not clean up {e}; `sbx gc --engine ENGINE --run {}` removes what is left once it answers",
            session.run_id
        ));
    }
    let why_not = |image: &str| -> String {
        let reasons: Vec<String> = members
            .iter()
            .map(|m| match m.down_reason() {
                Some(reason) => format!("engine `{}` stopped answering: {reason}", m.label),
                None => match refusals.get(&m.label).and_then(|r| r.get(image)) {
                    Some((_, message)) => format!("engine `{}`: {message}", m.label),
                    None => format!("engine `{}` did not run it", m.label),
                },
            })
            .collect();
        if reasons.is_empty() {
            "no engine could be used".to_string()
        } else {
            format!("no engine left to run it ({})", reasons.join("; "))
        }
    };
    let mut tallies: Vec<Tally> = tallies
        .into_iter()
        .map(|tally| tally.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect();
    let mut take = |index: usize, task: &Task| {
        let tally = &mut tallies[index];
        let mut result = tally
            .result
            .take()
            .unwrap_or_else(|| TaskResult::error(&task.id, "no_engine", why_not(&task.image)));
        result.requeued = std::mem::take(&mut tally.requeued);
        result
    };
    let results: Vec<TaskResult> = plans
        .into_iter()
        .zip(&req.tasks)
        .map(|(plan, task)| match plan {
            Plan::Known(result) => *result,
            Plan::Single(index) => take(index, task),
            Plan::Samples(samples) => {
                let samples = samples
                    .into_iter()
                    .map(|(name, answer)| {
                        let mut result = answer.unwrap_or_else(|index| take(index, task));
                        result.sample = Some(name);
                        result
                    })
                    .collect();
                report::passk::samples_entry(&task.id, samples, &req.ks)
            }
        })
        .collect();
    // The report first: a JUnit file that cannot be written must not cost
    // the user the results.
    report::json::write_json(&results)?;
    if let Some(path) = &req.junit {
        report::junit::write_junit(path, &results, clock.elapsed())?;
    }
    let summary = report::summary::Summary::of(&results);
    let mut line = summary.line(clock.elapsed());
    for (key, mean, tasks) in report::passk::pass_at_k_means(&results) {
        line.push_str(&format!("; mean {key} {mean:.3} over {tasks} tasks"));
    }
    console::note(&line);
    Ok(summary.exit_code())
}

/// Bakes the candidates into a throwaway image on every engine that gets
/// them that way, all engines at once.
fn bake_all(session: &Session, setups: &mut [Setup], explicit: bool) -> Result<()> {
    let baking = setups.iter_mut().filter(|s| s.left_out.is_none());
    let results = pool::at_once(
        baking,
        |s| {
            let payload = match s.member.isolate {
                IsolateMode::Case => bake::Payload::Candidates,
                _ => bake::Payload::Runner,
            };
            bake::bake(session, &mut s.member, &mut s.refused, payload)
        },
        || Ok(()),
    );
    for result in results {
        result?;
    }
    for setup in setups.iter().filter(|_| explicit) {
        for (code, why) in setup.refused.values() {
            if code == "bake_failed" {
                console::note(&format!("sbx: engine `{}`: {why}", setup.member.label));
            }
        }
    }
    Ok(())
}

/// Sets each engine's `--isolate` mode: the one asked for, or `case` where
/// sbx cannot be the runner (another architecture, not a static
/// executable, a `--max-output` the protocol cannot carry), said in one
/// line per such engine. Stages the runner when some engine uses it.
fn choose_isolation(req: &EvalRequest, session: &Session, setups: &mut [Setup]) -> Result<()> {
    let mut staged = false;
    for setup in setups.iter_mut().filter(|s| s.left_out.is_none()) {
        let member = &mut setup.member;
        member.isolate = IsolateMode::Case;
        if req.isolate == IsolateMode::Case {
            continue;
        }
        let why = if req.max_output as u64 > MAX_OUTPUT {
            Some(format!(
                "--max-output above {MAX_OUTPUT} bytes is more than the runner carries"
            ))
        } else {
            runner_unsupported(&member.docker)
        };
        if let Some(why) = why {
            console::note(&format!(
                "sbx: engine `{}`: {why}; judging there with --isolate case instead of {}",
                member.label,
                req.isolate.name()
            ));
            continue;
        }
        if !staged {
            session.stage_runner()?;
            staged = true;
        }
        member.isolate = req.isolate;
    }
    Ok(())
}

/// Removes this eval's containers and baked images from every engine that
/// answers, all at once. The containers found, or the first failure.
fn clean_all(members: &[Member], run_id: &str) -> std::result::Result<usize, String> {
    let results = pool::at_once(
        members,
        |m| clean::clean(m, run_id).map_err(|e| format!("engine `{}`: {e}", m.label)),
        || Ok(0),
    );
    let mut found = 0;
    for result in results {
        found += result?;
    }
    Ok(found)
}
