//! The reset between cases and between candidates, run by the runner as
//! PID 1: kill every other process and reap it, empty the writable
//! directories, then verify that nothing is left. A reset that cannot
//! verify its work reports the container dirty; the host discards it.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rustix::fs::{
    lgetxattr, llistxattr, lremovexattr, lsetxattr, utimensat, AtFlags, Timespec, Timestamps,
    XattrFlags, CWD,
};
use rustix::process::{wait, WaitOptions};

use super::kernel_file;

/// The directories a candidate can write, even with `--read-only`.
pub(crate) const WRITABLE: [&str; 3] = ["/tmp", "/dev/shm", "/dev/mqueue"];
/// SysV IPC objects (there must be none; container sysctls forbid them).
const SYSVIPC: [&str; 3] = [
    "/proc/sysvipc/shm",
    "/proc/sysvipc/msg",
    "/proc/sysvipc/sem",
];
/// How long killing and emptying may take before the container is dirty.
const BUDGET: Duration = Duration::from_secs(10);

/// The engine's `/dev` is a writable tmpfs too (root-owned, mode 755): a
/// root candidate can add entries, chmod or replace the ones there. And
/// `/dev/pts` (devpts) keeps a chmod of its `ptmx` (measured: mode 000 left
/// the next candidate unable to open a pty). The reset puts both back as
/// they were at the runner's start.
pub(crate) const DEV: [&str; 2] = ["/dev", "/dev/pts"];

/// The writable directories present at the runner's start, with their
/// modes then (a candidate may chmod them; the reset restores them), and
/// what `/dev` held then.
#[derive(Debug, Clone)]
pub(crate) struct Dirs {
    empty: Vec<(PathBuf, u32)>,
    dev: Vec<Baseline>,
    /// The extended attributes of each of those directories.
    xattrs: Vec<(PathBuf, Xattrs)>,
    /// The times of the directories to empty.
    times: Vec<(PathBuf, Times)>,
    /// How the directories to empty looked when the last clean reset ended
    /// (or at the start): see [`untouched`].
    seen: Vec<Stamp>,
    /// The inode flags (`FS_IOC_GETFLAGS`) of the directories to empty,
    /// where their file system keeps them.
    flags: Vec<(PathBuf, u32)>,
}

/// A directory's modification and change times (seconds, nanoseconds):
/// any entry made or removed in it, any chmod, chown, extended attribute
/// or time set on it, moves its change time. Not its access time, which a
/// mere read moves (under gVisor, every read: a Python started in `/tmp`
/// lists it), and which the reset puts back whatever this says.
type Stamp = [(i64, i64); 2];

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = fs::symlink_metadata(path).ok()?;
    Some([
        (meta.mtime(), meta.mtime_nsec()),
        (meta.ctime(), meta.ctime_nsec()),
    ])
}

/// The stamps of the directories to empty, in order (`None` where one
/// cannot be read: never equal to a recorded one).
fn stamps(dirs: &Dirs) -> Vec<Stamp> {
    dirs.empty
        .iter()
        .map(|(dir, _)| stamp(dir).unwrap_or([(i64::MIN, -1); 2]))
        .collect()
}

/// Whether a writable directory's extended attributes differ from the
/// recorded ones (or cannot be read).
fn attributes_moved(dirs: &Dirs) -> bool {
    dirs.xattrs
        .iter()
        .filter(|(dir, _)| dirs.empty.iter().any(|(d, _)| d == dir))
        .any(|(dir, was)| xattrs(dir).map_or(true, |now| now != *was))
}

/// Whether the candidate left every directory to empty as the last clean
/// reset did: then the wipe helper, whose only work is what the candidate
/// owns there, has nothing to do. This only skips work: `verify` checks
/// the directories, whatever this says, and a change inside the clock's
/// tick that this misses is found there (the container is then dirty,
/// never passed on unclean). Nothing a candidate can change without moving
/// a time goes unchecked: entries, modes, owners and attributes are
/// verified; only the times themselves are not, and equal times say
/// nothing.
fn untouched(dirs: &Dirs) -> bool {
    !dirs.seen.is_empty() && stamps(dirs) == dirs.seen
}

/// A directory's mode and entries, as they must stay.
#[derive(Debug, Clone)]
struct Baseline {
    dir: PathBuf,
    mode: u32,
    entries: BTreeMap<OsString, Ident>,
    /// The access and modification times of the directory (key: empty
    /// name) and of each entry.
    times: BTreeMap<OsString, Times>,
    /// The symlinks whose target is known to be the recorded one while
    /// their inode and change time stay these (see `Ident::with`).
    checked: BTreeMap<OsString, Checked>,
}

/// Access and modification times (seconds, nanoseconds). A root candidate
/// may set them to any value on what it owns: measured, `os.utime` on
/// `/dev/null` and on `/tmp` reached the next candidate, hundreds of bits
/// of any data in all. The reset puts them back (best effort: they are not
/// verified, since reading a directory may update its access time).
type Times = (i64, i64, i64, i64);

fn times_of(meta: &fs::Metadata) -> Times {
    (
        meta.atime(),
        meta.atime_nsec(),
        meta.mtime(),
        meta.mtime_nsec(),
    )
}

/// Sets `path`'s (not a symlink's target's) times to `was` if they differ.
fn put_back_times(path: &Path, was: Times) {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    if times_of(&meta) != was {
        set_times(path, was);
    }
}

/// The writable directories' times, and `/dev`'s and `/dev/pts`'s own,
/// put back as recorded (the entries' are put back by `restore`). `uid`:
/// the candidates', to borrow for their own `/tmp`; `None` while a
/// candidate process may be alive (the reset is dirty then anyway), so
/// that none ever meets the runner's thread under its uid here.
fn put_back_dir_times(dirs: &Dirs, uid: Option<u32>) {
    for (dir, was) in &dirs.times {
        match uid {
            Some(uid) => put_back_times_as_owner(dir, *was, uid),
            None => put_back_times(dir, *was),
        }
    }
    for dev in &dirs.dev {
        if let Some(&was) = dev.times.get(OsStr::new("")) {
            put_back_times(&dev.dir, was);
        }
    }
}

