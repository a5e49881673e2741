//! The runner's own process attributes that its children inherit: resource
//! limits, the OOM score, and each thread's nice value, scheduling policy
//! and CPU affinity (a case is spawned from the main thread; the worker
//! threads that wait and read must not be slowed either).
//!
//! Non-dumpability does not protect them: `prlimit`, `setpriority`,
//! `sched_setaffinity` and `sched_setscheduler` on another process check
//! only that the caller has the same uid, and `/proc/1/oom_score_adj` is a
//! root-owned file that a root candidate may write. So the runner records
//! them at its start and the reset puts back what an unprivileged process
//! may put back (soft limits, the OOM score, affinity); what it may not (a
//! lowered hard limit, a higher nice value, `SCHED_IDLE`) makes the
//! container dirty.

use std::fs;
use std::path::PathBuf;

use rustix::process::{getrlimit, setrlimit, Pid, Resource, Rlimit};
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

use super::kernel_file;

/// Every resource limit Linux has.
const RESOURCES: [(Resource, &str); 16] = [
    (Resource::Cpu, "RLIMIT_CPU"),
    (Resource::Fsize, "RLIMIT_FSIZE"),
    (Resource::Data, "RLIMIT_DATA"),
    (Resource::Stack, "RLIMIT_STACK"),
    (Resource::Core, "RLIMIT_CORE"),
    (Resource::Rss, "RLIMIT_RSS"),
    (Resource::Nproc, "RLIMIT_NPROC"),
    (Resource::Nofile, "RLIMIT_NOFILE"),
    (Resource::Memlock, "RLIMIT_MEMLOCK"),
    (Resource::As, "RLIMIT_AS"),
    (Resource::Locks, "RLIMIT_LOCKS"),
    (Resource::Sigpending, "RLIMIT_SIGPENDING"),
    (Resource::Msgqueue, "RLIMIT_MSGQUEUE"),
    (Resource::Nice, "RLIMIT_NICE"),
    (Resource::Rtprio, "RLIMIT_RTPRIO"),
    (Resource::Rttime, "RLIMIT_RTTIME"),
];

const OOM_SCORE_ADJ: &str = "/proc/self/oom_score_adj";
const TIMER_SLACK: &str = "/proc/self/timerslack_ns";

/// One thread's scheduling: its nice value, rt priority and policy (fields
/// 19, 40 and 41 of `/proc/self/task/TID/stat`) and its CPU affinity.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sched {
    stat: [String; 3],
    cpus: CpuSet,
}

impl Sched {
    fn of(tid: i32) -> Option<Sched> {
        let stat = read_text(&format!("/proc/self/task/{tid}/stat"))?;
        // Fields after the command name, which may hold spaces: field 3 on.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).map(|s| s.to_string());
        let cpus = sched_getaffinity(Some(Pid::from_raw(tid)?)).ok()?;
        Some(Sched {
            stat: [field(19)?, field(40)?, field(41)?],
            cpus,
        })
    }
}

/// What the runner's children would inherit, as recorded at its start.
#[derive(Debug)]
pub(crate) struct Posture {
    limits: Vec<(Resource, &'static str, Rlimit)>,
    oom_score_adj: Option<String>,
    timer_slack: Option<String>,
    threads: Vec<(i32, Option<Sched>)>,
}

fn tids() -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut tids: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids
}

/// A `/proc` file as text, read as bytes (a name in it may be any bytes).
fn read_text(path: &str) -> Option<String> {
    kernel_file::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn read_trimmed(path: &str) -> Option<String> {
    read_text(path).map(|s| s.trim().to_string())
}

impl Posture {
    /// Records the posture now; call it once every thread of the runner
    /// exists.
    pub(crate) fn record() -> Posture {
        Posture {
            limits: RESOURCES
                .iter()
                .map(|&(r, name)| (r, name, getrlimit(r)))
                .collect(),
            oom_score_adj: read_trimmed(OOM_SCORE_ADJ),
            timer_slack: read_trimmed(TIMER_SLACK),
            threads: tids()
                .into_iter()
                .map(|tid| (tid, Sched::of(tid)))
                .collect(),
        }
    }

    /// Puts back what may be put back, then lists what still differs.
    /// Everything is read once; only after something was put back is it
    /// all read again.
    pub(crate) fn restore(&self) -> Result<(), String> {
        let mut put_back = false;
        for (resource, _, was) in &self.limits {
            if getrlimit(*resource) != *was {
                // EPERM when the hard limit was lowered: reported below.
                let _ = setrlimit(*resource, *was);
                put_back = true;
            }
        }
        for (path, was) in [
            (OOM_SCORE_ADJ, &self.oom_score_adj),
            (TIMER_SLACK, &self.timer_slack),
        ] {
            if let Some(was) = was {
                if read_trimmed(path).as_ref() != Some(was) {
                    let _ = fs::write(PathBuf::from(path), was);
                    put_back = true;
                }
            }
        }
        let mut threads_differ = false;
        for (tid, was) in &self.threads {
            let Some(was) = was else { continue };
            let now = Sched::of(*tid);
            if now.as_ref() == Some(was) {
                continue;
            }
            threads_differ = true;
            if let (Some(now), Some(pid)) = (now, Pid::from_raw(*tid)) {
                if now.cpus != was.cpus {
                    let _ = sched_setaffinity(Some(pid), &was.cpus);
                }
            }
        }
        if put_back || threads_differ {
            self.verify()
        } else {
            Ok(())
        }
    }

    /// What differs from the record.
    pub(crate) fn verify(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for (resource, name, was) in &self.limits {
            let now = getrlimit(*resource);
            if now != *was {
                problems.push(format!(
                    "the runner's {name} is {now:?}, not {was:?}",
                    now = (now.current, now.maximum),
                    was = (was.current, was.maximum)
                ));
            }
        }
        for (path, was) in [
            (OOM_SCORE_ADJ, &self.oom_score_adj),
            (TIMER_SLACK, &self.timer_slack),
        ] {
            let now = read_trimmed(path);
            if was.is_some() && now != *was {
                problems.push(format!("the runner's {path} is {now:?}, not {was:?}"));
            }
        }
        for (tid, was) in &self.threads {
            let now = Sched::of(*tid);
            if was.is_some() && now != *was {
                problems.push(format!(
                    "the runner's thread {tid} has nice, rt priority, policy and cpu set {now:?}, not {was:?}"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_record_verifies_and_a_lowered_soft_limit_is_put_back() {
        let mut posture = Posture::record();
        // Other test threads come and go; keep this one.
        let me = rustix::thread::gettid().as_raw_nonzero().get();
        posture.threads.retain(|t| t.0 == me);
        assert_eq!(posture.threads.len(), 1);
        assert!(posture.threads.iter().all(|t| t.1.is_some()));
        assert_eq!(posture.verify(), Ok(()));
        // Runs in its own test process: lowering a soft limit of this test
        // binary is harmless (RLIMIT_CORE).
        let was = getrlimit(Resource::Core);
        if was.maximum != Some(0) {
            let other = if was.current == Some(0) { 1 } else { 0 };
            setrlimit(
                Resource::Core,
                Rlimit {
                    current: Some(other),
                    maximum: was.maximum,
                },
            )
            .unwrap();
            let err = posture.verify().unwrap_err();
            assert!(err.contains("RLIMIT_CORE"), "{err}");
            assert_eq!(posture.restore(), Ok(()));
        }
    }
}
