//! The result cache: each judged candidate's result, stored under a key
//! that covers everything that could change it, so that a second run re-runs
//! only what changed. A key is the SHA-256 of: this sbx build (version,
//! the SHA-256 of the executable, memoised per build; schema number), the candidate's bytes and
//! interpreter, the task's cases (stdin and expectation with its comparison
//! mode and tolerances; for LiveCodeBench's streamed tests, their kind,
//! count and the SHA-256 of their decoded bytes) or function test, timeout (and fail-fast for multi-case tasks), the
//! image ID (not its name), `--max-output`, and every limit and hardening
//! option that shapes the argv. `error` results are never stored. The
//! directory must be private (ours, writable by nobody else); each entry
//! holds its key and is used only if it matches, is a small regular file
//! (never followed through a symlink) and is a result this build could
//! have stored; anything else is judged again.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::console;
use crate::error::{Error, Result};
use crate::eval::input::tasks::Task;
use crate::report::{Status, TaskResult};
use crate::session::Sandbox;

/// Bumped whenever what a cached result means changes.
const SCHEMA: u32 = 2;

/// A cache directory.
#[derive(Debug)]
pub(crate) struct Cache {
    dir: PathBuf,
    /// This exact sbx build: sbx's version alone stays the same across
    /// changes to how results are judged.
    build: String,
    warned: AtomicBool,
}

/// What one cached result depends on.
#[derive(Debug, Serialize)]
pub(crate) struct KeyInput<'a> {
    pub sbx_build: &'a str,
    pub candidate_sha256: String,
    pub interpreter: &'a [String],
    pub image_id: &'a str,
    pub cases: Vec<(String, String)>,
    /// Streamed cases (LiveCodeBench's tests): what they are
    /// (`CaseStream::key`). Left out of the key's JSON for other tasks,
    /// so their keys stay as they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
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
    /// `--isolate case` under its supervisor: what the time limit counts
    /// (`TIME_RULE`, as in the runner modes). Absent for a case container
    /// without the supervisor (the wall clock), whose keys are as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case_time_rule: Option<&'static str>,
}

/// The part of a key that only runner modes have.
#[derive(Debug, Serialize)]
pub(crate) struct RunnerKey {
    pub cpu_limit_s: Option<u64>,
    /// What the time limit counts, versioned: a result judged under
    /// another rule (the wall clock before it) is never reused.
    pub time_rule: &'static str,
}

/// The runner modes' time rule (see the runner's `account` module):
/// CPU time with a backstop on the wall clock minus waits for a CPU.
pub(crate) const TIME_RULE: &str = "cpu-time-1";

impl<'a> KeyInput<'a> {
    /// The key input of one candidate of `task` under `sandbox`.
    #[expect(
        clippy::too_many_arguments,
        reason = "one argument per thing a result depends on"
    )]
    pub(crate) fn new(
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
            stream: task.stream.as_ref().map(|s| s.key()),
            multi_case: task.multi_case,
            function: task.function.as_ref().map(|f| format!("{f:?}")),
            timeout_ms: task.timeout.as_millis(),
            fail_fast: task.multi_case.then_some(fail_fast),
            max_output,
            limits: format!("{:?}", sandbox.limits),
            hardening: format!("{:?}", sandbox.hardening),
            runner: None,
            case_time_rule: None,
        }
    }

    /// The same input for `--isolate case` under the supervisor, which
    /// judges time by `TIME_RULE`.
    pub(crate) fn supervised(self) -> KeyInput<'a> {
        KeyInput {
            case_time_rule: Some(TIME_RULE),
            ..self
        }
    }

    /// The same input for a runner mode (`--isolate candidate|worker`).
    pub(crate) fn in_runner(self, cpu_limit_s: Option<u64>) -> KeyInput<'a> {
        KeyInput {
            runner: Some(RunnerKey {
                cpu_limit_s,
                time_rule: TIME_RULE,
            }),
            ..self
        }
    }

    /// The cache key: the SHA-256 of the canonical JSON of this input.
    pub(crate) fn key(&self) -> String {
        let json = serde_json::to_vec(self).expect("a key input serializes");
        hex(&Sha256::digest(&json))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Never an `error`: sbx could not judge it, the next run may.
fn cacheable(result: &TaskResult) -> bool {
    result.status != Status::Error
}

/// The largest entry read: far above any real one (a result keeps a
/// stderr tail of 300 characters and a short diff), so a planted huge file
/// costs nothing.
const ENTRY_MAX: u64 = 1 << 20;

/// One stored entry: the key it was stored under, and the result.
#[derive(Debug, Serialize, serde::Deserialize)]
struct Stored {
    key: String,
    result: TaskResult,
}

/// Why a stored entry is not used, or `None` if its result is one this
/// build could have stored: a single candidate's judged verdict (never an
/// `error`, never a multi-sample entry), whose counts agree.
fn inconsistent(result: &TaskResult) -> Option<&'static str> {
    if !cacheable(result) {
        return Some("an `error` is never stored");
    }
    if result.samples.is_some()
        || result.n.is_some()
        || result.c.is_some()
        || result.errors.is_some()
        || !result.pass_at.is_empty()
        || result.pass_at_k_bounds.is_some()
        || result.incomplete.is_some()
        || result.sample.is_some()
    {
        return Some("it holds sample counts, which one candidate's result never has");
    }
    match (result.status, result.reason.as_deref()) {
        (Status::Pass, None) => {}
        (Status::Pass, Some(_)) => return Some("a pass with a failure reason"),
        (Status::Fail | Status::Missing, _) => {}
        (Status::Error, _) => return Some("an `error` is never stored"),
    }
    if let Some(total) = result.cases_total {
        let passed = result.cases_passed.unwrap_or(0);
        let bad_case = result.case.is_some_and(|c| c == 0 || c > total);
        let failed = result.cases_failed.unwrap_or(0);
        if passed + failed > total || bad_case || (result.status == Status::Pass && passed != total)
        {
            return Some("its case counts do not add up");
        }
    } else if result.cases_passed.is_some()
        || result.case.is_some()
        || result.cases_failed.is_some()
    {
        return Some("its case counts do not add up");
    }
    None
}