/// `put_back_times`, as the candidates' uid `uid` where the directory is
/// theirs (their `/tmp`: the runner has no `CAP_FOWNER`), as the kill
/// borrows it (see `as_candidate`; the posture is put back after both).
/// Only the access time moved when the candidate merely read it: then this
/// saves the wipe helper's start.
fn put_back_times_as_owner(path: &Path, was: Times, uid: u32) {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    if times_of(&meta) == was {
        return;
    }
    if meta.uid() == uid {
        let _ = as_candidate(uid, || set_times(path, was));
    } else {
        set_times(path, was);
    }
}

/// Sets `path`'s (not a symlink's target's) times to `was`.
fn set_times(path: &Path, was: Times) {
    let at = |tv_sec, tv_nsec| Timespec { tv_sec, tv_nsec };
    let times = Timestamps {
        last_access: at(was.0, was.1),
        last_modification: at(was.2, was.3),
    };
    // EPERM for a non-root runner on root's files, which such a candidate
    // cannot change either.
    let _ = utimensat(CWD, path, &times, AtFlags::SYMLINK_NOFOLLOW);
}

/// What identifies one entry: the same inode, type and mode, device number
/// and symlink target.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ident {
    ino: u64,
    mode: u32,
    rdev: u64,
    link: Option<PathBuf>,
}

impl Ident {
    /// A symlink is the same when it points to the same place (the reset
    /// makes a changed one again, with a new inode); anything else must be
    /// the very same inode, mode and device.
    fn same(&self, now: &Ident) -> bool {
        match &self.link {
            Some(_) => self.link == now.link,
            None => self == now,
        }
    }

    /// `path`'s identity, its metadata already read. A symlink's target is
    /// read unless `was` is the symlink recorded there and `checked` says
    /// that its target was read when it had this very inode and change
    /// time: a symlink's target never changes in place, and a new symlink
    /// is a new inode made at a later time. (Reading a symlink moves its
    /// access time on `/dev`, which is strictatime: the reset would
    /// otherwise put back the times its own reads moved, every time.)
    fn with(
        path: &Path,
        meta: &fs::Metadata,
        was: Option<&Ident>,
        checked: Option<&Checked>,
    ) -> io::Result<Ident> {
        let link = if meta.file_type().is_symlink() {
            match (was, checked) {
                (Some(was), Some(&checked))
                    if was.link.is_some() && checked == Checked::of(meta) =>
                {
                    was.link.clone()
                }
                _ => Some(fs::read_link(path)?),
            }
        } else {
            None
        };
        Ok(Ident {
            ino: meta.ino(),
            mode: meta.mode(),
            rdev: meta.rdev(),
            link,
        })
    }
}

/// A symlink's inode and change time when its target was last read and
/// found as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Checked {
    ino: u64,
    ctime: (i64, i64),
}

