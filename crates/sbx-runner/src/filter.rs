//! The seccomp filter the runner installs on itself, as PID 1, before it
//! starts anything: every process of the container after it (the zygote,
//! every candidate, the wipe helper) inherits it, and no process can remove
//! or loosen a seccomp filter once installed. It refuses `memfd_create` and
//! `memfd_secret`: an anonymous memory file is the one writable file a
//! candidate could otherwise execute (`fexecve`, `/proc/self/fd/N`) or map
//! executable, since every writable mount it has is `noexec` (`/tmp`,
//! `/dev/shm`, `/dev/mqueue`) and the rest are not its to write (`/work`,
//! `/sbx`, `/dev`). Refused with `ENOSYS`, as a kernel without them would
//! answer, so that a program with a fallback (a JVM, a runtime) takes it.
//!
//! The filter also allows only the runner's own architecture: a system
//! call through another ABI (`int 0x80` on x86-64) kills the process, so
//! the numbers refused here cannot be reached under other numbers; the
//! x32 numbers of the same calls are refused as well. The filter is built
//! by `seccompiler` (rust-vmm's, Firecracker's), whose own `unsafe` is the
//! one `prctl` and `seccomp` call.

use std::collections::BTreeMap;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

/// `memfd_create` on this architecture.
const MEMFD_CREATE: i64 = seccompiler_nr::MEMFD_CREATE;
/// `memfd_secret` (the same number on x86-64 and aarch64).
const MEMFD_SECRET: i64 = 447;
/// The x32 ABI's bit on x86-64 system call numbers.
const X32: i64 = 0x4000_0000;
/// `ENOSYS`.
const ENOSYS: u32 = 38;

mod seccompiler_nr {
    #[cfg(target_arch = "x86_64")]
    pub(super) const MEMFD_CREATE: i64 = 319;
    #[cfg(target_arch = "aarch64")]
    pub(super) const MEMFD_CREATE: i64 = 279;
    #[cfg(target_arch = "riscv64")]
    pub(super) const MEMFD_CREATE: i64 = 279;
}

/// The filter, compiled.
fn program() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("no seccomp filter for this architecture: {e}"))?;
    let mut numbers = vec![MEMFD_CREATE, MEMFD_SECRET];
    if cfg!(target_arch = "x86_64") {
        numbers.extend([X32 | MEMFD_CREATE, X32 | MEMFD_SECRET]);
    }
    let rules = numbers
        .into_iter()
        .map(|n| (n, Vec::new()))
        .collect::<BTreeMap<_, _>>();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(ENOSYS),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("seccomp filter: {e}"))
}

/// Installs the filter on the calling thread (and sets `no_new_privs`,
/// which the engine already set): call it while the process has one
/// thread, so that every thread and child after it inherits it.
pub(crate) fn install() -> Result<(), String> {
    let program = program()?;
    seccompiler::apply_filter(&program).map_err(|e| format!("install the seccomp filter: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_this_architecture() {
        let program = program().unwrap();
        // The architecture check, one jump per number, the two returns.
        assert!(program.len() > 8, "{}", program.len());
    }
}
