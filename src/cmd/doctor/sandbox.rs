//! The probes of what the container can see and do: its network, its
//! root and /tmp, its capabilities, and the kernel it runs on.

use super::prober::Prober;
use super::report::Check;

impl Prober<'_> {
    pub(crate) fn network(&self) -> Check {
        // gVisor's sysfs has no /sys/class/net (listing it fails): there the
        // network namespace's own list, /proc/net/dev, is the evidence.
        let script = "if ls /sys/class/net 2>/dev/null | grep -q .; then\n\
                      echo FROM /sys/class/net; ls /sys/class/net\n\
                      else echo FROM /proc/net/dev; sed -n 's/^ *\\([^ :|]*\\):.*/\\1/p' /proc/net/dev; fi\n";
        self.check("network", script, |out| {
            let mut words = out.split_whitespace();
            let from = match (words.next(), words.next()) {
                (Some("FROM"), Some(from)) => from,
                _ => "?",
            };
            let interfaces: Vec<&str> = words.collect();
            Check::held(
                "network",
                from != "?" && interfaces == ["lo"],
                format!("interfaces in {from}: {}", interfaces.join(" ")),
            )
        })
    }

    pub(crate) fn read_only_root(&self) -> Check {
        let script =
            "if touch /sbx-probe 2>/dev/null; then echo WRITABLE; else echo READONLY; fi\n";
        self.check("read-only root", script, |out| {
            Check::held(
                "read-only root",
                out.trim() == "READONLY",
                if out.contains("WRITABLE") {
                    "writing /sbx-probe succeeded"
                } else {
                    "writing under / fails"
                },
            )
        })
    }

    pub(crate) fn tmp(&self) -> Check {
        let script = "printf '#!/bin/sh\\necho EXECUTED\\n' > /tmp/sbx-probe && chmod +x /tmp/sbx-probe && echo WRITABLE\n\
                      /tmp/sbx-probe 2>/dev/null || echo NOEXEC\n";
        self.check("/tmp", script, |out| {
            let writable = out.contains("WRITABLE");
            let noexec = out.contains("NOEXEC") && !out.contains("EXECUTED");
            Check::held(
                "/tmp",
                writable && noexec,
                format!(
                    "{}, {}",
                    if writable { "writable" } else { "NOT writable" },
                    if noexec {
                        "not executable"
                    } else {
                        "a file in /tmp EXECUTED"
                    }
                ),
            )
        })
    }

    pub(crate) fn capabilities(&self) -> Check {
        let script = "echo x > /tmp/sbx-cap; if chown 1:1 /tmp/sbx-cap 2>/dev/null; then echo CHOWNED; else echo DENIED; fi\n\
                      grep CapEff /proc/self/status\n";
        self.check("capabilities", script, |out| {
            let denied = out.contains("DENIED");
            let cap_eff = out
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .map(str::trim)
                .unwrap_or("?")
                .to_string();
            let none = cap_eff.chars().all(|c| c == '0') && !cap_eff.is_empty();
            Check::held(
                "capabilities",
                denied && none,
                format!(
                    "chown {}, CapEff {cap_eff}",
                    if denied { "fails" } else { "SUCCEEDED" }
                ),
            )
        })
    }

    /// The runtime's own identity: the kernel release the candidate sees,
    /// against the engine host's. Under runc they are the same kernel
    /// (informative); under gVisor the candidate must see gVisor's own
    /// kernel (its `dmesg` says so), never the host's.
    pub(crate) fn kernel(&self) -> Check {
        let name = "runtime kernel";
        let script = "echo RELEASE $(uname -r)\n\
                      dmesg 2>/dev/null | grep -q gVisor && echo GVISOR\n\
                      true\n";
        let runtime = self.runtime().unwrap_or("the default runtime").to_string();
        let host = self.host_kernel.unwrap_or("?").to_string();
        let gvisor = self.gvisor();
        self.check(name, script, |out| {
            let seen = out
                .lines()
                .find_map(|l| l.strip_prefix("RELEASE "))
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .unwrap_or("?");
            let says_gvisor = out.lines().any(|l| l == "GVISOR");
            kernel_check(name, &runtime, gvisor, seen, &host, says_gvisor)
        })
    }
}

/// The kernel check from what the candidate saw (`seen`, its kernel
/// release; `says_gvisor`, its `dmesg` names gVisor) and the engine host's
/// release.
fn kernel_check(
    name: &'static str,
    runtime: &str,
    gvisor: bool,
    seen: &str,
    host: &str,
    says_gvisor: bool,
) -> Check {
    if !gvisor {
        let shared = if seen == host {
            "the engine host's, shared"
        } else {
            "not the engine host's"
        };
        return Check::held(
            name,
            seen != "?",
            format!("{runtime}: the candidate sees kernel {seen} ({shared}: {host})"),
        );
    }
    let own = seen != "?" && host != "?" && seen != host && says_gvisor;
    Check::held(
        name,
        own,
        if own {
            format!("{runtime}: the candidate sees gVisor's kernel ({seen}), not the engine host's ({host})")
        } else {
            format!(
                "{runtime}: the candidate sees kernel {seen} (engine host {host}){}",
                if says_gvisor {
                    ""
                } else {
                    "; its dmesg does not name gVisor"
                }
            )
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::doctor::report::State;

    #[test]
    fn gvisors_kernel_is_told_from_the_hosts() {
        let k = |gvisor, seen, says| kernel_check("k", "r", gvisor, seen, "6.1.0", says);
        assert_eq!(k(true, "4.4.0", true).state, State::Ok);
        assert_eq!(k(true, "6.1.0", true).state, State::Failed);
        assert_eq!(k(true, "4.4.0", false).state, State::Failed);
        assert_eq!(k(true, "?", true).state, State::Failed);
        let runc = k(false, "6.1.0", false);
        assert_eq!(runc.state, State::Ok);
        assert_eq!(
            runc.detail,
            "r: the candidate sees kernel 6.1.0 (the engine host's, shared: 6.1.0)"
        );
        assert_eq!(k(false, "?", false).state, State::Failed);
        let host_unknown = kernel_check("k", "runsc", true, "4.4.0", "?", true);
        assert_eq!(host_unknown.state, State::Failed);
    }
}
