//! The engine's record of each container, read from one long-lived
//! `docker events` stream per engine, filtered by the run's label and
//! started before the run's first container: every `create`, `start`,
//! `oom`, `die` and `destroy` is noted as it arrives. Asking the engine
//! after a task ended cannot work under load: the daemon keeps only its
//! last 256 events.
//!
//! A container's record counts only if the stream saw its `create`; a
//! stream that ended (its death is noticed) or a record that does not
//! arrive in time gives no evidence, and no failure is scored on it.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use super::argv::{self, Docker};
use super::process;
use crate::error::Result;

/// How long sbx waits, once a run is over, for the engine's record of its
/// end (the `die` trails the client's exit; a loaded engine is slow).
pub(crate) const SETTLE: Duration = Duration::from_secs(5);
/// How far back the stream starts (its `--since`): the daemon replays what
/// it logged since then, so a container created while the stream was still
/// connecting is seen too. A second covers an engine clock a little behind.
const REPLAY: Duration = Duration::from_secs(1);
/// How long a life that ended by SIGKILL waits, after its `destroy`, for
/// an `oom` that trails it (see [`Shared::settled`]).
const OOM_TRAIL: Duration = Duration::from_secs(2);
/// The exit code of a container whose main process was SIGKILLed.
const SIGKILLED: i32 = 137;
/// How much of the stream's stderr is kept to say why it ended.
const STDERR_KEPT: u64 = 4096;

/// What the stream saw of one container, since its `create`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lifecycle {
    /// The stream saw its `create`: it was watching the whole life.
    pub created: bool,
    pub started: bool,
    pub oom: bool,
    /// The exit codes of its `die` events.
    pub exits: Vec<i32>,
    pub destroyed: bool,
}

/// What the stream has observed: each container's life, and its own end.
#[derive(Debug, Default)]
struct Observed {
    /// Container name -> what was seen of it.
    seen: HashMap<String, Lifecycle>,
    /// Why the stream ended, once it did.
    ended: Option<String>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<Observed>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Observed> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The event stream of one engine for one run. Dropping it kills the
/// `docker events` client (its whole process group) and reaps it.
#[derive(Debug)]
pub(crate) struct EventStream {
    shared: Arc<Shared>,
    _client: process::Stream,
}

/// The part of an event sbx reads (`docker events --format '{{json .}}'`).
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "Type", default)]
    kind: String,
    #[serde(rename = "Action", default)]
    action: String,
    #[serde(rename = "Actor", default)]
    actor: Actor,
}

#[derive(Debug, Default, Deserialize)]
struct Actor {
    #[serde(rename = "Attributes", default)]
    attributes: HashMap<String, String>,
}

impl EventStream {
    /// Starts the stream of the containers labelled with `run_id` on the
    /// engine `docker` reaches. Call before the run's first `docker create`.
    pub(crate) fn start(docker: &Docker, run_id: &str) -> Result<EventStream> {
        let since = SystemTime::now()
            .checked_sub(REPLAY)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0.0, |d| d.as_secs_f64());
        let (client, stdout, stderr) =
            process::stream(docker, &argv::events_stream_args(run_id, since))?;
        let shared = Arc::new(Shared::default());
        let why = keep_stderr(stderr);
        let into = Arc::clone(&shared);
        thread::spawn(move || {
            let mut lines = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => note(&into, &String::from_utf8_lossy(&line)),
                }
            }
            let message = why
                .recv_timeout(Duration::from_secs(2))
                .ok()
                .filter(|m| !m.is_empty());
            let mut state = into.lock();
            state.ended = Some(match message {
                Some(m) => format!("the engine's event stream ended: {m}"),
                None => "the engine's event stream ended".into(),
            });
            drop(state);
            into.changed.notify_all();
        });
        Ok(EventStream {
            shared,
            _client: client,
        })
    }

    /// Why the stream ended, if it did (nothing it has not seen yet will
    /// ever be seen).
    pub(crate) fn ended(&self) -> Option<String> {
        self.shared.lock().ended.clone()
    }

    /// What the stream saw of container `name` over its whole life, once
    /// that life is over: see [`Shared::settled`].
    pub(crate) fn settled(&self, name: &str, within: Duration) -> Option<Lifecycle> {
        self.shared.settled(name, within)
    }
}

