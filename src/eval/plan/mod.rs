//! What an eval runs, decided before any candidate does:
//! - `units`: each task's known answer or its units to run, staged, and
//!   each image's ID across the engines;
//! - `partition`: the units of `--partition`, the share's, and the inputs'
//!   digests;
//! - `livecodebench`: LiveCodeBench's files planned: one task per
//!   problem, one unit per sample;
//! - `twins`: samples of one task with the same program judged once;
//! - `preflight`: one line and exit 125 when no engine can run what the
//!   tasks need.

pub(crate) mod livecodebench;
pub(crate) mod partition;
pub(crate) mod preflight;
pub(crate) mod twins;
pub(crate) mod units;
