//! A session: one run id (with its lock), one private staging directory
//! for the candidates, and what every container of it shares (`Sandbox`).

use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use tempfile::TempDir;

use super::run_id::{validate_run_id, RunLock, RUN_ID_ENV};
use crate::docker::argv::control_socket_offered;
use crate::docker::Docker;
use crate::error::{Error, Result};
use crate::runner::host::Offer;
use crate::spec::{Hardening, Limits, Pull};

/// How sbx reaches the engine and what every container of a request shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sandbox {
    /// The docker-compatible CLI to run.
    pub docker: Docker,
    pub limits: Limits,
    pub hardening: Hardening,
    pub pull: Pull,
}

/// A group of containers started by one sbx invocation.
#[derive(Debug)]
pub(crate) struct Session {
    pub sandbox: Sandbox,
    /// The value of the `sbx.run` label on every container of this session.
    pub run_id: String,
    stage: TempDir,
    /// The staging directory's private folder of control sockets (mode
    /// 0700): see `runner_offer`.
    control: PathBuf,
    /// Numbers the containers.
    counter: AtomicUsize,
    /// Numbers the staged candidates.
    staged: AtomicUsize,
    /// Numbers the baked images (and their Dockerfiles), across engines.
    bakes: AtomicUsize,
    /// Held while this sbx runs, so `sbx gc` can tell a live run from one
    /// left behind, and no second run can take the same id.
    _lock: RunLock,
}

/// A candidate copied into the session's staging directory.
#[derive(Debug, Clone)]
pub(crate) struct Staged {
    /// Its file name under `tasks/` (also its name inside a baked image).
    pub file: String,
    pub path: PathBuf,
}

impl Staged {
    /// Where a baked image holds it.
    pub(crate) fn in_image(&self) -> String {
        format!("{BAKED_DIR}/{}", self.file)
    }
}

/// What separates the run id from the random part in a staging
/// directory's name: `sbx-<run>-stage-XXXXXXXX`.
const STAGE_MARK: &str = "-stage-";
/// The staging directory's private folder of control sockets.
const CONTROL_DIR: &str = "control";
/// The random part's length (letters and digits).
const STAGE_RANDOM: usize = 8;

/// The run id of a staging directory's name (`sbx-<run>-stage-XXXXXXXX`),
/// if it is one: the random part has no `-`, so the last mark ends the id.
pub(crate) fn staging_run_id(name: &str) -> Option<String> {
    let (run_id, random) = name.strip_prefix("sbx-")?.rsplit_once(STAGE_MARK)?;
    let random_ok =
        random.len() == STAGE_RANDOM && random.bytes().all(|b| b.is_ascii_alphanumeric());
    (random_ok && validate_run_id(run_id).is_ok()).then(|| run_id.to_string())
}

/// Where baked images hold the candidates (one file per staged candidate).
pub(crate) const BAKED_DIR: &str = "/work/tasks";

