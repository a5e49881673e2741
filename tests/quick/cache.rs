//! The result cache against a hostile file system, through the binary and
//! a fake docker: a directory others can write or that another user owns,
//! entries swapped, forged, symlinked or huge, and two builds of sbx with
//! the same size and modification time.

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use support::{assert_exit, entry, report, run, show, stderr, task, Fake};

/// Two tasks: `good` passes, `bad` fails (wrong output).
fn two_tasks(fake: &Fake) -> Value {
    fake.file("gen/good.py", b"#!/bin/sh\necho ran\n");
    fake.file("gen/bad.py", b"#!/bin/sh\necho wrong\n");
    json!([task("good", "", "ran\n"), task("bad", "", "ran\n")])
}

fn eval_cached(fake: &Fake, run_id: &str, tasks: &Value, cache: &Path) -> std::process::Output {
    let mut cmd = fake.eval(run_id, tasks);
    cmd.arg("--cache").arg(cache);
    run(cmd)
}

/// The cache's entries (`*.json`), each with the id of the result it holds
/// (an entry may hold its result at the top or under `result`).
fn entries(cache: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for e in fs::read_dir(cache).expect("cache dir") {
        let path = e.expect("entry").path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let value: Value = serde_json::from_slice(&fs::read(&path).expect("read entry"))
            .expect("an entry is JSON");
        let result = value.get("result").unwrap_or(&value);
        found.push((path, result["id"].as_str().expect("an id").to_string()));
    }
    found.sort();
    found
}

fn entry_of(cache: &Path, id: &str) -> PathBuf {
    entries(cache)
        .into_iter()
        .find(|(_, i)| i == id)
        .unwrap_or_else(|| panic!("no cache entry for {id}"))
        .0
}

/// A first run fills the cache: `good` passes, `bad` fails, nothing cached.
fn fill(fake: &Fake, tasks: &Value, cache: &Path) {
    let out = eval_cached(fake, "t-cache-fill", tasks, cache);
    assert_exit(&out, 1);
    let results = report(&out);
    assert_eq!(entry(&results, "good")["status"], "pass", "{}", show(&out));
    assert_eq!(entry(&results, "bad")["status"], "fail", "{}", show(&out));
    assert_eq!(entries(cache).len(), 2, "{}", show(&out));
}

/// `bad` must be judged again (a fail, not cached), with a note naming the
/// entry that was ignored.
fn assert_bad_judged_again(out: &std::process::Output) {
    assert_exit(out, 1);
    let results = report(out);
    let bad = entry(&results, "bad");
    assert_eq!(bad["status"], "fail", "{}", show(out));
    assert!(bad.get("cached").is_none(), "{}", show(out));
    assert_eq!(entry(&results, "good")["cached"], true, "{}", show(out));
    assert!(
        stderr(out).contains("ignoring the cache entry"),
        "{}",
        show(out)
    );
}

#[test]
fn a_cache_directory_others_can_write_is_refused() {
    let fake = Fake::new();
    let tasks = two_tasks(&fake);
    let cache = fake.root().join("cache");
    fs::create_dir(&cache).unwrap();
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o777)).unwrap();
    let out = eval_cached(&fake, "t-cache-777", &tasks, &cache);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{}", show(&out));
    assert!(err.contains("writable by other users"), "{}", show(&out));
    assert!(err.contains("chmod go-w"), "{}", show(&out));
    assert!(out.stdout.is_empty(), "{}", show(&out));
    assert!(
        !fake.commands().iter().any(|c| c == "create"),
        "{:?}",
        fake.commands()
    );
}

#[test]
fn a_cache_directory_another_user_owns_is_refused() {
    let fake = Fake::new();
    let tasks = two_tasks(&fake);
    let cache = fake.root().join("cache");
    fs::create_dir(&cache).unwrap();
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o755)).unwrap();
    // Tests run as root in CI; as another user the chown fails loudly.
    std::os::unix::fs::chown(&cache, Some(65534), Some(65534))
        .expect("chown the cache to uid 65534 (the tests need root)");
    let out = eval_cached(&fake, "t-cache-owner", &tasks, &cache);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{}", show(&out));
    assert!(err.contains("owned by uid 65534"), "{}", show(&out));
    assert!(
        !fake.commands().iter().any(|c| c == "create"),
        "{:?}",
        fake.commands()
    );
}

#[test]
fn a_passing_entry_copied_over_a_failing_ones_is_judged_again() {
    let fake = Fake::new();
    let tasks = two_tasks(&fake);
    let cache = fake.root().join("cache");
    fill(&fake, &tasks, &cache);
    fs::copy(entry_of(&cache, "good"), entry_of(&cache, "bad")).unwrap();
    let out = eval_cached(&fake, "t-cache-swap", &tasks, &cache);
    assert_bad_judged_again(&out);
}