impl Checked {
    fn of(meta: &fs::Metadata) -> Checked {
        Checked {
            ino: meta.ino(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

impl Baseline {
    fn record(dir: &Path) -> io::Result<Baseline> {
        let meta = fs::symlink_metadata(dir)?;
        let mode = meta.permissions().mode() & 0o7777;
        let mut entries = BTreeMap::new();
        let mut times = BTreeMap::from([(OsString::new(), times_of(&meta))]);
        let mut checked = BTreeMap::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            let ident = Ident::with(&path, &fs::symlink_metadata(&path)?, None, None)?;
            // After the target's read, which may move the access time.
            let meta = fs::symlink_metadata(&path)?;
            if ident.link.is_some() {
                checked.insert(entry.file_name(), Checked::of(&meta));
            }
            entries.insert(entry.file_name(), ident);
            times.insert(entry.file_name(), times_of(&meta));
        }
        Ok(Baseline {
            dir: dir.to_path_buf(),
            mode,
            entries,
            times,
            checked,
        })
    }

    /// `name`'s identity now (see `Ident::with`).
    fn now(&self, name: &OsStr, path: &Path, meta: &fs::Metadata) -> io::Result<Ident> {
        Ident::with(path, meta, self.entries.get(name), self.checked.get(name))
    }
}

/// A directory's extended attributes by name: `user.*` data and POSIX ACLs
/// (`system.posix_acl_access`, `system.posix_acl_default`). Root without
/// capabilities may set them on the directories it owns (`/tmp`,
/// `/dev/shm`, `/dev`), and they outlive every file: measured, a `user.*`
/// value and a default ACL that made new files mode 600 both reached the
/// next candidate.
pub(crate) type Xattrs = BTreeMap<OsString, Vec<u8>>;

/// The most bytes of a name list or of one value (XATTR_LIST_MAX,
/// XATTR_SIZE_MAX).
const XATTR_MAX: usize = 64 << 10;

/// The extended attributes of `path` (itself, not a symlink's target); none
/// where the file system has none.
pub(crate) fn xattrs(path: &Path) -> io::Result<Xattrs> {
    // The list's size first: almost always 0, and then no buffer is needed
    // (zeroing 64 KiB for each of the reset's ten lists cost more than the
    // calls).
    let size = match rustix::fs::llistxattr_query(path) {
        Ok(n) => n,
        Err(e) if e == rustix::io::Errno::OPNOTSUPP => return Ok(Xattrs::new()),
        Err(e) => return Err(e.into()),
    };
    if size == 0 {
        return Ok(Xattrs::new());
    }
    let mut list = vec![0u8; XATTR_MAX];
    let n = match llistxattr(path, &mut list[..]) {
        Ok(n) => n,
        Err(e) if e == rustix::io::Errno::OPNOTSUPP => return Ok(Xattrs::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Xattrs::new();
    for name in list[..n].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = OsStr::from_bytes(name);
        let mut value = vec![0u8; XATTR_MAX];
        let len = lgetxattr(path, name, &mut value[..])?;
        value.truncate(len);
        out.insert(name.to_os_string(), value);
    }
    Ok(out)
}

/// A directory's inode flags (`FS_IOC_GETFLAGS`). The owner of a
/// directory on tmpfs (Linux 6.0 on) may set `FS_NODUMP_FL` and
/// `FS_NOATIME_FL` without a capability, and they outlive every file: the
/// candidate owns its `/tmp`, so two bits would reach the next candidate.
/// The wipe helper puts them back as the owner; `verify` compares them.
pub(crate) fn inode_flags(path: &Path) -> io::Result<u32> {
    Ok(rustix::fs::ioctl_getflags(&open_dir(path)?)?.bits())
}

/// Sets a directory's inode flags to `flags` where they differ.
fn set_inode_flags(path: &Path, flags: u32) -> io::Result<()> {
    use rustix::fs::{ioctl_getflags, ioctl_setflags, IFlags};
    let dir = open_dir(path)?;
    if ioctl_getflags(&dir)?.bits() != flags {
        ioctl_setflags(&dir, IFlags::from_bits_retain(flags))?;
    }
    Ok(())
}

/// `path` opened read-only as a directory, never through a symlink.
fn open_dir(path: &Path) -> io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{open, Mode, OFlags};
    let flags =
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    Ok(open(path, flags, Mode::empty())?)
}

/// Removes the extended attributes `path` did not have and puts back the
/// ones that changed or went away.
fn restore_xattrs(path: &Path, was: &Xattrs) -> io::Result<()> {
    let now = xattrs(path)?;
    for (name, value) in &now {
        match was.get(name) {
            None => lremovexattr(path, name.as_os_str())?,
            Some(v) if v != value => lsetxattr(path, name.as_os_str(), v, XattrFlags::empty())?,
            Some(_) => {}
        }
    }
    for (name, v) in was {
        if !now.contains_key(name) {
            lsetxattr(path, name.as_os_str(), v, XattrFlags::empty())?;
        }
    }
    Ok(())
}

impl Dirs {
    /// Records the writable directories that exist (`/dev/shm` is absent
    /// with `--ipc none`), `/dev`'s entries and their extended attributes.
    pub(crate) fn record() -> Dirs {
        // Reading a directory or a symlink moves its access time while that
        // time is not after its change and modification times (relatime).
        // The reset reads all of them: read once first, so that the times
        // recorded are the ones the reset's own reads leave alone, and the
        // reset does not set them again after every case. (The engine
        // mounts `/dev` strictatime: every read there moves the time, so
        // `/dev`'s are still put back after each case.)
        for dir in WRITABLE.iter().chain(DEV.iter()) {
            let _ = Baseline::record(Path::new(dir));
        }
        let xattrs = WRITABLE
            .iter()
            .chain(DEV.iter())
            .map(Path::new)
            .filter(|d| d.is_dir())
            .map(|d| (d.to_path_buf(), xattrs(d).unwrap_or_default()))
            .collect();
        let times = WRITABLE
            .iter()
            .filter_map(|d| Some((PathBuf::from(d), times_of(&fs::symlink_metadata(d).ok()?))))
            .collect();
        let mut dirs = Dirs {
            xattrs,
            times,
            empty: WRITABLE
                .iter()
                .filter_map(|d| {
                    let meta = fs::symlink_metadata(d).ok()?;
                    meta.is_dir()
                        .then(|| (PathBuf::from(d), meta.permissions().mode() & 0o7777))
                })
                .collect(),
            dev: DEV
                .iter()
                .filter_map(|d| Baseline::record(Path::new(d)).ok())
                .collect(),
            seen: Vec::new(),
            flags: Vec::new(),
        };
        dirs.flags = dirs
            .empty
            .iter()
            .filter_map(|(d, _)| Some((d.clone(), inode_flags(d).ok()?)))
            .collect();
        dirs.seen = stamps(&dirs);
        dirs
    }
}

/// What a kill spares besides PID 1: a running zygote (its pid), only
/// while all its uids are root's; `uid` is the candidates' uid.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spare {
    pub zygote: u32,
    pub uid: u32,
}

/// Sends SIGKILL to every process but PID 1 or, with a zygote to spare, to
/// every process but PID 1 and the zygote. Nothing a candidate can write
/// about itself (its name, its threads' states, any `/proc` text) enters
/// the decision: zombies, stopped and traced processes, processes of other
/// sessions or groups, and thread groups whose leader already left are
/// all sent the signal (harmless to a zombie; to a thread group, fatal to
/// every thread).
///
/// - Without a zygote: `kill(-1)` from PID 1 (the kernel spares only the
///   caller), one atomic sweep: a fork racing it fails.
/// - With a zygote: the same `kill(-1)`, sent by this thread under the
///   candidates' uid as its real and effective uid (saved uid 0, so the
///   runner's capabilities come back with its uid right after): the kernel
///   delivers it to every process of that uid, whatever it did to itself,
///   and to nothing of root's. Then every other pid but PID 1 and the
///   zygote (there should be none: a candidate cannot change its uid) gets
///   SIGKILL one by one, from root.
pub(crate) fn kill_others(spare: Option<Spare>) {
    let everyone = || {
        // ESRCH: nobody left.
        let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
    };
    let Some(spare) = spare else {
        return everyone();
    };
    if as_candidate(spare.uid, everyone).is_err() {
        // The runner could not borrow the uid (it always can as root with
        // SETUID): nothing is spared.
        return everyone();
    }
    // (`other_pids` answers 0 when `/proc` cannot be read: never a pid
    // to signal, as `kill(0)` is the caller's process group.)
    for pid in other_pids(Some(spare)).into_iter().filter(|&pid| pid > 1) {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Runs `f` on this thread with `uid` as its real and effective uid and
/// root's as its saved one: the effective capabilities are gone while `f`
/// runs and come back with the uid. Ids are per thread on Linux. A change
/// of effective uid resets the dumpable flag to `fs.suid_dumpable`: the
/// runner makes itself non-dumpable again.
fn as_candidate(uid: u32, f: impl FnOnce()) -> Result<(), String> {
    use rustix::process::Uid;
    use rustix::thread::set_thread_res_uid;
    let uid = Uid::from_raw(uid);
    set_thread_res_uid(uid, uid, None).map_err(|e| format!("setresuid: {e}"))?;
    f();
    let back = set_thread_res_uid(Uid::ROOT, Uid::ROOT, None);
    let dumpable =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    match (back, dumpable) {
        (Ok(()), Ok(())) => Ok(()),
        // The runner cannot go on safely without its ids or with a
        // dumpable PID 1: it ends, and the host discards the container.
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("sbx runner: could not take back its uid or non-dumpability: {e}");
            std::process::exit(crate::exit::ENGINE)
        }
    }
}

/// Kills every process but PID 1 (and a spared zygote) again and again and
/// reaps them all, until `/proc` lists only those and PID 1 has no other
/// child left.
pub(crate) fn kill_and_reap_all(deadline: Instant, spare: Option<Spare>) -> Result<(), String> {
    loop {
        kill_others(spare);
        let no_children = reap_all();
        let others = other_pids(spare);
        // A zombie shows in `/proc` until it is reaped: with a zygote (a
        // child that stays), an empty list is the whole test.
        if others.is_empty() && (no_children || spare.is_some()) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "processes left after SIGKILL: {}",
                list(&others, 10)
            ));
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// Reaps every exited child without blocking; true when no child is left.
fn reap_all() -> bool {
    loop {
        match wait(WaitOptions::NOHANG) {
            Ok(Some(_)) => {}
            Ok(None) => return false,
            Err(e) if e == rustix::io::Errno::INTR => {}
            // ECHILD: no child at all.
            Err(_) => return true,
        }
    }
}

/// The pids in `/proc` other than 1 (zombies included) and a spared
/// zygote, which is spared only while all its uids are root's: a pid a
/// candidate's process took over after the zygote died is listed.
pub(crate) fn other_pids(spare: Option<Spare>) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return vec![0];
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != 1)
        .filter(|&pid| !spare.is_some_and(|s| s.zygote == pid && roots(pid)))
        .collect()
}

/// Whether every uid of `pid` (real, effective, saved, file system) is 0,
/// read as bytes: the `Name:` line before it is the kernel's escaped copy
/// of the name (no raw newline), and no candidate can write a root
/// process's name anyway.
fn roots(pid: u32) -> bool {
    kernel_file::read(format!("/proc/{pid}/status")).is_ok_and(|status| {
        status
            .split(|&b| b == b'\n')
            .find_map(|l| l.strip_prefix(b"Uid:"))
            .is_some_and(|ids| {
                let ids: Vec<&[u8]> = ids
                    .split(|b| b.is_ascii_whitespace())
                    .filter(|w| !w.is_empty())
                    .collect();
                ids.len() == 4 && ids.iter().all(|id| *id == b"0")
            })
    })
}

fn list(items: &[u32], max: usize) -> String {
    let mut words: Vec<String> = items.iter().take(max).map(u32::to_string).collect();
    if items.len() > max {
        words.push("...".into());
    }
    words.join(" ")
}

/// How the runner empties what the candidate owns: its own executable run
/// again as the candidate's uid and gid (`sbx __runner --wipe ...`). The
/// runner (root without `CAP_DAC_OVERRIDE` or `CAP_FOWNER`) can neither
/// write the candidate's /tmp nor open or chmod a directory the candidate
/// locked (mode 000); the candidate's own uid can. Every candidate process
/// is dead before the helper starts, so nothing can race or stop it, and
/// the runner verifies its work as before.
#[derive(Debug, Clone)]
pub(crate) struct Wiper {
    /// The runner's own executable, as `/proc/self/exe` named it at start.
    pub exe: PathBuf,
    /// The runner's hidden subcommand, which `WIPE` follows.
    pub subcommand: &'static str,
    pub uid: u32,
    pub gid: u32,
}

/// The argument that makes the runner the wipe helper.
pub(crate) const WIPE: &str = "--wipe";

impl Wiper {
    /// Runs the helper over `dirs` (their paths, modes and times as
    /// recorded) and waits for it until `deadline`; what it could not do is
    /// left for the runner's own steps and `verify` to name.
    fn run(&self, dirs: &Dirs, deadline: Instant) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(&self.exe);
        cmd.arg(self.subcommand).arg(WIPE);
        for (dir, mode) in &dirs.empty {
            let times = dirs
                .times
                .iter()
                .find(|(d, _)| d == dir)
                .map(|(_, t)| *t)
                .unwrap_or((0, -1, 0, -1));
            let flags = dirs
                .flags
                .iter()
                .find(|(d, _)| d == dir)
                .map_or(-1, |(_, f)| i64::from(*f));
            cmd.arg(dir).arg(format!(
                "{mode:o}:{}:{}:{}:{}:{flags}",
                times.0, times.1, times.2, times.3
            ));
        }
        cmd.uid(self.uid)
            .gid(self.gid)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("could not start the wipe helper: {e}"))?;
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(format!("the wipe helper ended with {status}")),
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("the wipe helper took too long".into());
                }
                Ok(None) => thread::sleep(Duration::from_millis(1)),
                Err(e) => return Err(format!("wait for the wipe helper: {e}")),
            }
        }
    }
}

