//! The docker argv, as data: pure functions from a validated request to the
//! exact argument vector. No process is started here. Grouped by what the
//! command acts on:
//! - `container`: a sandboxed run's container (create, start, remove);
//! - `runner`: the runner's container;
//! - `compile`: a compiled candidate's compile container and build volume
//!   mounts;
//! - `image`: images, pulled or baked;
//! - `volume`: build volumes;
//! - `query`: short queries of the engine and its containers.
//!
//! Here: the `Docker` handle (the engine's global options) and what every
//! container shares; each group's names are also found here.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::spec::{Hardening, Limits};

pub mod compile;
pub mod container;
pub mod image;
pub mod query;
pub mod runner;
pub mod volume;

pub use compile::{
    compile_create_args, mounting_build, with_build_volume, BUILD_DIR, COMPILE_DISK_MIB,
    COMPILE_ENV, COMPILE_PACK_SCRIPT, COMPILE_SCRIPT, TOOLCHAIN_MISSING_MARK,
};
pub use container::{
    as_run, candidate_identity, create_args, gvisor_pids, is_gvisor, remove_args, start_args,
    GVISOR_PIDS_BASE, GVISOR_PIDS_PER_PROCESS,
};
pub use image::{
    bake_inspect_args, baked_labels_args, build_args, image_inspect_args, list_baked_args,
    pull_args, remove_images_args, rmi_args, tag_args, tag_count_args, untag_args,
    BAKED_REPOSITORY, BAKE_LABEL, BASE_TAG_MARK,
};
pub use query::{
    container_exists_args, context_host_args, events_stream_args, info_args, list_labelled_args,
    list_run_args, log_driver_args, ping_args, version_args,
};
pub use runner::{
    control_socket_offered, runner_create_args, with_control, with_supervisor, zygote_runs,
    BUILD_TMPFS, CONTROL_DIR, CONTROL_NAME, RUNNER_CAPS, RUNNER_CONTROL, RUNNER_NET_SYSCTL,
    RUNNER_NO_ZYGOTE, RUNNER_PATH, RUNNER_SYSCTLS, RUNNER_USER, WORK_TMPFS,
};
pub use volume::{
    list_labelled_volumes_args, list_run_volumes_args, volume_create_args, volume_remove_args,
};

/// Where the candidate appears inside the container (the seed's path).
pub const TASK_PATH: &str = "/work/task";
/// The label every sbx container carries; its value is the run id.
pub const RUN_LABEL: &str = "sbx.run";
/// The prefix of every container name sbx gives.
pub const NAME_PREFIX: &str = "sbx-";

/// How the docker CLI reaches one engine: the program, and the global
/// options that select the engine (`--context NAME` or `--host URL`; none
/// for the current context). Every docker command sbx runs goes through one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Docker {
    pub program: OsString,
    pub globals: Vec<OsString>,
}

impl Docker {
    /// The current context (or `DOCKER_HOST`), as plain `docker` sees it.
    pub fn new(program: impl Into<OsString>) -> Docker {
        Docker {
            program: program.into(),
            globals: Vec::new(),
        }
    }

    /// The same program, aimed at `endpoint`.
    pub fn at(&self, endpoint: &Endpoint) -> Docker {
        let (option, value) = match endpoint {
            Endpoint::Context(name) => ("--context", name),
            Endpoint::Url(url) => ("--host", url),
        };
        Docker {
            program: self.program.clone(),
            globals: vec![option.into(), value.into()],
        }
    }

    /// The arguments after the program: the global options, then `args`.
    pub fn argv(&self, args: &[OsString]) -> Vec<OsString> {
        let mut argv = self.globals.clone();
        argv.extend_from_slice(args);
        argv
    }

    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// `docker --host URL` as a user would type it (for messages).
    pub fn display(&self) -> String {
        let mut words = vec![self.program.to_string_lossy().into_owned()];
        words.extend(
            self.globals
                .iter()
                .map(|g| g.to_string_lossy().into_owned()),
        );
        words.join(" ")
    }
}

/// Where an engine is: a docker context by name, or an engine URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Context(String),
    Url(String),
}

/// Where the candidate comes from inside its container.
#[derive(Debug, Clone, Copy)]
pub enum Mount<'a> {
    /// The staged copy on the engine's host, bound read-only at `/work/task`
    /// (the seed's way; only for an engine on this machine).
    Bind(&'a Path),
    /// Already in the (baked) image at this path; no bind mount.
    InImage(&'a str),
}

/// Everything that varies between two containers of sbx.
#[derive(Debug, Clone, Copy)]
pub struct Container<'a> {
    /// Unique container name (`sbx-...`), used to remove it on every path.
    pub name: &'a str,
    /// The run id, the value of the `sbx.run` label.
    pub run_id: &'a str,
    /// Pass `-i` so the program gets sbx's stdin (never `-t`).
    pub interactive: bool,
    /// How the candidate gets into the container.
    pub mount: Mount<'a>,
    pub image: &'a str,
    pub limits: &'a Limits,
    pub hardening: &'a Hardening,
    /// Interpreter words placed before `/work/task`; empty runs it directly.
    pub interpreter: &'a [String],
}

fn to_os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[cfg(test)]
pub(crate) fn strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// An exact `create` vector for the tests: the flags every sbx container
/// begins with, as `create_args` writes them in the seed's order (with the
/// default cpus and pids limit; `-i` when `interactive`), then `rest`.
#[cfg(test)]
pub(crate) fn seed_create(
    name: &str,
    run_id: &str,
    interactive: bool,
    tmpfs: &str,
    memory: &str,
    rest: &[&str],
) -> Vec<String> {
    let label = format!("{RUN_LABEL}={run_id}");
    let mut want = vec!["create", "--rm"];
    if interactive {
        want.push("-i");
    }
    want.extend([
        "--name",
        name,
        "--label",
        &label,
        "--log-driver",
        "none",
        "--pull",
        "never",
        "--network",
        "none",
        "--read-only",
        "--tmpfs",
        tmpfs,
        "--memory",
        memory,
        "--cpus",
        "0.5",
        "--pids-limit",
        "64",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
    ]);
    want.extend_from_slice(rest);
    want.into_iter().map(String::from).collect()
}

/// The container most tests start from: `n` of run `r`, image `img`, the
/// candidate bound at `/t/task`, run directly.
#[cfg(test)]
fn container<'a>(limits: &'a Limits, hardening: &'a Hardening) -> Container<'a> {
    Container {
        name: "n",
        run_id: "r",
        interactive: false,
        mount: Mount::Bind(Path::new("/t/task")),
        image: "img",
        limits,
        hardening,
        interpreter: &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_at_an_endpoint() {
        let base = Docker::new("docker");
        let at = base.at(&Endpoint::Url("tcp://127.0.0.1:1".into()));
        assert_eq!(
            at.argv(&["ps".into()]),
            ["--host", "tcp://127.0.0.1:1", "ps"]
        );
        let at = base.at(&Endpoint::Context("b".into()));
        assert_eq!(at.argv(&["ps".into()]), ["--context", "b", "ps"]);
        assert_eq!(base.argv(&["ps".into()]), ["ps"]);
    }
}
