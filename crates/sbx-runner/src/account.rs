//! What a case cost the candidate, counted so that a busy machine does not
//! change it: its CPU time over all its processes and threads, and its
//! *effective* wall clock, the wall clock minus the time it waited for a
//! CPU.
//!
//! One case runs at a time in a container, and nothing but the runner (PID
//! 1), the zygote and the candidate runs there. So:
//!
//! - **CPU time** is the container's CPU cgroup usage over the case
//!   (`cpuacct.usage` in cgroup v1, `cpu.stat`'s `usage_usec` in v2) minus
//!   what the runner's and the zygote's own tasks used meanwhile (their
//!   `schedstat`). Where no cgroup file is readable, it is the sum of the
//!   candidate's tasks' `schedstat` time on a CPU, sampled; where neither
//!   is (gVisor), the candidate's processes' `stat` ticks (user, system,
//!   and waited-for children), sampled. The program's own rusage, once
//!   reaped, is a floor in every case.
//! - **Run-queue wait** is the second field of each candidate task's
//!   `/proc/PID/task/TID/schedstat` (ns runnable but not running: behind
//!   other work, or throttled by the container's own `--cpus` quota). Each
//!   sample accumulates per-task deltas; a task seen for the first time
//!   counts whole (it was born during the case); a task that ends between
//!   two samples loses what it waited since the last one.
//! - **Effective wall clock** is the wall clock since the program's start
//!   minus the longest run-queue wait of any one of the candidate's tasks,
//!   never below zero. Not their sum: tasks of the candidate's own that
//!   queue behind each other (thirty forks burning a `--cpus 0.5` quota,
//!   then sleeping) would pile up many times the wall clock in waits and
//!   so hide a sleep (measured, a 12 s sleeper passed a 3 s limit that
//!   way). One task waits only while the machine or the candidate's other
//!   tasks hold the CPU, and the latter costs CPU time: the candidate can
//!   stretch its backstop clock by at most its CPU time over its quota,
//!   within the CPU limit. The
//!   clock runs while the candidate sleeps, blocks or computes, and stops
//!   while it waits for a CPU. On an idle machine without a quota it is
//!   the wall clock. The kernel adds a wait to `schedstat` when the task
//!   gets its CPU, not while it waits, so the subtraction is over the
//!   whole case, never per sampling interval (an interval would cap a long
//!   wait reported late at its own length: measured, a starved 0.6 s
//!   program then reached a 2 s backstop with 0.27 s of CPU).
//! - A wait still in progress is not yet counted, and under load it is
//!   long exactly when the runner samples (the runner and the candidate
//!   share the container's turn on a CPU: measured, a busy loop reached a
//!   1.5 s backstop with 0.74 s of CPU after 45 s of wall clock). So the
//!   backstop never stops a candidate while one of its tasks is runnable
//!   (state `R` in `/proc/PID/task/TID/stat`): such a task computes or
//!   waits for a CPU, and the CPU limit stops it. With every task asleep,
//!   blocked or gone, every wait was reported and the clock is exact.
//!
//! The quota's throttling is not added back: a CPU-bound program at
//! `--cpus 0.5` waits half the time on an idle machine and less under load
//! (where the machine, not the quota, holds it back); counting that wait
//! would make a busy loop's clock depend on the load. Measured in a
//! `--cpus 0.5` container on a shared machine: a 2 s busy loop got 0.70 s
//! on a CPU, waited 1.31 s, and 0.04 s of it was throttling.
//!
//! The case is stopped (`TimeRule::Cpu`) when its CPU time reaches the
//! limit (`timeout`), or its effective wall clock does with none of its
//! tasks runnable: then `timeout` if
//! the candidate's CPU time is at least half the limit, else
//! `wall_timeout` (it slept, blocked or waited on something). Without run-queue data
//! (gVisor) the backstop is the plain wall clock at `NO_WAIT_FACTOR` times
//! the limit.
//!
//! Sampling starts one `SAMPLE` after the program's start, so a short case
//! costs two cgroup reads and two walks of the runner's few tasks.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::kernel_file;

