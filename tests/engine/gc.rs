//! `sbx gc` removes only what carries sbx's labels: an image named
//! `sbx-deliver:<run>-<n>` without the bake label (a `docker commit` or a
//! `docker tag` to that name) is kept, and one sbx baked is removed. It
//! removes the staging directories of runs that are gone (a SIGKILLed sbx
//! leaves its own) and keeps a live run's. Its dry run says what the real
//! run does, and an unreachable engine is one line. Real engine: fails
//! loudly without one; every gc here has `--run`, so other tests' leftovers
//! are never touched.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{docker, finish, Cleanup, BUSYBOX};

const LIMIT: Duration = Duration::from_secs(60);

/// Removes the image tags it holds when dropped, so a failing test leaves
/// none behind (`rmi` of a tag: the image keeps its other names).
struct Tags(Vec<String>);

impl Drop for Tags {
    fn drop(&mut self) {
        for tag in &self.0 {
            if common::image_exists(tag).unwrap_or(false) {
                let _ = common::try_docker(&["rmi", "-f", "--", tag]);
            }
        }
    }
}

/// `sbx gc --run RUN ARGS` with `tmp` as TMPDIR: (exit code, stdout, stderr).
fn gc(tmp: &Path, run_id: &str, args: &[&str]) -> (i32, String, String) {
    let mut cmd = common::sbx(None);
    cmd.env("TMPDIR", tmp)
        .args(["gc", "--run", run_id])
        .args(args);
    let out = finish(cmd, None, LIMIT);
    (out.code(), out.stdout, out.stderr)
}

#[test]
fn gc_keeps_images_named_like_sbx_but_not_labelled_by_it() {
    let run_id = common::run_id("gc", "unlabelled");
    let mut guard = Cleanup::new(&[&run_id]);
    let tmp = tempfile::tempdir().expect("tmp");
    let committed = format!("sbx-deliver:{run_id}-1");
    let tagged = format!("sbx-deliver:{run_id}-2");
    // Labelled with the run, as a bake is, but not with its own tag: an
    // image built or committed from a baked one inherits that much.
    let inherited = format!("sbx-deliver:{run_id}-3");
    let baked = format!("sbx-deliver:{run_id}-4");
    let _tags = Tags(vec![
        committed.clone(),
        tagged.clone(),
        inherited.clone(),
        baked.clone(),
    ]);
    let name = format!("{run_id}-plain");
    guard.add_names(std::slice::from_ref(&name));
    docker(&[
        "create",
        "--pull",
        "never",
        "--network",
        "none",
        "--name",
        &name,
        "--",
        BUSYBOX,
        "true",
    ]);
    docker(&["commit", &name, &committed]);
    docker(&["rm", "-f", "--", &name]);
    docker(&["tag", BUSYBOX, &tagged]);
    let ctx = tmp.path().join("ctx");
    fs::create_dir(&ctx).expect("ctx");
    fs::write(ctx.join("Dockerfile"), format!("FROM {BUSYBOX}\n")).expect("Dockerfile");
    let ctx = ctx.to_str().expect("UTF-8");
    let run_label = format!("sbx.run={run_id}");
    docker(&[
        "build",
        "--quiet",
        "--network",
        "none",
        "--label",
        &run_label,
        "--label",
        &format!("sbx.bake={baked}"),
        "--tag",
        &inherited,
        ctx,
    ]);
    // What sbx's bake gives: both labels, the bake label its own tag.
    docker(&[
        "build",
        "--quiet",
        "--network",
        "none",
        "--label",
        &run_label,
        "--label",
        &format!("sbx.bake={baked}"),
        "--tag",
        &baked,
        ctx,
    ]);
    let exists = |tag: &str| common::image_exists(tag).expect("docker");

    // The dry run lists exactly what the real run then removes.
    let (code, dry_out, dry_err) = gc(tmp.path(), &run_id, &["--dry-run"]);
    assert_eq!(code, 0, "{dry_out}\n{dry_err}");
    let (code, out, err) = gc(tmp.path(), &run_id, &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        exists(&committed),
        "gc removed a committed image: {out}\n{err}"
    );
    assert!(exists(&tagged), "gc removed a plain tag: {out}\n{err}");
    assert!(
        exists(&inherited),
        "gc removed an image with another's bake label: {out}\n{err}"
    );
    assert!(!exists(&baked), "gc kept sbx's baked image: {out}\n{err}");
    assert!(exists(BUSYBOX));
    assert_eq!(
        dry_out.replace("would remove", "removing"),
        out,
        "the dry run said otherwise"
    );
    assert!(out.contains(&baked), "{out}");
    for kept in [&committed, &tagged, &inherited] {
        assert!(!out.contains(kept.as_str()), "{kept} listed: {out}");
        assert!(err.contains(&format!("skipping {kept}")), "{err}");
    }
    assert!(
        err.contains("0 container(s) and 1 baked image(s) removed"),
        "{err}"
    );
    guard.finish();
}

