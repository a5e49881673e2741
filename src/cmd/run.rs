//! `sbx run FILE [IMAGE] [TIMEOUT]`: the drop-in for run_sandboxed.sh.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use crate::console;
use crate::docker::control;
use crate::docker::events::{ContainerRecord, EventStream};
use crate::docker::process::{Ended, OutputSink, StdinSource};
use crate::docker::{argv, Docker};
use crate::engines::{bake, pool};
use crate::error::{Error, Result};
use crate::requests::RunRequest;
use crate::session::{self, Delivery, Session, StagedCandidate};
use crate::spec::{self, DeliverChoice};
use crate::verdict::outcome;

/// Runs the request and returns sbx's exit code.
pub(crate) fn run(req: RunRequest) -> Result<i32> {
    let header = session::read_header(&req.file)?;
    if req.interpreter.is_empty() && !session::is_directly_executable(&header) {
        return Err(Error::NotExecutable(req.file));
    }
    let interactive = !std::io::stdin().is_terminal();
    if req.timeout.is_none() && !req.print_argv {
        console::note("sbx: TIMEOUT means no time limit here (as GNU timeout reads it); the program runs until it ends");
    }
    let session = Session::new(req.sandbox.clone())?;
    let staged = session.stage_file(&req.file)?;
    let target = Target::choose(&session, &req)?;
    let container = session.args_for(
        &StagedCandidate {
            staged: &staged,
            image: &req.image,
            interpreter: &req.interpreter,
            interactive,
        },
        &target.delivery,
    )?;
    let docker = &target.docker;

    if req.print_argv {
        let mut argv = vec![docker.program().to_string_lossy().into_owned()];
        argv.extend(
            docker
                .argv(&argv::as_run(&container.create))
                .iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        let line = serde_json::to_string(&argv).expect("a list of strings serializes");
        // The argv names the staged copy (or the baked image), so keep it
        // for whoever runs the argv.
        session.keep_stage();
        if let Some(tag) = target.keep() {
            console::note(&format!(
                "sbx: the baked image {tag} is kept for this argv; `sbx gc` removes it"
            ));
        }
        console::out(&format!("{line}\n"), "the argv")?;
        return Ok(crate::exit::SUCCESS);
    }
    let stdin = if interactive {
        StdinSource::Inherit
    } else {
        StdinSource::Null
    };
    let name = container.name.clone();
    // From before the container exists: the engine's record of its start.
    let events = EventStream::start(docker, &session.run_id)?;
    let limit = req.timeout.unwrap_or(spec::NO_LIMIT);
    let finished = session.execute(docker, container, stdin, OutputSink::Stream, limit)?;
    match finished.ended {
        Ended::TimedOut => console::note(&format!(
            "sbx: timed out after {} s; the program was killed and its container removed",
            limit.as_secs_f64()
        )),
        Ended::Interrupted(signal) => console::note(&format!(
            "sbx: interrupted by signal {signal}; the program was killed and its container removed"
        )),
        Ended::Exited(_) | Ended::OutputLimit => {}
    }
    let record = ContainerRecord::new(Some(&events), &name);
    Ok(outcome::run_exit_code(&finished, &record))
}

/// The engine of a run and how the file reaches it. Without `--engine` and
/// `--deliver image`, exactly the script's way: the current context and a
/// bind mount, with no extra docker call (but the event stream, see `run`).
struct Target {
    docker: Docker,
    run_id: String,
    delivery: Delivery,
    /// The image baked for this run, removed when the run is over.
    baked: Option<String>,
}

impl Target {
    fn choose(session: &Session, req: &RunRequest) -> Result<Target> {
        // The same steps as an eval's engine set-up (`pool::set_up`), but
        // errors end the run, no image is checked before a bind-mounted run
        // (the create pulls it), and without `--engine` the current context
        // counts as this machine without asking: the script's way, no extra
        // docker call.
        let base = &session.sandbox.docker;
        let docker = pool::aim(base, req.engine.as_ref());
        // An engine named by --engine may be elsewhere.
        let local = match &req.engine {
            Some(_) => pool::is_local(base, req.engine.as_ref())?,
            None => true,
        };
        let deliver = pool::choose(req.deliver, local);
        if deliver == DeliverChoice::Bind {
            return Ok(Target {
                docker,
                run_id: session.run_id.clone(),
                delivery: Delivery::Bind,
                baked: None,
            });
        }
        // Checked (and pulled if allowed) before the clock, then baked.
        let id = control::ensure_image(&docker, &req.image, session.sandbox.pull)?;
        let tag = bake::bake_image(session, &docker, &id, bake::Payload::Candidates)?;
        let delivery = Delivery::Image(BTreeMap::from([(req.image.clone(), tag.clone())]));
        Ok(Target {
            docker,
            run_id: session.run_id.clone(),
            delivery,
            baked: Some(tag),
        })
    }

    /// Keeps the baked image (for `--print-argv`); returns its tag.
    fn keep(mut self) -> Option<String> {
        self.baked.take()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(tag) = self.baked.take() {
            // The container first (`--rm` may still be removing it): an
            // image still in use would only be untagged.
            let _ = control::remove_run(&self.docker, &self.run_id);
            bake::remove_baked(&self.docker, &[tag]);
        }
    }
}
