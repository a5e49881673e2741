//! `sbx doctor`: adversarial probes through the real sandbox (the same argv
//! and supervision as `sbx run`), one check each, to prove on this host that
//! the isolation holds. No probe sends network traffic: isolation is shown
//! by what the container can see.
//!
//! A table of probes ([`PROBES`]), one module per group:
//! - `report`: the checks and the verdict;
//! - `engine`: the engine, the image, the runtime, nothing left;
//! - `prober`: how a probe runs (a `sh` script, as `sbx run` runs it);
//! - `sandbox`: network, root, /tmp, capabilities, the runtime's kernel;
//! - `limits`: memory, pids, timeout, output cap;
//! - `languages`: what the image can run;
//! - `runner`: the `--isolate` modes, the reset, the candidate's identity.

mod engine;
mod languages;
mod limits;
mod prober;
mod report;
mod runner;
mod sandbox;

pub(crate) use report::{Check, Report, State};

use crate::console;
use crate::docker::events::EventStream;
use crate::error::{Error, Result};
use crate::exit;
use crate::requests::DoctorRequest;
use crate::session::Session;
use crate::signals;

use prober::Prober;

/// A probe: runs in the sandbox, gives one check.
type ProbeFn = for<'a, 'b> fn(&'a Prober<'b>) -> Check;

/// The container probes, in the order they are reported: the name
/// reported when the probe cannot run, and the probe.
const PROBES: [(&str, ProbeFn); 10] = [
    ("network", |p| p.network()),
    ("read-only root", |p| p.read_only_root()),
    ("/tmp", |p| p.tmp()),
    ("capabilities", |p| p.capabilities()),
    ("runtime kernel", |p| p.kernel()),
    ("memory cap", |p| p.memory()),
    ("pids cap", |p| p.pids()),
    ("timeout", |p| p.timeout()),
    ("output cap", |p| p.output_cap()),
    ("languages", |p| p.languages()),
];

/// Runs every check and prints the report; exit 0 only if every check held.
pub(crate) fn doctor(req: DoctorRequest) -> Result<i32> {
    let (report, engine_code) = run_checks(&req)?;
    let text = if req.json {
        serde_json::to_string_pretty(&report).expect("the report serializes") + "\n"
    } else {
        report.text()
    };
    console::out(&text, "the doctor report")?;
    // The report is printed either way; a docker CLI that is missing (127)
    // or an engine that does not answer, lacks the image or the runtime
    // (125) is said by the exit code too.
    if let Some(code) = engine_code {
        return Ok(code);
    }
    Ok(if report.ok {
        exit::SUCCESS
    } else {
        exit::NOT_ALL_PASSED
    })
}

/// The report, and the exit code of an engine that could not be used: 125
/// (unreachable, no such image, no such runtime), or 127 / 126 for the
/// docker CLI.
fn run_checks(req: &DoctorRequest) -> Result<(Report, Option<i32>)> {
    let session = Session::new(req.sandbox.clone())?;
    let docker_cli = session.sandbox.docker.clone();
    let mut checks = Vec::new();

    let (engine, info, engine_code) = engine::engine_facts(&docker_cli);
    let reachable = engine.state == State::Ok;
    checks.push(engine);
    if !reachable {
        checks.push(Check::new(
            "image",
            State::Failed,
            "not checked: the engine is unreachable",
        ));
        for (name, _) in PROBES {
            checks.push(Check::new(
                name,
                State::Failed,
                "not run: no usable engine and image",
            ));
        }
        return Ok((Report::new(checks, req.allow_skips), engine_code));
    }
    let pull = session.sandbox.pull;
    let image = engine::image_check(&docker_cli, &req.image, pull);
    if image.state != State::Ok {
        checks.push(image);
        let why = engine::image_missing(&req.image, pull);
        return Ok((Report::nothing_checked(checks, why), Some(exit::ENGINE)));
    }
    checks.push(image);
    let runtime = session.sandbox.hardening.runtime.as_deref();
    if let Some(why) = engine::runtime_missing(runtime, &info) {
        checks.push(Check::new("runtime", State::Failed, why.clone()));
        return Ok((Report::nothing_checked(checks, why), Some(exit::ENGINE)));
    }

    // The probes' containers are judged on the engine's record of them.
    let events = EventStream::start(&session.sandbox.docker, &session.run_id).ok();
    let p = Prober {
        session: &session,
        image: &req.image,
        events: events.as_ref(),
        host_kernel: info.kernel.as_deref(),
    };
    for (_, probe) in PROBES {
        // An interrupted doctor stops; it never reports a probe it cut
        // short as a sandbox that does not hold.
        if let Some(signal) = signals::received() {
            return Err(Error::Interrupted(signal));
        }
        checks.push(probe(&p));
    }
    checks.extend(runner::runner_checks(&session, &req.image));
    checks.push(engine::nothing_left(&docker_cli, &session.run_id));
    Ok((Report::new(checks, req.allow_skips), engine_code))
}
