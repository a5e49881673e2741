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

/// The `(status, exit code)` of each `event` the engine recorded for
/// exactly container `name` since `since` (`offset` is the engine's clock
/// minus ours, in seconds); `None` if the engine could not be asked.
fn events(
    docker: &Docker,
    name: &str,
    event: &str,
    since: SystemTime,
    offset: f64,
) -> Option<Vec<(String, String)>> {
    // A second of slack before: the engine's clock rounds. The range ends
    // now, on the engine's clock (a later end would wait for it).
    let args = docker::events_args(
        name,
        event,
        unix(since) + offset - 1.0,
        unix(SystemTime::now()) + offset + 0.001,
    );
    match supervise::control(docker, &args, CONTROL_TIMEOUT) {
        Ok(c) if c.success() => Some(
            c.stdout
                .lines()
                .filter_map(|line| {
                    let mut fields = line.split('\t');
                    let who = fields.next()?.trim().trim_start_matches('/');
                    let status = fields.next()?.trim();
                    let code = fields.next().unwrap_or("").trim();
                    (who == name).then(|| (status.to_string(), code.to_string()))
                })
                .collect(),
        ),
        _ => None,
    }
}

/// Whether the engine recorded the `event` for container `name` between
/// `since` and now; `None` if it could not be asked.
fn had_event(
    docker: &Docker,
    name: &str,
    since: SystemTime,
    offset: f64,
    event: &str,
) -> Option<bool> {
    events(docker, name, event, since, offset).map(|found| found.iter().any(|(s, _)| s == event))
}

/// Checks that the engine itself recorded the program's end with `code`
/// (a `die` event of the container): the attached client's exit code alone
/// cannot tell a program's exit from a connection to the engine that was
/// cut. `Err` says why the result cannot be trusted.
pub fn confirm_exit(
    record: &ContainerRecord<'_>,
    code: Option<i32>,
) -> std::result::Result<(), String> {
    let Some(code) = code else {
        return Err("the docker client was killed by a signal sbx did not send".into());
    };
    let wanted = code.to_string();
    // The event can trail the client's exit by a moment: ask a few times.
    for attempt in 0..4 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(250));
        }
        match events(
            record.docker,
            record.name,
            "die",
            record.since,
            record.offset,
        ) {
            Some(found) if found.iter().any(|(_, c)| *c == wanted) => return Ok(()),
            Some(_) => {}
            None => return Err("the engine did not answer after the run".into()),
        }
    }
    Err(format!(
        "the docker client exited {code}, but the engine has no record of the program exiting {code}, so the result could not be confirmed (the connection to the engine may have been cut)"
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
    /// The engine's clock minus ours, in seconds (0 for an engine on this
    /// machine).
    pub offset: f64,
}

impl Record for ContainerRecord<'_> {
    /// `--rm` leaves nothing to inspect, but the `oom` event stays.
    fn oom_killed(&self) -> bool {
        had_event(self.docker, self.name, self.since, self.offset, "oom") == Some(true)
    }

    /// An engine that cannot be asked counts as "started": then the run is
    /// judged on what it did, never turned into an `error` on a guess.
    fn started(&self) -> bool {
        had_event(self.docker, self.name, self.since, self.offset, "start").unwrap_or(true)
    }
}

/// The engine's clock minus ours, in seconds, read from `docker info`
/// (halfway through the call); `None` if it cannot be read.
pub fn clock_offset(docker: &Docker) -> Option<f64> {
    let before = unix(SystemTime::now());
    let info = supervise::control(docker, &docker::engine_time_args(), CONTROL_TIMEOUT).ok()?;
    let after = unix(SystemTime::now());
    if !info.success() {
        return None;
    }
    parse_rfc3339(info.stdout.trim()).map(|engine| engine - (before + after) / 2.0)
}

/// Seconds since the Unix epoch of an RFC 3339 time such as
/// `2026-11-29T18:20:01.123456789Z` or `...+01:00`.
pub fn parse_rfc3339(text: &str) -> Option<f64> {
    let (date, rest) = text.split_once('T')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let (clock, zone) = match rest.find(['Z', 'z', '+', '-']) {
        Some(i) => rest.split_at(i),
        None => return None,
    };
    let offset = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (h, m) = zone[1..].split_once(':')?;
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60)
        }
    };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    let t: Vec<i64> = hms
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    if d.len() != 3 || t.len() != 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let fraction: f64 = format!("0.{fraction}").parse().ok()?;
    let days = crate::gc::days_from_civil(d[0], d[1], d[2]);
    Some((days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2] - offset) as f64 + fraction)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(
            parse_rfc3339("2026-11-29T15:40:27.5Z"),
            Some(1_795_966_827.5)
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T16:40:27.5+01:00"),
            Some(1_795_966_827.5)
        );
        assert_eq!(parse_rfc3339("2026-11-29 15:40:27 +0000 UTC"), None);
        assert_eq!(parse_rfc3339("garbage"), None);
    }
}
