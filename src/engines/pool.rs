//! The engines of one run or eval: setting each up before any clock starts
//! (where it is, how candidates reach it, which images it has), whether it
//! still answers, and running per-engine work on all of them at once.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use super::engine_spec::{url_is_local, EngineSpec};
use crate::console;
use crate::docker::argv;
use crate::docker::control;
use crate::docker::events::EventStream;
use crate::docker::process::{self, CONTROL_TIMEOUT};
use crate::docker::{Docker, Endpoint};
use crate::error::{Error, Result};
use crate::session::Delivery;
use crate::spec::{DeliverChoice, IsolateMode, Pull};

/// How long an engine may take to answer "are you there" after a run that
/// did not pass.
const PING_TIMEOUT: Duration = Duration::from_secs(20);
/// The delivery an engine gets: `--deliver`, or for `auto` a bind mount
/// exactly when the engine is on this machine.
pub(crate) fn choose(deliver: DeliverChoice, local: bool) -> DeliverChoice {
    match deliver {
        DeliverChoice::Auto if local => DeliverChoice::Bind,
        DeliverChoice::Auto => DeliverChoice::Image,
        other => other,
    }
}

/// Whether the engine `docker` reaches is on this machine. A context is
/// looked up; the current context counts as local when it cannot be asked
/// (sbx's behaviour before engines could be chosen).
pub(crate) fn is_local(docker: &Docker, spec: Option<&EngineSpec>) -> Result<bool> {
    let context = match spec.map(|s| &s.endpoint) {
        Some(Endpoint::Url(url)) => return Ok(url_is_local(url)),
        Some(Endpoint::Context(name)) => Some(name.as_str()),
        None => match std::env::var("DOCKER_HOST") {
            Ok(host) if !host.is_empty() => return Ok(url_is_local(&host)),
            _ => None,
        },
    };
    let plain = Docker::new(docker.program().to_os_string());
    let asked = process::control(&plain, &argv::context_host_args(context), CONTROL_TIMEOUT)?;
    match (asked.success(), context) {
        (true, _) => Ok(url_is_local(asked.stdout.trim())),
        (false, None) => Ok(true),
        (false, Some(name)) => Err(Error::EngineUnreachable(format!(
            "docker context `{name}`: {}",
            asked.stderr_line()
        ))),
    }
}

/// One engine of an eval.
#[derive(Debug)]
pub(crate) struct Member {
    /// How reports name it: the `--engine` value, or `default`.
    pub label: String,
    pub docker: Docker,
    /// Workers that take tasks for it.
    pub jobs: usize,
    pub delivery: Delivery,
    /// Task image -> its ID on this engine, for the images it can run.
    pub images: BTreeMap<String, String>,
    /// What one of its containers holds: `--isolate`, or `Case` where the
    /// runner cannot run on it (set by eval after set-up).
    pub isolate: IsolateMode,
    /// sbx can run in its containers (the runner modes' test), so a case
    /// container runs its program through the runner's `--supervise` wrapper
    /// and its seccomp filter (set by eval after set-up).
    pub exec_wrapper: bool,
    /// Its event stream, started before its first container (see
    /// `docker::events`).
    pub events: Option<EventStream>,
    /// Why it was marked down, once it stopped answering.
    down: Mutex<Option<String>>,
}

/// Why a ping got no answer.
#[derive(Debug)]
pub(crate) enum Ping {
    /// The engine does not answer: why.
    Down(String),
    /// sbx was interrupted while it waited.
    Interrupted,
}

/// Why an image cannot be used on an engine: error code, message.
pub(crate) type Refusal = (String, String);

/// What the set-up of one engine found.
#[derive(Debug)]
pub(crate) struct Setup {
    pub member: Member,
    /// Images it lacks and cannot get.
    pub refused: BTreeMap<String, Refusal>,
    /// Set when the engine is left out entirely (unreachable).
    pub left_out: Option<Refusal>,
}

impl Member {
    /// Whether it can run tasks of `image`.
    pub(crate) fn runs(&self, image: &str) -> bool {
        self.images.contains_key(image) && !self.is_down()
    }

    pub(crate) fn is_down(&self) -> bool {
        self.down_reason().is_some()
    }

