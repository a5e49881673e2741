//! Questions to the engine that come before or after a run: is the image
//! here (and can it be pulled), was the container OOM-killed, what of a run
//! is left. All through `supervise::control`.

use std::ffi::OsString;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::console;
use crate::docker::{self, Docker};
use crate::error::{Error, Result};
use crate::outcome::Record;
use crate::spec::Pull;
use crate::supervise::{self, Control, CONTROL_TIMEOUT};

/// How long a pull may take (it happens before any run's clock starts).
const PULL_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Makes sure `image` is present locally before any clock starts, pulling it
/// when allowed. Returns the image ID.
pub fn ensure_image(docker: &Docker, image: &str, pull: Pull) -> Result<String> {
    let inspect = || {
        supervise::control_interruptible(
            docker,
            &docker::image_inspect_args(image),
            CONTROL_TIMEOUT,
        )
    };
    let found = inspect()?;
    if found.success() {
        return Ok(found.stdout.trim().to_string());
    }
    if !is_missing_image(&found) {
        return Err(Error::EngineUnreachable(found.stderr_line()));
    }
    pull_missing(docker, image, pull)?;
    let again = inspect()?;
    if again.success() {
        Ok(again.stdout.trim().to_string())
    } else {
        Err(Error::PullFailed {
            image: image.to_string(),
            message: again.stderr_line(),
        })
    }
}

/// Pulls a missing image if `pull` allows it (interruptible: no container
/// exists yet).
fn pull_missing(docker: &Docker, image: &str, pull: Pull) -> Result<()> {
    if pull == Pull::Never {
        return Err(Error::ImageMissing(image.to_string()));
    }
    console::note(&format!(
        "sbx: image `{image}` is not present locally; pulling it before the clock starts"
    ));
    let pulled = supervise::control_interruptible(docker, &docker::pull_args(image), PULL_TIMEOUT)?;
    if pulled.success() {
        Ok(())
    } else {
        Err(Error::PullFailed {
            image: image.to_string(),
            message: pulled.stderr_line(),
        })
    }
}

/// `docker create` of a run's container, before its clock starts. A missing
/// image is pulled first when allowed. Not interruptible: a create killed
/// half-way can still complete in the engine; it takes milliseconds, and the
/// caller looks for signals right after.
pub fn create_container(docker: &Docker, args: &[OsString], image: &str, pull: Pull) -> Result<()> {
    let created = supervise::control(docker, args, CONTROL_TIMEOUT)?;
    if created.success() {
        return Ok(());
    }
    if !is_missing_image(&created) {
        return Err(create_error(&created));
    }
    pull_missing(docker, image, pull)?;
    let again = supervise::control(docker, args, CONTROL_TIMEOUT)?;
    if again.success() {
        Ok(())
    } else {
        Err(create_error(&again))
    }
}

fn create_error(created: &Control) -> Error {
    let line = created.stderr_line();
    if line.contains("Cannot connect to the Docker daemon")
        || line.contains("Is the docker daemon running")
    {
        Error::EngineUnreachable(line)
    } else {
        Error::CreateFailed(line)
    }
}

/// Whether a failed `image inspect` or `create` says "no such image" (as
/// opposed to an engine that did not answer).
fn is_missing_image(failed: &Control) -> bool {
    !failed.success() && failed.stderr.to_ascii_lowercase().contains("no such image")
}

/// Whether the engine recorded an `oom` event for the container between
/// `since` and now. `--rm` leaves nothing to inspect, but the event stays.
pub fn oom_killed(docker: &Docker, name: &str, since: SystemTime) -> bool {
    had_event(docker, name, since, "oom") == Some(true)
}

/// Whether the engine recorded the `event` for container `name` between
/// `since` and now; `None` if it could not be asked.
fn had_event(docker: &Docker, name: &str, since: SystemTime, event: &str) -> Option<bool> {
    // A second of slack before: the engine's clock rounds.
    let args = docker::events_args(
        name,
        event,
        unix(since) - 1.0,
        unix(SystemTime::now()) + 0.001,
    );
    match supervise::control(docker, &args, CONTROL_TIMEOUT) {
        Ok(c) if c.success() => Some(c.stdout.lines().any(|l| l.trim() == event)),
        _ => None,
    }
}

/// Checks that the engine itself recorded the program's end with `code`
/// (a `die` event of the container): the attached client's exit code alone
/// cannot tell a program's exit from a connection to the engine that was
/// cut. `Err` says why the result cannot be trusted.
pub fn confirm_exit(
    docker: &Docker,
    name: &str,
    since: SystemTime,
    code: Option<i32>,
) -> std::result::Result<(), String> {
    let Some(code) = code else {
        return Err("the docker client was killed by a signal sbx did not send".into());
    };
    // The event can trail the client's exit by a moment: ask a few times.
    for attempt in 0..4 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(250));
        }
        let args = docker::events_format_args(
            name,
            "die",
            unix(since) - 1.0,
            unix(SystemTime::now()) + 0.001,
            "{{.Actor.Attributes.exitCode}}",
        );
        match supervise::control(docker, &args, CONTROL_TIMEOUT) {
            Ok(c) if c.success() => {
                if c.stdout.lines().any(|l| l.trim().parse() == Ok(code)) {
                    return Ok(());
                }
            }
            Ok(c) => return Err(format!("the engine did not answer: {}", c.stderr_line())),
            Err(e) => return Err(format!("the engine did not answer: {e}")),
        }
    }
    Err(format!(
        "the docker client exited {code}, but the engine has no record of the program exiting {code}: the connection to the engine was lost during the run"
    ))
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The engine's record of one run's container, asked lazily.
#[derive(Debug, Clone, Copy)]
pub struct ContainerRecord<'a> {
    pub docker: &'a Docker,
    pub name: &'a str,
    /// When its client was started.
    pub since: SystemTime,
}

impl Record for ContainerRecord<'_> {
    fn oom_killed(&self) -> bool {
        oom_killed(self.docker, self.name, self.since)
    }

    /// An engine that cannot be asked counts as "started": then the run is
    /// judged on what it did, never turned into an `error` on a guess.
    fn started(&self) -> bool {
        had_event(self.docker, self.name, self.since, "start").unwrap_or(true)
    }
}

/// Removes every container that carries the label of `run_id`, whatever its
/// state. Returns how many were found.
pub fn remove_run(docker: &Docker, run_id: &str) -> Result<usize> {
    let listed = supervise::control(docker, &docker::list_run_args(run_id), CONTROL_TIMEOUT)?;
    if !listed.success() {
        return Err(Error::EngineUnreachable(listed.stderr_line()));
    }
    let ids: Vec<String> = listed
        .stdout
        .split_whitespace()
        .map(str::to_string)
        .collect();
    supervise::remove_containers(docker, &ids);
    Ok(ids.len())
}
