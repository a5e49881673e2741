//! `sbx report EVAL.json [B.json] [-o page.html]`: one self-contained HTML
//! page of an eval report, or of two (A against B, with `sbx diff`'s
//! verdict and test). The page is `report::html`'s; this reads the reports,
//! the saved outputs and (with `--gen`) the candidates' sources, and writes
//! the page. Exit 0 when the page was written, 2 when a report cannot be
//! read or the page cannot be written.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::console;
use crate::diff;
use crate::error::{Error, Result};
use crate::eval::input::candidates::{find_source, Found, Source};
use crate::report::html::{self, Eval};
use crate::report::TaskResult;
use crate::requests::ReportRequest;

/// Most of a saved output or a source shown on the page (its last bytes
/// for an output, its first for a source).
const FILE_BYTES: u64 = 256 << 10;

/// Writes the page and returns the exit code (0).
pub(crate) fn report(req: ReportRequest) -> Result<i32> {
    let (a, b) = (&req.a, req.b.as_ref());
    let mut gens = Vec::new();
    for dir in &req.gen {
        gens.push(fs::canonicalize(dir).map_err(|e| Error::Report {
            path: dir.clone(),
            message: format!("cannot read the gen folder: {e}"),
        })?);
    }
    // The gen folder of report `i`: its own, or the one given for all.
    let gen_of = |i: usize| gens.get(i).or(gens.first()).map(PathBuf::as_path);
    let extra_a = |r: &TaskResult, v: &mut Value| add_files(r, v, gen_of(0), None);
    let extra_b = |r: &TaskResult, v: &mut Value| add_files(r, v, gen_of(1), None);
    let name = |p: &Path| crate::escape::os_name(p.as_os_str());
    let a_results = load(a)?;
    let page = match b {
        None => html::one(
            &Eval {
                name: &name(a),
                results: &a_results,
            },
            &extra_a,
        ),
        Some(b) => {
            let b_results = load(b)?;
            let (a_name, b_name) = (name(a), name(b));
            let cmp = diff::compare(&diff::load(a)?, &diff::load(b)?, req.k, (&a_name, &b_name))
                .map_err(Error::Usage)?;
            let diff_json = diff::json::render(&cmp, &a_name, &b_name, false)?;
            let diff_value: Value = serde_json::from_str(&diff_json).map_err(|e| Error::Write {
                what: "the diff".into(),
                source: e.into(),
            })?;
            html::two(
                &Eval {
                    name: &a_name,
                    results: &a_results,
                },
                &Eval {
                    name: &b_name,
                    results: &b_results,
                },
                diff_value,
                (&extra_a, &extra_b),
            )
        }
    };
    match &req.output {
        Some(path) => fs::write(path, page.as_bytes()).map_err(|source| Error::Write {
            what: format!("the page to {}", path.display()),
            source,
        })?,
        None => console::out(&page, "the page to stdout")?,
    }
    Ok(0)
}

/// A JSON report of `sbx eval` (`-o`), entry by entry.
fn load(path: &PathBuf) -> Result<Vec<TaskResult>> {
    let bad = |message: String| Error::Report {
        path: path.clone(),
        message,
    };
    let bytes = fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        bad(format!(
            "not a JSON report of sbx eval (`sbx eval -o FILE`): {e}"
        ))
    })
}

/// Adds to an entry's data what the page shows beside it: the saved
/// output (`output_text`) when its files can be read, and the candidate's
/// source (`source_text`) when `gen` is given. `task` is the task id of a
/// sample's entry.
fn add_files(r: &TaskResult, v: &mut Value, gen: Option<&Path>, task: Option<&str>) {
    if let Some(out) = &r.output {
        v["output_text"] = json!({
            "stdout": tail(Path::new(&out.stdout)),
            "stderr": tail(Path::new(&out.stderr)),
        });
    }
    if let Some(gen) = gen {
        let source = match (task, &r.sample) {
            (Some(task), Some(sample)) => {
                match crate::eval::input::candidates::samples_in(gen, &gen.join(task), None)
                    .into_iter()
                    .find(|(name, _)| name == sample)
                {
                    Some((_, Found::Ready { path, .. })) => head(&path),
                    _ => None,
                }
            }
            (None, _) if r.samples.is_none() => match find_source(gen, &r.id, None) {
                Source::Single(Found::Ready { path, .. }) => head(&path),
                _ => None,
            },
            _ => None,
        };
        if let Some(text) = source {
            v["source_text"] = Value::String(text);
        }
    }
    if let (Some(samples), Some(items)) = (&r.samples, v.get_mut("samples")) {
        if let Some(items) = items.as_array_mut() {
            for (s, item) in samples.iter().zip(items.iter_mut()) {
                add_files(s, item, gen, Some(&r.id));
            }
        }
    }
}

/// The first [`FILE_BYTES`] of a file, as text (lossy), with a note when cut.
fn head(path: &Path) -> Option<String> {
    let file = fs::File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let mut bytes = Vec::new();
    file.take(FILE_BYTES).read_to_end(&mut bytes).ok()?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if size > FILE_BYTES {
        text.push_str(&format!("\n… [cut: the file is {size} bytes]"));
    }
    Some(text)
}

/// The last [`FILE_BYTES`] of a file, as text (lossy), with a note when cut.
fn tail(path: &Path) -> Option<String> {
    use std::io::{Seek, SeekFrom};
    let mut file = fs::File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let skip = size.saturating_sub(FILE_BYTES);
    file.seek(SeekFrom::Start(skip)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Some(if skip > 0 {
        format!("… [cut: the first {skip} of {size} bytes are not shown]\n{text}")
    } else {
        text
    })
}
