//! The engine-free tests, as one binary (`cargo test --test quick`): a fake
//! `docker` script, hand-made reports and source files, never an engine,
//! never the network. Every file of this folder is a module, and a test
//! belongs here exactly when it needs no engine: the folder is the quick
//! lane's list (`scripts/test.sh quick`).

#[path = "../common/mod.rs"]
#[expect(
    dead_code,
    reason = "the engine tests' helpers: here only `merge` and `livecodebench_input` run sbx with them"
)]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod cache;
mod config_trust;
mod diff;
mod docs;
mod eval_progress;
mod fake_docker;
mod figures;
mod layers;
mod livecodebench_input;
mod manpage;
mod merge;
mod reference;
mod runner_fake;
mod settings;
mod write_check;
mod written;
