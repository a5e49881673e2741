//! A session: one run id (and its run lock), one private staging directory,
//! what every container of it shares (`Sandbox`), and the
//! path from a candidate file to a supervised container. `sbx run` and
//! `sbx eval` both go through here.

use std::collections::hash_map::RandomState;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tempfile::TempDir;

use crate::docker::argv::{self, Container, Mount, NAME_PREFIX};
use crate::docker::control;
use crate::docker::process::{self, ContainerGuard, Finished, Job, OutputSink, StdinSource};
use crate::docker::Docker;
use crate::error::{Error, Result};
use crate::signals;
use crate::spec::{Hardening, Limits, Pull};

/// Sets the run id instead of a random one, so that a test or a script can
/// find (and remove) the containers of one sbx invocation by name or label.
pub const RUN_ID_ENV: &str = "SBX_RUN_ID";

/// A run id becomes part of container names: `[a-z0-9][a-z0-9_.-]*`, short.
pub fn validate_run_id(id: &str) -> Result<String> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c));
    if ok {
        Ok(id.to_string())
    } else {
        Err(Error::Usage(format!(
            "invalid {RUN_ID_ENV} `{}`: expected lowercase letters, digits, `_`, `.` or `-`",
            id.escape_debug()
        )))
    }
}

/// How sbx reaches the engine and what every container of a request shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The docker-compatible CLI to run.
    pub docker: Docker,
    pub limits: Limits,
    pub hardening: Hardening,
    pub pull: Pull,
}

/// A group of containers started by one sbx invocation.
#[derive(Debug)]
pub struct Session {
    pub sandbox: Sandbox,
    /// The value of the `sbx.run` label on every container of this session.
    pub run_id: String,
    stage: TempDir,
    /// Numbers the containers.
    counter: AtomicUsize,
    /// Numbers the staged candidates.
    staged: AtomicUsize,
    /// Numbers the baked images (and their Dockerfiles), across engines.
    bakes: AtomicUsize,
    /// Held while this sbx runs, so `sbx gc` can tell a live run from one
    /// left behind.
    _lock: Option<RunLock>,
}

/// An exclusive lock on `<tmp>/sbx-runs/<run id>.lock`, held for the life of
/// a session and removed with it. The kernel drops the lock when the process
/// dies, however it dies, so a lock that can be taken means nobody is left.
#[derive(Debug)]
struct RunLock {
    file: fs::File,
    path: PathBuf,
}

impl RunLock {
    fn path(run_id: &str) -> PathBuf {
        std::env::temp_dir()
            .join("sbx-runs")
            .join(format!("{run_id}.lock"))
    }

    /// Best effort: without a lock a run only loses gc's protection.
    fn take(run_id: &str) -> Option<RunLock> {
        let path = RunLock::path(run_id);
        fs::create_dir_all(path.parent()?).ok()?;
        let file = fs::File::create(&path).ok()?;
        file.try_lock().ok()?;
        Some(RunLock { file, path })
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// Removes the lock file a killed sbx left behind (a live run keeps its own).
pub fn forget_run(run_id: &str) {
    if !run_is_live(run_id) {
        let _ = fs::remove_file(RunLock::path(run_id));
    }
}

/// Whether the sbx process of `run_id` is still running on this host (it
/// holds its run lock). Runs of other hosts, or that took no lock, are not
/// known to be live.
pub fn run_is_live(run_id: &str) -> bool {
    match fs::File::open(RunLock::path(run_id)) {
        Ok(file) => matches!(file.try_lock(), Err(fs::TryLockError::WouldBlock)),
        Err(_) => false,
    }
}

/// A container ready to start: its name and the exact docker arguments.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub name: String,
    pub image: String,
    /// Whether a missing image may be pulled (never for a baked image).
    pub pull: Pull,
    /// `docker create ...` (see `argv::create_args`).
    pub create: Vec<OsString>,
    /// `docker start -a [-i] -- NAME`.
    pub start: Vec<OsString>,
}

/// What `prepare` needs to know about one candidate.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The staged copy of the candidate (see `Session::stage`).
    pub staged: &'a Staged,
    pub image: &'a str,
    /// Words before `/work/task`; empty runs `/work/task` itself.
    pub interpreter: &'a [String],
    /// Whether the program gets a stdin (`-i`).
    pub interactive: bool,
}

/// A candidate copied into the session's staging directory.
#[derive(Debug, Clone)]
pub struct Staged {
    /// Its file name under `tasks/` (also its name inside a baked image).
    pub file: String,
    pub path: PathBuf,
}

impl Staged {
    /// Where a baked image holds it.
    pub fn in_image(&self) -> String {
        format!("{BAKED_DIR}/{}", self.file)
    }
}

/// Where baked images hold the candidates (one file per staged candidate).
pub const BAKED_DIR: &str = "/work/tasks";

/// How candidates reach one engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A read-only bind mount of the staged copy (the engine shares this
    /// machine's files).
    Bind,
    /// Throwaway images baked for this eval: task image -> baked image.
    Image(BTreeMap<String, String>),
}

