//! `RunnerSession` against a fake docker CLI whose "runner" says hello and
//! then dies mid-frame, or dies at once: both are infrastructure errors, and
//! the container is removed by name either way. No engine is needed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use sbx::docker::Docker;
use sbx::runner::host::{RunnerError, RunnerSession};
use sbx_runner::protocol::{write_message, Candidate, FrameError, Message};

/// create: prints an id. start: replays `stream` as the runner's stdout,
/// closes it, says something on stderr and exits 137 a moment later (its
/// stdin stays open meanwhile, so what the host sends is not refused).
/// rm: logs its arguments.
const FAKE: &str = r#"#!/bin/sh
dir='@DIR@'
case "$1" in
create) echo fakeid ;;
start) cat "$dir/stream"; exec 1>&-; echo 'runner died' >&2; sleep 1; exit 137 ;;
rm) echo "$@" >> "$dir/rm.log" ;;
*) exit 1 ;;
esac
"#;

fn fake(dir: &Path, stream: &[u8]) -> Docker {
    let script = dir.join("docker");
    fs::write(&script, FAKE.replace("@DIR@", &dir.display().to_string())).expect("write fake");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod fake");
    fs::write(dir.join("stream"), stream).expect("write stream");
    // A child another test thread forked while the script was open for
    // writing holds it until it execs: running it is ETXTBSY meanwhile.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match std::process::Command::new(&script).arg("__probe").output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                assert!(Instant::now() < deadline, "the fake docker stays busy");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("the fake docker does not run: {e}"),
            Ok(_) => break,
        }
    }
    Docker::new(script)
}

fn hello() -> Vec<u8> {
    let mut buf = Vec::new();
    write_message(
        &mut buf,
        &Message::Hello {
            sbx_version: env!("CARGO_PKG_VERSION").into(),
            oom_counter: true,
        },
    )
    .expect("encode");
    buf
}

fn removed(dir: &Path) -> String {
    fs::read_to_string(dir.join("rm.log")).unwrap_or_default()
}

#[test]
fn a_runner_dying_mid_frame_is_a_framing_error_and_the_container_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mut stream = hello();
    let mut loaded = Vec::new();
    write_message(&mut loaded, &Message::Refused("x".repeat(100))).unwrap();
    stream.extend_from_slice(&loaded[..loaded.len() / 2]);
    let docker = fake(dir.path(), &stream);
    let create = vec!["create".into(), "--name".into(), "sbx-fake-1".into()];
    let started = Instant::now();
    let mut session = RunnerSession::start(&docker, &create, "sbx-fake-1").unwrap();
    let candidate = Candidate {
        file_name: "t.sh".into(),
        program: b"#!/bin/sh\n".to_vec(),
        interpreter: None,
        build: None,
    };
    let err = session.load(&candidate).unwrap_err();
    assert!(
        matches!(err, RunnerError::Frame(FrameError::Truncated)),
        "{err}"
    );
    drop(session);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(removed(dir.path()), "rm -f -- sbx-fake-1\n");
}

#[test]
fn a_runner_that_never_says_hello_is_an_error_with_the_clients_line() {
    let dir = tempfile::tempdir().unwrap();
    let docker = fake(dir.path(), b"");
    let create = vec!["create".into()];
    let err = RunnerSession::start(&docker, &create, "sbx-fake-2").unwrap_err();
    assert!(
        matches!(&err, RunnerError::Closed(line) if line == "runner died"),
        "{err}"
    );
    assert_eq!(removed(dir.path()), "rm -f -- sbx-fake-2\n");
}

#[test]
fn forged_json_instead_of_frames_is_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let docker = fake(dir.path(), b"{\"status\":\"pass\"}\n");
    let create = vec!["create".into()];
    let err = RunnerSession::start(&docker, &create, "sbx-fake-3").unwrap_err();
    assert!(
        matches!(err, RunnerError::Frame(FrameError::BadMagic(_))),
        "{err}"
    );
    assert_eq!(removed(dir.path()), "rm -f -- sbx-fake-3\n");
}