impl Session {
    /// Takes the run's lock, then creates the session's private staging
    /// directory, named after the run (see [`staging_run_id`]), so that
    /// `sbx gc` can tell when its run is gone.
    pub(crate) fn new(sandbox: Sandbox) -> Result<Session> {
        let run_id = match std::env::var(RUN_ID_ENV) {
            Ok(id) => validate_run_id(&id)?,
            Err(_) => {
                let mut hasher = RandomState::new().build_hasher();
                hasher.write_u32(std::process::id());
                format!("{:016x}", hasher.finish())
            }
        };
        // Before the directory: a live run always holds its lock.
        let lock = RunLock::take(&run_id)?;
        let stage = tempfile::Builder::new()
            .prefix(&format!("sbx-{run_id}{STAGE_MARK}"))
            .rand_bytes(STAGE_RANDOM)
            .tempdir()
            .map_err(|source| {
                // The temporary directory is the caller's setting: exit 2.
                Error::Usage(format!(
                    "cannot create a staging directory in `{}`: {source}; set TMPDIR to a writable directory",
                    std::env::temp_dir().display()
                ))
            })?;
        // Readable by any uid (a `--user` in the container), writable only by us.
        let tasks = stage.path().join("tasks");
        let control = stage.path().join(CONTROL_DIR);
        let setup = || -> std::io::Result<()> {
            fs::set_permissions(stage.path(), fs::Permissions::from_mode(0o755))?;
            fs::create_dir(&tasks)?;
            fs::set_permissions(&tasks, fs::Permissions::from_mode(0o755))?;
            fs::create_dir(&control)?;
            fs::set_permissions(&control, fs::Permissions::from_mode(0o700))
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
        Ok(Session {
            sandbox,
            _lock: lock,
            run_id,
            stage,
            control,
            counter: AtomicUsize::new(0),
            staged: AtomicUsize::new(0),
            bakes: AtomicUsize::new(0),
        })
    }

    /// Stages a copy of `bytes` (mode 0755, so a `#!` file runs even
    /// without its exec bit).
    pub(crate) fn stage(&self, bytes: &[u8]) -> Result<Staged> {
        self.stage_from(&mut &bytes[..], Path::new("the candidate"))
    }

    /// Stages a copy of the candidate file at `path`, streamed (sbx never
    /// holds a candidate in memory, whatever its size): it must be a
    /// regular file (symlinks followed). A candidate that is not a regular
    /// file is `NoSuchFile`, one that cannot be read `Unreadable`.
    pub(crate) fn stage_file(&self, path: &Path) -> Result<Staged> {
        let mut file = open_candidate(path)?;
        self.stage_from(&mut file, path)
    }

    /// Stages the candidate file at `path` followed by `suffix` (a function
    /// test's code), streamed like `stage_file`.
    pub(crate) fn stage_file_then(&self, path: &Path, suffix: &[u8]) -> Result<Staged> {
        let file = open_candidate(path)?;
        self.stage_from(&mut file.chain(suffix), path)
    }

    /// Copies `from` (the candidate at `source`) into a new staged file.
    fn stage_from(&self, from: &mut impl Read, source: &Path) -> Result<Staged> {
        let n = self.staged.fetch_add(1, Ordering::SeqCst);
        let file = format!("task-{n}");
        let path = self.stage.path().join("tasks").join(&file);
        let setup = |source| Error::Setup {
            what: format!("stage the candidate at `{}`", path.display()),
            source,
        };
        let mut to = fs::File::create(&path).map_err(setup)?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(Error::Unreadable {
                        path: source.to_path_buf(),
                        source: e,
                    })
                }
            };
            to.write_all(&buf[..n]).map_err(setup)?;
        }
        to.flush()
            .and_then(|()| fs::set_permissions(&path, fs::Permissions::from_mode(0o755)))
            .map_err(setup)?;
        Ok(Staged { file, path })
    }

    /// A number for the next baked image, unique in this session (engines
    /// bake at the same time).
    pub(crate) fn next_bake(&self) -> usize {
        self.bakes.fetch_add(1, Ordering::SeqCst)
    }

    /// Writes the Dockerfile that bakes every staged candidate into an image
    /// built from `base` (a tag of sbx's own), and returns its path; the
    /// build context is `stage_dir()`.
    pub(crate) fn dockerfile(&self, index: usize, base: &str) -> Result<PathBuf> {
        let path = self.stage.path().join(format!("Dockerfile.{index}"));
        let text = format!("FROM {base}\nCOPY tasks/ {BAKED_DIR}/\n");
        fs::write(&path, text).map_err(|source| Error::Setup {
            what: format!("write `{}`", path.display()),
            source,
        })?;
        Ok(path)
    }

    /// Stages a copy of the running sbx as the runner (`runner/sbx-runner`,
    /// mode 0755, in a directory of its own: the build context of a runner
    /// image holds nothing else) and returns its path.
    pub(crate) fn stage_runner(&self) -> Result<PathBuf> {
        let dir = self.runner_dir();
        fs::create_dir_all(&dir)
            .and_then(|()| fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)))
            .and_then(|()| crate::runner::host::stage_runner(&dir))
            .map_err(|source| Error::Setup {
                what: format!("stage the runner in `{}`", dir.display()),
                source,
            })
    }

    /// The directory `stage_runner` fills.
    pub(crate) fn runner_dir(&self) -> PathBuf {
        self.stage.path().join("runner")
    }

    /// Writes the Dockerfile of a runner image built from `base`: only the
    /// runner is added, at `/.sbx/sbx`. Its build context is `runner_dir()`.
    pub(crate) fn runner_dockerfile(&self, index: usize, base: &str) -> Result<PathBuf> {
        let path = self.runner_dir().join(format!("Dockerfile.{index}"));
        let text = format!(
            "FROM {base}\nCOPY sbx-runner {}\n",
            crate::docker::argv::RUNNER_PATH
        );
        fs::write(&path, text).map_err(|source| Error::Setup {
            what: format!("write `{}`", path.display()),
            source,
        })?;
        Ok(path)
    }

    pub(crate) fn stage_dir(&self) -> &Path {
        self.stage.path()
    }

    /// What a runner container of this session is offered: a control
    /// socket when the engine sees sbx's files (`bind`: the runner is bound
    /// from the host, not baked into an image) and the runtime is not
    /// gVisor; stdin and stdout otherwise. Each socket is made in a
    /// directory of its own in the private folder (mode 0700), so that no
    /// other user (nor a container of another user's) can reach it through
    /// the host's file system; the engine binds each socket's directory
    /// directly.
    pub(crate) fn runner_offer(&self, bind: bool) -> Offer<'_> {
        let runtime = self.sandbox.hardening.runtime.as_deref();
        if bind && control_socket_offered(runtime) {
            Offer::Socket(&self.control)
        } else {
            Offer::Stdio
        }
    }

    /// The number of the session's next container.
    pub(crate) fn next_container(&self) -> usize {
        self.counter.fetch_add(1, Ordering::SeqCst)
    }

    /// Keeps the staging directory after sbx exits (for `--print-argv`,
    /// whose argv names the staged copy) and returns its path.
    pub(crate) fn keep_stage(self) -> PathBuf {
        self.stage.keep()
    }
}