/// The wipe helper (`sbx __runner --wipe DIR MODE:AS:ANS:MS:MNS:FLAGS ...`),
/// run by the runner as the candidate's uid: for each directory, its mode,
/// inode flags (`FLAGS`, -1: none recorded) and times back as recorded and
/// its extended attributes gone where the candidate owns it, then
/// everything under it removed that this uid can remove (locked
/// directories are unlocked first). Exit 0 when all of it worked, 1
/// otherwise (the runner verifies either way).
pub(crate) fn wipe_main(args: &[OsString]) -> i32 {
    let deadline = Instant::now() + BUDGET;
    let mut ok = true;
    for pair in args.chunks(2) {
        let [dir, spec] = pair else { return 2 };
        let dir = Path::new(dir);
        let fields: Vec<i64> = spec
            .to_string_lossy()
            .split(':')
            .enumerate()
            .filter_map(|(i, f)| match i {
                0 => i64::from_str_radix(f, 8).ok(),
                _ => f.parse().ok(),
            })
            .collect();
        let [mode, a, an, m, mn, flags] = fields[..] else {
            return 2;
        };
        let mine = fs::symlink_metadata(dir)
            .is_ok_and(|meta| meta.uid() == rustix::process::geteuid().as_raw());
        if mine {
            // Before emptying: a default ACL would apply to nothing more,
            // and user data must not outlive the candidate.
            if let Ok(names) = xattrs(dir) {
                let candidates_own = |name: &OsStr| {
                    let name = name.as_bytes();
                    name.starts_with(b"user.") || name.starts_with(b"system.posix_acl_")
                };
                for name in names.keys().filter(|n| candidates_own(n)) {
                    ok &= lremovexattr(dir, name.as_os_str()).is_ok();
                }
            }
            ok &= empty(dir, mode as u32, deadline).is_ok();
            if let Ok(flags) = u32::try_from(flags) {
                ok &= set_inode_flags(dir, flags).is_ok();
            }
            if an >= 0 && mn >= 0 {
                put_back_times(dir, (a, an, m, mn));
            }
        } else {
            // Not the candidate's: only what it made inside.
            let now = fs::symlink_metadata(dir).map(|m| m.permissions().mode() & 0o7777);
            ok &= now.is_ok_and(|now| empty(dir, now, deadline).is_ok());
        }
    }
    i32::from(!ok)
}

