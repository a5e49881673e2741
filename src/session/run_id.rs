//! The run id of one sbx invocation (`SBX_RUN_ID` or random), and its run
//! lock: held while sbx runs, so `sbx gc` can tell a live run from one left
//! behind.

use std::fs;
use std::path::PathBuf;

use crate::error::{Error, Result};

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

/// An exclusive lock on `<tmp>/sbx-runs/<run id>.lock`, held for the life of
/// a session and removed with it. The kernel drops the lock when the process
/// dies, however it dies, so a lock that can be taken means nobody is left.
#[derive(Debug)]
pub struct RunLock {
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
    pub fn take(run_id: &str) -> Option<RunLock> {
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
