//! The check before any task starts: when no task with a candidate can run
//! (the engine unreachable, no docker CLI, the image missing or not
//! pullable), the eval stops with one line saying what to do and that
//! cause's exit code, instead of one `error` per task.
//! It reuses what the engines' set-up already asked: no query of its own.

use std::collections::BTreeMap;
use std::path::Path;

use super::units::ImageCheck;
use crate::error::{Error, Result};
use crate::eval::input::candidates::{find_source, Found, Source};
use crate::eval::input::request::EvalRequest;
use crate::exit;

/// `Err(CannotJudge)` when no task (or human-eval problem) that has a
/// candidate can run: each needs an image no engine can run. Tasks
/// without a candidate are `missing`, never a reason to stop; when some
/// tasks can run, those of an unusable image are each an `error`, as
/// before.
pub(crate) fn check(
    req: &EvalRequest,
    gen_root: &Path,
    images: &BTreeMap<&str, ImageCheck>,
) -> Result<()> {
    // Each image that tasks with candidates need: how many.
    let mut needed: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, task) in req.tasks.iter().enumerate() {
        let has = match (&req.human_eval, &req.livecodebench) {
            (Some(files), _) => {
                let id = &files.problems[i].task_id;
                files.samples.iter().any(|s| &s.task_id == id)
            }
            (None, Some(files)) => files
                .samples
                .iter()
                .any(|s| s.problem == i && !s.code_list.is_empty()),
            (None, None) => has_candidate(gen_root, &task.id, req.interpreter.as_ref()),
        };
        if has {
            *needed.entry(task.image.as_str()).or_default() += 1;
        }
    }
    let mut causes = Vec::new();
    for (&image, &count) in &needed {
        match images.get(image) {
            Some(Err((code, message))) => causes.push((image, count, code, message)),
            // An image some engine runs: the eval goes on.
            _ => return Ok(()),
        }
    }
    let Some(&(image, count, code, message)) = causes.first() else {
        return Ok(());
    };
    let tasks = if count == 1 { "task" } else { "tasks" };
    let mut why = format!(
        "no task was judged ({count} {tasks} with candidates need image `{image}`): {message}{}",
        advice(code)
    );
    for (image, count, _, message) in &causes[1..] {
        let tasks = if *count == 1 { "task" } else { "tasks" };
        why.push_str(&format!(
            "; and {count} {tasks} need image `{image}`: {message}"
        ));
    }
    Err(Error::CannotJudge {
        why,
        exit_code: exit_code(code),
    })
}

/// Whether `gen/` holds anything for the task (a file or a sample,
/// whatever its state): only a task with nothing there is `missing`.
fn has_candidate(gen_root: &Path, id: &str, interpreter: Option<&Vec<String>>) -> bool {
    match find_source(gen_root, id, interpreter) {
        Source::Single(Found::Missing) => false,
        Source::Single(_) => true,
        Source::Samples(samples) => samples.iter().any(|(_, f)| !matches!(f, Found::Missing)),
    }
}

/// What to do, for the causes whose message does not say it already.
fn advice(code: &str) -> &'static str {
    match code {
        "engine_unreachable" | "engine_timeout" => {
            "; start the engine, or point --docker, DOCKER_HOST or --engine at one that answers (`sbx doctor` checks it)"
        }
        _ => "",
    }
}

/// The exit code `sbx run` ends with for the same cause.
pub(crate) fn exit_code(code: &str) -> i32 {
    match code {
        "docker_not_found" => exit::NOT_FOUND,
        "docker_spawn" => exit::CANNOT_EXECUTE,
        _ => exit::ENGINE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_ends_as_sbx_run_would() {
        assert_eq!(exit_code("docker_not_found"), 127);
        assert_eq!(exit_code("docker_spawn"), 126);
        assert_eq!(exit_code("engine_unreachable"), 125);
        assert_eq!(exit_code("image_missing"), 125);
        assert_eq!(exit_code("pull_failed"), 125);
    }

    #[test]
    fn an_unreachable_engine_says_what_to_do() {
        assert!(advice("engine_unreachable").contains("DOCKER_HOST"));
        assert_eq!(advice("image_missing"), "");
    }
}