    pub(crate) fn down_reason(&self) -> Option<String> {
        self.down.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Marks it down, saying so once (the first reason stays).
    pub(crate) fn mark_down(&self, reason: String) {
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        if down.is_none() {
            console::note(&format!(
                "sbx: engine `{}` stopped answering ({reason}); its tasks go back to the queue",
                self.label
            ));
            *down = Some(reason);
        }
    }

    /// Whether the engine answers now (a signal cuts the wait short).
    pub(crate) fn ping(&self) -> std::result::Result<(), Ping> {
        match process::control_interruptible(&self.docker, &argv::ping_args(), PING_TIMEOUT) {
            Ok(c) if c.success() && !c.stdout.trim().is_empty() => Ok(()),
            Ok(c) => Err(Ping::Down(c.stderr_line())),
            Err(Error::Interrupted(_)) => Err(Ping::Interrupted),
            Err(e) => Err(Ping::Down(e.to_string())),
        }
    }
}

#[cfg(test)]
impl Member {
    /// A member with no engine behind it, for tests of what is decided
    /// about one (nothing here runs docker).
    pub(crate) fn for_tests(label: &str) -> Member {
        Member {
            label: label.to_string(),
            docker: Docker::new("docker"),
            jobs: 1,
            delivery: Delivery::Bind,
            images: BTreeMap::new(),
            isolate: IsolateMode::Case,
            exec_wrapper: false,
            events: None,
            down: Mutex::new(None),
        }
    }
}

/// The docker handle aimed at the engine `spec` names (the current context
/// without one).
pub(crate) fn aim(base: &Docker, spec: Option<&EngineSpec>) -> Docker {
    match spec {
        Some(spec) => base.at(&spec.endpoint),
        None => base.clone(),
    }
}

/// Sets up one engine before any clock starts: where it is (for the
/// delivery), and which of `images` it has or can pull. Baking comes later,
/// once the candidates are staged (see `bake`).
pub(crate) fn set_up(
    base: &Docker,
    spec: Option<&EngineSpec>,
    default_jobs: usize,
    deliver: DeliverChoice,
    images: &[&str],
    pull: Pull,
) -> Result<Setup> {
    let docker = aim(base, spec);
    let label = spec.map_or_else(|| "default".to_string(), |s| s.label.clone());
    let mut setup = Setup {
        member: Member {
            label,
            docker,
            jobs: spec.and_then(|s| s.jobs).unwrap_or(default_jobs),
            delivery: Delivery::Bind,
            images: BTreeMap::new(),
            isolate: IsolateMode::Case,
            exec_wrapper: false,
            events: None,
            down: Mutex::new(None),
        },
        refused: BTreeMap::new(),
        left_out: None,
    };
    let local = match is_local(base, spec) {
        Ok(local) => local,
        Err(Error::Interrupted(signal)) => return Err(Error::Interrupted(signal)),
        Err(e) => {
            setup.left_out = Some((e.code().to_string(), e.to_string()));
            return Ok(setup);
        }
    };
    if choose(deliver, local) == DeliverChoice::Image {
        setup.member.delivery = Delivery::Image(BTreeMap::new());
    }
    for image in images {
        match control::ensure_image(&setup.member.docker, image, pull) {
            Ok(id) => {
                setup.member.images.insert(image.to_string(), id);
            }
            Err(Error::Interrupted(signal)) => return Err(Error::Interrupted(signal)),
            Err(e @ (Error::EngineUnreachable(_) | Error::EngineTimeout(_)))
                if setup.member.images.is_empty() =>
            {
                setup.left_out = Some((e.code().to_string(), e.to_string()));
                return Ok(setup);
            }
            Err(e) => {
                setup
                    .refused
                    .insert(image.to_string(), (e.code().to_string(), e.to_string()));
            }
        }
    }
    Ok(setup)
}

/// Runs `work` on every item at once, a thread each (engines answer at
/// their own pace); the results in the items' order. A thread that
/// panicked gives `Err` with the panic's message: never a result it did
/// not produce.
pub(crate) fn at_once<T: Send, R: Send>(
    items: impl IntoIterator<Item = T>,
    work: impl Fn(T) -> R + Sync,
) -> Vec<std::result::Result<R, String>> {
    let work = &work;
    thread::scope(|scope| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| scope.spawn(move || work(item)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|payload| panic_message(&*payload)))
            .collect()
    })
}

/// The message a panic was raised with.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "no message".to_string()
    }
}

/// Sets up every engine at once (each answers at its own pace).
pub(crate) fn set_up_all(
    base: &Docker,
    specs: &[EngineSpec],
    default_jobs: usize,
    deliver: DeliverChoice,
    images: &[&str],
    pull: Pull,
) -> Result<Vec<Setup>> {
    let specs: Vec<Option<&EngineSpec>> = if specs.is_empty() {
        vec![None]
    } else {
        specs.iter().map(Some).collect()
    };
    at_once(specs, |spec| {
        set_up(base, spec, default_jobs, deliver, images, pull)
    })
    .into_iter()
    .map(|result| {
        result.unwrap_or_else(|message| {
            Err(Error::Panicked {
                what: "an engine's set-up".into(),
                message,
            })
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_engine_thread_is_an_error() {
        let results = at_once([1, 2], |x| {
            if x == 2 {
                panic!("engine {x} broke");
            }
            x
        });
        assert_eq!(results[0], Ok(1));
        assert_eq!(results[1], Err("engine 2 broke".to_string()));
    }

    #[test]
    fn delivery_choice() {
        assert_eq!(choose(DeliverChoice::Auto, true), DeliverChoice::Bind);
        assert_eq!(choose(DeliverChoice::Auto, false), DeliverChoice::Image);
        assert_eq!(choose(DeliverChoice::Image, true), DeliverChoice::Image);
        assert_eq!(choose(DeliverChoice::Bind, false), DeliverChoice::Bind);
    }
}
