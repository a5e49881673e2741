//! The probe runner: a probe is a `sh` script run in the sandbox exactly as
//! `sbx run` would run a candidate, judged on its output and the engine's
//! record of its container.

use std::time::Duration;

use crate::docker::control;
use crate::docker::events::{ContainerRecord, EventStream};
use crate::docker::process::{
    self, ContainerGuard, Ended, Finished, OutputSink, StdinSource, CONTROL_TIMEOUT,
};
use crate::docker::{argv, Docker};
use crate::error::Error;
use crate::exit;
use crate::session::{ContainerArgs, Delivery, Session, StagedCandidate};
use crate::verdict::outcome;

use super::report::{Check, State};

/// Time for probes that should finish (generous: the host may be loaded).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// Output kept by a probe (and the limit the output-cap probe meets).
pub(crate) const OUTPUT_CAP: usize = 64 << 10;

/// What the probes run in: the session (sandbox settings, run id), the
/// image, the engine's events, and the engine host's kernel release (what
/// a candidate under runc sees).
pub(crate) struct Prober<'a> {
    pub(crate) session: &'a Session,
    pub(crate) image: &'a str,
    pub(crate) events: Option<&'a EventStream>,
    pub(crate) host_kernel: Option<&'a str>,
}

/// What a probe run gave: the run, or why it could not be judged.
pub(crate) enum Probe {
    Ran(Finished, String),
    Skip(String),
    Broken(String),
}

impl Prober<'_> {
    /// The runtime the candidates run under (`None`: the engine's default).
    pub(crate) fn runtime(&self) -> Option<&str> {
        self.session.sandbox.hardening.runtime.as_deref()
    }

    /// Whether the candidates run under gVisor.
    pub(crate) fn gvisor(&self) -> bool {
        argv::is_gvisor(self.runtime())
    }

    /// Stages `script` and builds the argv that runs it with `sh`, exactly
    /// as `sbx run` would.
    pub(crate) fn args_for(&self, script: &[u8]) -> crate::error::Result<ContainerArgs> {
        let staged = self.session.stage(script)?;
        let sh = ["sh".to_string()];
        self.session.args_for(
            &StagedCandidate {
                staged: &staged,
                image: self.image,
                interpreter: &sh,
                interactive: false,
            },
            &Delivery::Bind,
        )
    }

    /// Runs `script` with `sh` in the sandbox, exactly as `sbx run` would.
    pub(crate) fn run(&self, script: &str, timeout: Duration, max_output: usize) -> Probe {
        let run = self.args_for(script.as_bytes()).and_then(|container| {
            let name = container.name.clone();
            self.session
                .execute(
                    &self.session.sandbox.docker,
                    container,
                    StdinSource::Null,
                    OutputSink::Capture { max: max_output },
                    timeout,
                )
                .map(|f| (f, name))
        });
        match run {
            Err(e) => Probe::Broken(e.to_string()),
            Ok((finished, name)) => {
                match outcome::docker_failure(&finished, &ContainerRecord::new(self.events, &name))
                {
                    Some(failure) if failure.code == exit::NOT_FOUND => {
                        Probe::Skip("image has no sh".into())
                    }
                    Some(failure) => Probe::Broken(failure.message),
                    None => Probe::Ran(finished, name),
                }
            }
        }
    }

    /// Runs a probe and turns its stdout into a check with `judge`.
    pub(crate) fn check(
        &self,
        name: &'static str,
        script: &str,
        judge: impl FnOnce(&str) -> Check,
    ) -> Check {
        match self.run(script, PROBE_TIMEOUT, OUTPUT_CAP) {
            Probe::Ran(f, _) if f.ended == Ended::TimedOut => {
                Check::new(name, State::Failed, "the probe did not finish in time")
            }
            Probe::Ran(f, _) => judge(&String::from_utf8_lossy(&f.stdout.bytes)),
            Probe::Skip(why) => Check::new(name, State::Skipped, why),
            Probe::Broken(why) => Check::new(
                name,
                State::Failed,
                format!("the probe could not run: {why}"),
            ),
        }
    }

    /// The log driver the engine records for a container of this argv:
    /// created (never started) with the same argv, inspected, removed.
    pub(crate) fn log_driver(&self) -> std::result::Result<String, String> {
        let container = self.args_for(b"true\n").map_err(|e| e.to_string())?;
        let docker_cli = &self.session.sandbox.docker;
        // Removed whatever happens, a create that timed out included.
        let _guard = ContainerGuard::new(docker_cli, &container.name);
        // Created the way every run's container is, so a missing image is
        // pulled (or refused) the same way.
        let created = control::create_container(
            docker_cli,
            &container.create,
            self.image,
            self.session.sandbox.pull,
        );
        let inspected = process::control(
            docker_cli,
            &argv::log_driver_args(&container.name),
            CONTROL_TIMEOUT,
        );
        match created {
            Ok(()) => {}
            // The engine's own line, as before.
            Err(Error::CreateFailed(line) | Error::EngineUnreachable(line)) => return Err(line),
            Err(e) => return Err(e.to_string()),
        }
        match inspected {
            Ok(i) if i.success() => Ok(i.stdout.trim().to_string()),
            Ok(i) => Err(i.stderr_line()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Whether no container of this name exists, in any state.
pub(crate) fn container_gone(docker_cli: &Docker, name: &str) -> bool {
    matches!(process::control(docker_cli, &argv::container_exists_args(name), CONTROL_TIMEOUT), Ok(c) if c.success() && c.stdout.trim().is_empty())
}
