//! sbx: run untrusted, AI-generated code in a locked-down Docker container
//! and judge it against assertions written in advance.
//!
//! Data flows one way: `cli` (clap types) -> `spec` (validated request) ->
//! `docker` (pure argv) -> `supervise` (the only place that spawns, waits,
//! kills and drains) -> `outcome` (what happened) -> `eval` / `report`.

pub mod cli;
pub mod config;
pub mod console;

pub mod docker;

pub mod cmd;
pub mod engines;
pub mod error;
pub mod eval;
pub mod exit;

pub mod judge;
pub mod report;

pub mod session;
pub mod signals;
pub mod spec;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::cmd::{diff, doctor, gc, run};
use crate::config::{DoctorRequest, RunRequest};
use crate::docker::Docker;
use crate::eval::request::EvalRequest;

/// Parses the command line, runs the subcommand, and returns the exit code.
/// Errors are printed here as one line on stderr.
pub fn main_impl() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return err.exit_code();
        }
    };
    if let Err(err) = signals::install() {
        console::note(&format!("sbx: failed to install signal handlers: {err}"));
        return exit::ENGINE;
    }
    let result = match cli.command {
        Command::Run(args) => RunRequest::from_args(args).and_then(run::run),
        Command::Eval(args) => EvalRequest::from_args(args).and_then(cmd::eval::eval),
        Command::Doctor(args) => DoctorRequest::from_args(args).and_then(doctor::doctor),
        Command::Diff(args) => diff::diff(&args.old, &args.new, args.json),
        Command::Gc(args) => args
            .older_than
            .as_deref()
            .map(spec::parse_timeout)
            .transpose()
            .and_then(|older_than| {
                let engines = engines::spec::parse_engines(&args.engines)?;
                let filter = gc::Filter {
                    run_id: args.run_id.as_deref(),
                    older_than,
                    dry_run: args.dry_run,
                };
                gc::gc(&Docker::new(args.engine.docker), &engines, filter)
            }),
    };
    let code = match result {
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