impl Session {
    /// Creates the session's private staging directory.
    pub fn new(sandbox: Sandbox) -> Result<Session> {
        let stage = tempfile::Builder::new()
            .prefix("sbx-")
            .tempdir()
            .map_err(|source| Error::Setup {
                what: "create a staging directory".into(),
                source,
            })?;
        // Readable by any uid (a `--user` in the container), writable only by us.
        let tasks = stage.path().join("tasks");
        let setup = || -> std::io::Result<()> {
            fs::set_permissions(stage.path(), fs::Permissions::from_mode(0o755))?;
            fs::create_dir(&tasks)?;
            fs::set_permissions(&tasks, fs::Permissions::from_mode(0o755))
        };
        setup().map_err(|source| Error::Setup {
            what: format!("prepare the staging directory `{}`", stage.path().display()),
            source,
        })?;
        // `-v SRC:DST:ro` splits on `:`; our own path must not contain one.
        if stage
            .path()
            .as_os_str()
            .to_string_lossy()
            .contains([':', ','])
        {
            return Err(Error::Usage(format!(
                "the temporary directory `{}` contains `:` or `,`, which docker cannot bind; set TMPDIR to a plain path",
                stage.path().display()
            )));
        }
        let run_id = match std::env::var(RUN_ID_ENV) {
            Ok(id) => validate_run_id(&id)?,
            Err(_) => {
                let mut hasher = RandomState::new().build_hasher();
                hasher.write_u32(std::process::id());
                format!("{:016x}", hasher.finish())
            }
        };
        Ok(Session {
            sandbox,
            _lock: RunLock::take(&run_id),
            run_id,
            stage,
            counter: AtomicUsize::new(0),
            staged: AtomicUsize::new(0),
            bakes: AtomicUsize::new(0),
        })
    }

    /// Stages a copy of the candidate (mode 0755, so a `#!` file runs even
    /// without its exec bit).
    pub fn stage(&self, bytes: &[u8]) -> Result<Staged> {
        let n = self.staged.fetch_add(1, Ordering::SeqCst);
        let file = format!("task-{n}");
        let path = self.stage.path().join("tasks").join(&file);
        let write = || -> std::io::Result<()> {
            fs::write(&path, bytes)?;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
        };
        write().map_err(|source| Error::Setup {
            what: format!("stage the candidate at `{}`", path.display()),
            source,
        })?;
        Ok(Staged { file, path })
    }

    /// A number for the next baked image, unique in this session (engines
    /// bake at the same time).
    pub fn next_bake(&self) -> usize {
        self.bakes.fetch_add(1, Ordering::SeqCst)
    }

    /// Writes the Dockerfile that bakes every staged candidate into an image
    /// built from `base` (a tag of sbx's own), and returns its path; the
    /// build context is `stage_dir()`.
    pub fn dockerfile(&self, index: usize, base: &str) -> Result<PathBuf> {
        let path = self.stage.path().join(format!("Dockerfile.{index}"));
        let text = format!("FROM {base}\nCOPY tasks/ {BAKED_DIR}/\n");
        fs::write(&path, text).map_err(|source| Error::Setup {
            what: format!("write `{}`", path.display()),
            source,
        })?;
        Ok(path)
    }

    pub fn stage_dir(&self) -> &Path {
        self.stage.path()
    }

    /// Builds the argv for a staged candidate's container, delivered as
    /// `delivery` says.
    pub fn prepare(&self, candidate: &Candidate<'_>, delivery: &Delivery) -> Result<Prepared> {
        let n = self.counter.fetch_add(1, Ordering::SeqCst);
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
        Ok(Prepared {
            name,
            image: image.to_string(),
            pull,
            create,
            start,
        })
    }

    /// Runs a prepared container on the engine `docker` reaches, under
    /// supervision.
    pub fn execute(
        &self,
        docker: &Docker,
        prepared: Prepared,
        stdin: StdinSource,
        output: OutputSink,
        timeout: Duration,
    ) -> Result<Finished> {
        // Created before the clock starts (pulling the image first if it is
        // missing and allowed): from here on the container exists by name, so
        // every kill below can remove it.
        if let Err(e) =
            control::create_container(docker, &prepared.create, &prepared.image, prepared.pull)
        {
            if matches!(e, Error::EngineTimeout(_)) {
                // The engine may still complete the create it was sent.
                process::remove_containers(docker, std::slice::from_ref(&prepared.name));
            }
            return Err(e);
        }
        let mut guard = ContainerGuard::new(docker, &prepared.name);
        if let Some(signal) = signals::received() {
            return Ok(Finished::interrupted_before_start(signal));
        }
        let finished = process::supervise(Job {
            docker,
            args: prepared.start,
            stdin,
            output,
            timeout,
        })?;
        guard.settle(&finished);
        Ok(finished)
    }

    /// Keeps the staging directory after sbx exits (for `--print-argv`,
    /// whose argv names the staged copy) and returns its path.
    pub fn keep_stage(self) -> PathBuf {
        self.stage.keep()
    }
}

/// Reads a candidate: it must be a regular file (symlinks followed).
pub fn read_candidate(path: &Path) -> Result<Vec<u8>> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => {}
        _ => return Err(Error::NoSuchFile(path.to_path_buf())),
    }
    let mut bytes = Vec::new();
    fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|source| Error::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(bytes)
}

/// Whether the kernel can execute these bytes directly: a `#!` script or an
/// ELF binary.
pub fn is_directly_executable(bytes: &[u8]) -> bool {
    bytes.starts_with(b"#!") || bytes.starts_with(b"\x7fELF")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids() {
        assert_eq!(validate_run_id("t-timeout.1").unwrap(), "t-timeout.1");
        for bad in ["", "-x", "A", "a b", "a/b", "a:b", &"a".repeat(65)] {
            assert!(validate_run_id(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn executable_headers() {
        assert!(is_directly_executable(b"#!/bin/sh\necho hi\n"));
        assert!(is_directly_executable(b"\x7fELF\x02\x01"));
        assert!(!is_directly_executable(b"print('hi')\n"));
        assert!(!is_directly_executable(b""));
        assert!(!is_directly_executable(b" #!/bin/sh"));
    }
}