impl Shared {
    /// What the stream saw of container `name` over its whole life, once
    /// that life is over: its `destroy` seen (every run's container is
    /// removed, by `--rm` or by sbx, before it is judged; the engine logs
    /// `die` before it), or, failing that within `within`, its `die`.
    /// `None` when it cannot be known: the stream did not see the
    /// container's `create`, or neither came before the stream ended or the
    /// wait ran out.
    ///
    /// The `oom` is not ordered with the rest: the runtime reports a task's
    /// exit and its OOM separately, and the engine logs `die` and `destroy`
    /// on the exit, so under load the `oom` can come after the `destroy`
    /// (seen in CI, under runc and runsc). A life that ended by SIGKILL
    /// (exit 137) without an `oom` is therefore waited on up to
    /// [`OOM_TRAIL`] more (within `within`) for a trailing `oom`.
    fn settled(&self, name: &str, within: Duration) -> Option<Lifecycle> {
        let deadline = Instant::now() + within;
        let mut trail: Option<Instant> = None;
        let mut state = self.lock();
        loop {
            let seen = state.seen.get(name).filter(|s| s.created);
            let now = Instant::now();
            // Until when to wait for more: a trailing `oom`, or the end.
            let until = match seen.filter(|s| s.destroyed) {
                Some(seen) => {
                    let killed = !seen.oom && seen.exits.contains(&SIGKILLED);
                    let until = *trail.get_or_insert_with(|| (now + OOM_TRAIL).min(deadline));
                    if !killed || now >= until || state.ended.is_some() {
                        return Some(seen.clone());
                    }
                    until
                }
                None if state.ended.is_some() || now >= deadline => {
                    return seen.filter(|s| !s.exits.is_empty()).cloned();
                }
                None => deadline,
            };
            state = self
                .changed
                .wait_timeout(state, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Reads the stream's stderr on its own thread (so it can never fill and
/// stall the stream), keeping its first bytes; sends its first line at EOF.
fn keep_stderr(stderr: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut stderr = stderr;
        let mut kept = Vec::new();
        let _ = (&mut stderr).take(STDERR_KEPT).read_to_end(&mut kept);
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        let text = String::from_utf8_lossy(&kept);
        let first = text.lines().map(str::trim).find(|l| !l.is_empty());
        let _ = tx.send(first.unwrap_or_default().to_string());
    });
    rx
}

/// Notes one line of the stream (a JSON event); anything else is ignored.
fn note(shared: &Shared, line: &str) {
    let Ok(event) = serde_json::from_str::<Event>(line.trim()) else {
        return;
    };
    if event.kind != "container" {
        return;
    }
    let Some(name) = event.actor.attributes.get("name") else {
        return;
    };
    let mut state = shared.lock();
    if event.action == "create" {
        // A new life for this name (a replayed older container's record
        // is dropped).
        state.seen.insert(
            name.clone(),
            Lifecycle {
                created: true,
                ..Lifecycle::default()
            },
        );
    } else {
        let seen = state.seen.entry(name.clone()).or_default();
        match event.action.as_str() {
            "start" => seen.started = true,
            "oom" => seen.oom = true,
            "die" => {
                let code = event.actor.attributes.get("exitCode");
                // A `die` without a readable code still ends the life.
                seen.exits
                    .push(code.and_then(|c| c.parse().ok()).unwrap_or(-1));
            }
            "destroy" => seen.destroyed = true,
            _ => return,
        }
    }
    drop(state);
    shared.changed.notify_all();
}

/// The engine's record of one run's container, as its event stream saw it:
/// read once (waiting for the container's end), then kept.
#[derive(Debug)]
pub(crate) struct ContainerRecord<'a> {
    events: Option<&'a EventStream>,
    name: &'a str,
    seen: OnceCell<Option<Lifecycle>>,
}

impl<'a> ContainerRecord<'a> {
    /// `events` is `None` when no stream could be started: no evidence.
    pub(crate) fn new(events: Option<&'a EventStream>, name: &'a str) -> ContainerRecord<'a> {
        ContainerRecord {
            events,
            name,
            seen: OnceCell::new(),
        }
    }

    /// What was seen of the container's whole life; `None` if unknown.
    pub(crate) fn seen(&self) -> Option<&Lifecycle> {
        self.seen
            .get_or_init(|| self.events.and_then(|e| e.settled(self.name, SETTLE)))
            .as_ref()
    }

    /// Why there is no record (for an error's message).
    pub(crate) fn why_unknown(&self) -> String {
        match self.events.and_then(EventStream::ended) {
            Some(why) => format!("{why}, so the run could not be judged"),
            None => format!(
                "the engine's record of container {} did not arrive within {} s, so the run could not be judged",
                self.name,
                SETTLE.as_secs()
            ),
        }
    }
}

impl ContainerRecord<'_> {
    /// `--rm` leaves nothing to inspect, but the stream saw the `oom`.
    pub(crate) fn oom_killed(&self) -> bool {
        self.seen().is_some_and(|s| s.oom)
    }

    /// Without a record this counts as "started": then the run is judged on
    /// what it did, never turned into an `error` on a guess.
    pub(crate) fn started(&self) -> bool {
        self.seen().is_none_or(|s| s.started)
    }
}

