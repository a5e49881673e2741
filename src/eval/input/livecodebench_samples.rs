//! LiveCodeBench's samples file, as its `custom_evaluator` takes it: a JSON
//! list of `{"question_id": ..., "code_list": [CODE, ...]}` (plain or
//! gzipped), each code one sample of that problem.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::livecodebench::{open_maybe_gzipped, Problem};

/// One problem's samples.
#[derive(Debug, Clone)]
pub(crate) struct Samples {
    pub question_id: String,
    /// Its problem's index among the problems.
    pub problem: usize,
    pub code_list: Vec<String>,
}

/// Reads the samples of `problems`. Every `question_id` must be one of
/// them, once.
pub(crate) fn read(path: &Path, problems: &[Problem]) -> Result<Vec<Samples>, String> {
    let mut text = Vec::new();
    open_maybe_gzipped(path, "samples")?
        .read_to_end(&mut text)
        .map_err(|e| format!("cannot read samples file `{}`: {e}", path.display()))?;
    let at = |i: usize| format!("{}: entry {}", path.display(), i + 1);
    let items = match serde_json::from_slice::<Value>(&text) {
        Ok(Value::Array(items)) => items,
        Ok(_) => {
            return Err(format!(
                "{}: not a JSON list of {{\"question_id\", \"code_list\"}}",
                path.display()
            ))
        }
        Err(e) => return Err(format!("{}: malformed JSON: {e}", path.display())),
    };
    drop(text);
    let mut out: Vec<Samples> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Object(mut fields) = item else {
            return Err(format!("{}: not a JSON object", at(i)));
        };
        let question_id = match fields.get("question_id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => return Err(format!("{}: `question_id` must be a string", at(i))),
            None => return Err(format!("{}: missing `question_id`", at(i))),
        };
        let Some(problem) = problems.iter().position(|p| p.question_id == question_id) else {
            let hint = super::nearest::nearest(
                &question_id,
                problems.iter().map(|p| p.question_id.as_str()),
            )
            .map(|near| format!(" (did you mean `{}`?)", near.escape_debug()))
            .unwrap_or_default();
            return Err(format!(
                "{}: question_id `{}` is not among the problems{hint}",
                at(i),
                question_id.escape_debug()
            ));
        };
        if out.iter().any(|s| s.problem == problem) {
            return Err(format!(
                "{}: question_id `{}` again: give each problem's samples in one code_list",
                at(i),
                question_id.escape_debug()
            ));
        }
        let code_list = match fields.remove("code_list") {
            Some(Value::Array(codes)) => codes
                .into_iter()
                .map(|c| match c {
                    Value::String(s) => Ok(s),
                    _ => Err(format!("{}: `code_list` must be a list of strings", at(i))),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(format!("{}: `code_list` must be a list of strings", at(i))),
            None => return Err(format!("{}: missing `code_list`", at(i))),
        };
        out.push(Samples {
            question_id,
            problem,
            code_list,
        });
    }
    if out.iter().all(|s| s.code_list.is_empty()) {
        return Err(format!(
            "samples file `{}` has no samples: there is nothing to score",
            path.display()
        ));
    }
    Ok(out)
}
