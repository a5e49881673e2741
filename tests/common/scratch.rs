//! A test's scratch folder and run id, for the engine tests that write a
//! tasks file and candidates and run `sbx eval` over them: everything the
//! run id labelled is removed when it drops, and each eval asserts that
//! nothing of its run is left.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::{finish, Cleanup, Out, PYTHON};

pub struct Scratch {
    pub cleanup: Cleanup,
    pub id: String,
    pub dir: tempfile::TempDir,
    /// The bound of each eval.
    limit: Duration,
}

/// Panics on a leftover of the run only when the test itself did not fail.
impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.cleanup.finish();
        }
    }
}

impl Scratch {
    /// A run id `<kind>-...` for `test`, and a folder `sbx-<folder>-...`.
    pub fn new(kind: &str, folder: &str, test: &str, limit: Duration) -> Scratch {
        let id = super::run_id(kind, test);
        Scratch {
            cleanup: Cleanup::new(&[&id]),
            dir: tempfile::Builder::new()
                .prefix(&format!("sbx-{folder}-"))
                .tempdir()
                .expect("scratch folder"),
            id,
            limit,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn gen(&self) -> PathBuf {
        self.path("gen")
    }

    pub fn file(&self, rel: &str, content: &[u8]) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, content).expect("write");
        path
    }

    pub fn executable(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.file(rel, content.as_bytes());
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    /// `sbx eval` over `tasks` and `gen/` with `extra`.
    pub fn eval(&self, tasks: &Value, extra: &[&str]) -> Out {
        self.eval_with(tasks, extra, None)
    }

    /// `sbx eval` over `tasks` and `gen/` with `extra`, through `docker`
    /// when given; asserts that nothing of the run is left.
    pub fn eval_with(&self, tasks: &Value, extra: &[&str], docker: Option<&Path>) -> Out {
        let path = self.file("tasks.json", &serde_json::to_vec(tasks).expect("tasks"));
        fs::create_dir_all(self.gen()).expect("gen");
        let mut cmd: Command = super::sbx(Some(&self.id));
        cmd.arg("eval")
            .arg("--tasks")
            .arg(path)
            .arg("--gen")
            .arg(self.gen())
            .args(["--image", PYTHON, "--pull", "never"])
            .args(extra);
        if let Some(docker) = docker {
            cmd.env("SBX_DOCKER", docker);
        }
        let out = finish(cmd, None, self.limit);
        super::assert_nothing_left(&self.id, &format!("{out:?}"));
        out
    }

    /// `sbx diff OLD NEW`.
    pub fn diff(&self, old: &Path, new: &Path) -> Out {
        let mut cmd = super::sbx(None);
        cmd.arg("diff").arg(old).arg(new);
        finish(cmd, None, Duration::from_secs(30))
    }
}