/// How often the case loop samples the candidate's tasks.
pub(crate) const SAMPLE: Duration = Duration::from_millis(20);

/// Without run-queue data, the wall-clock backstop is this many limits.
pub(crate) const NO_WAIT_FACTOR: u32 = 3;

/// Clock ticks per second of `/proc/PID/stat` (Linux's USER_HZ).
const TICKS_PER_S: u64 = 100;

/// Where the container's CPU usage is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Usage {
    /// cgroup v1: `cpuacct.usage`, ns.
    V1(PathBuf),
    /// cgroup v2: `cpu.stat`'s `usage_usec`.
    V2(PathBuf),
}

impl Usage {
    /// The first readable usage file of this container.
    pub(crate) fn find() -> Option<Usage> {
        let candidates = [
            Usage::V1("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage".into()),
            Usage::V1("/sys/fs/cgroup/cpuacct/cpuacct.usage".into()),
            Usage::V1("/sys/fs/cgroup/cpuacct,cpu/cpuacct.usage".into()),
            Usage::V2("/sys/fs/cgroup/cpu.stat".into()),
        ];
        candidates.into_iter().find(|u| u.read().is_some())
    }

    /// The usage so far, in ns.
    fn read(&self) -> Option<u64> {
        match self {
            Usage::V1(p) => parse_cpuacct_usage(&kernel_file::read(p).ok()?),
            Usage::V2(p) => parse_cpu_stat_usage(&kernel_file::read(p).ok()?),
        }
    }
}

/// `cpuacct.usage`: one decimal number of ns.
pub(crate) fn parse_cpuacct_usage(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// cgroup v2 `cpu.stat`'s `usage_usec`, in ns.
pub(crate) fn parse_cpu_stat_usage(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|us| us.saturating_mul(1000))
}

/// A task's state letter from its `stat` (`R` running or runnable).
pub(crate) fn parse_stat_state(bytes: &[u8]) -> Option<u8> {
    let close = bytes.iter().rposition(|&b| b == b')')?;
    bytes[close + 1..]
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}

/// Whether any task of any process but ours (`own`, `zygote`) is
/// runnable.
fn any_runnable(own: u32, zygote: Option<u32>) -> bool {
    let Ok(procs) = fs::read_dir("/proc") else {
        return false;
    };
    for entry in procs.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == own || Some(pid) == zygote {
            continue;
        }
        let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let bytes = kernel_file::read(task.path().join("stat")).ok();
            if bytes.as_deref().and_then(parse_stat_state) == Some(b'R') {
                return true;
            }
        }
    }
    false
}

/// A task's `schedstat`: (ns on a CPU, ns waiting on a run queue).
pub(crate) fn parse_schedstat(bytes: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut fields = text.split_ascii_whitespace();
    let on_cpu = fields.next()?.parse().ok()?;
    let wait = fields.next()?.parse().ok()?;
    Some((on_cpu, wait))
}

/// A process's `stat`: its utime + stime + cutime + cstime, in ticks. The
/// command name (field 2) may hold spaces and parentheses: the fields
/// are read after its last `)`.
pub(crate) fn parse_stat_ticks(bytes: &[u8]) -> Option<u64> {
    let close = bytes.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&bytes[close + 1..]).ok()?;
    // After the name: state (field 3) ... utime is field 14.
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let mut sum = 0u64;
    for f in fields.get(11..15)? {
        sum = sum.saturating_add(f.parse::<u64>().ok()?);
    }
    Some(sum)
}

/// The effective wall clock: `wall` minus the longest wait of one of the
/// candidate's tasks for a CPU, never below zero.
pub(crate) fn effective(wall: Duration, waited: Duration) -> Duration {
    wall.saturating_sub(waited)
}

