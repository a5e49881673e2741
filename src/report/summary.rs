//! The one-line summary of an eval and its exit code.

use std::time::Duration;

use super::result::{Status, TaskResult};
use crate::exit;

/// Counts per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub missing: usize,
    pub errors: usize,
    /// Function-test entries (samples included) judged sealed ...
    pub sealed: usize,
    /// ... and in-process.
    pub in_process: usize,
    /// Runner modes: the entries' run time and their candidates' waits for
    /// a CPU, summed over the entries that report a wait.
    pub run_ms: u64,
    pub wait_ms: u64,
}

/// The share of run time spent waiting for a CPU from which the summary
/// says the machine was contended.
pub(crate) const CONTENDED: f64 = 0.25;

impl Summary {
    pub(crate) fn of(results: &[TaskResult]) -> Summary {
        let mut s = Summary::default();
        for r in results {
            match r.status {
                Status::Pass => s.passed += 1,
                Status::Fail => s.failed += 1,
                Status::Missing => s.missing += 1,
                Status::Error => s.errors += 1,
            }
            // Samples sbx could not judge count as errors too (the task's
            // own status covers only the judged ones), unless the task is
            // itself an error already.
            if r.status != Status::Error {
                s.errors += r.errors.unwrap_or(0);
            }
            for entry in r.samples.as_deref().unwrap_or(std::slice::from_ref(r)) {
                if let Some(wait) = entry.wait_ms {
                    s.wait_ms += wait;
                    s.run_ms += entry.duration_ms;
                }
                match entry.judged.as_deref() {
                    Some("sealed") => s.sealed += 1,
                    Some(_) => s.in_process += 1,
                    None => {}
                }
            }
        }
        s
    }

    /// `N passed, N failed, N missing, N errors in T s`, then, when
    /// function tests were judged, `; function tests: N sealed, N in-process`.
    pub(crate) fn line(&self, elapsed: Duration) -> String {
        let mut line = format!(
            "{} passed, {} failed, {} missing, {} errors in {:.1} s",
            self.passed,
            self.failed,
            self.missing,
            self.errors,
            elapsed.as_secs_f64()
        );
        if self.sealed + self.in_process > 0 {
            line.push_str(&format!(
                "; function tests: {} sealed, {} in-process",
                self.sealed, self.in_process
            ));
        }
        if let Some(share) = self.contention().filter(|&s| s >= CONTENDED) {
            line.push_str(&format!(
                "; busy machine: candidates waited {:.0}% of their run time for a CPU (not counted: verdicts count CPU time)",
                share * 100.0
            ));
        }
        line
    }

    /// The share of the entries' run time their candidates waited for a
    /// CPU, where measured.
    pub(crate) fn contention(&self) -> Option<f64> {
        (self.run_ms > 0).then(|| (self.wait_ms as f64 / self.run_ms as f64).min(1.0))
    }

    /// 0 when everything passed; 2 when sbx could not judge some task (an
    /// infrastructure problem, not the model's); 1 when any task failed or
    /// had no candidate.
    pub(crate) fn exit_code(&self) -> i32 {
        if self.errors > 0 {
            exit::USAGE
        } else if self.failed + self.missing > 0 {
            exit::NOT_ALL_PASSED
        } else {
            exit::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result::failing;

    #[test]
    fn contention_is_said_when_candidates_waited() {
        let entry = |duration_ms, wait_ms| TaskResult {
            duration_ms,
            wait_ms,
            ..failing("x")
        };
        let idle = Summary::of(&[entry(1000, Some(10)), entry(500, None)]);
        assert_eq!((idle.run_ms, idle.wait_ms), (1000, 10));
        assert!(!idle.line(Duration::ZERO).contains("busy"));
        let busy = Summary::of(&[entry(1000, Some(900)), entry(1000, Some(100))]);
        assert_eq!(busy.contention(), Some(0.5));
        assert!(busy.line(Duration::ZERO).contains("waited 50%"));
        // Case mode reports no wait: nothing is said.
        assert_eq!(Summary::of(&[entry(1000, None)]).contention(), None);
    }

    #[test]
    fn summary_and_exit_codes() {
        let pass = TaskResult {
            status: Status::Pass,
            ..failing("p")
        };
        let s = Summary::of(&[pass.clone(), failing("f"), TaskResult::missing("m")]);
        assert_eq!(
            s,
            Summary {
                passed: 1,
                failed: 1,
                missing: 1,
                errors: 0,
                ..Summary::default()
            }
        );
        assert_eq!(
            s.line(Duration::from_millis(4200)),
            "1 passed, 1 failed, 1 missing, 0 errors in 4.2 s"
        );
        assert_eq!(s.exit_code(), 1);
        assert_eq!(Summary::of(std::slice::from_ref(&pass)).exit_code(), 0);
        assert_eq!(Summary::of(&[]).exit_code(), 0);
        assert_eq!(
            Summary::of(&[pass, TaskResult::error("e", "x", "y".into())]).exit_code(),
            2
        );
    }

    #[test]
    fn function_tests_are_counted_by_how_they_were_judged() {
        let judged = |how: &str| TaskResult {
            judged: Some(how.into()),
            ..TaskResult::bare("t", Status::Pass)
        };
        let samples = TaskResult {
            samples: Some(vec![
                judged("sealed"),
                judged("in_process"),
                judged("sealed"),
            ]),
            ..TaskResult::bare("s", Status::Pass)
        };
        let s = Summary::of(&[judged("in_process"), samples, judged("sealed")]);
        assert_eq!((s.sealed, s.in_process), (3, 2));
        assert_eq!(
            s.line(Duration::from_millis(1000)),
            "3 passed, 0 failed, 0 missing, 0 errors in 1.0 s; function tests: 3 sealed, 2 in-process"
        );
    }
}
