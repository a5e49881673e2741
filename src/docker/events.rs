//! What the engine recorded about a container: its `oom`, `start` and `die`
//! events, read after a run, and the engine's time stamps.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::argv::{self, Docker};
use super::process::{self, CONTROL_TIMEOUT};

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
    let args = argv::events_args(
        name,
        event,
        unix(since) + offset - 1.0,
        unix(SystemTime::now()) + offset + 0.001,
    );
    match process::control(docker, &args, CONTROL_TIMEOUT) {
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

pub fn unix(t: SystemTime) -> f64 {
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

impl ContainerRecord<'_> {
    /// `--rm` leaves nothing to inspect, but the `oom` event stays.
    pub fn oom_killed(&self) -> bool {
        had_event(self.docker, self.name, self.since, self.offset, "oom") == Some(true)
    }

    /// An engine that cannot be asked counts as "started": then the run is
    /// judged on what it did, never turned into an `error` on a guess.
    pub fn started(&self) -> bool {
        had_event(self.docker, self.name, self.since, self.offset, "start").unwrap_or(true)
    }
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
    let days = days_from_civil(d[0], d[1], d[2]);
    Some((days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2] - offset) as f64 + fraction)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
