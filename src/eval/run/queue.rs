//! The one work queue of an eval, shared by every engine's workers, and
//! the tally of each unit's runs.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::engines::pool::Member;
use crate::report::{Requeue, TaskResult};
use crate::signals;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// What became of one unit over its runs.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Its result, once judged.
    pub result: Option<TaskResult>,
    /// Engines it was moved off, and why.
    pub requeued: Vec<Requeue>,
    /// Runs that lost their connection to an engine that still answered.
    pub lost: usize,
}

/// The one work queue of an eval, shared by every engine's workers.
#[derive(Debug)]
pub(crate) struct Queue {
    /// Units not yet taken, in task order (a requeued unit goes first).
    pub pending: VecDeque<usize>,
    /// Units being run; one may still come back.
    pub in_flight: usize,
}

/// A unit taken from the queue: when dropped, it is no longer in flight,
/// and goes back to the front of the queue if `again`.
#[derive(Debug)]
pub(crate) struct Taken<'a> {
    pub queue: &'a Mutex<Queue>,
    pub wake: &'a Condvar,
    pub unit: usize,
    pub again: bool,
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        {
            let mut q = lock(self.queue);
            q.in_flight -= 1;
            if self.again {
                q.pending.push_front(self.unit);
            }
        }
        self.wake.notify_all();
    }
}

/// The next unit `member` can run; `None` when it has nothing left to do
/// (nothing pending it can run and nothing in flight that could come back),
/// when it is down, or on a signal.
pub(crate) fn take<'a>(
    queue: &Mutex<Queue>,
    wake: &Condvar,
    member: &Member,
    image_of: impl Fn(usize) -> &'a str,
) -> Option<usize> {
    let mut q = lock(queue);
    loop {
        if signals::received().is_some() || member.is_down() {
            return None;
        }
        if let Some(pos) = q.pending.iter().position(|&i| member.runs(image_of(i))) {
            let i = q.pending.remove(pos)?;
            q.in_flight += 1;
            return Some(i);
        }
        if q.in_flight == 0 {
            return None;
        }
        q = wake
            .wait_timeout(q, Duration::from_millis(200))
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}