/// Opens a candidate: it must be a regular file (symlinks followed),
/// opened without blocking.
pub(crate) fn open_candidate(path: &Path) -> Result<fs::File> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => {}
        _ => return Err(Error::NoSuchFile(path.to_path_buf())),
    }
    crate::signals::open_regular(path).map_err(|source| Error::Unreadable {
        path: path.to_path_buf(),
        source,
    })
}

/// The first bytes of a candidate (enough for `is_directly_executable`).
pub(crate) fn read_header(path: &Path) -> Result<Vec<u8>> {
    let mut header = Vec::new();
    open_candidate(path)?
        .take(4)
        .read_to_end(&mut header)
        .map_err(|source| Error::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(header)
}

/// Whether the kernel can execute these bytes directly: a `#!` script or an
/// ELF binary.
pub(crate) fn is_directly_executable(bytes: &[u8]) -> bool {
    bytes.starts_with(b"#!") || bytes.starts_with(b"\x7fELF")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_names_carry_their_run() {
        assert_eq!(
            staging_run_id("sbx-r1-stage-aB3dE5gH").as_deref(),
            Some("r1")
        );
        assert_eq!(
            staging_run_id("sbx-a-stage-b-stage-aB3dE5gH").as_deref(),
            Some("a-stage-b")
        );
        for other in [
            "sbx-runs-1000",
            "sbx-r1-stage-short",
            "sbx-r1-stage-aB3dE5g-",
            "sbx-R1-stage-aB3dE5gH",
            "sbx--stage-aB3dE5gH",
            "x-r1-stage-aB3dE5gH",
            "sbx-abc123",
        ] {
            assert_eq!(staging_run_id(other), None, "{other}");
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
