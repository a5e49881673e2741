//! One candidate's container: its argv built for the engine's delivery
//! (`args_for`), then created before the clock and run under supervision
//! (`execute`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use super::staging::{Session, Staged};
use crate::docker::argv::{self, Container, Mount, NAME_PREFIX};
use crate::docker::control;
use crate::docker::process::{
    self, AttachedRun, ContainerGuard, Finished, OutputSink, StdinSource,
};
use crate::docker::Docker;
use crate::error::{Error, Result};
use crate::signals;
use crate::spec::Pull;

/// A container ready to start: its name and the exact docker arguments.
#[derive(Debug, Clone)]
pub(crate) struct ContainerArgs {
    pub name: String,
    pub image: String,
    /// Whether a missing image may be pulled (never for a baked image).
    pub pull: Pull,
    /// `docker create ...` (see `argv::create_args`).
    pub create: Vec<OsString>,
    /// `docker start -a [-i] -- NAME`.
    pub start: Vec<OsString>,
}

/// What `args_for` needs to know about one candidate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StagedCandidate<'a> {
    /// The staged copy of the candidate (see `Session::stage`).
    pub staged: &'a Staged,
    pub image: &'a str,
    /// Words before `/work/task`; empty runs `/work/task` itself.
    pub interpreter: &'a [String],
    /// Whether the program gets a stdin (`-i`).
    pub interactive: bool,
}

/// How candidates reach one engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// A read-only bind mount of the staged copy (the engine shares this
    /// machine's files).
    Bind,
    /// Throwaway images baked for this eval: task image -> baked image.
    Image(BTreeMap<String, String>),
}

impl Session {
    /// Builds the argv for a staged candidate's container, delivered as
    /// `delivery` says.
    pub(crate) fn args_for(
        &self,
        candidate: &StagedCandidate<'_>,
        delivery: &Delivery,
    ) -> Result<ContainerArgs> {
        let n = self.next_container();
        let name = format!("{NAME_PREFIX}{}-{n}", self.run_id);
        let in_image = candidate.staged.in_image();
        let (image, mount, pull) = match delivery {
            Delivery::Bind => (
                candidate.image,
                Mount::Bind(&candidate.staged.path),
                self.sandbox.pull,
            ),
            Delivery::Image(baked) => match baked.get(candidate.image) {
                Some(image) => (image.as_str(), Mount::InImage(&in_image), Pull::Never),
                None => {
                    return Err(Error::CreateFailed(format!(
                        "no image was baked from `{}` for this engine",
                        candidate.image
                    )))
                }
            },
        };
        let create = argv::create_args(&Container {
            name: &name,
            run_id: &self.run_id,
            interactive: candidate.interactive,
            mount,
            image,
            limits: &self.sandbox.limits,
            hardening: &self.sandbox.hardening,
            interpreter: candidate.interpreter,
        });
        let start = argv::start_args(&name, candidate.interactive);
        Ok(ContainerArgs {
            name,
            image: image.to_string(),
            pull,
            create,
            start,
        })
    }

    /// The argv of a container of `image` that runs `words` (sbx's own
    /// trusted code, such as the sealed tests' prepare step) under the same
    /// limits and hardening as a candidate, with a stdin and no file
    /// mounted (`-` is its last word).
    pub(crate) fn trusted_args(&self, image: &str, words: &[String]) -> ContainerArgs {
        let n = self.next_container();
        let name = format!("{NAME_PREFIX}{}-{n}", self.run_id);
        let create = argv::create_args(&Container {
            name: &name,
            run_id: &self.run_id,
            interactive: true,
            mount: Mount::InImage("-"),
            image,
            limits: &self.sandbox.limits,
            hardening: &self.sandbox.hardening,
            interpreter: words,
        });
        let start = argv::start_args(&name, true);
        ContainerArgs {
            name,
            image: image.to_string(),
            pull: Pull::Never,
            create,
            start,
        }
    }

    /// Runs a container (its arguments from `args_for` or `trusted_args`)
    /// on the engine `docker` reaches, under supervision.
    pub(crate) fn execute(
        &self,
        docker: &Docker,
        container: ContainerArgs,
        stdin: StdinSource,
        output: OutputSink,
        timeout: Duration,
    ) -> Result<Finished> {
        // Created before the clock starts (pulling the image first if it is
        // missing and allowed): from here on the container exists by name, so
        // every kill below can remove it.
        if let Err(e) =
            control::create_container(docker, &container.create, &container.image, container.pull)
        {
            if matches!(e, Error::EngineTimeout(_)) {
                // The engine may still complete the create it was sent.
                process::remove_containers(docker, std::slice::from_ref(&container.name));
            }
            return Err(e);
        }
        let mut guard = ContainerGuard::new(docker, &container.name);
        if let Some(signal) = signals::received() {
            return Ok(Finished::interrupted_before_start(signal));
        }
        let finished = process::supervise(AttachedRun {
            docker,
            args: container.start,
            stdin,
            output,
            timeout,
        })?;
        guard.settle(&finished);
        Ok(finished)
    }
}