/// How a case ended under `TimeRule::Cpu`, if its limit was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// The CPU time, or a backstop reached while mostly computing.
    Cpu,
    /// The backstop, while mostly not computing.
    Wall,
}

/// Whether a case is over its `limit`: by CPU time, or by its backstop
/// clock (the effective wall clock, or with no run-queue data the wall
/// clock at `NO_WAIT_FACTOR` limits) when `runnable` says none of its
/// tasks can run (asked only then: it walks `/proc`).
pub(crate) fn over(
    limit: Duration,
    cpu: Duration,
    effective: Duration,
    wall: Duration,
    waits_known: bool,
    runnable: impl FnOnce() -> bool,
) -> Option<Over> {
    if cpu >= limit {
        return Some(Over::Cpu);
    }
    let (clock, backstop) = if waits_known {
        (effective, limit)
    } else {
        (wall, limit.saturating_mul(NO_WAIT_FACTOR))
    };
    if clock < backstop || runnable() {
        return None;
    }
    // Computing at least half the limit: too slow, not stuck.
    if cpu.saturating_mul(2) >= limit {
        Some(Over::Cpu)
    } else {
        Some(Over::Wall)
    }
}

/// Whether this kernel keeps `schedstat` (gVisor's does not): asked once,
/// so that a sample under gVisor reads each process's `stat` alone, not
/// its task list and a `schedstat` per task first (every system call is
/// dear there).
fn schedstat_kept() -> bool {
    static KEPT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *KEPT.get_or_init(|| fs::symlink_metadata("/proc/self/schedstat").is_ok())
}

/// Sums `schedstat` over the tasks of one process (`/proc/PID/task/*`).
fn process_schedstat(pid: &str) -> (u64, u64) {
    let mut sum = (0u64, 0u64);
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return sum;
    };
    for task in tasks.flatten() {
        let path = task.path().join("schedstat");
        if let Some((c, w)) = kernel_file::read(path)
            .ok()
            .as_deref()
            .and_then(parse_schedstat)
        {
            sum.0 = sum.0.saturating_add(c);
            sum.1 = sum.1.saturating_add(w);
        }
    }
    sum
}

/// The CPU time (ns) of the runner's and the zygote's own tasks.
fn ours(zygote: Option<u32>) -> Option<u64> {
    let runner = process_schedstat("self").0;
    let zygote = zygote.map_or(0, |pid| process_schedstat(&pid.to_string()).0);
    // No schedstat at all (gVisor): nothing to subtract from, either.
    (runner > 0).then(|| runner.saturating_add(zygote))
}

/// What a task showed at the last sample.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    on_cpu: u64,
}

/// The accounting of one case, from the program's start.
#[derive(Debug)]
pub(crate) struct Meter {
    zygote: Option<u32>,
    usage: Option<Usage>,
    usage_start: Option<u64>,
    ours_start: Option<u64>,
    start: Instant,
    last: Instant,
    tasks: HashMap<(u32, u32), Seen>,
    /// Per-process stat ticks (gVisor), by pid: the largest seen.
    ticks: HashMap<u32, u64>,
    /// Σ on-CPU deltas of the candidate's tasks, ns.
    on_cpu: u64,
    /// The longest run-queue wait of one candidate task so far, ns.
    wait: u64,
    /// Some task's schedstat was read.
    waits_known: bool,
}

impl Meter {
    /// Starts counting now, before the program starts: the container's
    /// usage and the runner's and zygote's own so far.
    pub(crate) fn start(usage: Option<&Usage>, zygote: Option<u32>) -> Meter {
        let now = Instant::now();
        let usage_start = usage.and_then(Usage::read);
        let ours_start = usage_start.and_then(|_| ours(zygote));
        Meter {
            zygote,
            usage: usage.cloned(),
            usage_start,
            ours_start,
            start: now,
            last: now,
            tasks: HashMap::new(),
            ticks: HashMap::new(),
            on_cpu: 0,
            wait: 0,
            waits_known: false,
        }
    }

