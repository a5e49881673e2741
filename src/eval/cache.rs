//! The result cache: each judged candidate's result, stored under a key
//! that covers everything that could change it, so that a second run re-runs
//! only what changed. A key is the SHA-256 of: this sbx build (version,
//! executable size and modification time, schema number), the candidate's bytes and
//! interpreter, the task's cases (stdin and expectation with its comparison
//! mode and tolerances) or function test, timeout (and fail-fast for multi-case tasks), the
//! image ID (not its name), `--max-output`, and every limit and hardening
//! option that shapes the argv. `error` results are never stored.

use std::fs;
use std::io::Read;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::tasks::Task;
use crate::console;
use crate::error::{Error, Result};
use crate::report::{Status, TaskResult};
use crate::session::Sandbox;

/// Bumped whenever what a cached result means changes.
const SCHEMA: u32 = 1;

/// A cache directory.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    /// This exact sbx build: sbx's version alone stays the same across
    /// changes to how results are judged.
    build: String,
    warned: AtomicBool,
}

/// What one cached result depends on.
#[derive(Debug, Serialize)]
pub struct KeyInput<'a> {
    pub sbx_build: &'a str,
    pub candidate_sha256: String,
    pub interpreter: &'a [String],
    pub image_id: &'a str,
    pub cases: Vec<(String, String)>,
    pub multi_case: bool,
    /// A function test (its test code; the candidate's bytes are then the
    /// whole program, without the run's token). Left out of the key's JSON
    /// for other tasks, so their keys stay as they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    pub timeout_ms: u128,
    /// Only for multi-case tasks: a single case does not depend on it.
    pub fail_fast: Option<bool>,
    pub max_output: usize,
    pub limits: String,
    pub hardening: String,
    /// Runner modes only (absent for `--isolate case`, whose keys are as
    /// before): their entries carry `cpu_ms` and `max_rss_kib`, and
    /// `--cpu-limit` can stop a case. `candidate` and `worker` share keys:
    /// the same runner, reset and limits give the same verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<RunnerKey>,
}

/// The part of a key that only runner modes have.
#[derive(Debug, Serialize)]
pub struct RunnerKey {
    pub cpu_limit_s: Option<u64>,
}

impl<'a> KeyInput<'a> {
    /// The key input of one candidate of `task` under `sandbox`.
    #[expect(
        clippy::too_many_arguments,
        reason = "one argument per thing a result depends on"
    )]
    pub fn new(
        build: &'a str,
        task: &Task,
        candidate_sha256: &str,
        interpreter: &'a [String],
        image_id: &'a str,
        sandbox: &Sandbox,
        max_output: usize,
        fail_fast: bool,
    ) -> KeyInput<'a> {
        KeyInput {
            sbx_build: build,
            candidate_sha256: candidate_sha256.to_string(),
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
            function: task.function.as_ref().map(|f| format!("{f:?}")),
            timeout_ms: task.timeout.as_millis(),
            fail_fast: task.multi_case.then_some(fail_fast),
            max_output,
            limits: format!("{:?}", sandbox.limits),
            hardening: format!("{:?}", sandbox.hardening),
            runner: None,
        }
    }

    /// The same input for a runner mode (`--isolate candidate|worker`).
    pub fn in_runner(self, cpu_limit_s: Option<u64>) -> KeyInput<'a> {
        KeyInput {
            runner: Some(RunnerKey { cpu_limit_s }),
            ..self
        }
    }

    /// The cache key: the SHA-256 of the canonical JSON of this input.
    pub fn key(&self) -> String {
        let json = serde_json::to_vec(self).expect("a key input serializes");
        hex(&Sha256::digest(&json))
    }
}

