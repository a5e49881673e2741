//! The run id of one sbx invocation (`SBX_RUN_ID` or random), and its run
//! lock: held while sbx runs, so `sbx gc` can tell a live run from one left
//! behind and no second run takes the same id.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Sets the run id instead of a random one, so that a test or a script can
/// find (and remove) the containers of one sbx invocation by name or label.
pub(crate) const RUN_ID_ENV: &str = "SBX_RUN_ID";

/// A run id becomes part of container names: `[a-z0-9][a-z0-9_.-]*`, short.
pub(crate) fn validate_run_id(id: &str) -> Result<String> {
    validate_run_id_from(id, RUN_ID_ENV)
}

/// [`validate_run_id`] for a value given as `what` (`SBX_RUN_ID`, `--run`).
pub(crate) fn validate_run_id_from(id: &str, what: &str) -> Result<String> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c));
    if ok {
        Ok(id.to_string())
    } else {
        Err(Error::invalid(what, crate::console::quote(id), "a run id is 1 to 64 lowercase letters, digits, `_`, `.` or `-`, starting with a letter or digit"))
    }
}

/// An exclusive lock on `<tmp>/sbx-runs-<uid>/<run id>.lock`, held for the
/// life of a session and removed with it. The kernel drops the lock when the
/// process dies, however it dies, so a lock that can be taken means nobody
/// is left. The directory is private to the user (mode 0700, owned by us,
/// checked), and the lock file is opened without following a symlink and
/// never truncated, so nobody else can make sbx write through it.
#[derive(Debug)]
pub(crate) struct RunLock {
    file: fs::File,
    path: PathBuf,
}

/// The directory of this user's run locks.
fn lock_dir() -> PathBuf {
    std::env::temp_dir().join(format!("sbx-runs-{}", rustix::process::geteuid().as_raw()))
}

/// Creates (mode 0700) or checks this user's lock directory: a real
/// directory (not a symlink), owned by us, that nobody else can write to or
/// read (the check the result cache shares, in `files`).
fn private_lock_dir() -> Result<PathBuf> {
    let dir = lock_dir();
    crate::files::private_dir(
        &dir,
        "run-lock directory",
        crate::files::Private::Whole,
        "remove it or set TMPDIR elsewhere",
    )?;
    Ok(dir)
}

/// Opens (creating it if needed) a lock file: never through a symlink,
/// never truncated, and only a regular file of ours.
fn open_lock_file(path: &Path, create: bool) -> std::io::Result<fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let file = fs::OpenOptions::new()
        .read(true)
        .write(create)
        .create(create)
        .mode(0o600)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(std::io::Error::other("not a regular file of ours"));
    }
    Ok(file)
}

impl RunLock {
    fn path(run_id: &str) -> PathBuf {
        lock_dir().join(format!("{run_id}.lock"))
    }

    /// Takes the run's lock; refused (exit 2) when another live sbx holds
    /// it: two runs with one id would remove each other's containers.
    pub(crate) fn take(run_id: &str) -> Result<RunLock> {
        use std::os::unix::fs::MetadataExt;
        let path = private_lock_dir()?.join(format!("{run_id}.lock"));
        let refuse = |why: String| {
            Err(Error::Usage(format!(
                "cannot take the run lock `{}`: {why}",
                path.display()
            )))
        };
        // A run that ends removes its file after we opened it: then the
        // lock we took is on a file nobody else will find, so take it again.
        for _ in 0..3 {
            let file = match open_lock_file(&path, true) {
                Ok(file) => file,
                Err(e) => return refuse(e.to_string()),
            };
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(Error::Usage(format!(
                        "run id `{run_id}` is in use by another sbx that is still running; give each run its own {RUN_ID_ENV}"
                    )))
                }
                Err(fs::TryLockError::Error(e)) => return refuse(e.to_string()),
            }
            let same = match (file.metadata(), fs::symlink_metadata(&path)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            };
            if same {
                return Ok(RunLock { file, path });
            }
        }
        refuse("its file keeps being replaced".into())
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// Removes the lock file a killed sbx left behind (a live run keeps its own).
pub(crate) fn forget_run(run_id: &str) {
    if validate_run_id(run_id).is_ok() && !run_is_live(run_id) {
        let _ = fs::remove_file(RunLock::path(run_id));
    }
}

/// Whether the sbx process of `run_id` is still running on this host (it
/// holds its run lock). Runs of other hosts or of other users are not known
/// to be live.
pub(crate) fn run_is_live(run_id: &str) -> bool {
    if validate_run_id(run_id).is_err() {
        return false;
    }
    match open_lock_file(&RunLock::path(run_id), false) {
        Ok(file) => matches!(file.try_lock(), Err(fs::TryLockError::WouldBlock)),
        Err(_) => false,
    }
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
}