    /// The program started at `at`: the wall clocks count from there, as
    /// the case's `wall_ms` does.
    pub(crate) fn started(&mut self, at: Instant) {
        self.start = at;
        self.last = at;
    }

    /// Whether the CPU time comes from the container's cgroup.
    pub(crate) fn by_cgroup(&self) -> bool {
        self.usage_start.is_some() && self.ours_start.is_some()
    }

    /// Whether the cgroup's count, readable at the start, no longer is
    /// (the case supervisor's limits lowered by its same-uid program).
    pub(crate) fn cgroup_lost(&self) -> bool {
        self.by_cgroup() && self.cgroup_cpu().is_none()
    }

    /// The candidate's CPU time so far by the cgroup, if it can be read.
    fn cgroup_cpu(&self) -> Option<Duration> {
        let (start, ours_start) = (self.usage_start?, self.ours_start?);
        let now = self.usage.as_ref()?.read()?;
        let ours_now = ours(self.zygote)?;
        let used = now.saturating_sub(start);
        let ours = ours_now.saturating_sub(ours_start);
        Some(Duration::from_nanos(used.saturating_sub(ours)))
    }

    /// Walks the candidate's tasks (every process but the runner and the
    /// zygote) at `now`.
    pub(crate) fn sample(&mut self, now: Instant) {
        self.last = now;
        let own = std::process::id();
        if let Ok(procs) = fs::read_dir("/proc") {
            for entry in procs.flatten() {
                let name = entry.file_name();
                let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                if pid == own || Some(pid) == self.zygote {
                    continue;
                }
                let longest = self.sample_process(pid);
                self.wait = self.wait.max(longest);
            }
        }
    }

    /// Samples one candidate process; returns the longest run-queue wait
    /// of one of its tasks, over the task's life (each is born during the
    /// case).
    fn sample_process(&mut self, pid: u32) -> u64 {
        let mut longest = 0u64;
        let tasks = schedstat_kept().then(|| fs::read_dir(format!("/proc/{pid}/task")));
        if let Some(Ok(tasks)) = tasks {
            for task in tasks.flatten() {
                let Some(tid) = task
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                let bytes = kernel_file::read(task.path().join("schedstat")).ok();
                let Some((on_cpu, wait)) = bytes.as_deref().and_then(parse_schedstat) else {
                    continue;
                };
                self.waits_known = true;
                let seen = self.tasks.entry((pid, tid)).or_default();
                self.on_cpu = self
                    .on_cpu
                    .saturating_add(on_cpu.saturating_sub(seen.on_cpu));
                longest = longest.max(wait);
                *seen = Seen { on_cpu };
            }
        }
        if !self.waits_known {
            let bytes = kernel_file::read(format!("/proc/{pid}/stat")).ok();
            if let Some(t) = bytes.as_deref().and_then(parse_stat_ticks) {
                let best = self.ticks.entry(pid).or_default();
                *best = (*best).max(t);
            }
        }
        longest
    }

    /// The candidate's CPU time so far: the cgroup's, else the sampled
    /// tasks', at least `floor` (the reaped program's own rusage).
    pub(crate) fn cpu(&self, floor: Duration) -> Duration {
        let counted = match self.cgroup_cpu() {
            Some(cpu) => cpu,
            None if self.waits_known => Duration::from_nanos(self.on_cpu),
            None => {
                let ticks: u64 = self.ticks.values().sum();
                Duration::from_millis(ticks.saturating_mul(1000 / TICKS_PER_S))
            }
        };
        counted.max(floor)
    }

    /// Whether the case is over `limit` now (after a `sample`).
    pub(crate) fn over(&self, limit: Duration) -> Option<Over> {
        let wall = self.last.saturating_duration_since(self.start);
        over(
            limit,
            self.cpu(Duration::ZERO),
            effective(wall, self.waited()),
            wall,
            self.waits_known,
            || any_runnable(std::process::id(), self.zygote),
        )
    }