/// A base (`-FROM-`) tag that is its image's last name: the real run keeps
/// it, and so does the dry run say.
#[test]
fn gc_dry_run_says_keep_for_a_last_base_tag() {
    let run_id = common::run_id("gc", "drykeep");
    let mut guard = Cleanup::new(&[&run_id]);
    let tmp = tempfile::tempdir().expect("tmp");
    let last = format!("sbx-deliver:{run_id}-FROM-0");
    let _tags = Tags(vec![last.clone()]);
    let name = format!("{run_id}-plain");
    guard.add_names(std::slice::from_ref(&name));
    docker(&[
        "create",
        "--pull",
        "never",
        "--network",
        "none",
        "--name",
        &name,
        "--",
        BUSYBOX,
        "true",
    ]);
    docker(&["commit", &name, &last]);
    docker(&["rm", "-f", "--", &name]);
    let (code, out, err) = gc(tmp.path(), &run_id, &["--dry-run"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("would remove"), "{out}");
    assert!(err.contains(&format!("would keep {last}")), "{err}");
    assert!(err.contains("0 container(s) and 0 baked image(s)"), "{err}");
    let (code, out, err) = gc(tmp.path(), &run_id, &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(common::image_exists(&last).expect("docker"));
    guard.finish();
}

/// A SIGKILLed sbx leaves its staging directory; gc removes it once the
/// run is gone, and keeps a live run's (the run holds its lock).
#[test]
fn gc_removes_the_staging_directory_of_a_killed_run() {
    let run_id = common::run_id("gc", "staging");
    let guard = Cleanup::new(&[&run_id]);
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tempfile::tempdir().expect("scratch");
    fs::write(dir.path().join("f.sh"), "#!/bin/sh\necho hi\n").expect("write");
    // A docker that records its pid and sleeps: sbx waits on it, alive,
    // with its staging directory in place.
    let fake = dir.path().join("docker");
    fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho $$ >> {}/pids\nexec sleep 60\n",
            dir.path().display()
        ),
    )
    .expect("write");
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut cmd = common::sbx(Some(&run_id));
    cmd.env("TMPDIR", tmp.path())
        .current_dir(dir.path())
        .args(["run", "--docker"])
        .arg(&fake)
        .args(["f.sh", BUSYBOX, "30"]);
    let running = common::start(cmd, None);
    let staging = || -> Vec<String> {
        fs::read_dir(tmp.path())
            .expect("ls")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("sbx-{run_id}-stage-")))
            .collect()
    };
    let deadline = Instant::now() + LIMIT;
    while (staging().is_empty() || !dir.path().join("pids").exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(staging().len(), 1, "no staging directory appeared");
    let (code, out, err) = gc(tmp.path(), &run_id, &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(
        staging().len(),
        1,
        "gc removed a live run's staging: {out}\n{err}"
    );
    // SIGKILL: sbx cannot clean up.
    let pid = running.pid().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status();
    let _ = running.wait(LIMIT);
    for fake_pid in fs::read_to_string(dir.path().join("pids"))
        .unwrap_or_default()
        .lines()
    {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", fake_pid.trim()])
            .status();
    }
    assert_eq!(staging().len(), 1, "sbx removed its staging after SIGKILL?");
    let (code, dry_out, err) = gc(tmp.path(), &run_id, &["--dry-run"]);
    assert_eq!(code, 0, "{dry_out}\n{err}");
    assert_eq!(staging().len(), 1, "the dry run removed it");
    let (code, out, err) = gc(tmp.path(), &run_id, &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(staging().is_empty(), "gc left it: {out}\n{err}");
    assert!(out.contains("(staging directory, sbx.run="), "{out}");
    assert_eq!(dry_out.replace("would remove", "removing"), out);
    guard.finish();
}

/// An engine that does not answer: one line, exit 125, in a dry run too.
#[test]
fn gc_says_an_unreachable_engine_once() {
    let tmp = tempfile::tempdir().expect("tmp");
    for extra in [&[][..], &["--engine", "unix:///nonexistent/docker.sock"]] {
        let mut cmd = common::sbx(None);
        cmd.env("TMPDIR", tmp.path())
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .args(["gc", "--dry-run", "--run", "gc-unreachable"])
            .args(extra);
        let out = finish(cmd, None, LIMIT);
        assert_eq!(out.code(), 125, "{extra:?}: {out:?}");
        assert_eq!(
            out.stderr.matches("unreachable").count(),
            1,
            "{extra:?}: {}",
            out.stderr
        );
    }
}
