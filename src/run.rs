//! `sbx run FILE [IMAGE] [TIMEOUT]`: the drop-in for run_sandboxed.sh.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::RunArgs;
use crate::console;
use crate::docker;
use crate::engine::ContainerRecord;
use crate::error::{Error, Result};
use crate::outcome;
use crate::sandbox::{self, Candidate, Delivery, Session};
use crate::spec::{self, Sandbox};
use crate::supervise::{Ended, OutputSink, StdinSource};

/// A validated `sbx run` request.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub file: PathBuf,
    pub image: String,
    pub timeout: Duration,
    pub interpreter: Vec<String>,
    pub print_argv: bool,
    pub sandbox: Sandbox,
}

impl RunRequest {
    /// Validates the raw arguments (positionals and options agree, values
    /// are well-formed).
    pub fn from_args(args: RunArgs) -> Result<RunRequest> {
        let image = pick("IMAGE", args.image_arg, args.image_opt, spec::DEFAULT_IMAGE)?;
        let timeout = pick(
            "TIMEOUT",
            args.timeout_arg,
            args.timeout_opt,
            spec::DEFAULT_TIMEOUT,
        )?;
        Ok(RunRequest {
            file: args.file,
            image: spec::parse_image(&image)?,
            timeout: spec::parse_timeout(&timeout)?,
            interpreter: args
                .interpreter
                .as_deref()
                .map(spec::parse_interpreter)
                .transpose()?
                .unwrap_or_default(),
            print_argv: args.print_argv,
            sandbox: Sandbox::from_args(args.sandbox)?,
        })
    }
}

/// A value given as a positional, an option, or neither; both must agree.
fn pick(
    what: &str,
    positional: Option<String>,
    option: Option<String>,
    default: &str,
) -> Result<String> {
    match (positional, option) {
        (Some(p), Some(o)) if p != o => Err(Error::Usage(format!(
            "{what} given twice with different values (`{p}` and `{o}`)"
        ))),
        (Some(v), _) | (None, Some(v)) => Ok(v),
        (None, None) => Ok(default.to_string()),
    }
}

/// Runs the request and returns sbx's exit code.
pub fn run(req: RunRequest) -> Result<i32> {
    let bytes = sandbox::read_candidate(&req.file)?;
    if req.interpreter.is_empty() && !sandbox::is_directly_executable(&bytes) {
        return Err(Error::NotExecutable(req.file));
    }
    let interactive = !std::io::stdin().is_terminal();
    let session = Session::new(req.sandbox)?;
    let staged = session.stage(&bytes)?;
    let prepared = session.prepare(
        &Candidate {
            staged: &staged,
            image: &req.image,
            interpreter: &req.interpreter,
            interactive,
        },
        &Delivery::Bind,
    )?;

    if req.print_argv {
        let docker = &session.sandbox.docker;
        let mut argv = vec![docker.program().to_string_lossy().into_owned()];
        argv.extend(
            docker
                .argv(&docker::as_run(&prepared.create))
                .iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        let line = serde_json::to_string(&argv).expect("a list of strings serializes");
        // The argv names the staged copy, so keep it for whoever runs the argv.
        session.keep_stage();
        console::out(&format!("{line}\n"), "the argv")?;
        return Ok(crate::exit::SUCCESS);
    }
    let stdin = if interactive {
        StdinSource::Inherit
    } else {
        StdinSource::Null
    };
    let name = prepared.name.clone();
    let finished = session.execute(
        &session.sandbox.docker,
        prepared,
        stdin,
        OutputSink::Stream,
        req.timeout,
    )?;
    match finished.ended {
        Ended::TimedOut => console::note(&format!(
            "sbx: timed out after {} s; the program was killed and its container removed",
            req.timeout.as_secs_f64()
        )),
        Ended::Interrupted(signal) => console::note(&format!(
            "sbx: interrupted by signal {signal}; the program was killed and its container removed"
        )),
        Ended::Exited(_) | Ended::OutputLimit => {}
    }
    let record = ContainerRecord {
        docker: &session.sandbox.docker,
        name: &name,
        since: finished.started,
    };
    Ok(outcome::run_exit_code(&finished, &record))
}
