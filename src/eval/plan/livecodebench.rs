//! The plan of LiveCodeBench's files: one task per problem (`req.tasks`,
//! in the problems' order), whose samples are its `code_list`, named by
//! their 0-based index there; each sample staged as it is (the code alone:
//! the tests come from the spool when it is judged). A problem without
//! samples is `missing`. With `--partition`, only this share's samples.

use std::collections::BTreeMap;

use super::units::{samples_split, ImageCheck, Plan, SamplesPlan, Unit};
use crate::error::Result;
use crate::eval::input::candidates;
use crate::eval::input::livecodebench::Files;
use crate::eval::input::request::EvalRequest;
use crate::eval::livecodebench;
use crate::report::TaskResult;
use crate::session::Session;

pub(crate) fn plan(
    req: &EvalRequest,
    files: &Files,
    images: &BTreeMap<&str, ImageCheck>,
    session: &Session,
) -> Result<SamplesPlan> {
    let python = req
        .interpreter
        .clone()
        .unwrap_or_else(|| vec!["python3".to_string()]);
    let problems = &files.problems;
    let mut counts = vec![0usize; problems.len()];
    for samples in &files.samples {
        counts[samples.problem] += samples.code_list.len();
    }
    let split = samples_split(
        req,
        problems
            .iter()
            .map(|p| p.question_id.as_str())
            .zip(counts.iter().copied()),
    );
    let share = split.as_ref().map(|s| &s.assignment);
    let mut units = Vec::new();
    let mut lists: Vec<Vec<(String, std::result::Result<TaskResult, usize>)>> =
        vec![Vec::new(); problems.len()];
    let mut places = Vec::new();
    for samples in &files.samples {
        let task = samples.problem;
        let id = &problems[task].question_id;
        for (index, code) in samples.code_list.iter().enumerate() {
            if share.is_some_and(|s| !s.sample(task, index)) {
                places.push(None);
                continue;
            }
            places.push(Some((task, lists[task].len())));
            let answer = match &images[req.tasks[task].image.as_str()] {
                Err((code, message)) => Ok(TaskResult::error(id, code, message.clone())),
                Ok(_) if code.len() as u64 > candidates::MAX_CANDIDATE_BYTES => {
                    Ok(candidates::too_large(id, code.len() as u64))
                }
                Ok(_) => {
                    let mut interpreter = python.clone();
                    interpreter.extend(livecodebench::runner_args(&problems[task], files.per_test));
                    units.push(Unit {
                        task,
                        staged: session.stage(code.as_bytes())?,
                        interpreter,
                        language: None,
                        sample: Some(index.to_string()),
                        sealed: None,
                        twins: 0,
                    });
                    Err(units.len() - 1)
                }
            };
            lists[task].push((index.to_string(), answer));
        }
    }
    let plans = lists
        .into_iter()
        .zip(problems)
        .enumerate()
        .map(|(task, (list, problem))| {
            if share.is_some_and(|s| !s.any(task)) {
                Plan::Elsewhere
            } else if list.is_empty() {
                Plan::Known(Box::new(TaskResult::missing(&problem.question_id)))
            } else {
                Plan::Samples(list)
            }
        })
        .collect();
    Ok((plans, units, places, split))
}