/// Checks that the engine itself recorded the program's end with `code`
/// (a `die` event of exactly this container): the attached client's exit
/// code alone cannot tell a program's exit from a connection to the engine
/// that was cut. `Err` says why the result cannot be trusted.
pub(crate) fn confirm_exit(
    record: &ContainerRecord<'_>,
    code: Option<i32>,
) -> std::result::Result<(), String> {
    let Some(code) = code else {
        return Err("the docker client was killed by a signal sbx did not send".into());
    };
    match record.seen() {
        Some(seen) if seen.exits.contains(&code) => Ok(()),
        Some(_) => Err(format!(
            "the docker client exited {code}, but the engine has no record of the program exiting {code}, so the result could not be confirmed (the connection to the engine may have been cut)"
        )),
        None => Err(record.why_unknown()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(action: &str, name: &str, code: &str) -> String {
        serde_json::json!({
            "Type": "container",
            "Action": action,
            "status": action,
            "Actor": {"ID": "f00", "Attributes": {"name": name, "exitCode": code, "sbx.run": "r"}},
            "time": 1, "timeNano": 1
        })
        .to_string()
    }

    fn seen(shared: &Shared, name: &str) -> Option<Lifecycle> {
        shared.lock().seen.get(name).cloned()
    }

    #[test]
    fn a_life_is_noted_from_its_create() {
        let shared = Shared::default();
        for (action, code) in [("create", ""), ("start", ""), ("oom", ""), ("die", "137")] {
            note(&shared, &event(action, "sbx-r-1", code));
        }
        note(&shared, &event("die", "sbx-r-10", "3"));
        note(&shared, "not json\n");
        note(
            &shared,
            r#"{"Type":"image","Action":"die","Actor":{"Attributes":{"name":"sbx-r-1"}}}"#,
        );
        let one = seen(&shared, "sbx-r-1").expect("noted");
        assert_eq!(
            one,
            Lifecycle {
                created: true,
                started: true,
                oom: true,
                exits: vec![137],
                destroyed: false
            }
        );
        // The neighbour's life was not seen from its create.
        assert!(!seen(&shared, "sbx-r-10").expect("noted").created);
    }

    #[test]
    fn an_oom_that_trails_the_destroy_of_a_sigkilled_life_is_waited_for() {
        let shared = Arc::new(Shared::default());
        for (action, code) in [
            ("create", ""),
            ("start", ""),
            ("die", "137"),
            ("destroy", ""),
        ] {
            note(&shared, &event(action, "sbx-r-2", code));
        }
        let late = Arc::clone(&shared);
        let writer = thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            note(&late, &event("oom", "sbx-r-2", ""));
        });
        let seen = shared
            .settled("sbx-r-2", Duration::from_secs(5))
            .expect("settled");
        writer.join().expect("writer");
        assert!(seen.oom && seen.destroyed, "{seen:?}");
    }

    #[test]
    fn only_a_sigkilled_life_without_oom_waits_and_never_past_the_trail() {
        let shared = Shared::default();
        for (action, code) in [("create", ""), ("start", ""), ("die", "1"), ("destroy", "")] {
            note(&shared, &event(action, "sbx-r-3", code));
        }
        for (action, code) in [
            ("create", ""),
            ("start", ""),
            ("die", "137"),
            ("destroy", ""),
        ] {
            note(&shared, &event(action, "sbx-r-4", code));
        }
        let at = Instant::now();
        let seen = shared
            .settled("sbx-r-3", Duration::from_secs(5))
            .expect("settled");
        assert!(!seen.oom && at.elapsed() < Duration::from_millis(500));
        let at = Instant::now();
        let seen = shared
            .settled("sbx-r-4", Duration::from_secs(5))
            .expect("settled");
        let waited = at.elapsed();
        assert!(!seen.oom && seen.exits == [137], "{seen:?}");
        assert!(waited >= OOM_TRAIL && waited < SETTLE, "{waited:?}");
        // Within a shorter wait, the wait's end comes first.
        let at = Instant::now();
        shared
            .settled("sbx-r-4", Duration::from_millis(100))
            .expect("settled");
        assert!(at.elapsed() < OOM_TRAIL, "{:?}", at.elapsed());
    }

    #[test]
    fn a_new_create_forgets_an_older_container_of_the_same_name() {
        let shared = Shared::default();
        for (action, code) in [("create", ""), ("start", ""), ("oom", ""), ("die", "1")] {
            note(&shared, &event(action, "sbx-r-0", code));
        }
        note(&shared, &event("destroy", "sbx-r-0", ""));
        note(&shared, &event("create", "sbx-r-0", ""));
        let fresh = seen(&shared, "sbx-r-0").expect("noted");
        assert!(fresh.created && !fresh.oom && fresh.exits.is_empty() && !fresh.destroyed);
    }
}