/// The SHA-256 (lower-case hex) of the file at `path`, read in a stream:
/// a candidate's key never needs it in memory.
pub fn file_sha256(path: &std::path::Path) -> std::io::Result<String> {
    let mut file = crate::signals::open_regular(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Never an `error`: sbx could not judge it, the next run may.
fn cacheable(result: &TaskResult) -> bool {
    result.status != Status::Error
}

/// This build's identity: sbx's version and the size and modification time
/// of the running executable (a rebuild or reinstall changes them; reading
/// the whole executable to hash it costs too much per run).
fn build_id() -> String {
    let stamp = std::env::current_exe()
        .and_then(fs::metadata)
        .map(|m| {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}-{modified}", m.len())
        })
        .unwrap_or_default();
    format!("{SCHEMA}-{}-{stamp}", env!("CARGO_PKG_VERSION"))
}

impl Cache {
    /// Opens (creating) the cache directory.
    pub fn open(dir: PathBuf) -> Result<Cache> {
        // A --cache that cannot be a directory is a bad option (exit 2).
        fs::create_dir_all(&dir).map_err(|source| {
            Error::Usage(format!(
                "--cache `{}` cannot be used as the cache directory: {source}",
                dir.display()
            ))
        })?;
        Ok(Cache {
            dir,
            build: build_id(),
            warned: AtomicBool::new(false),
        })
    }

    /// This build's identity, part of every key.
    pub fn build(&self) -> &str {
        &self.build
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The stored result for `key`, as task `id`'s and marked `cached`;
    /// `None` on a miss or an unreadable entry (which then simply runs
    /// again).
    pub fn get(&self, key: &str, id: &str) -> Option<TaskResult> {
        // Only a regular file is an entry: a FIFO planted there must not
        // block the eval (it is a miss, and the candidate runs again).
        let mut text = String::new();
        crate::signals::open_regular(&self.path(key))
            .and_then(|mut file| file.read_to_string(&mut text))
            .ok()?;
        let mut result: TaskResult = serde_json::from_str(&text).ok()?;
        if !cacheable(&result) {
            return None;
        }
        // The key leaves the id out (two tasks may share a result); the
        // entry is this task's. A candidate's own result has no pass@k: any
        // extra numeric field of another build is dropped, not reported.
        result.id = id.to_string();
        result.pass_at.clear();
        result.cached = Some(true);
        Some(result)
    }

    /// Stores a judged result (never an `error`), atomically;
    /// says once when the directory cannot be written.
    pub fn put(&self, key: &str, result: &TaskResult) {
        if !cacheable(result) {
            return;
        }
        let Ok(json) = serde_json::to_vec(result) else {
            return;
        };
        let written = tempfile::NamedTempFile::new_in(&self.dir).and_then(|mut tmp| {
            tmp.write_all(&json)?;
            // Readable by other users sharing the cache, like any file.
            fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o644))?;
            tmp.persist(self.path(key)).map_err(|e| e.error)?;
            Ok(())
        });
        if let Err(e) = written {
            if !self.warned.swap(true, Ordering::SeqCst) {
                console::note(&format!(
                    "sbx: cannot write the cache `{}` ({e}); results are not cached",
                    self.dir.display()
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::tasks::{parse_tasks, TaskDefaults};
    use crate::judge::matcher::Tolerance;
    use crate::spec::CompareMode as Mode;
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
            docker: crate::docker::Docker::new("docker"),
            limits: crate::spec::Limits::parse(memory, "0.5", "64", "64m", "none").unwrap(),
            hardening: crate::spec::Hardening::default(),
            pull: crate::spec::Pull::Never,
        }
    }

    #[test]
    fn function_tests_are_keyed_on_their_test_never_on_a_token() {
        let py = vec!["python3".to_string()];
        let key = |task_json: &str| {
            KeyInput::new(
                "build",
                &task(task_json),
                "sha256-of-the-program",
                &py,
                "sha256:1",
                &sandbox("256m"),
                1024,
                true,
            )
            .key()
        };
        let test = r#"[{"id": "a", "test": "assert f() == 1"}]"#;
        // Runs draw fresh tokens; the key has none, so it is the same.
        assert_eq!(key(test), key(test));
        assert_ne!(
            key(test),
            key(r#"[{"id": "a", "test": "assert f() == 2"}]"#)
        );
        assert_ne!(
            key(test),
            key(r#"[{"id": "a", "test": "assert f() == 1", "entry_point": "f"}]"#)
        );
        assert_ne!(
            key(test),
            key(r#"[{"id": "a", "stdin": "", "expect": ""}]"#)
        );
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
                "build",
                &task(task_json),
                &hex(&Sha256::digest(bytes)),
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
    fn fail_fast_matters_for_multi_case_tasks_only() {
        let py = vec!["python3".to_string()];
        let key = |json: &str, ff: bool| {
            KeyInput::new(
                "build",
                &task(json),
                "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
                &py,
                "sha256:1",
                &sandbox("256m"),
                1024,
                ff,
            )
            .key()
        };
        let single = r#"[{"id": "a", "stdin": "1", "expect": "2"}]"#;
        assert_eq!(key(single, true), key(single, false));
        let multi = r#"[{"id": "a", "cases": [{"stdin": "1", "expect": "2"}]}]"#;
        assert_ne!(key(multi, true), key(multi, false));
        // And the build is part of every key.
        let other_build = KeyInput::new(
            "other",
            &task(single),
            "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
            &py,
            "sha256:1",
            &sandbox("256m"),
            1024,
            true,
        )
        .key();
        assert_ne!(key(single, true), other_build);
    }

    #[test]
    fn runner_modes_and_cpu_limit_have_their_own_keys() {
        let py = vec!["python3".to_string()];
        let input = || {
            KeyInput::new(
                "build",
                &task(r#"[{"id": "a", "stdin": "1", "expect": "2"}]"#),
                "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
                &py,
                "sha256:1",
                &sandbox("256m"),
                1024,
                true,
            )
        };
        let case = input().key();
        // `--isolate case` serializes exactly as before the runner existed.
        assert!(!String::from_utf8(serde_json::to_vec(&input()).unwrap())
            .unwrap()
            .contains("runner"));
        let runner = input().in_runner(None).key();
        let limited = input().in_runner(Some(2)).key();
        assert_ne!(case, runner);
        assert_ne!(runner, limited);
        assert_ne!(limited, input().in_runner(Some(3)).key());
        assert_eq!(runner, input().in_runner(None).key());
    }

    #[test]
    fn stores_judged_results_and_never_errors() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path().join("c")).unwrap();
        let mut pass = TaskResult::missing("a");
        pass.status = Status::Pass;
        pass.reason = None;
        cache.put("k1", &pass);
        let hit = cache.get("k1", "other").unwrap();
        assert_eq!(hit.id, "other", "a hit is the asking task's entry");
        assert_eq!(hit.cached, Some(true));
        assert_eq!(hit.status, Status::Pass);
        assert!(cache.get("k2", "a").is_none());
        cache.put("k3", &TaskResult::error("a", "image_missing", "x".into()));
        assert!(cache.get("k3", "a").is_none());

        fs::write(dir.path().join("c/k4.json"), "garbage").unwrap();
        assert!(cache.get("k4", "a").is_none());
    }
}
