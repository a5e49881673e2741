//! The subcommands, top of the tree: each takes a validated request (see
//! `requests`) and returns the exit code.
//! - `run`: `sbx run`, the drop-in for run_sandboxed.sh;
//! - `eval`: `sbx eval`, the orchestration of `eval/`'s steps;
//! - `doctor`: `sbx doctor`, what this engine really enforces;
//! - `gc`: `sbx gc`, what earlier runs left behind;
//! - `diff`: `sbx diff`, two reports compared;
//! - `merge`: `sbx merge`, the reports of `--partition`'s shares put together;
//! - `report`: `sbx report`, an eval (or two) as one HTML page.

pub(crate) mod diff;
pub(crate) mod doctor;
pub(crate) mod eval;
pub(crate) mod gc;
pub(crate) mod merge;
pub(crate) mod report;
pub(crate) mod run;
