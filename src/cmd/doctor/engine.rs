//! The engine's checks, made before any probe: it answers, it has the
//! image, it knows the runtime asked for; and, last, that no container of
//! the doctor's run is left.

use crate::docker::control;
use crate::docker::process::{self, CONTROL_TIMEOUT};
use crate::docker::{argv, Docker};
use crate::exit;
use crate::spec::Pull;

use super::report::{Check, State};

/// What `docker info` said: the engine host's kernel release and the
/// runtimes it knows (`None` when it did not say).
#[derive(Debug, Default)]
pub(crate) struct EngineInfo {
    pub(crate) kernel: Option<String>,
    pub(crate) runtimes: Option<Vec<String>>,
}

/// The engine check, what `docker info` said, and the exit code of an
/// engine that could not be reached (125, or 127 / 126 for the docker CLI).
pub(crate) fn engine_facts(docker_cli: &Docker) -> (Check, EngineInfo, Option<i32>) {
    let version = process::control(docker_cli, &argv::version_args(), CONTROL_TIMEOUT);
    let version = match version {
        Ok(v) if v.success() => v.stdout.trim().to_string(),
        Ok(v) => {
            return (
                Check::new(
                    "engine",
                    State::Failed,
                    format!("unreachable: {}", v.stderr_line()),
                ),
                EngineInfo::default(),
                Some(exit::ENGINE),
            )
        }
        Err(e) => {
            return (
                Check::new("engine", State::Failed, e.to_string()),
                EngineInfo::default(),
                Some(e.exit_code()),
            )
        }
    };
    let info = process::control(docker_cli, &argv::info_args(), CONTROL_TIMEOUT)
        .ok()
        .filter(|i| i.success())
        .map(|i| i.stdout.trim().to_string())
        .unwrap_or_default();
    let v: Vec<&str> = version.split('|').collect();
    let i: Vec<&str> = info.split('|').collect();
    let get = |v: &[&str], n: usize| v.get(n).copied().unwrap_or("?").to_string();
    let facts = Check::new(
        "engine",
        State::Ok,
        format!(
            "CLI {}, engine {}, cgroup v{}, runtime {}, storage {}",
            get(&v, 0),
            get(&v, 1),
            get(&i, 0),
            get(&i, 1),
            get(&i, 2)
        ),
    );
    let said = |n: usize| i.get(n).map(|s| s.trim()).filter(|s| !s.is_empty());
    let known = EngineInfo {
        kernel: said(3).map(String::from),
        runtimes: said(4).map(|r| r.split_whitespace().map(String::from).collect()),
    };
    (facts, known, None)
}

/// The image check: present on the engine, or pulled as `--pull` allows.
pub(crate) fn image_check(docker_cli: &Docker, image: &str, pull: Pull) -> Check {
    match control::ensure_image(docker_cli, image, pull) {
        Ok(id) => Check::new(
            "image",
            State::Ok,
            format!("{image} present ({})", short_id(&id)),
        ),
        Err(e) => Check::new("image", State::Failed, e.to_string()),
    }
}

/// Why nothing can be checked with this image, and what to do: sbx's
/// own build script only where there is one (a checkout of sbx, found from
/// the current folder up), never to a user of the wheel or the crate.
pub(crate) fn image_missing(image: &str, pull: Pull) -> String {
    let how = match pull {
        Pull::Never => "and --pull never forbids pulling it",
        _ => "and it could not be pulled",
    };
    let fix = if build_script_here() {
        "build sbx's images with scripts/build-images.sh and run `sbx doctor --image sbx-python:bookworm`".to_string()
    } else {
        format!("pull it (`docker pull {image}`) where a registry is reachable, or give --image one the engine has (`docker images`)")
    };
    format!("image {image} is not on this engine {how}; {fix}")
}

/// Whether `scripts/build-images.sh` is in the current folder or above.
fn build_script_here() -> bool {
    let Ok(mut dir) = std::env::current_dir() else {
        return false;
    };
    loop {
        if dir.join("scripts/build-images.sh").is_file() {
            return true;
        }
        if !dir.pop() {
            return false;
        }
    }
}

/// The runtime check, only for a `--runtime` the engine does not know:
/// `Some` with why, naming the runtimes it has. An engine that did not
/// list its runtimes is given the benefit of the doubt (the probes' own
/// containers then say what the engine thinks).
pub(crate) fn runtime_missing(runtime: Option<&str>, info: &EngineInfo) -> Option<String> {
    let runtime = runtime?;
    let known = info.runtimes.as_ref()?;
    if known.iter().any(|r| r == runtime) {
        return None;
    }
    Some(format!(
        "the engine has no runtime `{runtime}` (it has: {}); register it in the engine's daemon.json (for gVisor, scripts/gvisor-engine.sh runs an engine with runsc)",
        known.join(", ")
    ))
}

pub(crate) fn short_id(id: &str) -> &str {
    let id = id.trim_start_matches("sha256:");
    &id[..id.len().min(12)]
}

/// The last check: no container labelled with the doctor's run is left.
pub(crate) fn nothing_left(docker_cli: &Docker, run_id: &str) -> Check {
    let name = "nothing left";
    match process::control(docker_cli, &argv::list_run_args(run_id), CONTROL_TIMEOUT) {
        Ok(c) if c.success() => {
            let left = c.stdout.split_whitespace().count();
            Check::held(
                name,
                left == 0,
                format!("{left} container(s) labelled sbx.run={run_id} remain"),
            )
        }
        Ok(c) => Check::new(name, State::Failed, c.stderr_line()),
        Err(e) => Check::new(name, State::Failed, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_the_engine_lacks_is_named_with_those_it_has() {
        let info = EngineInfo {
            kernel: Some("6.1.0".into()),
            runtimes: Some(vec!["runc".into(), "runsc".into()]),
        };
        assert_eq!(runtime_missing(None, &info), None);
        assert_eq!(runtime_missing(Some("runsc"), &info), None);
        let why = runtime_missing(Some("kata"), &info).expect("kata is missing");
        assert!(
            why.starts_with("the engine has no runtime `kata` (it has: runc, runsc)"),
            "{why}"
        );
        assert_eq!(runtime_missing(Some("kata"), &EngineInfo::default()), None);
    }
}