/// The full reset, in order: kill and reap, empty the writable directories
/// (the wipe helper first, as the candidate), verify. `Ok(())` is clean;
/// `Err` says what remains.
pub(crate) fn reset(dirs: &mut Dirs, wiper: &Wiper, spare: Option<Spare>) -> Result<(), String> {
    let deadline = Instant::now() + BUDGET;
    let mut problems = Vec::new();
    // No candidate process is left (and none can be made again): then,
    // and only then, may the runner borrow the candidates' uid below.
    let mut none_left = true;
    if let Err(e) = kill_and_reap_all(deadline, spare) {
        problems.push(e);
        none_left = false;
    }
    // The helper's findings are not the verdict on the reset: `verify`'s
    // are. Its failure to start, or to end, is. Most candidates write
    // nothing there: the helper (a process start) is then skipped. An
    // extended attribute set moves no time on some kernels (gVisor's
    // `user.*`): attributes that differ from the recorded ones call it too.
    let touched = !untouched(dirs) || attributes_moved(dirs);
    if touched {
        match wiper.run(dirs, deadline) {
            Ok(()) => {}
            Err(e) if e.starts_with("the wipe helper ended") => {}
            Err(e) => problems.push(e),
        }
        if let Err(e) = kill_and_reap_all(deadline, spare) {
            problems.push(e);
            none_left = false;
        }
    }
    // First: a default ACL would apply to what the reset makes again, and
    // an access ACL's mask is what a chmod changes.
    for (dir, was) in &dirs.xattrs {
        if let Err(e) = restore_xattrs(dir, was) {
            problems.push(format!("{} extended attributes: {e}", dir.display()));
        }
    }
    // Untouched directories hold nothing to empty (`verify` still looks).
    if touched {
        for (dir, mode) in &dirs.empty {
            if let Err(e) = empty(dir, *mode, deadline) {
                problems.push(format!("{}: {e}", dir.display()));
            }
        }
    }
    for dev in &mut dirs.dev {
        if let Err(e) = restore(dev, deadline) {
            problems.push(format!("{}: {e}", dev.dir.display()));
        }
    }
    problems.extend(verify(dirs, spare).err());
    // Last, after `verify`'s reads: a read of a directory moves its access
    // time (on `/dev`, strictatime, and under gVisor, every read), which
    // would otherwise tell the next candidate when this reset ran.
    put_back_dir_times(dirs, none_left.then_some(wiper.uid));
    if problems.is_empty() {
        dirs.seen = stamps(dirs);
        Ok(())
    } else {
        // Never skip the helper after a reset that did not verify.
        dirs.seen.clear();
        Err(problems.join("; "))
    }
}