/// The memo of this build's identity: the files `<cache>/builds/<dev>-<ino>-
/// <size>-<mtime>-<ctime>`, each holding the SHA-256 of the executable with
/// that identity. The change time cannot be set back by `touch` or `cp -p`,
/// and any write to the file changes it.
const MEMO_DIR: &str = "builds";

/// This build's identity: the schema, sbx's version and the SHA-256 of the
/// running executable (read through `/proc/self/exe`, the very file that
/// runs), memoised in the private cache directory under the executable's
/// device, inode, size and times, so it is hashed once per build. Size
/// and time alone are never the identity: two builds can share them.
fn build_id(dir: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::MetadataExt;
    let exe = match fs::File::open("/proc/self/exe") {
        Ok(file) => file,
        Err(_) => fs::File::open(std::env::current_exe()?)?,
    };
    let stamp = |m: &fs::Metadata| {
        format!(
            "{}-{}-{}-{}.{}-{}.{}",
            m.dev(),
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec()
        )
    };
    let before = stamp(&exe.metadata()?);
    let memo_dir = dir.join(MEMO_DIR);
    let memo = memo_dir.join(&before);
    // The memo is in the private directory; it is still read as a small
    // regular file and used only if it is a SHA-256.
    if let Ok(bytes) = crate::files::read_regular_bounded(&memo, 64) {
        if bytes.len() == 64
            && bytes
                .iter()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            let sha = String::from_utf8(bytes).expect("hex is ASCII");
            return Ok(format!("{SCHEMA}-{}-{sha}", env!("CARGO_PKG_VERSION")));
        }
    }
    let mut hasher = Sha256::new();
    std::io::copy(&mut &exe, &mut hasher)?;
    let sha = hex(&hasher.finalize());
    // Memoised only if the file did not change while it was read.
    if stamp(&exe.metadata()?) == before {
        let _ = fs::create_dir(&memo_dir);
        let private = fs::symlink_metadata(&memo_dir).is_ok_and(|m| {
            m.file_type().is_dir() && m.uid() == rustix::process::geteuid().as_raw()
        });
        if private {
            let _ = crate::files::write_whole(&memo, |w| Ok(w.write_all(sha.as_bytes())?));
        }
    }
    Ok(format!("{SCHEMA}-{}-{sha}", env!("CARGO_PKG_VERSION")))
}

