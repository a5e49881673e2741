//! Several engines for one eval: which engines (`--engine`), how candidates
//! reach each (`--deliver`), what each can run (its images), and whether it
//! still answers. The engines stay Docker's: sbx only talks to them through
//! the docker CLI, each with its own `--context` or `--host`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use clap::ValueEnum;

use crate::console;
use crate::docker::argv::{self, BAKED_REPOSITORY, BASE_TAG_MARK};
use crate::docker::control;
use crate::docker::process::{self, CONTROL_TIMEOUT};
use crate::docker::{Docker, Endpoint};
use crate::error::{Error, Result};
use crate::sandbox::{Delivery, Session};
use crate::signals;
use crate::spec::Pull;

/// How long an engine may take to answer "are you there" after a run that
/// did not pass.
const PING_TIMEOUT: Duration = Duration::from_secs(20);
/// How long building a baked image may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How candidates reach the engines (`--deliver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Deliver {
    /// Bind mounts for engines on this machine, baked images for the others.
    Auto,
    /// Always bind-mount the staged copy (the engine must see this machine's files).
    Bind,
    /// Always bake the candidates into a throwaway image per engine.
    Image,
}

/// One `--engine` value: `CONTEXT` or `URL`, with optional `,jobs=N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSpec {
    /// The value as the user gave it, without its options (for reports).
    pub label: String,
    pub endpoint: Endpoint,
    pub jobs: Option<usize>,
}

/// Parses one `--engine` value.
pub fn parse_engine(value: &str) -> Result<EngineSpec> {
    let bad = |why: &str| {
        Error::Usage(format!(
            "invalid --engine `{}`: {why}",
            value.escape_debug()
        ))
    };
    let mut parts = value.split(',');
    let address = parts.next().unwrap_or_default();
    let mut jobs = None;
    for option in parts {
        match option.split_once('=') {
            Some(("jobs", n)) => match n.parse::<usize>() {
                Ok(n) if n >= 1 => jobs = Some(n),
                _ => return Err(bad("jobs= expects a whole number of at least 1")),
            },
            _ => return Err(bad("the only option is jobs=N")),
        }
    }
    if address.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("it contains white space or control characters"));
    }
    let endpoint = if let Some((scheme, rest)) = address.split_once("://") {
        if !matches!(scheme, "unix" | "tcp" | "ssh") {
            return Err(bad(
                "expected a unix://, tcp:// or ssh:// URL, or a docker context name",
            ));
        }
        if rest.is_empty() {
            return Err(bad("the URL names no engine"));
        }
        if scheme == "tcp" && rest.split('/').next().unwrap_or_default().contains('@') {
            return Err(bad(
                "a tcp:// URL has no user part (docker would connect to the host after `@`)",
            ));
        }
        Endpoint::Url(address.to_string())
    } else {
        let context_name = !address.is_empty()
            && address.starts_with(|c: char| c.is_ascii_alphanumeric())
            && address
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c));
        if !context_name {
            return Err(bad(
                "expected a docker context name (letters, digits, `_.+-`) or a unix://, tcp:// or ssh:// URL",
            ));
        }
        Endpoint::Context(address.to_string())
    };
    Ok(EngineSpec {
        label: address.to_string(),
        endpoint,
        jobs,
    })
}

/// Parses every `--engine` value; the same engine twice is refused.
pub fn parse_engines(values: &[String]) -> Result<Vec<EngineSpec>> {
    let specs = values
        .iter()
        .map(|v| parse_engine(v))
        .collect::<Result<Vec<_>>>()?;
    for (i, spec) in specs.iter().enumerate() {
        if specs[..i].iter().any(|s| s.endpoint == spec.endpoint) {
            return Err(Error::Usage(format!(
                "--engine `{}` is given twice",
                spec.label
            )));
        }
    }
    Ok(specs)
}