#[test]
fn a_forged_entry_with_impossible_counts_is_judged_again() {
    let fake = Fake::new();
    let tasks = two_tasks(&fake);
    let cache = fake.root().join("cache");
    fill(&fake, &tasks, &cache);
    // `bad`'s own entry (its key kept), turned into a pass that says
    // `9/3 samples passed` on an engine called `evil`.
    let path = entry_of(&cache, "bad");
    let mut value: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let result = match value.get_mut("result") {
        Some(result) => result,
        None => &mut value,
    };
    let fields = result.as_object_mut().unwrap();
    fields.insert("status".into(), json!("pass"));
    fields.remove("reason");
    fields.remove("diff");
    fields.insert("n".into(), json!(3));
    fields.insert("c".into(), json!(9));
    fields.insert("engine".into(), json!("evil"));
    fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
    let junit = fake.root().join("junit.xml");
    let mut cmd = fake.eval("t-cache-forged", &tasks);
    cmd.arg("--cache").arg(&cache).arg("--junit").arg(&junit);
    let out = run(cmd);
    assert_bad_judged_again(&out);
    let xml = fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("failures=\"1\""), "{xml}");
    assert!(!stderr(&out).contains("9/3"), "{}", show(&out));
}

#[test]
fn a_symlinked_entry_is_not_followed() {
    let fake = Fake::new();
    let tasks = two_tasks(&fake);
    let cache = fake.root().join("cache");
    fill(&fake, &tasks, &cache);
    // `bad`'s entry becomes a symlink to a passing entry outside the cache.
    let passing = fake.root().join("passing.json");
    fs::copy(entry_of(&cache, "good"), &passing).unwrap();
    let bad = entry_of(&cache, "bad");
    fs::remove_file(&bad).unwrap();
    std::os::unix::fs::symlink(&passing, &bad).unwrap();
    let out = eval_cached(&fake, "t-cache-link", &tasks, &cache);
    assert_exit(&out, 1);
    let results = report(&out);
    assert_eq!(entry(&results, "bad")["status"], "fail", "{}", show(&out));
    assert!(
        entry(&results, "bad").get("cached").is_none(),
        "{}",
        show(&out)
    );
}

/// The peak resident set (KiB) of the finished child, from its rusage.
fn max_rss_kib(child: std::process::Child) -> (std::process::ExitStatus, u64) {
    use wait4::Wait4;
    let mut child = child;
    let usage = child.wait4().expect("wait4");
    (usage.status, usage.rusage.maxrss / 1024)
}

#[test]
fn a_huge_entry_is_not_read() {
    let fake = Fake::new();
    let tasks = two_tasks(&fake);
    let cache = fake.root().join("cache");
    fill(&fake, &tasks, &cache);
    // A 256 MiB sparse file as `bad`'s entry: reading it whole (the NUL
    // bytes are valid UTF-8) costs 256 MiB of memory.
    let bad = entry_of(&cache, "bad");
    let file = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&bad)
        .unwrap();
    file.set_len(256 << 20).unwrap();
    drop(file);
    let mut cmd = fake.eval("t-cache-huge", &tasks);
    cmd.arg("--cache")
        .arg(&cache)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().expect("start sbx");
    let (status, rss) = max_rss_kib(child);
    assert_eq!(status.code(), Some(1), "{status:?}");
    assert!(
        rss < 160 * 1024,
        "sbx read the huge entry: peak RSS {rss} KiB"
    );
}

/// A copy of sbx with one byte of a string changed, of the same size and
/// with the same modification time as another copy.
fn two_builds(fake: &Fake) -> (PathBuf, PathBuf) {
    let original = fs::read(env!("CARGO_BIN_EXE_sbx")).expect("read sbx");
    let first = fake.root().join("sbx-one");
    let second = fake.root().join("sbx-two");
    fs::write(&first, &original).expect("set up the two builds");
    let needle = b"locked-down Docker container";
    let at = original
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("sbx holds its description");
    let mut changed = original.clone();
    changed[at] = b'L';
    fs::write(&second, &changed).expect("set up the two builds");
    for path in [&first, &second] {
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))
            .expect("set up the two builds");
    }
    let modified = fs::metadata(&first)
        .expect("set up the two builds")
        .modified()
        .expect("set up the two builds");
    let file = fs::File::options()
        .write(true)
        .open(&second)
        .expect("set up the two builds");
    file.set_modified(modified).expect("set up the two builds");
    drop(file);
    let (a, b) = (
        fs::metadata(&first).expect("set up the two builds"),
        fs::metadata(&second).expect("set up the two builds"),
    );
    assert_eq!(a.len(), b.len());
    assert_eq!(
        a.modified().expect("set up the two builds"),
        b.modified().expect("set up the two builds")
    );
    fake.wait_until_executable(&first);
    fake.wait_until_executable(&second);
    (first, second)
}

#[test]
fn two_builds_with_the_same_size_and_time_do_not_share_entries() {
    let fake = Fake::new();
    let tasks = two_tasks(&fake);
    let cache = fake.root().join("cache");
    let (first, second) = two_builds(&fake);
    let eval = |program: &Path, run_id: &str| {
        let mut cmd = fake.eval_as(program, run_id, &tasks);
        cmd.arg("--cache").arg(&cache);
        run(cmd)
    };
    let out = eval(&first, "t-build-1");
    assert_exit(&out, 1);
    assert!(
        report(&out).iter().all(|e| e.get("cached").is_none()),
        "{}",
        show(&out)
    );
    // The same build again is served from the cache ...
    let out = eval(&first, "t-build-2");
    assert!(
        report(&out).iter().all(|e| e["cached"] == true),
        "{}",
        show(&out)
    );
    // ... another build is not, however alike its size and time.
    let out = eval(&second, "t-build-3");
    assert_exit(&out, 1);
    assert!(
        report(&out).iter().all(|e| e.get("cached").is_none()),
        "{}",
        show(&out)
    );
}
