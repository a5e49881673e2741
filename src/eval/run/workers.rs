//! Every unit of an eval judged on the engines' workers, all taking from
//! one queue (`queue`), each unit run and its step settled by `attempt`;
//! at a terminal, a progress line, and each failure shown as it happens.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;

use super::attempt::{run_unit, settle};
use super::cache::Cache;
use super::queue::{lock, take, Queue, Taken, Tally};
use super::warm::Warm;
use crate::console;
use crate::engines::started::Engines;
use crate::eval::input::request::EvalRequest;
use crate::eval::plan::units::{ImageCheck, Unit};
use crate::report::{self, Status, TaskResult};
use crate::session::Session;

/// Judges every unit on the engines' workers, all sharing one queue; each
/// unit's tally in unit order.
pub(crate) fn judge_all(
    session: &Session,
    req: &EvalRequest,
    cache: Option<&Cache>,
    images: &BTreeMap<&str, ImageCheck>,
    engines: &Engines,
    units: &[Unit],
    warm: &Warm,
) -> Vec<Tally> {
    let explicit = engines.explicit;
    let tallies: Vec<Mutex<Tally>> = units.iter().map(|_| Mutex::default()).collect();
    let queue = Mutex::new(Queue {
        pending: (0..units.len()).collect(),
        in_flight: 0,
    });
    let wake = Condvar::new();
    let done = AtomicUsize::new(0);
    let progress = std::io::stderr().is_terminal();
    let total: usize = units.iter().map(Unit::weight).sum();
    let sampled = units.iter().any(|u| u.sample.is_some());
    let image_of = |i: usize| req.tasks[units[i].task].image.as_str();
    // Each task's samples not judged yet: its line is shown with its last.
    let left: Vec<AtomicUsize> = req.tasks.iter().map(|_| AtomicUsize::new(0)).collect();
    for unit in units.iter().filter(|u| u.sample.is_some()) {
        left[unit.task].fetch_add(unit.weight(), Ordering::SeqCst);
    }
    thread::scope(|scope| {
        for member in &engines.members {
            for _ in 0..member.jobs.min(units.len()) {
                scope.spawn(|| {
                    // This worker's runner container (`--isolate worker`).
                    let mut slot = warm.take(&member.label);
                    while let Some(i) = take(&queue, &wake, member, image_of) {
                        // Gives the unit back (or marks it done) however this
                        // iteration ends, a panic included.
                        let mut taken = Taken {
                            queue: &queue,
                            wake: &wake,
                            unit: i,
                            again: false,
                        };
                        let step = run_unit(
                            session,
                            req,
                            cache,
                            images,
                            (&units[i], &units[i].staged),
                            member,
                            &mut slot,
                        );
                        let mut tally = lock(&tallies[i]);
                        taken.again = settle(step, &mut tally, member, explicit);
                        let again = taken.again;
                        // At a terminal, a failure is shown as it happens
                        // (a sample's with its task's, below).
                        let shown = match &tally.result {
                            Some(result)
                                if progress
                                    && !again
                                    && units[i].sample.is_none()
                                    && matches!(result.status, Status::Fail | Status::Error) =>
                            {
                                Some(live_line(result, None, req.color))
                            }
                            _ => None,
                        };
                        drop(tally);
                        drop(taken);
                        if again {
                            continue;
                        }
                        let shown = match shown {
                            Some(line) => Some(line),
                            None if progress => {
                                task_done(&left, &tallies, units, i).map(|(n, c, e, ms)| {
                                    report::sampled::live_line(
                                        &req.tasks[units[i].task].id,
                                        (n, c, e),
                                        ms,
                                        req.color,
                                    )
                                })
                            }
                            None => None,
                        };
                        let weight = units[i].weight();
                        let finished = done.fetch_add(weight, Ordering::SeqCst) + weight;
                        if progress {
                            let line = shown.map(|l| format!("{l}\n\r\x1b[K")).unwrap_or_default();
                            let what = if sampled { "samples" } else { "candidates" };
                            console::progress(&format!(
                                "\r\x1b[K{line}sbx: {finished}/{total} {what} judged"
                            ));
                        }
                    }
                    slot.close();
                });
            }
        }
    });
    warm.close();
    if progress {
        console::progress("\r\x1b[K");
    }
    tallies
        .into_iter()
        .map(|tally| tally.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

/// When unit `i` was its task's last sample to be judged, and not every
/// sample of the task passed: the task's samples judged now, passed, not
/// judged, and their time.
fn task_done(
    left: &[AtomicUsize],
    tallies: &[Mutex<Tally>],
    units: &[Unit],
    i: usize,
) -> Option<(usize, usize, usize, u64)> {
    let task = units[i].task;
    units[i].sample.as_ref()?;
    let weight = units[i].weight();
    if left[task].fetch_sub(weight, Ordering::SeqCst) != weight {
        return None;
    }
    let (mut n, mut c, mut errors, mut ms) = (0, 0, 0, 0);
    for (unit, tally) in units.iter().zip(tallies) {
        if unit.task != task {
            continue;
        }
        let tally = lock(tally);
        let Some(result) = &tally.result else {
            continue;
        };
        // A unit judges its twins too: each is a sample of the task.
        let weight = unit.weight();
        ms += result.duration_ms;
        match result.status {
            Status::Pass => {
                n += weight;
                c += weight;
            }
            Status::Error => errors += weight,
            _ => n += weight,
        }
    }
    (c < n + errors).then_some((n, c, errors, ms))
}

/// A unit's result that did not pass, as shown the moment it is judged
/// (its sample named: the result learns it only in its task's entry).
fn live_line(result: &TaskResult, sample: Option<&str>, color: bool) -> String {
    let mut shown = result.clone();
    shown.sample = sample.map(str::to_string);
    report::text::live_line(&shown, color)
}
