//! The second Docker engine of the several-engine tests: started beside the
//! first by `scripts/second-engine.sh start` (which `scripts/test.sh` runs),
//! reached on loopback only (`SBX_ENGINE2_TCP`, `tcp://127.0.0.1:PORT`).
//! Without it these tests panic with what to do, never skip.

use std::process::Command;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use super::{try_finish, Out, DOCKER_LIMIT};

/// How the tests find the second engine.
#[derive(Debug, Clone)]
pub struct Engine2 {
    /// `tcp://127.0.0.1:PORT`: what sbx is given with `--engine`.
    pub url: String,
    /// Its dockerd's pid file (the kill test reads it).
    pub pidfile: String,
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| {
        format!(
            "{name} is not set: these tests need the second engine; run `eval $(scripts/second-engine.sh start)` first (scripts/test.sh does)"
        )
    })
}

/// The second engine, checked once: it must answer and have both images.
pub fn engine2() -> Engine2 {
    static CHECKED: OnceLock<Result<Engine2, String>> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let e = Engine2 {
                url: env("SBX_ENGINE2_TCP")?,
                pidfile: env("SBX_ENGINE2_PIDFILE")?,
            };
            if !e.url.starts_with("tcp://127.") {
                return Err(format!(
                    "SBX_ENGINE2_TCP `{}` is not on loopback; the tests only talk to loopback",
                    e.url
                ));
            }
            let info = try_at(&e.url, &["info", "--format", "{{.ServerVersion}}"])?;
            if info.code() != 0 {
                return Err(format!(
                    "the second engine at {} does not answer: {info:?}",
                    e.url
                ));
            }
            for image in [super::BUSYBOX, super::PYTHON] {
                let found = try_at(
                    &e.url,
                    &["image", "inspect", "--format", "{{.Id}}", "--", image],
                )?;
                if found.code() != 0 {
                    return Err(format!(
                        "the second engine lacks {image}: scripts/second-engine.sh start loads it"
                    ));
                }
            }
            Ok(e)
        })
        .clone()
        .unwrap_or_else(|message| panic!("{message}"))
}

/// `docker --host HOST ARGS` within the docker bound.
pub fn try_at(host: &str, args: &[&str]) -> Result<Out, String> {
    let mut cmd = Command::new("docker");
    cmd.arg("--host").arg(host).args(args);
    try_finish(cmd, DOCKER_LIMIT)
}

/// [`try_at`], which must succeed.
pub fn at(host: &str, args: &[&str]) -> Out {
    let out = try_at(host, args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.code(), 0, "docker --host {host} {args:?}: {out:?}");
    out
}

/// Containers (any state) labelled `sbx.run=<run_id>` on `host`.
pub fn labelled_at(host: &str, run_id: &str) -> Vec<String> {
    let filter = format!("label=sbx.run={run_id}");
    at(host, &["ps", "-a", "-q", "--no-trunc", "--filter", &filter])
        .stdout
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// `docker image ls` of sbx's baked images (and base tags), one name a line.
pub const BAKED_LS: [&str; 6] = [
    "image",
    "ls",
    "--filter",
    "reference=sbx-deliver",
    "--format",
    "{{.Repository}}:{{.Tag}}",
];

/// The names in a [`BAKED_LS`] listing that belong to `run_id`.
pub fn baked_of(listing: &str, run_id: &str) -> Vec<String> {
    let prefix = format!("sbx-deliver:{run_id}-");
    listing
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

/// Baked images (`sbx-deliver:<run_id>-N`, `...-FROM-N`) of `run_id` on `host`.
pub fn try_baked_at(host: &str, run_id: &str) -> Result<Vec<String>, String> {
    let listed = try_at(host, &BAKED_LS)?;
    if listed.code() != 0 {
        return Err(format!("docker --host {host} image ls: {listed:?}"));
    }
    Ok(baked_of(&listed.stdout, run_id))
}

/// [`try_baked_at`], which must succeed.
pub fn baked_at(host: &str, run_id: &str) -> Vec<String> {
    try_baked_at(host, run_id).unwrap_or_else(|e| panic!("{e}"))
}

/// Removes, when dropped, the containers and baked images of `run_id` on
/// every engine in `hosts` that answers (best effort, never panics).
pub struct CleanupAt {
    pub hosts: Vec<String>,
    pub run_id: String,
}

impl Drop for CleanupAt {
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for host in &self.hosts {
            loop {
                let filter = format!("label=sbx.run={}", self.run_id);
                let Ok(listed) = try_at(host, &["ps", "-a", "-q", "--filter", &filter]) else {
                    break;
                };
                if listed.code() != 0 {
                    break;
                }
                let ids: Vec<&str> = listed.stdout.split_whitespace().collect();
                if ids.is_empty() || Instant::now() >= deadline {
                    break;
                }
                let mut args = vec!["rm", "-f", "--"];
                args.extend(ids);
                let _ = try_at(host, &args);
                thread::sleep(Duration::from_millis(300));
            }
            if let Ok(tags) = try_baked_at(host, &self.run_id) {
                if !tags.is_empty() {
                    // Never -f: a `-from-` tag sits on a task image.
                    let mut args = vec!["rmi", "--"];
                    args.extend(tags.iter().map(String::as_str));
                    let _ = try_at(host, &args);
                }
            }
        }
    }
}