/// Whether an engine URL is on this machine, so that a bind mount names a
/// file the engine can see: a unix socket, or TCP to a loopback address.
pub fn url_is_local(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    match scheme {
        "unix" => true,
        "tcp" => {
            let authority = rest.split('/').next().unwrap_or_default();
            if authority.contains('@') {
                return false;
            }
            let host = if let Some(bracketed) = authority.strip_prefix('[') {
                bracketed.split(']').next().unwrap_or_default()
            } else {
                authority.split(':').next().unwrap_or_default()
            };
            host == "localhost"
                || host == "::1"
                || host
                    .parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

/// The delivery an engine gets: `--deliver`, or for `auto` a bind mount
/// exactly when the engine is on this machine.
pub fn choose(deliver: Deliver, local: bool) -> Deliver {
    match deliver {
        Deliver::Auto if local => Deliver::Bind,
        Deliver::Auto => Deliver::Image,
        other => other,
    }
}

/// Whether the engine `docker` reaches is on this machine. A context is
/// looked up; the current context counts as local when it cannot be asked
/// (sbx's behaviour before engines could be chosen).
pub fn is_local(docker: &Docker, spec: Option<&EngineSpec>) -> Result<bool> {
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
pub struct Member {
    /// How reports name it: the `--engine` value, or `default`.
    pub label: String,
    pub docker: Docker,
    /// Workers that take tasks for it.
    pub jobs: usize,
    pub delivery: Delivery,
    /// Task image -> its ID on this engine, for the images it can run.
    pub images: BTreeMap<String, String>,
    /// Its clock minus ours, in seconds (0 on this machine), for the
    /// engine's event times.
    pub offset: f64,
    /// Why it was marked down, once it stopped answering.
    down: Mutex<Option<String>>,
}

/// Why a ping got no answer.
#[derive(Debug)]
pub enum Ping {
    /// The engine does not answer: why.
    Down(String),
    /// sbx was interrupted while it waited.
    Interrupted,
}

/// Why an image cannot be used on an engine: error code, message.
pub type Refusal = (String, String);

/// What the set-up of one engine found.
#[derive(Debug)]
pub struct Setup {
    pub member: Member,
    /// Images it lacks and cannot get.
    pub refused: BTreeMap<String, Refusal>,
    /// Set when the engine is left out entirely (unreachable).
    pub left_out: Option<Refusal>,
}

impl Member {
    /// Whether it can run tasks of `image`.
    pub fn runs(&self, image: &str) -> bool {
        self.images.contains_key(image) && !self.is_down()
    }

    pub fn is_down(&self) -> bool {
        self.down_reason().is_some()
    }

    pub fn down_reason(&self) -> Option<String> {
        self.down.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Marks it down, saying so once (the first reason stays).
    pub fn mark_down(&self, reason: String) {
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
    pub fn ping(&self) -> std::result::Result<(), Ping> {
        match process::control_interruptible(&self.docker, &argv::ping_args(), PING_TIMEOUT) {
            Ok(c) if c.success() && !c.stdout.trim().is_empty() => Ok(()),
            Ok(c) => Err(Ping::Down(c.stderr_line())),
            Err(Error::Interrupted(_)) => Err(Ping::Interrupted),
            Err(e) => Err(Ping::Down(e.to_string())),
        }
    }
}

/// Sets up one engine before any clock starts: where it is (for the
/// delivery), and which of `images` it has or can pull. Baking comes later,
/// once the candidates are staged (see `bake`).
pub fn set_up(
    base: &Docker,
    spec: Option<&EngineSpec>,
    default_jobs: usize,
    deliver: Deliver,
    images: &[&str],
    pull: Pull,
) -> Result<Setup> {
    let docker = match spec {
        Some(spec) => base.at(&spec.endpoint),
        None => base.clone(),
    };
    let label = spec.map_or_else(|| "default".to_string(), |s| s.label.clone());
    let mut setup = Setup {
        member: Member {
            label,
            docker,
            jobs: spec.and_then(|s| s.jobs).unwrap_or(default_jobs),
            delivery: Delivery::Bind,
            images: BTreeMap::new(),
            offset: 0.0,
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
    if choose(deliver, local) == Deliver::Image {
        setup.member.delivery = Delivery::Image(BTreeMap::new());
    }
    if !local {
        // Another host's clock may be off: its event times are read on it.
        setup.member.offset = control::clock_offset(&setup.member.docker).unwrap_or(0.0);
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
/// their own pace); the results in the items' order, `fallback()` for a
/// thread that panicked.
pub fn at_once<T: Send, R: Send>(
    items: impl IntoIterator<Item = T>,
    work: impl Fn(T) -> R + Sync,
    fallback: impl Fn() -> R,
) -> Vec<R> {
    let work = &work;
    thread::scope(|scope| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| scope.spawn(move || work(item)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| fallback()))
            .collect()
    })
}

/// Sets up every engine at once (each answers at its own pace).
pub fn set_up_all(
    base: &Docker,
    specs: &[EngineSpec],
    default_jobs: usize,
    deliver: Deliver,
    images: &[&str],
    pull: Pull,
) -> Result<Vec<Setup>> {
    let specs: Vec<Option<&EngineSpec>> = if specs.is_empty() {
        vec![None]
    } else {
        specs.iter().map(Some).collect()
    };
    at_once(
        specs,
        |spec| set_up(base, spec, default_jobs, deliver, images, pull),
        || Err(Error::Usage("engine set-up failed".into())),
    )
    .into_iter()
    .collect()
}

/// Bakes, for an engine that gets images, one image per task image it has:
/// that exact image plus every staged candidate (see `bake_image`). An image that cannot be
/// baked is dropped from the engine's images, with the reason.
pub fn bake(
    session: &Session,
    member: &mut Member,
    refused: &mut BTreeMap<String, Refusal>,
) -> Result<()> {
    let Delivery::Image(baked) = &mut member.delivery else {
        return Ok(());
    };
    let images: Vec<(String, String)> = member
        .images
        .iter()
        .map(|(image, id)| (image.clone(), id.clone()))
        .collect();
    for (image, id) in images {
        match bake_image(session, &member.docker, &id) {
            Ok(tag) => {
                baked.insert(image, tag);
            }
            Err(Error::Interrupted(signal)) => return Err(Error::Interrupted(signal)),
            Err(e) => {
                member.images.remove(&image);
                refused.insert(
                    image.clone(),
                    (
                        "bake_failed".into(),
                        format!("could not bake the candidates into `{image}`: {e}"),
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Builds `sbx-deliver:<run id>-<k>` on the engine: the image `id` plus
/// every candidate staged so far, under `/work/tasks/`. Returns the tag.
///
/// The build starts `FROM` a tag of sbx's own on that image ID (BuildKit
/// reads a bare `sha256:` ID as a repository name), removed again after the
/// build; with `--network none`, and refused for an image with `ONBUILD`
/// triggers, which a build would run outside the sandbox.
pub fn bake_image(session: &Session, docker: &Docker, id: &str) -> Result<String> {
    let k = session.next_bake();
    let tag = format!("{BAKED_REPOSITORY}:{}-{k}", session.run_id);
    let base = format!("{BAKED_REPOSITORY}:{}{BASE_TAG_MARK}-{k}", session.run_id);
    let refuse = |why: String| Err(Error::CreateFailed(why));
    let inspected =
        process::control_interruptible(docker, &argv::bake_inspect_args(id), CONTROL_TIMEOUT)?;
    if !inspected.success() {
        return refuse(format!(
            "`docker image inspect {id}`: {}",
            inspected.stderr_line()
        ));
    }
    let fields: Vec<&str> = inspected.stdout.trim().split('\t').collect();
    let [onbuild, tags, digests] = fields[..] else {
        return refuse(format!(
            "unexpected `docker image inspect` output: {:?}",
            inspected.stdout.trim()
        ));
    };
    if !matches!(onbuild.trim(), "null" | "[]") {
        return refuse(format!(
            "the image has ONBUILD triggers ({onbuild}), which a build would run outside the sandbox; use --deliver bind on an engine on this machine"
        ));
    }
    if tags.trim() == "0" && digests.trim() == "0" {
        return refuse(
            "an image with neither tag nor digest cannot be baked from (sbx's tag would be its only name); tag it first"
                .into(),
        );
    }
    let tagged = process::control(docker, &argv::tag_args(id, &base), CONTROL_TIMEOUT)?;
    if !tagged.success() {
        return refuse(format!("`docker tag`: {}", tagged.stderr_line()));
    }
    let dockerfile = session.dockerfile(k, &base);
    // Not interruptible: an engine finishes (and tags) a build whose client
    // was killed, after any removal sbx could try; a Ctrl-C waits for it.
    let built = dockerfile.and_then(|dockerfile| {
        let args = argv::build_args(&tag, &session.run_id, &dockerfile, session.stage_dir());
        process::control(docker, &args, BUILD_TIMEOUT)
    });
    let built = match (built, signals::received()) {
        (Ok(c), Some(signal)) if c.success() => {
            remove_baked(docker, std::slice::from_ref(&tag));
            Err(Error::Interrupted(signal))
        }
        (built, _) => built,
    };
    // Untagged only while the image keeps another name; else `sbx gc`
    // reports it (its image is not sbx's to remove).
    let names = process::control(docker, &argv::tag_count_args(&base), CONTROL_TIMEOUT);
    let others = match names {
        Ok(c) if c.success() => c.stdout.trim().parse::<usize>().is_ok_and(|n| n > 1),
        _ => false,
    };
    if others || digests.trim() != "0" {
        let _ = process::control(docker, &argv::untag_args(&base), CONTROL_TIMEOUT);
    }
    match built {
        Ok(c) if c.success() => Ok(tag),
        failed => {
            // A build cut short may still complete in the engine.
            remove_baked(docker, std::slice::from_ref(&tag));
            match failed {
                Ok(c) => refuse(format!("`docker build` of {tag}: {}", c.stderr_line())),
                Err(e) => Err(e),
            }
        }
    }
}

/// Removes baked images by tag (best effort: `sbx gc` finds any that stay).
pub fn remove_baked(docker: &Docker, tags: &[String]) -> bool {
    tags.is_empty()
        || matches!(
            process::control(docker, &argv::remove_images_args(tags), CONTROL_TIMEOUT),
            Ok(c) if c.success()
        )
}

/// Removes what this eval left on an engine: its containers, and its baked
/// images. An engine marked down is only cleaned if it answers again.
/// Returns how many containers were found, or why it could not be cleaned.
pub fn clean(member: &Member, run_id: &str) -> std::result::Result<usize, String> {
    if member.is_down() {
        match member.ping() {
            Ok(()) => {}
            Err(Ping::Down(why)) => return Err(why),
            Err(Ping::Interrupted) => return Err("interrupted".into()),
        }
    }
    let removed = control::remove_run(&member.docker, run_id).map_err(|e| e.to_string())?;
    if let Delivery::Image(baked) = &member.delivery {
        let tags: Vec<String> = baked.values().cloned().collect();
        if !remove_baked(&member.docker, &tags) {
            return Err(format!("could not remove the baked images {tags:?}"));
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_values() {
        let spec = parse_engine("ssh://me@gpu-box,jobs=8").unwrap();
        assert_eq!(spec.endpoint, Endpoint::Url("ssh://me@gpu-box".into()));
        assert_eq!(spec.jobs, Some(8));
        assert_eq!(spec.label, "ssh://me@gpu-box");
        let spec = parse_engine("build-2").unwrap();
        assert_eq!(spec.endpoint, Endpoint::Context("build-2".into()));
        assert_eq!(spec.jobs, None);
        assert_eq!(
            parse_engine("unix:///run/d.sock").unwrap().endpoint,
            Endpoint::Url("unix:///run/d.sock".into())
        );
        for bad in [
            "",
            "-H",
            "--host=x",
            "http://x",
            "tcp://",
            "a b",
            "ctx,jobs=0",
            "ctx,jobs=x",
            "ctx,cpus=2",
            "ctx/../x",
            "tcp://h\n",
            "tcp://127.0.0.1:1@gpu-box:2376",
        ] {
            assert!(parse_engine(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(parse_engines(&["a".into(), "a,jobs=2".into()]).is_err());
        assert_eq!(parse_engines(&["a".into(), "b".into()]).unwrap().len(), 2);
    }

    #[test]
    fn local_urls() {
        for local in [
            "unix:///var/run/docker.sock",
            "tcp://127.0.0.1:2375",
            "tcp://127.1.2.3:2375",
            "tcp://localhost:2375",
            "tcp://[::1]:2375",
        ] {
            assert!(url_is_local(local), "{local}");
        }
        for remote in [
            "tcp://10.0.0.2:2376",
            "tcp://gpu-box:2376",
            "ssh://me@gpu-box",
            "ssh://127.0.0.1",
            "tcp://127.0.0.1.evil.example:2375",
            "tcp://127.0.0.1:1@gpu-box:2376",
            "nonsense",
        ] {
            assert!(!url_is_local(remote), "{remote}");
        }
    }

    #[test]
    fn delivery_choice() {
        assert_eq!(choose(Deliver::Auto, true), Deliver::Bind);
        assert_eq!(choose(Deliver::Auto, false), Deliver::Image);
        assert_eq!(choose(Deliver::Image, true), Deliver::Image);
        assert_eq!(choose(Deliver::Bind, false), Deliver::Bind);
    }

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
