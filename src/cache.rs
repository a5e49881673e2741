//! The result cache: each judged candidate's result, stored under a key
//! that covers everything that could change it, so that a second run re-runs
//! only what changed. A key is the SHA-256 of: sbx's version, the candidate's
//! bytes and interpreter, the task's cases (stdin and expectation with its
//! comparison mode and tolerances), timeout and fail-fast, the image ID (not
//! its name), and every limit and hardening option that shapes the argv.
//! `error` results (sbx could not judge) are never stored.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::eval::Task;
use crate::report::{Status, TaskResult};
use crate::spec::Sandbox;

/// A cache directory.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

/// What one cached result depends on.
#[derive(Debug, Serialize)]
pub struct KeyInput<'a> {
    pub sbx_version: &'a str,
    pub candidate_sha256: String,
    pub interpreter: &'a [String],
    pub image_id: &'a str,
    pub cases: Vec<(String, String)>,
    pub multi_case: bool,
    pub timeout_ms: u128,
    pub fail_fast: bool,
    pub max_output: usize,
    pub limits: String,
    pub hardening: String,
}

impl<'a> KeyInput<'a> {
    /// The key input of one candidate of `task` under `sandbox`.
    pub fn new(
        task: &Task,
        bytes: &[u8],
        interpreter: &'a [String],
        image_id: &'a str,
        sandbox: &Sandbox,
        max_output: usize,
        fail_fast: bool,
    ) -> KeyInput<'a> {
        KeyInput {
            sbx_version: env!("CARGO_PKG_VERSION"),
            candidate_sha256: hex(&Sha256::digest(bytes)),
            interpreter,
            image_id,
            cases: task
                .cases
                .iter()
                .map(|c| {
                    (
                        String::from_utf8_lossy(&c.stdin).into_owned(),
                        format!("{:?}", c.matcher),
                    )
                })
                .collect(),
            multi_case: task.multi_case,
            timeout_ms: task.timeout.as_millis(),
            fail_fast,
            max_output,
            limits: format!("{:?}", sandbox.limits),
            hardening: format!("{:?}", sandbox.hardening),
        }
    }

    /// The cache key: the SHA-256 of the canonical JSON of this input.
    pub fn key(&self) -> String {
        let json = serde_json::to_vec(self).expect("a key input serializes");
        hex(&Sha256::digest(&json))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Cache {
    /// Opens (creating) the cache directory.
    pub fn open(dir: PathBuf) -> Result<Cache> {
        fs::create_dir_all(&dir).map_err(|source| Error::Setup {
            what: format!("create the cache directory `{}`", dir.display()),
            source,
        })?;
        Ok(Cache { dir })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The stored result for `key`, marked `cached`; `None` on a miss or an
    /// unreadable entry (which then simply runs again).
    pub fn get(&self, key: &str) -> Option<TaskResult> {
        let text = fs::read_to_string(self.path(key)).ok()?;
        let mut result: TaskResult = serde_json::from_str(&text).ok()?;
        if result.status == Status::Error {
            return None;
        }
        result.cached = Some(true);
        Some(result)
    }

    /// Stores a judged result (never an `error`), atomically; best effort.
    pub fn put(&self, key: &str, result: &TaskResult) {
        if result.status == Status::Error {
            return;
        }
        let Ok(json) = serde_json::to_vec(result) else {
            return;
        };
        if let Ok(mut tmp) = tempfile::NamedTempFile::new_in(&self.dir) {
            if tmp.write_all(&json).is_ok() {
                let _ = tmp.persist(self.path(key));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Mode, Tolerance};
    use crate::eval::{parse_tasks, TaskDefaults};
    use std::time::Duration;

    fn task(json: &str) -> Task {
        let defaults = TaskDefaults {
            image: "img".into(),
            timeout: Duration::from_secs(10),
            compare: Mode::Exact,
            tolerance: Tolerance::default(),
        };
        parse_tasks(json, &defaults).unwrap().remove(0)
    }

    fn sandbox(memory: &str) -> Sandbox {
        Sandbox {
            docker: "docker".into(),
            limits: crate::spec::Limits::parse(memory, "0.5", "64", "64m", "none").unwrap(),
            hardening: crate::spec::Hardening::default(),
            pull: crate::spec::Pull::Never,
        }
    }

    #[test]
    fn keys_change_with_every_input_and_only_then() {
        let base_task = r#"[{"id": "a", "stdin": "1", "expect": "2"}]"#;
        let py = vec!["python3".to_string()];
        let key = |task_json: &str,
                   bytes: &[u8],
                   interp: &[String],
                   image: &str,
                   memory: &str,
                   max: usize,
                   ff: bool| {
            KeyInput::new(
                &task(task_json),
                bytes,
                interp,
                image,
                &sandbox(memory),
                max,
                ff,
            )
            .key()
        };
        let base = key(base_task, b"print(2)", &py, "sha256:1", "256m", 1024, true);
        // Same inputs, same key (and the id, the prompt do not matter).
        assert_eq!(
            base,
            key(base_task, b"print(2)", &py, "sha256:1", "256m", 1024, true)
        );
        assert_eq!(
            base,
            key(
                r#"[{"id": "b", "prompt": "p", "stdin": "1", "expect": "2"}]"#,
                b"print(2)",
                &py,
                "sha256:1",
                "256m",
                1024,
                true
            )
        );
        let sh = vec!["sh".to_string()];
        for (what, other) in [
            (
                "candidate",
                key(base_task, b"print(3)", &py, "sha256:1", "256m", 1024, true),
            ),
            (
                "interpreter",
                key(base_task, b"print(2)", &sh, "sha256:1", "256m", 1024, true),
            ),
            (
                "image id",
                key(base_task, b"print(2)", &py, "sha256:2", "256m", 1024, true),
            ),
            (
                "memory",
                key(base_task, b"print(2)", &py, "sha256:1", "512m", 1024, true),
            ),
            (
                "max output",
                key(base_task, b"print(2)", &py, "sha256:1", "256m", 2048, true),
            ),
            (
                "fail fast",
                key(base_task, b"print(2)", &py, "sha256:1", "256m", 1024, false),
            ),
            (
                "stdin",
                key(
                    r#"[{"id": "a", "stdin": "9", "expect": "2"}]"#,
                    b"print(2)",
                    &py,
                    "sha256:1",
                    "256m",
                    1024,
                    true,
                ),
            ),
            (
                "expect",
                key(
                    r#"[{"id": "a", "stdin": "1", "expect": "3"}]"#,
                    b"print(2)",
                    &py,
                    "sha256:1",
                    "256m",
                    1024,
                    true,
                ),
            ),
            (
                "compare",
                key(
                    r#"[{"id": "a", "stdin": "1", "expect": "2", "compare": "trim"}]"#,
                    b"print(2)",
                    &py,
                    "sha256:1",
                    "256m",
                    1024,
                    true,
                ),
            ),
            (
                "timeout",
                key(
                    r#"[{"id": "a", "stdin": "1", "expect": "2", "timeout": 3}]"#,
                    b"print(2)",
                    &py,
                    "sha256:1",
                    "256m",
                    1024,
                    true,
                ),
            ),
            (
                "cases",
                key(
                    r#"[{"id": "a", "cases": [{"stdin": "1", "expect": "2"}]}]"#,
                    b"print(2)",
                    &py,
                    "sha256:1",
                    "256m",
                    1024,
                    true,
                ),
            ),
        ] {
            assert_ne!(base, other, "changing the {what} must change the key");
        }
    }

    #[test]
    fn stores_judged_results_and_never_errors() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path().join("c")).unwrap();
        let mut pass = TaskResult::missing("a");
        pass.status = Status::Pass;
        pass.reason = None;
        cache.put("k1", &pass);
        let hit = cache.get("k1").unwrap();
        assert_eq!(hit.cached, Some(true));
        assert_eq!(hit.status, Status::Pass);
        assert!(cache.get("k2").is_none());
        cache.put("k3", &TaskResult::error("a", "image_missing", "x".into()));
        assert!(cache.get("k3").is_none());
        fs::write(dir.path().join("c/k4.json"), "garbage").unwrap();
        assert!(cache.get("k4").is_none());
    }
}
