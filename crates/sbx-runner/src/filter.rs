//! The seccomp filter the runner installs on itself, as PID 1, before it
//! starts anything: every process of the container after it (the zygote,
//! every candidate, the wipe helper) inherits it, and no process can remove
//! or loosen a seccomp filter once installed. It refuses two classes of
//! call, each with `ENOSYS`, as a kernel built without them would answer,
//! so that a program with a fallback (a JVM, a runtime) takes it:
//!
//! - `memfd_create` and `memfd_secret`: an anonymous memory file is the one
//!   writable file a candidate could otherwise execute (`fexecve`,
//!   `/proc/self/fd/N`) or map executable, since every writable mount it
//!   has is `noexec` (`/tmp`, `/dev/shm`, `/dev/mqueue`) and the rest are
//!   not its to write (`/work`, `/sbx`, `/dev`).
//! - `shmget`, `msgget` and `semget`: a SysV IPC object outlives every
//!   process and file, so one left by a candidate would reach the next in
//!   a reused container. Under runc the IPC namespace's sysctls already
//!   allow none, but gVisor ignores those sysctls and cannot list its
//!   objects (no `/proc/sysvipc`; `SHM_STAT` and `MSG_STAT` find nothing,
//!   measured), so no reset could remove them there. Without a `*get` call
//!   no object can be made or reached, in any runtime (the container's IPC
//!   namespace starts empty), so a reset has nothing to see. POSIX shared
//!   memory and semaphores (`/dev/shm`) keep working.
//!
//! The filter also allows only the runner's own architecture: a system
//! call through another ABI (`int 0x80` on x86-64, where the i386 `ipc`
//! multiplexer lives) kills the process, so the numbers refused here
//! cannot be reached under other numbers; the x32 numbers of the same
//! calls are refused as well. The filter is built by `seccompiler`
//! (rust-vmm's, Firecracker's), whose own `unsafe` is the one `prctl` and
//! `seccomp` call.

use std::collections::BTreeMap;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

/// `memfd_create` on this architecture (the C library's table).
const MEMFD_CREATE: i64 = nix::libc::SYS_memfd_create;
/// `memfd_secret` (the same number on x86-64 and aarch64).
const MEMFD_SECRET: i64 = 447;
/// The x32 ABI's bit on x86-64 system call numbers.
const X32: i64 = 0x4000_0000;
/// `ENOSYS`.
const ENOSYS: u32 = 38;
/// The SysV IPC calls that make or find an object, on this architecture.
const SYSV_GET: [i64; 3] = [
    nix::libc::SYS_shmget,
    nix::libc::SYS_msgget,
    nix::libc::SYS_semget,
];

/// The numbers the filter refuses on this architecture.
fn refused() -> Vec<i64> {
    let mut numbers = vec![MEMFD_CREATE, MEMFD_SECRET];
    numbers.extend(SYSV_GET);
    if cfg!(target_arch = "x86_64") {
        let x32: Vec<i64> = numbers.iter().map(|n| X32 | n).collect();
        numbers.extend(x32);
    }
    numbers
}

/// The filter, compiled.
fn program() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("no seccomp filter for this architecture: {e}"))?;
    let rules = refused()
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

    #[test]
    fn memory_files_and_sysv_getters_are_refused_under_every_number() {
        let numbers = refused();
        for n in [MEMFD_CREATE, MEMFD_SECRET].into_iter().chain(SYSV_GET) {
            assert!(numbers.contains(&n), "{n}");
            if cfg!(target_arch = "x86_64") {
                assert!(numbers.contains(&(X32 | n)), "x32 {n}");
            }
        }
        if cfg!(target_arch = "x86_64") {
            assert_eq!((MEMFD_CREATE, SYSV_GET), (319, [29, 68, 64]));
        }
    }
}
