//! The engines of one eval, started (`start`): candidates baked where they
//! are delivered that way, each engine's event stream running before its
//! first container, the workers fitted to the open-file limit. And the
//! guard that owns them (`Engines`): dropped, it removes what the eval
//! left on every engine that answers, on every path out of the eval.

use std::collections::BTreeMap;

use super::pool::{self, Member, Refusal, Setup};
use super::{bake, clean};
use crate::console;
use crate::docker::events::EventStream;
use crate::error::{Error, Result};
use crate::exit;
use crate::limits;
use crate::session::Session;
use crate::signals;
use crate::spec::IsolateMode;

/// The engines an eval judges on, from the end of their set-up. Dropped,
/// it removes this eval's containers, baked images and build volumes from
/// every engine that answers, on every path out of the eval: an error, a
/// panic, a signal.
pub(crate) struct Engines {
    pub members: Vec<Member>,
    /// Each member's images it lacks and cannot get.
    refused: Vec<BTreeMap<String, Refusal>>,
    /// Engines were named (`--engine`): results and notes name theirs.
    pub explicit: bool,
    run_id: String,
    /// Some unit is compiled: its build volumes go too.
    volumes: bool,
    cleaned: bool,
}

impl Engines {
    /// Removes what this eval left on its engines (once), saying what it
    /// could not. With a signal received, says so and gives its exit code.
    pub(crate) fn clean_up(&mut self) -> Option<i32> {
        let cleaned = self.clean();
        if let Some(signal) = signals::received() {
            let removed = match cleaned {
                Ok(n) => format!("{n} leftover containers removed"),
                Err(e) => format!("cleanup failed: {e}"),
            };
            console::note(&format!(
                "sbx: interrupted; every container of this eval was stopped ({removed})"
            ));
            return Some(exit::for_signal(signal));
        }
        if let Err(e) = cleaned {
            console::note(&format!(
                "sbx: could not clean up {e}; `sbx gc --engine ENGINE --run {}` removes what is left once it answers",
                self.run_id
            ));
        }
        None
    }

    /// The containers found, or the first failure.
    fn clean(&mut self) -> std::result::Result<usize, String> {
        if self.cleaned {
            return Ok(0);
        }
        self.cleaned = true;
        // Whatever happened, nothing of this run stays on any engine that answers.
        let cleaned = clean_all(&self.members, &self.run_id);
        if self.volumes {
            for member in &self.members {
                if let Err(e) = clean::clean_volumes(member, &self.run_id) {
                    console::note(&format!(
                        "sbx: engine `{}`: {e}; `sbx gc --run {}` removes them once it answers",
                        member.label, self.run_id
                    ));
                }
            }
        }
        cleaned
    }

    /// Why no engine judged a task of `image`.
    pub(crate) fn why_not(&self, image: &str) -> String {
        let reasons: Vec<String> = self
            .members
            .iter()
            .zip(&self.refused)
            .map(|(m, refused)| match m.down_reason() {
                Some(reason) => format!("engine `{}` stopped answering: {reason}", m.label),
                None => match refused.get(image) {
                    Some((_, message)) => format!("engine `{}`: {message}", m.label),
                    None => format!("engine `{}` did not run it", m.label),
                },
            })
            .collect();
        if reasons.is_empty() {
            "no engine could be used".to_string()
        } else {
            format!("no engine left to run it ({})", reasons.join("; "))
        }
    }
}

impl Drop for Engines {
    fn drop(&mut self) {
        let _ = self.clean();
    }
}

/// The engines that answered, made ready to judge: the candidates baked
/// where they are delivered that way, each engine's event stream started
/// before its first container, the workers fitted to the open-file limit.
/// `explicit`: engines were named; `units`: how many units there are to
/// judge; `compiled`: some of them are compiled (their build volumes are
/// removed too).
pub(crate) fn start(
    session: &Session,
    setups: Vec<Setup>,
    explicit: bool,
    units: usize,
    compiled: bool,
) -> Result<Engines> {
    let (members, refused) = setups
        .into_iter()
        .filter(|s| s.left_out.is_none())
        .map(|s| (s.member, s.refused))
        .unzip();
    let mut engines = Engines {
        members,
        refused,
        explicit,
        run_id: session.run_id.clone(),
        volumes: compiled,
        cleaned: false,
    };
    if units == 0 {
        return Ok(engines);
    }
    // Interrupted while baking: what was baked already goes too (on drop).
    bake_all(session, &mut engines)?;
    // Each engine's event stream runs from before its first container to
    // the end of the eval (dropped with the members, on every path).
    // (Started already where runner containers started ahead: see
    // `eval::run::warm`.)
    for member in engines.members.iter_mut().filter(|m| m.events.is_none()) {
        member.events = Some(EventStream::start(&member.docker, &session.run_id)?);
    }
    fit_open_files(&mut engines.members, units);
    Ok(engines)
}

/// Bakes the candidates into a throwaway image on every engine that gets
/// them that way, all engines at once.
fn bake_all(session: &Session, engines: &mut Engines) -> Result<()> {
    let baking = engines.members.iter_mut().zip(engines.refused.iter_mut());
    let results = pool::at_once(baking, |(member, refused)| {
        let payload = match member.isolate {
            IsolateMode::Case => bake::Payload::Candidates,
            _ => bake::Payload::Runner,
        };
        bake::bake(session, member, refused, payload)
    });
    for result in results {
        result.map_err(|message| Error::Panicked {
            what: "baking the candidates".into(),
            message,
        })??;
    }
    for (member, refused) in engines.members.iter().zip(&engines.refused) {
        if !engines.explicit {
            continue;
        }
        for (code, why) in refused.values() {
            if code == "bake_failed" {
                console::note(&format!("sbx: engine `{}`: {why}", member.label));
            }
        }
    }
    Ok(())
}

/// Runs fewer at once than asked when the open-file limit (raised to the
/// hard limit at start) cannot hold them all, saying so in one line.
fn fit_open_files(members: &mut [Member], units: usize) {
    let limit = limits::open_files();
    let mut jobs: Vec<usize> = members.iter().map(|m| m.jobs.min(units)).collect();
    let asked: usize = jobs.iter().sum();
    if limits::fit(&mut jobs, limits::max_jobs(limit)) {
        for (member, jobs) in members.iter_mut().zip(&jobs) {
            member.jobs = *jobs;
        }
        console::note(&format!(
            "sbx: the open-file limit ({}) allows {} runs at once; running those instead of -j {asked}",
            limit.unwrap_or_default(),
            jobs.iter().sum::<usize>()
        ));
    }
}

/// Removes this eval's containers and baked images from every engine that
/// answers, all at once. The containers found, or the first failure.
fn clean_all(members: &[Member], run_id: &str) -> std::result::Result<usize, String> {
    let results = pool::at_once(members, |m| clean::clean(m, run_id));
    let mut found = 0;
    for (member, result) in members.iter().zip(results) {
        let cleaned = result
            .map_err(|why| format!("the cleanup panicked (a bug in sbx): {why}"))
            .and_then(|r| r);
        found += cleaned.map_err(|e| format!("engine `{}`: {e}", member.label))?;
    }
    Ok(found)
}
