//! sbx: run untrusted, AI-generated code in a locked-down Docker container
//! and judge it against assertions written in advance.
//!
//! The modules are layers; each imports only from layers below it. Their
//! order, bottom first, and what each owns are written once, as `LAYERS`
//! in `tests/quick/layers.rs`, which checks it and renders the layer map of
//! `docs/contributing.md`. The in-container runner, sbx as a container's
//! PID 1, is the crate `sbx_runner`, which depends on nothing of sbx. This
//! file dispatches to `cmd`, or, for the hidden `__runner`, to
//! `sbx_runner`.

pub(crate) mod console;
pub mod error;
pub(crate) mod escape;
pub(crate) mod exit;
pub(crate) mod files;
pub(crate) mod limits;
pub mod manual;
pub(crate) mod signals;

pub mod spec;

pub mod cli;

pub(crate) mod sbx_toml;

pub mod docker;

pub mod runner;

pub(crate) mod session;

pub(crate) mod engines;

pub(crate) mod verdict;

pub(crate) mod report;

pub(crate) mod diff;

pub(crate) mod eval;

pub(crate) mod requests;

pub(crate) mod cmd;

use crate::cli::Command;
use crate::cmd::{doctor, gc, merge, run};
use crate::eval::input::request::EvalRequest;
use crate::requests::{
    DiffRequest, DoctorRequest, GcRequest, MergeRequest, ReportRequest, RunRequest,
};

/// Parses the command line, runs the subcommand, and returns the exit code.
/// Errors are printed here as one line on stderr.
pub fn main_impl() -> i32 {
    // The runner (a container's PID 1) is dispatched before anything else:
    // it must install no signal handler and is not part of the CLI's help.
    if std::env::args_os().nth(1).as_deref() == Some(sbx_runner::SUBCOMMAND.as_ref()) {
        return sbx_runner::main();
    }
    let (cli, applied) = match sbx_toml::parse_command_line(std::env::args_os().collect()) {
        Ok(parsed) => parsed,
        Err(sbx_toml::ParseFailure::Clap(err)) => {
            let _ = err.print();
            return err.exit_code();
        }
        Err(sbx_toml::ParseFailure::Sbx(err)) => {
            console::note(&err.to_line());
            return err.exit_code();
        }
    };
    limits::raise_open_files();
    if let Err(err) = signals::install() {
        console::note(&format!("sbx: failed to install signal handlers: {err}"));
        return exit::ENGINE;
    }
    let result = match cli.command {
        Command::Run(args) => RunRequest::from_args(args).and_then(run::run),
        Command::Eval(args) => EvalRequest::from_args(args).and_then(cmd::eval::eval),
        Command::Doctor(args) => DoctorRequest::from_args(args).and_then(doctor::doctor),
        Command::Diff(args) => cmd::diff::diff(DiffRequest::from_args(args)),
        Command::Merge(args) => merge::merge(MergeRequest::from_args(args)),
        Command::Report(args) => ReportRequest::from_args(args).and_then(cmd::report::report),
        Command::Gc(args) => GcRequest::from_args(args).and_then(|req| {
            let filter = gc::Filter {
                run_id: req.run_id.as_deref(),
                older_than: req.older_than,
                dry_run: req.dry_run,
            };
            gc::gc(&req.docker, &req.engines, filter)
        }),
    };
    let code = match result.map_err(|err| sbx_toml::blame(applied.as_ref(), err)) {
        Ok(code) => code,
        Err(err) => {
            console::note(&err.to_line());
            err.exit_code()
        }
    };
    // Interrupted is interrupted, whatever else went wrong meanwhile (a
    // control command that timed out while cleaning up, say).
    signals::received().map_or(code, exit::for_signal)
}