/// Restores `dir`'s mode and removes everything under it without following
/// symlinks. Directories a candidate locked (mode 000) are chmod'ed back
/// first: root without CAP_DAC_OVERRIDE obeys modes, but may chmod what it
/// owns. Iterative, one open directory per level (a deep tree cannot
/// exhaust the stack), and every entry is visited once (a wide tree costs
/// linear time). What cannot be removed is left for `verify` to name.
fn empty(root: &Path, mode: u32, deadline: Instant) -> io::Result<()> {
    // Only when changed: a non-root runner does not own /dev/mqueue.
    if fs::symlink_metadata(root)?.permissions().mode() & 0o7777 != mode {
        fs::set_permissions(root, fs::Permissions::from_mode(mode))?;
    }
    let mut first_error: Option<io::Error> = None;
    let mut stack: Vec<(PathBuf, fs::ReadDir)> = vec![(root.to_path_buf(), fs::read_dir(root)?)];
    while let Some((_, entries)) = stack.last_mut() {
        if Instant::now() >= deadline {
            return Err(io::Error::other("emptying took too long"));
        }
        let path = match entries.next() {
            None => {
                if let Some((dir, _)) = stack.pop() {
                    if dir != root {
                        if let Err(e) = fs::remove_dir(&dir) {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                continue;
            }
            Some(Err(e)) => {
                // A directory that cannot be read further: leave the rest.
                first_error.get_or_insert(e);
                stack.pop();
                continue;
            }
            Some(Ok(entry)) => entry.path(),
        };
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                // Only our own processes could race us, and they are all
                // dead: `path` is still that directory.
                let opened = fs::set_permissions(&path, fs::Permissions::from_mode(0o700))
                    .and_then(|()| fs::read_dir(&path));
                match opened {
                    Ok(sub) => stack.push((path, sub)),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            Ok(_) => {
                if let Err(e) = fs::remove_file(&path) {
                    first_error.get_or_insert(e);
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Puts `base.dir` back as recorded: its mode, no entry it did not have,
/// permission bits and symlinks as they were. An entry that was removed or
/// replaced by another inode (a device node: root without CAP_MKNOD cannot
/// make one) is left for `verify` to report.
fn restore(base: &mut Baseline, deadline: Instant) -> io::Result<()> {
    if fs::symlink_metadata(&base.dir)?.permissions().mode() & 0o7777 != base.mode {
        fs::set_permissions(&base.dir, fs::Permissions::from_mode(base.mode))?;
    }
    let mut first_error: Option<io::Error> = None;
    let mut note = |r: io::Result<()>| {
        if let Err(e) = r {
            first_error.get_or_insert(e);
        }
    };
    // The entries the steps below changed, whose times are read again at
    // the end; any other entry's times are put back from the one read here.
    let mut changed: Vec<OsString> = Vec::new();
    // The symlinks found as recorded whose change time is no longer the
    // one `checked` holds (their times put back here, or their target
    // read), by inode: `checked` takes their change time at the end.
    let mut verified: Vec<(OsString, u64)> = Vec::new();
    for entry in fs::read_dir(&base.dir)? {
        let entry = entry?;
        let path = entry.path();
        let mut meta = fs::symlink_metadata(&path)?;
        let name = entry.file_name();
        let known = base.checked.get(&name) == Some(&Checked::of(&meta));
        let now = base.now(&name, &path, &meta)?;
        if now.link.is_some() && !known {
            // Its target was read, which may have moved its access time.
            meta = fs::symlink_metadata(&path)?;
        }
        let acted = match base.entries.get(&name) {
            None if now.mode & 0o170000 == 0o040000 => {
                note(
                    fs::set_permissions(&path, fs::Permissions::from_mode(0o700))
                        .and_then(|()| empty(&path, 0o700, deadline))
                        .and_then(|()| fs::remove_dir(&path)),
                );
                true
            }
            None => {
                note(fs::remove_file(&path));
                true
            }
            Some(was) if was.link.is_some() && !was.same(&now) => {
                // A symlink changed or replaced: make it again.
                if now.mode & 0o170000 == 0o040000 {
                    note(empty(&path, 0o700, deadline).and_then(|()| fs::remove_dir(&path)));
                } else {
                    note(fs::remove_file(&path));
                }
                true
            }
            Some(was) if was.ino == now.ino && was.mode != now.mode && was.link.is_none() => {
                note(fs::set_permissions(
                    &path,
                    fs::Permissions::from_mode(was.mode & 0o7777),
                ));
                true
            }
            Some(_) => false,
        };
        if acted {
            changed.push(name);
            continue;
        }
        let mut moved = base.checked.get(&name) != Some(&Checked::of(&meta));
        if let Some(&times) = base.times.get(&name) {
            if times_of(&meta) != times {
                set_times(&path, times);
                moved = true;
            }
        }
        // Not acted on, a recorded symlink is the same one.
        let link = base
            .entries
            .get(&name)
            .is_some_and(|was| was.link.is_some());
        if link && moved {
            verified.push((name, meta.ino()));
        }
    }
    for (name, was) in &base.entries {
        let path = base.dir.join(name);
        if let (Some(target), Err(_)) = (&was.link, fs::symlink_metadata(&path)) {
            let made = std::os::unix::fs::symlink(target, &path)
                .and_then(|()| fs::symlink_metadata(&path));
            match made {
                // Made by the runner, with the recorded target.
                Ok(meta) => verified.push((name.clone(), meta.ino())),
                Err(e) => note(Err(e)),
            }
            changed.push(name.clone());
        }
    }
    // Last: every change above touched the directory's own times, and
    // those of what it changed or made again.
    for name in &changed {
        if let Some(&was) = base.times.get(name) {
            put_back_times(&base.dir.join(name), was);
        }
    }
    if let Some(&was) = base.times.get(OsStr::new("")) {
        put_back_times(&base.dir, was);
    }
    // No process but the runner's runs now: these change times are ours.
    for (name, ino) in verified {
        match fs::symlink_metadata(base.dir.join(&name)) {
            Ok(meta) if meta.file_type().is_symlink() && meta.ino() == ino => {
                base.checked.insert(name, Checked::of(&meta));
            }
            _ => {
                base.checked.remove(&name);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Differences between `base` and what its directory holds now.
fn compare(base: &Baseline, problems: &mut Vec<String>) {
    let dir = base.dir.display();
    match fs::symlink_metadata(&base.dir) {
        Ok(meta) if meta.permissions().mode() & 0o7777 != base.mode => problems.push(format!(
            "{dir} has mode {:o}, not {:o}",
            meta.permissions().mode() & 0o7777,
            base.mode
        )),
        Ok(_) => {}
        Err(e) => problems.push(format!("{dir}: {e}")),
    }
    let entries = match fs::read_dir(&base.dir) {
        Ok(entries) => entries,
        Err(e) => return problems.push(format!("{dir}: {e}")),
    };
    let mut seen = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        match base.entries.get(&name) {
            None => problems.push(format!("{dir}/{} was added", name.to_string_lossy())),
            Some(was) => {
                seen += 1;
                let path = entry.path();
                let now =
                    fs::symlink_metadata(&path).and_then(|meta| base.now(&name, &path, &meta));
                if !now.is_ok_and(|now| was.same(&now)) {
                    problems.push(format!("{dir}/{} was changed", name.to_string_lossy()));
                }
            }
        }
    }
    if seen != base.entries.len() {
        problems.push(format!(
            "{} entries of {dir} were removed",
            base.entries.len() - seen
        ));
    }
}

/// Checks that only PID 1 is left, the writable directories are empty and
/// have their first mode, `/dev` is as it was, and the IPC namespace holds
/// no SysV object.
pub(crate) fn verify(dirs: &Dirs, spare: Option<Spare>) -> Result<(), String> {
    let mut problems = Vec::new();
    let others = other_pids(spare);
    if !others.is_empty() {
        problems.push(format!("processes left: {}", list(&others, 10)));
    }
    for dev in &dirs.dev {
        compare(dev, &mut problems);
    }
    for (dir, was) in &dirs.xattrs {
        match xattrs(dir) {
            Ok(now) if now == *was => {}
            Ok(now) => problems.push(format!(
                "{} has extended attributes {:?}, not {:?}",
                dir.display(),
                now.keys().collect::<Vec<_>>(),
                was.keys().collect::<Vec<_>>()
            )),
            Err(e) => problems.push(format!("{} extended attributes: {e}", dir.display())),
        }
    }
    for (dir, mode) in &dirs.empty {
        match fs::symlink_metadata(dir) {
            Ok(meta) if meta.permissions().mode() & 0o7777 != *mode => problems.push(format!(
                "{} has mode {:o}, not {mode:o}",
                dir.display(),
                meta.permissions().mode() & 0o7777
            )),
            Ok(_) => {}
            Err(e) => problems.push(format!("{}: {e}", dir.display())),
        }
        match fs::read_dir(dir) {
            Ok(mut entries) => {
                if let Some(entry) = entries.next() {
                    let name = entry
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .unwrap_or_default();
                    problems.push(format!("{} is not empty (`{name}`)", dir.display()));
                }
            }
            Err(e) => problems.push(format!("{}: {e}", dir.display())),
        }
    }
    for (dir, was) in &dirs.flags {
        match inode_flags(dir) {
            Ok(now) if now == *was => {}
            Ok(now) => problems.push(format!(
                "{} has inode flags {now:#x}, not {was:#x}",
                dir.display()
            )),
            Err(e) => problems.push(format!("{} inode flags: {e}", dir.display())),
        }
    }
    for table in SYSVIPC {
        // The first line is the header; a missing table has no objects.
        if let Ok(text) = kernel_file::read(table).map(|b| String::from_utf8_lossy(&b).into_owned())
        {
            let objects = text
                .lines()
                .skip(1)
                .filter(|l| !l.trim().is_empty())
                .count();
            if objects > 0 {
                problems.push(format!("{table} lists {objects} object(s)"));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_unlocks_mode_000_dirs_and_does_not_follow_symlinks() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("keep"), b"x").unwrap();
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        fs::create_dir_all(r.join("a/b/c")).unwrap();
        fs::write(r.join("a/b/c/f"), b"1").unwrap();
        fs::write(r.join("top"), b"2").unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("a/link")).unwrap();
        fs::set_permissions(r.join("a/b"), fs::Permissions::from_mode(0o000)).unwrap();
        fs::set_permissions(r.join("a"), fs::Permissions::from_mode(0o000)).unwrap();
        fs::set_permissions(r, fs::Permissions::from_mode(0o500)).unwrap();

        empty(r, 0o755, Instant::now() + BUDGET).unwrap();

        assert_eq!(fs::read_dir(r).unwrap().count(), 0);
        assert_eq!(
            fs::symlink_metadata(r).unwrap().permissions().mode() & 0o7777,
            0o755
        );
        assert!(outside.path().join("keep").exists(), "followed a symlink");
    }

    #[test]
    fn restore_puts_a_directory_back_as_recorded() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        fs::write(r.join("null"), b"").unwrap();
        fs::set_permissions(r.join("null"), fs::Permissions::from_mode(0o666)).unwrap();
        std::os::unix::fs::symlink("/proc/self/fd/1", r.join("stdout")).unwrap();
        std::os::unix::fs::symlink("/proc/self/fd/0", r.join("stdin")).unwrap();
        fs::create_dir(r.join("pts")).unwrap();
        let mut base = Baseline::record(r).unwrap();
        let clean = |base: &Baseline| {
            let mut problems = Vec::new();
            compare(base, &mut problems);
            problems
        };
        assert_eq!(clean(&base), Vec::<String>::new());

        // Added entries (a locked dir among them), a chmod, a symlink
        // pointed elsewhere, one removed, the directory's own mode.
        fs::write(r.join("leak"), b"secret").unwrap();
        fs::create_dir_all(r.join("d/e")).unwrap();
        fs::set_permissions(r.join("d"), fs::Permissions::from_mode(0o000)).unwrap();
        fs::set_permissions(r.join("null"), fs::Permissions::from_mode(0o000)).unwrap();
        fs::remove_file(r.join("stdout")).unwrap();
        std::os::unix::fs::symlink("/tmp/x", r.join("stdout")).unwrap();
        fs::remove_file(r.join("stdin")).unwrap();
        fs::set_permissions(r, fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(clean(&base).len(), 6, "{:?}", clean(&base));

        restore(&mut base, Instant::now() + BUDGET).unwrap();
        assert_eq!(clean(&base), Vec::<String>::new());
        assert_eq!(
            fs::read_link(r.join("stdout")).unwrap(),
            Path::new("/proc/self/fd/1")
        );

        // An entry replaced by another kind of file cannot be put back (in
        // /dev, a device node: without CAP_MKNOD none can be made).
        fs::remove_file(r.join("null")).unwrap();
        fs::create_dir(r.join("null")).unwrap();
        restore(&mut base, Instant::now() + BUDGET).unwrap();
        assert_eq!(
            clean(&base),
            ["".to_string() + &r.display().to_string() + "/null was changed"]
        );
    }

    #[test]
    fn a_symlink_is_read_again_only_when_its_inode_or_change_time_moved() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::os::unix::fs::symlink("/proc/self/fd/1", r.join("stdout")).unwrap();
        let mut base = Baseline::record(r).unwrap();
        let name = OsStr::new("stdout");
        let meta = |p: &Path| fs::symlink_metadata(p).unwrap();
        assert_eq!(
            base.checked.get(name),
            Some(&Checked::of(&meta(&r.join("stdout"))))
        );
        // Its times set (a change time of its own): put back, and the
        // target read again and found as recorded, the new change time is
        // the one known.
        set_times(&r.join("stdout"), (1, 0, 2, 0));
        restore(&mut base, Instant::now() + BUDGET).unwrap();
        assert_eq!(
            base.checked.get(name),
            Some(&Checked::of(&meta(&r.join("stdout"))))
        );
        assert_eq!(
            times_of(&meta(&r.join("stdout"))),
            base.times[name],
            "times not put back"
        );
        // The same name made again elsewhere, later: a new change time
        // (ext4 even hands out the same inode number again at once), so
        // its target is read again and found changed.
        thread::sleep(Duration::from_millis(20));
        fs::remove_file(r.join("stdout")).unwrap();
        std::os::unix::fs::symlink("/tmp/elsewhere", r.join("stdout")).unwrap();
        let mut problems = Vec::new();
        compare(&base, &mut problems);
        assert_eq!(problems.len(), 1, "{problems:?}");
        restore(&mut base, Instant::now() + BUDGET).unwrap();
        assert_eq!(
            fs::read_link(r.join("stdout")).unwrap(),
            Path::new("/proc/self/fd/1")
        );
        let mut problems = Vec::new();
        compare(&base, &mut problems);
        assert_eq!(problems, Vec::<String>::new());
    }

    #[test]
    fn inode_flags_are_verified_and_put_back_by_the_helper() {
        // tmpfs keeps them (Linux 6.0 on), as the container's /tmp does.
        let root = tempfile::tempdir_in("/dev/shm").unwrap();
        let r = root.path();
        let Ok(was) = inode_flags(r) else {
            panic!("no inode flags on tmpfs here: the kernel is older than 6.0");
        };
        let mode = fs::symlink_metadata(r).unwrap().permissions().mode() & 0o7777;
        let dirs = Dirs {
            empty: vec![(r.to_path_buf(), mode)],
            dev: Vec::new(),
            xattrs: Vec::new(),
            times: Vec::new(),
            seen: Vec::new(),
            flags: vec![(r.to_path_buf(), was)],
        };
        // (Here, the host's other processes are always "left".)
        let flagged = || verify(&dirs, None).unwrap_err().contains("inode flags");
        assert!(!flagged());
        // FS_NODUMP_FL and FS_NOATIME_FL: an owner's to set.
        set_inode_flags(r, was | 0x40 | 0x80).unwrap();
        assert!(flagged());
        let spec = format!("{mode:o}:0:-1:0:-1:{was}");
        assert_eq!(wipe_main(&[r.into(), spec.into()]), 0);
        assert_eq!(inode_flags(r).unwrap(), was);
        assert!(!flagged());
    }

    #[test]
    fn extended_attributes_are_put_back() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        lsetxattr(r, "user.keep", b"1", XattrFlags::empty()).expect("user xattrs here");
        let was = xattrs(r).unwrap();
        lsetxattr(r, "user.leak", b"secret", XattrFlags::empty()).unwrap();
        lsetxattr(r, "user.keep", b"2", XattrFlags::empty()).unwrap();
        assert_eq!(xattrs(r).unwrap().len(), 2);
        restore_xattrs(r, &was).unwrap();
        assert_eq!(xattrs(r).unwrap(), was);
        lremovexattr(r, "user.keep").unwrap();
        restore_xattrs(r, &was).unwrap();
        assert_eq!(xattrs(r).unwrap(), was);
    }

    #[test]
    fn verify_names_what_is_left() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("left"), b"").unwrap();
        let mode = fs::symlink_metadata(root.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        let dirs = Dirs {
            empty: vec![(root.path().to_path_buf(), mode)],
            dev: Vec::new(),
            xattrs: Vec::new(),
            times: Vec::new(),
            seen: Vec::new(),
            flags: Vec::new(),
        };
        let err = verify(&dirs, None).unwrap_err();
        assert!(err.contains("is not empty (`left`)"), "{err}");
    }

    #[test]
    fn untouched_only_while_no_time_of_the_directories_moved() {
        let root = tempfile::tempdir().unwrap();
        let mode = fs::symlink_metadata(root.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        let mut dirs = Dirs {
            empty: vec![(root.path().to_path_buf(), mode)],
            dev: Vec::new(),
            xattrs: Vec::new(),
            times: Vec::new(),
            seen: Vec::new(),
            flags: Vec::new(),
        };
        // Nothing recorded (the start, or after a dirty reset): never.
        assert!(!untouched(&dirs));
        let settle = || thread::sleep(Duration::from_millis(20));
        dirs.seen = stamps(&dirs);
        assert!(untouched(&dirs));
        settle();
        // An entry made and removed again moves the modification time.
        fs::write(root.path().join("x"), b"").unwrap();
        fs::remove_file(root.path().join("x")).unwrap();
        assert!(!untouched(&dirs));
        settle();
        dirs.seen = stamps(&dirs);
        // A chmod moves only the change time.
        fs::set_permissions(root.path(), fs::Permissions::from_mode(0o700)).unwrap();
        assert!(!untouched(&dirs));
        settle();
        dirs.seen = stamps(&dirs);
        // Times set back to what they were still move the change time.
        let meta = fs::symlink_metadata(root.path()).unwrap();
        put_back_times(root.path(), (0, 0, 0, 0));
        put_back_times(root.path(), times_of(&meta));
        assert!(!untouched(&dirs));
        // A read moves only the access time (here, relatime, because it
        // was before the modification time): still untouched.
        set_times(root.path(), (1, 0, 2, 0));
        settle();
        dirs.seen = stamps(&dirs);
        let _ = fs::read_dir(root.path()).unwrap().count();
        let after = fs::symlink_metadata(root.path()).unwrap();
        assert_ne!(
            (after.atime(), after.atime_nsec()),
            (1, 0),
            "the read moved no access time"
        );
        assert!(untouched(&dirs));
    }
}
