//! The probes of the limits: memory, pids, the timeout and the output cap.

use std::time::Duration;

use crate::docker::events::ContainerRecord;
use crate::docker::process::{self, Ended};
use crate::spec;
use crate::verdict::outcome::{self, FailReason, Verdict};

use super::prober::{container_gone, Probe, Prober, OUTPUT_CAP, PROBE_TIMEOUT};
use super::report::{Check, State};

/// The deadline of the timeout probe, and the slack allowed for cleanup.
const TIMEOUT_PROBE: Duration = Duration::from_secs(2);
const TIMEOUT_SLACK: Duration = Duration::from_secs(3);

impl Prober<'_> {
    pub(crate) fn memory(&self) -> Check {
        let cap = spec::size_in_bytes(&self.session.sandbox.limits.memory);
        if cap > 4 << 30 {
            return Check::new(
                "memory cap",
                State::Skipped,
                format!(
                    "cap {} is too large to probe safely",
                    self.session.sandbox.limits.memory
                ),
            );
        }
        let target_mib = ((cap * 2) >> 20) + 64;
        let script = format!(
            "command -v python3 >/dev/null 2>&1 || {{ echo NOPYTHON; exit 0; }}\n\
             exec python3 -c 'chunks = []\nfor _ in range({n}):\n    chunks.append(b\"x\" * (16 << 20))\nprint(\"ALLOCATED\", len(chunks) * 16)'\n",
            n = target_mib / 16
        );
        let name = "memory cap";
        match self.run(&script, PROBE_TIMEOUT, OUTPUT_CAP) {
            Probe::Skip(why) => Check::new(name, State::Skipped, why),
            Probe::Broken(why) => Check::new(
                name,
                State::Failed,
                format!("the probe could not run: {why}"),
            ),
            Probe::Ran(f, _) if String::from_utf8_lossy(&f.stdout.bytes).contains("NOPYTHON") => {
                Check::new(name, State::Skipped, "image has no python3")
            }
            Probe::Ran(f, container) => {
                let record = ContainerRecord::new(self.events, &container);
                let verdict = outcome::judge(&f, |_| None, &record);
                let limit = &self.session.sandbox.limits.memory;
                match verdict {
                    Verdict::Fail(FailReason::Oom) => Check::new(
                        name,
                        State::Ok,
                        format!("allocating {target_mib} MiB under --memory {limit} was killed and reported as oom"),
                    ),
                    Verdict::Pass => Check::new(
                        name,
                        State::Failed,
                        format!("allocated {target_mib} MiB under --memory {limit} without being killed"),
                    ),
                    other => Check::new(name, State::Failed, format!("expected an oom kill, saw {other:?}")),
                }
            }
        }
    }

    pub(crate) fn pids(&self) -> Check {
        // A real fork bomb for 2 s, then stopped from inside. A count of
        // processes at one instant proves little (shells die when fork
        // fails); the kernel's own count of refused forks does. Once the
        // bomb runs, every pid is taken: the timer is started before it, and
        // everything after it is a shell builtin (no fork that could be
        // refused and kill the probe).
        let script = "sleep 2 &\n\
                      timer=$!\n\
                      bomb() { bomb & bomb & wait; }\n\
                      bomb 2>/dev/null &\n\
                      wait $timer\n\
                      cd /sys/fs/cgroup/pids 2>/dev/null || cd /sys/fs/cgroup\n\
                      read max < pids.max\n\
                      refused=0\n\
                      while read key value; do [ \"$key\" = max ] && refused=$value; done < pids.events\n\
                      echo MAX $max\n\
                      echo REFUSED $refused\n\
                      kill -9 -1 2>/dev/null\n";
        let limit = self.session.sandbox.limits.pids_limit.clone();
        let check = if self.gvisor() {
            self.gvisor_pids(&limit)
        } else {
            self.check("pids cap", script, |out| {
            let field = |key: &str| {
                out.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .unwrap_or("?")
                    .to_string()
            };
            let (max, refused) = (field("MAX "), field("REFUSED "));
            let held = max == limit && refused.parse::<u64>().is_ok_and(|n| n > 0);
            Check::held(
                "pids cap",
                held,
                format!("a fork bomb had {refused} forks refused at pids.max {max} (--pids-limit {limit})"),
            )
            })
        };
        // The host must still be able to start processes.
        if check.state == State::Ok && !process::can_start_a_process() {
            return Check::new(
                "pids cap",
                State::Failed,
                "the host cannot start processes after the fork bomb",
            );
        }
        check
    }

    /// The pids probe under gVisor, whose kernel has no pids cgroup to
    /// read: the limit the candidate meets there is RLIMIT_NPROC (see
    /// `argv::gvisor_pids`), read before the bomb (`ulimit -u` in busybox,
    /// `-p` in dash), and the evidence that forks were refused is the
    /// bomb's own first complaint, read after it is stopped (builtins only).
    /// It runs until the first refusal (20 s at most), not 2 s: forks are
    /// slow under gVisor's ptrace platform, and a loaded host kept a bomb
    /// of 2 s, and once of 5 s, below the limit.
    fn gvisor_pids(&self, limit: &str) -> Check {
        let script = "echo NPROC $(ulimit -u 2>/dev/null || ulimit -p)\n\
                      sleep 20 &\n\
                      timer=$!\n\
                      : > /tmp/sbx-bomb\n\
                      bomb() { bomb & bomb & wait; }\n\
                      bomb 2>/tmp/sbx-bomb &\n\
                      while [ ! -s /tmp/sbx-bomb ] && kill -0 $timer 2>/dev/null; do :; done\n\
                      kill -9 -1 2>/dev/null\n\
                      first=\n\
                      read first < /tmp/sbx-bomb\n\
                      echo \"REFUSED $first\"\n";
        self.check("pids cap", script, |out| {
            let nproc = out
                .lines()
                .find_map(|l| l.strip_prefix("NPROC "))
                .map(str::trim)
                .unwrap_or("?");
            let refused = out
                .lines()
                .find_map(|l| l.strip_prefix("REFUSED "))
                .unwrap_or("")
                .trim();
            let held = nproc == limit && refused.to_lowercase().contains("fork");
            Check::held(
                "pids cap",
                held,
                format!(
                    "a fork bomb under gVisor {} at RLIMIT_NPROC {nproc} (--pids-limit {limit}; gVisor's kernel has no pids cgroup)",
                    if refused.is_empty() { "was never refused a fork".to_string() } else { format!("was refused forks (\"{refused}\")") }
                ),
            )
        })
    }

    pub(crate) fn timeout(&self) -> Check {
        let name = "timeout";
        let script = "trap '' TERM\nwhile :; do :; done\n";
        match self.run(script, TIMEOUT_PROBE, OUTPUT_CAP) {
            Probe::Skip(why) => Check::new(name, State::Skipped, why),
            Probe::Broken(why) => Check::new(
                name,
                State::Failed,
                format!("the probe could not run: {why}"),
            ),
            Probe::Ran(f, container) => {
                let gone = container_gone(&self.session.sandbox.docker, &container);
                let in_time = f.duration < TIMEOUT_PROBE + TIMEOUT_SLACK;
                Check::held(
                    name,
                    f.ended == Ended::TimedOut && in_time && gone,
                    format!(
                        "a loop ignoring SIGTERM with a {} s timeout ended as {:?} after {:.1} s; container {}",
                        TIMEOUT_PROBE.as_secs(),
                        f.ended,
                        f.duration.as_secs_f64(),
                        if gone { "gone" } else { "STILL PRESENT" }
                    ),
                )
            }
        }
    }

    pub(crate) fn output_cap(&self) -> Check {
        let name = "output cap";
        let flood = match self.run("yes\n", PROBE_TIMEOUT, OUTPUT_CAP) {
            Probe::Skip(why) => return Check::new(name, State::Skipped, why),
            Probe::Broken(why) => {
                return Check::new(
                    name,
                    State::Failed,
                    format!("the probe could not run: {why}"),
                )
            }
            Probe::Ran(f, _) => f,
        };
        let cut = flood.ended == Ended::OutputLimit && flood.stdout.bytes.len() <= OUTPUT_CAP;
        let log = self.log_driver();
        Check::held(
            name,
            cut && log.as_deref() == Ok("none"),
            format!(
                "a flood was {} after {:.1} s ({} bytes kept); log driver {}",
                if cut { "cut at the limit" } else { "NOT cut" },
                flood.duration.as_secs_f64(),
                flood.stdout.bytes.len(),
                match &log {
                    Ok(driver) => driver.clone(),
                    Err(e) => format!("unknown ({e})"),
                }
            ),
        )
    }
}