impl Cache {
    /// Opens (creating, mode 0700) the cache directory, which must be
    /// private: ours, and writable by nobody else (exit 2 otherwise).
    pub(crate) fn open(dir: PathBuf) -> Result<Cache> {
        // Its parents as the umask says (`--cache .cache/sbx`); the
        // directory itself private.
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(|source| {
                Error::Usage(format!(
                    "--cache `{}` cannot be used as the cache directory: {source}",
                    crate::escape::path(&dir)
                ))
            })?;
        }
        crate::files::private_dir(
            &dir,
            "--cache directory",
            crate::files::Private::Writes,
            "the cache must be a directory of your own that nobody else can write to (`chmod go-w` it, or give another --cache)",
        )?;
        let build = build_id(&dir).map_err(|source| {
            Error::Usage(format!(
                "cannot read sbx's own executable to name this build in the cache: {source}; run without --cache"
            ))
        })?;
        Ok(Cache {
            dir,
            build,
            warned: AtomicBool::new(false),
        })
    }

    /// This build's identity, part of every key.
    pub(crate) fn build(&self) -> &str {
        &self.build
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The stored result for `key`, as task `id`'s and marked `cached`;
    /// `None` on a miss. An entry that is not a small regular file, not
    /// JSON, stored under another key, or not a result this build could have
    /// stored is a miss too, with a note: the candidate is judged again and
    /// the entry replaced.
    pub(crate) fn get(&self, key: &str, id: &str) -> Option<TaskResult> {
        let path = self.path(key);
        let ignored = |why: &str| {
            console::note(&format!(
                "sbx: ignoring the cache entry `{}` ({why}); judging task `{}` again",
                crate::escape::path(&path),
                crate::escape::line(id)
            ));
            None
        };
        let bytes = match crate::files::read_regular_bounded(&path, ENTRY_MAX) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => return ignored(&e.to_string()),
        };
        let Ok(entry) = serde_json::from_slice::<Stored>(&bytes) else {
            return ignored("not an entry of this sbx");
        };
        if entry.key != key {
            return ignored("it was stored under another key");
        }
        let mut result = entry.result;
        if let Some(why) = inconsistent(&result) {
            return ignored(why);
        }
        // The key leaves the id out (two tasks may share a result); the
        // entry is this task's. The engine that ran it then is not one this
        // run used: it is not shown.
        result.id = id.to_string();
        result.engine = None;
        result.requeued.clear();
        result.cached = Some(true);
        Some(result)
    }

    /// Stores a judged result (never an `error`), atomically, with its key;
    /// says once when the directory cannot be written.
    pub(crate) fn put(&self, key: &str, result: &TaskResult) {
        if !cacheable(result) {
            return;
        }
        let mut result = result.clone();
        result.engine = None;
        result.requeued.clear();
        result.cached = None;
        let entry = Stored {
            key: key.to_string(),
            result,
        };
        let Ok(json) = serde_json::to_vec(&entry) else {
            return;
        };
        let written = crate::files::write_whole(&self.path(key), |w| Ok(w.write_all(&json)?));
        if let Err(e) = written {
            let e = match e {
                crate::files::WriteStop::Io(e) => e.to_string(),
                crate::files::WriteStop::Interrupted(_) => "interrupted".into(),
            };
            if !self.warned.swap(true, Ordering::SeqCst) {
                console::note(&format!(
                    "sbx: cannot write the cache `{}` ({e}); results are not cached",
                    crate::escape::path(&self.dir)
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::input::tasks::{parse_tasks, TaskDefaults};
    use crate::spec::CompareMode as Mode;
    use crate::verdict::matcher::Tolerance;
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
        // The time rule is part of a runner mode's key.
        let json =
            String::from_utf8(serde_json::to_vec(&input().in_runner(None)).unwrap()).unwrap();
        assert!(json.contains(TIME_RULE), "{json}");
        // And of a supervised case container's, which differs from a bare
        // one's.
        let json = String::from_utf8(serde_json::to_vec(&input().supervised()).unwrap()).unwrap();
        assert!(json.contains("\"case_time_rule\":\"cpu-time-1\""), "{json}");
        assert_ne!(input().supervised().key(), input().key());
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

    #[test]
    fn entries_under_another_key_or_impossible_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path().join("c")).unwrap();
        let mut pass = TaskResult::missing("a");
        pass.status = Status::Pass;
        pass.reason = None;
        pass.engine = Some("evil".into());
        cache.put("good", &pass);
        assert_eq!(cache.get("good", "a").unwrap().engine, None);
        // A passing entry copied over another key's is not that key's.
        fs::copy(
            dir.path().join("c/good.json"),
            dir.path().join("c/bad.json"),
        )
        .unwrap();
        assert!(cache.get("bad", "a").is_none());
        // Counts one candidate's result never has.
        let mut counts = pass.clone();
        counts.n = Some(3);
        counts.c = Some(9);
        let forged = serde_json::json!({"key": "forged", "result": counts});
        fs::write(dir.path().join("c/forged.json"), forged.to_string()).unwrap();
        assert!(cache.get("forged", "a").is_none());
        let mut cases = pass.clone();
        cases.cases_total = Some(3);
        cases.cases_passed = Some(2);
        let forged = serde_json::json!({"key": "cases", "result": cases});
        fs::write(dir.path().join("c/cases.json"), forged.to_string()).unwrap();
        assert!(cache.get("cases", "a").is_none());
        // A symlink to a real entry is not read.
        std::os::unix::fs::symlink(
            dir.path().join("c/good.json"),
            dir.path().join("c/link.json"),
        )
        .unwrap();
        let linked = serde_json::json!({"key": "link", "result": pass});
        fs::write(dir.path().join("c/good.json"), linked.to_string()).unwrap();
        assert!(cache.get("link", "a").is_none());
    }

    #[test]
    fn the_build_is_the_executables_hash_memoised() {
        let dir = tempfile::tempdir().unwrap();
        let first = Cache::open(dir.path().join("c")).unwrap();
        let exe = fs::read("/proc/self/exe").unwrap();
        assert!(
            first.build().ends_with(&hex(&Sha256::digest(&exe))),
            "{}",
            first.build()
        );
        let memos: Vec<_> = fs::read_dir(dir.path().join("c/builds")).unwrap().collect();
        assert_eq!(memos.len(), 1);
        // A second open reads the memo; a memo that is not a hash is not used.
        assert_eq!(
            Cache::open(dir.path().join("c")).unwrap().build(),
            first.build()
        );
        let memo = memos[0].as_ref().unwrap().path();
        fs::write(&memo, "not a hash").unwrap();
        assert_eq!(
            Cache::open(dir.path().join("c")).unwrap().build(),
            first.build()
        );
    }
}