    /// The longest run-queue wait of one of the candidate's tasks so far.
    pub(crate) fn waited(&self) -> Duration {
        Duration::from_nanos(self.wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers() {
        assert_eq!(
            parse_schedstat(b"26278185 38237454 134\n"),
            Some((26278185, 38237454))
        );
        assert_eq!(parse_schedstat(b"12\n"), None);
        assert_eq!(parse_schedstat(b"x y z"), None);
        assert_eq!(parse_cpuacct_usage(b"990448\n"), Some(990448));
        assert_eq!(parse_cpuacct_usage(b""), None);
        let v2 = b"usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_throttled 0\n";
        assert_eq!(parse_cpu_stat_usage(v2), Some(1_500_000));
        // v1's cpu.stat has no usage.
        assert_eq!(
            parse_cpu_stat_usage(b"nr_periods 4\nthrottled_time 0\n"),
            None
        );
        let stat = b"42 (a) b) c) R 1 42 42 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 5 0 0";
        assert_eq!(parse_stat_ticks(stat), Some(7 + 3 + 2 + 1));
        assert_eq!(parse_stat_ticks(b"42 (short) R 1"), None);
        assert_eq!(parse_stat_state(stat), Some(b'R'));
        assert_eq!(parse_stat_state(b"7 (py thon) S 1 7"), Some(b'S'));
        assert_eq!(parse_stat_state(b"garbage"), None);
    }

    #[test]
    fn the_clock_stops_while_waiting() {
        let ms = Duration::from_millis;
        assert_eq!(effective(ms(2000), ms(0)), ms(2000));
        // Starved: 0.37 s on a CPU in 4 s, 3.65 s waiting (measured).
        assert_eq!(effective(ms(4020), ms(3650)), ms(370));
        // A wait reported late, longer than the wall clock sampled: zero.
        assert_eq!(effective(ms(1000), ms(1200)), ms(0));
    }

    #[test]
    fn limits_and_reasons() {
        let s = |x: f64| Duration::from_secs_f64(x);
        let t = s(2.0);
        let asleep = || false;
        let runnable = || true;
        let unasked = || -> bool { panic!("asked whether runnable below the backstop") };
        // Under the limit by both clocks.
        assert_eq!(over(t, s(0.6), s(0.7), s(9.0), true, unasked), None);
        // CPU time reached: too slow, however the clock stands.
        assert_eq!(
            over(t, s(2.0), s(0.1), s(30.0), true, unasked),
            Some(Over::Cpu)
        );
        // A sleeper: stuck.
        assert_eq!(
            over(t, s(0.05), s(2.0), s(2.0), true, asleep),
            Some(Over::Wall)
        );
        // Asleep after computing more than half the limit: slow.
        assert_eq!(
            over(t, s(1.2), s(2.0), s(2.5), true, asleep),
            Some(Over::Cpu)
        );
        // A busy loop with a wait not yet reported: the CPU limit decides.
        assert_eq!(over(t, s(0.7), s(2.0), s(45.0), true, runnable), None);
        // Starved on a busy machine: the wall clock alone decides nothing.
        assert_eq!(over(t, s(0.3), s(0.4), s(60.0), true, unasked), None);
        // No run-queue data: the wall clock at NO_WAIT_FACTOR limits.
        assert_eq!(over(t, s(0.3), s(0.0), s(5.9), false, unasked), None);
        assert_eq!(
            over(t, s(0.3), s(0.0), s(6.0), false, asleep),
            Some(Over::Wall)
        );
        assert_eq!(
            over(t, s(1.9), s(0.0), s(6.0), false, asleep),
            Some(Over::Cpu)
        );
        assert_eq!(over(t, s(0.9), s(0.0), s(6.0), false, runnable), None);
    }
}
