//! sbx: run untrusted, AI-generated code in a locked-down Docker container
//! and judge it against assertions written in advance.
//!
//! Data flows one way: `cli` (clap types) -> `spec` (validated request) ->
//! `docker` (pure argv) -> `supervise` (the only place that spawns, waits,
//! kills and drains) -> `outcome` (what happened) -> `eval` / `report`.

pub mod cli;
pub mod compare;
pub mod docker;
pub mod engine;
pub mod error;
pub mod eval;
pub mod exit;
pub mod outcome;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod signals;
pub mod spec;
pub mod supervise;

use clap::Parser;

use crate::cli::{Cli, Command};

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
        eprintln!("sbx: failed to install signal handlers: {err}");
        return exit::ENGINE;
    }
    let result = match cli.command {
        Command::Run(args) => run::RunRequest::from_args(args).and_then(run::run),
        Command::Eval(args) => eval::EvalRequest::from_args(args).and_then(eval::eval),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("{}", err.to_line());
            err.exit_code()
        }
    }
}
