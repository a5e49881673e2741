//! The in-container runner against the real engine: sbx's static binary as
//! PID 1 of a hardened container, driven through `RunnerSession`.
//!
//! Every hostile candidate is followed, in the same container, by a checker
//! that must find nothing left (no other process, empty `/tmp`, `/dev/shm`
//! and `/dev/mqueue`, no SysV object, a working fork) and must be judged
//! correctly. Containers are named after the test and removed on every path.

use crate::common;

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use sbx::docker::argv::{runner_create_args, Container, Mount};
use sbx::docker::Docker;
use sbx::runner::host::{LoadOutcome, Offer, ResetOutcome, RunnerSession, Transport};
use sbx::spec::{Hardening, Limits};
use sbx_runner::protocol::{BuildFile, Candidate, Case, CaseResult, CaseStatus, TimeRule};
use sbx_runner::SUBCOMMAND;

use common::{Cleanup, BUSYBOX, PYTHON};

/// A runner container of one test, removed when dropped.
struct Box_ {
    session: Option<RunnerSession>,
    cleanup: Cleanup,
    _stage: tempfile::TempDir,
}

impl Drop for Box_ {
    fn drop(&mut self) {
        drop(self.session.take());
        // Panics on a leftover only when the test itself did not fail.
        if !std::thread::panicking() {
            self.cleanup.finish();
        }
    }
}

fn create_args(
    name: &str,
    run_id: &str,
    image: &str,
    runner: &Path,
    hardening: &Hardening,
) -> Vec<OsString> {
    let limits = Limits::default();
    runner_create_args(
        &Container {
            name,
            run_id,
            interactive: true,
            mount: Mount::Bind(runner),
            image,
            limits: &limits,
            hardening,
            interpreter: &[],
        },
        SUBCOMMAND,
    )
}

/// sbx's binary copied into a private staging directory, as sbx stages it.
fn stage() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a staging directory");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))
        .expect("chmod the staging directory");
    let runner = dir.path().join("sbx-runner");
    fs::copy(env!("CARGO_BIN_EXE_sbx"), &runner).expect("copy sbx");
    fs::set_permissions(&runner, fs::Permissions::from_mode(0o755)).expect("chmod the runner");
    (dir, runner)
}

fn open(test: &str, image: &str) -> Box_ {
    open_with(test, image, &Hardening::default())
}

fn open_with(test: &str, image: &str, hardening: &Hardening) -> Box_ {
    open_over(test, image, hardening, false)
}

/// A runner offered a control socket (`socket`), made in a private
/// directory of the staging one, or kept on stdin and stdout.
fn open_over(test: &str, image: &str, hardening: &Hardening, socket: bool) -> Box_ {
    let run_id = common::run_id("rn", test);
    let name = format!("sbx-{run_id}");
    let cleanup = Cleanup::new(&[&run_id]);
    let (stage, runner) = stage();
    let private = stage.path().join("control");
    fs::create_dir(&private).expect("a private control directory");
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).expect("chmod it");
    let args = create_args(&name, &run_id, image, &runner, hardening);
    let (offer, transport) = if socket {
        (Offer::Socket(&private), Transport::Socket)
    } else {
        (Offer::Stdio, Transport::Stdio)
    };
    let session = RunnerSession::start_with(&Docker::new("docker"), &args, &name, offer)
        .unwrap_or_else(|e| panic!("runner did not start: {e}"));
    assert_eq!(session.transport(), transport);
    assert_eq!(session.sbx_version, env!("CARGO_PKG_VERSION"));
    assert!(session.oom_counter, "the OOM counter is readable here");
    Box_ {
        session: Some(session),
        cleanup,
        _stage: stage,
    }
}

impl Box_ {
    fn s(&mut self) -> &mut RunnerSession {
        self.session.as_mut().expect("an open session")
    }

    /// Loads a candidate, runs one case, resets (which must be clean).
    fn run(&mut self, file: &str, program: &str, interp: Option<&str>, case: Case) -> CaseResult {
        let candidate = Candidate {
            file_name: file.into(),
            program: program.as_bytes().to_vec(),
            interpreter: interp.map(|i| i.split(' ').map(String::from).collect()),
            build: None,
        };
        assert_eq!(self.s().load(&candidate).expect("load"), LoadOutcome::Ready);
        let result = self
            .s()
            .run_case(&case)
            .unwrap_or_else(|e| panic!("case of {file}: {e}"));
        assert_eq!(
            self.s().reset().expect("reset"),
            ResetOutcome::Clean,
            "reset after {file}"
        );
        result
    }

    fn py(&mut self, file: &str, program: &str, case: Case) -> CaseResult {
        self.run(file, program, Some("python3"), case)
    }

    /// The checker: must be judged OK with exactly `CLEAN <stdin>`.
    fn check_clean(&mut self, after: &str) {
        let r = self.py("check.py", CHECK, case(b"next", 30_000));
        assert_eq!(
            (r.status, text(&r.stdout).as_str()),
            (CaseStatus::Ok, "CLEAN next\n"),
            "after {after}: {r:?} stderr: {}",
            text(&r.stderr_tail)
        );
    }
}

/// A candidate run as itself (its shebang, or none), with no build.
fn run_directly(file_name: impl Into<String>, program: &[u8]) -> Candidate {
    Candidate {
        file_name: file_name.into(),
        program: program.to_vec(),
        interpreter: None,
        build: None,
    }
}

fn case(stdin: &[u8], wall_ms: u64) -> Case {
    Case {
        stdin: stdin.to_vec(),
        wall_ms,
        max_output: 1 << 20,
        cpu_limit_s: None,
        rule: TimeRule::Wall,
    }
}

/// The case ended with `status` and printed exactly `stdout`; its stderr
/// tail explains a mismatch.
/// A Python prelude: `t(name, f)` runs `f` and prints `name` and `ok` or
/// the errno's name.
const TRY: &str = "import errno, os, resource
def t(name, f):
    try:
        f()
        print(name, 'ok')
    except OSError as e:
        print(name, errno.errorcode[e.errno])
";

fn assert_ended(r: &CaseResult, status: CaseStatus, stdout: &str) {
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (status, stdout),
        "{}",
        text(&r.stderr_tail)
    );
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Finds anything a previous candidate left; prints `CLEAN <stdin>`.
const CHECK: &str = concat!(
    r#"
import os, sys
me = os.getpid()
bad = []
"#,
    common::zygote_filter!(),
    r#"pids = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, me) and not zygote(p)]
if pids:
    bad.append('pids %s' % [(p, open('/proc/%s/cmdline' % p, 'rb').read()) for p in pids])
mine = os.path.dirname(os.path.abspath(__file__))
tmp = [e for e in os.listdir('/tmp') if '/tmp/' + e != mine]
if tmp or os.listdir(mine) != ['check.py']:
    bad.append('tmp %s %s' % (tmp, os.listdir(mine)))
for d in ('/dev/shm', '/dev/mqueue'):
    if not os.path.isdir(d):  # no /dev/shm with --ipc none
        continue
    if os.listdir(d):
        bad.append('%s %s' % (d, os.listdir(d)))
    if os.stat(d).st_mode & 0o777 == 0:
        bad.append('%s locked' % d)
for t in ('shm', 'msg', 'sem'):
    lines = open('/proc/sysvipc/' + t).read().splitlines()[1:]
    if lines:
        bad.append('sysv %s %s' % (t, lines))
dev = os.listdir('/dev')
if [e for e in dev if 'leak' in e] or os.stat('/dev').st_mode & 0o777 != 0o755:
    bad.append('dev %s' % dev)
if os.readlink('/dev/stdout') != '/proc/self/fd/1':
    bad.append('/dev/stdout -> %s' % os.readlink('/dev/stdout'))
import stat
st = os.stat('/dev/null')
if not stat.S_ISCHR(st.st_mode) or st.st_mode & 0o777 != 0o666:
    bad.append('/dev/null %o' % st.st_mode)
pid = os.fork()
if pid == 0:
    os._exit(7)
if os.waitpid(pid, 0)[1] >> 8 != 7:
    bad.append('fork')
open('/tmp/probe', 'wb').write(b'x' * (1 << 20))
if bad:
    print('DIRTY', bad)
    sys.exit(1)
print('CLEAN', sys.stdin.read())
"#
);

// ---------------------------------------------------------------------------
// Hostile candidates, each followed by the checker in the same container
// ---------------------------------------------------------------------------

/// The control socket (eval's transport under runc): the protocol runs
/// over it, the socket is gone before any candidate runs, and a candidate
/// can neither list the directory nor reach the runner's end.
#[test]
fn over_the_control_socket_no_candidate_reaches_the_runners_channel() {
    let mut b = open_over("control", PYTHON, &Hardening::default(), true);
    let probe = concat!(
        "import errno, os, socket\n",
        "def t(name, f):\n",
        "    try:\n",
        "        r = f()\n",
        "        print(name, 'ok', r)\n",
        "    except OSError as e:\n",
        "        print(name, errno.errorcode[e.errno])\n",
        "def connect():\n",
        "    s = socket.socket(socket.AF_UNIX)\n",
        "    s.connect('/.sbx-control/s')\n",
        "t('list', lambda: os.listdir('/.sbx-control'))\n",
        "t('connect', connect)\n",
        "t('fd', lambda: os.readlink('/proc/1/fd/3'))\n",
        "t('stat', lambda: oct(os.stat('/.sbx-control').st_mode & 0o777))\n",
    );
    for round in 0..3 {
        let r = b.py("control.py", probe, case(b"", 30_000));
        assert_ended(
            &r,
            CaseStatus::Ok,
            "list EACCES\nconnect ENOENT\nfd EACCES\nstat ok 0o711\n",
        );
        assert_eq!(b.s().transport(), Transport::Socket, "round {round}");
    }
    b.check_clean("control");
}

#[test]
fn double_forked_daemon_ignoring_sigterm_and_sighup_is_gone() {
    let mut b = open("daemon", PYTHON);
    let r = b.py(
        "daemon.py",
        r#"
import os, signal, time, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        os.close(1); os.close(2)
        while True:
            time.sleep(1)
    os._exit(0)
os.wait()
print('parent done')
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "parent done\n"),
        "{r:?}"
    );
    b.check_clean("daemon");
}

#[test]
fn daemon_holding_stdout_open_does_not_hang_the_case() {
    let mut b = open("holder", PYTHON);
    let started = Instant::now();
    let r = b.py(
        "holder.py",
        r#"
import os, time
if os.fork() == 0:
    os.setsid()
    time.sleep(3600)
print('bye', flush=True)
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "bye\n"),
        "{r:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    b.check_clean("a daemon that holds stdout");
}

#[test]
fn filled_tmp_is_emptied() {
    let mut b = open("filltmp", PYTHON);
    let r = b.py(
        "fill.py",
        r#"
import os
n = 0
try:
    with open('/tmp/big', 'wb') as f:
        while True:
            f.write(b'x' * (1 << 20)); n += 1
except OSError as e:
    pass
for i in range(200):
    open('/tmp/f%d' % i, 'w').close()
print('filled', n > 10)
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "filled True\n"),
        "{r:?}"
    );
    b.check_clean("a filled /tmp");
}

#[test]
fn many_directories_are_emptied_within_the_reset_budget() {
    let mut b = open("manydirs", PYTHON);
    let r = b.py(
        "dirs.py",
        r#"
import os
for i in range(30000):
    os.mkdir('/tmp/d%d' % i)
print('made')
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "made\n"),
        "{r:?}"
    );
    b.check_clean("many directories");
}

#[test]
fn dev_is_put_back_as_it_was() {
    let mut b = open("dev", PYTHON);
    let r = b.py(
        "dev.py",
        &format!(
            "{TRY}{}",
            r#"
t('write', lambda: open('/dev/leak', 'w').write('secret'))
t('mkdir', lambda: os.makedirs('/dev/leakdir/x'))
t('chmod', lambda: os.chmod('/dev/null', 0))
t('remove', lambda: os.remove('/dev/stdout'))
t('chmod', lambda: os.chmod('/dev', 0o700))
"#
        ),
        case(b"", 30_000),
    );
    // /dev is root's (mode 755): the candidate's uid changes nothing there.
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (
            CaseStatus::Ok,
            "write EACCES\nmkdir EACCES\nchmod EPERM\nremove EACCES\nchmod EPERM\n"
        ),
        "{r:?} {}",
        text(&r.stderr_tail)
    );
    b.check_clean("/dev tampering");
}

#[test]
fn a_chmod_in_dev_pts_is_put_back() {
    let mut b = open("devpts", PYTHON);
    let r = b.py(
        "pts.py",
        &format!("{TRY}t('chmod', lambda: os.chmod('/dev/pts/ptmx', 0))\n"),
        case(b"", 30_000),
    );
    // Not the candidate's to change.
    assert_ended(&r, CaseStatus::Ok, "chmod EPERM\n");
    let r = b.py(
        "pty.py",
        "import os\nm, s = os.openpty()\nprint('pty', os.isatty(s))\n",
        case(b"", 30_000),
    );
    assert_ended(&r, CaseStatus::Ok, "pty True\n");
    b.check_clean("a chmod in /dev/pts");
}

/// `/tmp`'s inode flags as a list of the ones set, by `FS_IOC_GETFLAGS`;
/// with `set`, `FS_NODUMP_FL` and `FS_NOATIME_FL` set first (an owner's
/// to set on tmpfs, Linux 6.0 on).
fn inode_flags_probe(set: bool) -> String {
    format!(
        r#"import array, fcntl, os
fd = os.open('/tmp', os.O_RDONLY | os.O_DIRECTORY)
flags = array.array('i', [0])
fcntl.ioctl(fd, 0x80086601, flags, True)
if {set}:
    flags[0] |= 0x40 | 0x80
    fcntl.ioctl(fd, 0x40086602, flags)
    fcntl.ioctl(fd, 0x80086601, flags, True)
print(hex(flags[0]))
"#,
        set = if set { "True" } else { "False" }
    )
}

/// Two bits that outlived every file: a candidate, /tmp's owner, set
/// `FS_NODUMP_FL` and `FS_NOATIME_FL` on it, and no reset put them back.
#[test]
fn inode_flags_a_candidate_set_on_tmp_are_put_back() {
    let mut b = open("iflags", PYTHON);
    let before = b.py("look.py", &inode_flags_probe(false), case(b"", 30_000));
    assert_eq!(
        before.status,
        CaseStatus::Ok,
        "{}",
        text(&before.stderr_tail)
    );
    let set = b.py("set.py", &inode_flags_probe(true), case(b"", 30_000));
    assert_eq!(set.status, CaseStatus::Ok, "{}", text(&set.stderr_tail));
    assert_ne!(
        text(&set.stdout),
        text(&before.stdout),
        "the flags were not set"
    );
    let after = b.py("look.py", &inode_flags_probe(false), case(b"", 30_000));
    assert_eq!(text(&after.stdout), text(&before.stdout));
    b.check_clean("inode flags");
}

#[test]
fn extended_attributes_and_default_acls_on_writable_dirs_are_removed() {
    let mut b = open("xattr", PYTHON);
    let r = b.py(
        "set.py",
        &r#"
import os, struct
# A default ACL: owner rwx, group, others and mask nothing.
acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, 0xffffffff)
                                      for t, p in ((1, 7), (4, 0), (0x10, 0), (0x20, 0)))
for d in ('/tmp', '/dev/shm', '/dev'):
    t(d, lambda: os.setxattr(d, 'user.leak', b'secret'))
    t(d, lambda: os.setxattr(d, 'system.posix_acl_default', acl))
"#
        .replace("import os, struct", &format!("{TRY}import struct")),
        case(b"", 30_000),
    );
    // Only /tmp is the candidate's (the wipe helper removes both there).
    assert_ended(
        &r,
        CaseStatus::Ok,
        "/tmp ok\n/tmp ok\n/dev/shm EPERM\n/dev/shm EPERM\n/dev EACCES\n/dev EPERM\n",
    );
    let r = b.py(
        "get.py",
        r#"
import os
print([(d, os.listxattr(d)) for d in ('/tmp', '/dev/shm', '/dev')])
open('/dev/shm/f', 'w').close()
print(oct(os.stat('/dev/shm/f').st_mode & 0o777))
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (
            CaseStatus::Ok,
            "[('/tmp', []), ('/dev/shm', []), ('/dev', [])]\n0o644\n"
        ),
        "{}",
        text(&r.stderr_tail)
    );
    b.check_clean("extended attributes");
}

#[test]
fn times_a_candidate_set_in_dev_and_tmp_are_put_back() {
    let mut b = open("utime", PYTHON);
    let probe = r#"
import os
# Access times move by themselves (the reset reads these directories);
# what matters is that none carries the candidate's value.
print([(p, os.lstat(p).st_mtime_ns, os.lstat(p).st_atime_ns not in (1, 123456789123456789))
       for p in ('/dev/null', '/dev/zero', '/dev/stdout', '/dev/pts/ptmx', '/dev/shm', '/dev/mqueue')])
"#;
    let before = b.py("probe.py", probe, case(b"", 30_000));
    assert_eq!(
        before.status,
        CaseStatus::Ok,
        "{}",
        text(&before.stderr_tail)
    );
    // 128 bits of any data in each file's times.
    let r = b.py(
        "utime.py",
        &r#"
for p in ('/dev/null', '/dev/zero', '/dev/pts/ptmx', '/dev/shm', '/dev/mqueue', '/tmp'):
    t(p, lambda: os.utime(p, ns=(123456789123456789, 987654321987654321)))
t('/dev/stdout', lambda: os.utime('/dev/stdout', ns=(1, 2), follow_symlinks=False))
"#
        .replace("\nfor p", &format!("{TRY}for p")),
        case(b"", 30_000),
    );
    // Only /tmp is the candidate's; the wipe helper puts its times back.
    assert_ended(
        &r,
        CaseStatus::Ok,
        "/dev/null EPERM\n/dev/zero EPERM\n/dev/pts/ptmx EPERM\n/dev/shm EPERM\n/dev/mqueue EPERM\n/tmp ok\n/dev/stdout EPERM\n",
    );
    let after = b.py("probe.py", probe, case(b"", 30_000));
    assert_eq!(text(&after.stdout), text(&before.stdout));
    let r = b.py(
        "tmp.py",
        "import os\nst = os.stat('/tmp')\nprint(st.st_mtime_ns != 987654321987654321, st.st_atime_ns != 123456789123456789)\n",
        case(b"", 30_000),
    );
    assert_eq!(text(&r.stdout), "True True\n", "{}", text(&r.stderr_tail));
    b.check_clean("times");
}

#[test]
fn a_device_node_cannot_be_removed_by_a_candidate() {
    let mut b = open("devgone", PYTHON);
    let r = b.py(
        "rm.py",
        &format!("{TRY}t('remove', lambda: os.remove('/dev/null'))\n"),
        case(b"", 30_000),
    );
    assert_ended(&r, CaseStatus::Ok, "remove EACCES\n");
    b.check_clean("removing /dev/null");
}

#[test]
fn locked_directories_are_unlocked_and_emptied() {
    let mut b = open("locked", PYTHON);
    let r = b.py(
        "lock.py",
        r#"
import os
os.makedirs('/tmp/a/b/c')
open('/tmp/a/b/c/f', 'w').write('x')
os.symlink('/etc', '/tmp/a/etc')
os.chmod('/tmp/a/b/c', 0); os.chmod('/tmp/a/b', 0); os.chmod('/tmp/a', 0)
open('/dev/shm/x', 'w').write('x')
os.makedirs('/dev/shm/d/e')
open('/dev/shm/d/e/f', 'w').write('x')
os.chmod('/dev/shm/d/e', 0); os.chmod('/dev/shm/d', 0)
try:
    os.chmod('/dev/shm', 0)
except PermissionError:
    pass
os.chmod('/tmp', 0)
print('locked')
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "locked\n"),
        "{r:?}"
    );
    b.check_clean("locked directories");
}

#[test]
fn posix_message_queues_fail_and_dev_shm_is_emptied() {
    let mut b = open("posixipc", PYTHON);
    let r = b.py(
        "posix.py",
        r#"
import ctypes, os
rt = ctypes.CDLL('librt.so.1', use_errno=True)
rt.mq_open.restype = ctypes.c_int
q = rt.mq_open(b'/sbxq', os.O_CREAT | os.O_RDWR, 0o600, None)
print('mq_open', q, ctypes.get_errno() != 0)
from multiprocessing import shared_memory
m = shared_memory.SharedMemory(name='sbxshm', create=True, size=4096)
m.buf[0] = 1
open('/dev/shm/plain', 'w').write('x')
print('shm', sorted(os.listdir('/dev/shm')), flush=True)
os._exit(0)
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "mq_open -1 True\nshm ['plain', 'sbxshm']\n"),
        "{r:?} {}",
        text(&r.stderr_tail)
    );
    b.check_clean("POSIX IPC");
}

#[test]
fn sysv_ipc_objects_cannot_be_made() {
    let mut b = open("sysvipc", PYTHON);
    let r = b.py(
        "sysv.py",
        r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT, IPC_PRIVATE = 0o1000, 0
def tried(name, r):
    print(name, r, ctypes.get_errno() if r < 0 else 0)
tried('shmget', libc.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600))
tried('shmget key', libc.shmget(0x5B5D, 4096, IPC_CREAT | 0o600))
tried('msgget', libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600))
tried('semget', libc.semget(IPC_PRIVATE, 1, IPC_CREAT | 0o600))
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        // ENOSYS (38): the runner's seccomp filter, before the sysctls.
        (
            CaseStatus::Ok,
            "shmget -1 38\nshmget key -1 38\nmsgget -1 38\nsemget -1 38\n"
        ),
        "{r:?} {}",
        text(&r.stderr_tail)
    );
    b.check_clean("SysV IPC");
}

#[test]
fn fork_bomb_left_sleeping_is_killed_and_forking_works_again() {
    let mut b = open("forkbomb", PYTHON);
    let r = b.py(
        "bomb.py",
        r#"
import os, time
n = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(3600)
        os._exit(0)
    n += 1
print('children', n > 30)
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "children True\n"),
        "{r:?}"
    );
    b.check_clean("a fork bomb");
}

#[test]
fn signals_sent_to_pid_1_are_dropped() {
    let mut b = open("signals", PYTHON);
    let r = b.py(
        "sig.py",
        r#"
import os, signal
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
          signal.SIGSEGV, signal.SIGPIPE, signal.SIGSTOP, signal.SIGKILL):
    try:
        os.kill(1, s)
    except PermissionError:
        pass
# And to each of the runner's threads (tgkill), the waiter and readers too.
for t in os.listdir('/proc/1/task'):
    for s in (signal.SIGSTOP, signal.SIGBUS, signal.SIGSEGV, signal.SIGKILL):
        import ctypes
        ctypes.CDLL(None).syscall(234, 1, int(t), s)
print('sent')
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "sent\n"),
        "{r:?}"
    );
    b.check_clean("signals to PID 1");
}

#[test]
fn ptrace_attach_to_pid_1_is_refused() {
    let mut b = open("ptrace", PYTHON);
    let r = b.py(
        "trace.py",
        r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
r = libc.ptrace(16, 1, None, None)  # PTRACE_ATTACH
print('attach', r, ctypes.get_errno())
state = open('/proc/1/status').read().split('State:')[1].split()[0]
print('stopped' if state in ('T', 't') else 'running')
"#,
        case(b"", 30_000),
    );
    // EPERM (1): the runner is not dumpable; it is not stopped or traced
    // (T or t; sleeping or running, as it happens to be, is fine).
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "attach -1 1\nrunning\n"),
        "{r:?}"
    );
    b.check_clean("ptrace");
}

/// Core dumps stay off: the hard limit is 0, so a candidate cannot turn
/// them back on (on a host that pipes cores to a program, a crash would
/// make the host work).
#[test]
fn core_dumps_cannot_be_turned_on() {
    let mut b = open("core", PYTHON);
    let r = b.py(
        "core.py",
        r#"
import resource
print(resource.getrlimit(resource.RLIMIT_CORE))
try:
    resource.setrlimit(resource.RLIMIT_CORE, (1 << 20, 1 << 20))
    print('raised')
except (ValueError, OSError):
    print('refused')
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "(0, 0)\nrefused\n"),
        "{r:?}"
    );
    b.check_clean("core");
}

#[test]
fn forged_records_cannot_reach_the_protocol() {
    let mut b = open("forge", PYTHON);
    let r = b.py(
        "forge.py",
        r#"
import os
forged = b'SBXR\x01\x06' + b'\x00' * 4 + b'{"status":"pass"}\n'
tasks = sorted(os.listdir('/proc/1/task'))
for t in tasks:
    for fd in ('0', '1'):
        try:
            open('/proc/1/task/%s/fd/%s' % (t, fd), 'wb').write(forged)
            print('task', t, fd, 'WRITTEN')
        except OSError:
            pass
for path in ('/proc/1/fd/1', '/proc/1/fd/0', '/proc/1/fd/2'):
    try:
        with open(path, 'wb') as f:
            f.write(forged)
        print(path, 'WRITTEN')
    except OSError as e:
        print(path, 'denied', e.errno)
print('fds', sorted(os.listdir('/proc/self/fd')), 'threads', len(tasks) > 1)
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (
            CaseStatus::Ok,
            "/proc/1/fd/1 denied 13\n/proc/1/fd/0 denied 13\n/proc/1/fd/2 denied 13\nfds ['0', '1', '2', '3'] threads True\n"
        ),
        "{r:?}"
    );
    b.check_clean("forged records");
}

#[test]
fn the_runners_memory_environment_and_root_are_out_of_reach() {
    let mut b = open("peek", PYTHON);
    let r = b.py(
        "peek.py",
        r#"
import ctypes, os
for p in ('/proc/1/environ', '/proc/1/mem', '/proc/1/maps', '/proc/1/auxv'):
    try:
        open(p, 'rb').read(64); print(p, 'READ')
    except OSError as e:
        print(p, e.errno)
for p in ('/proc/1/cwd', '/proc/1/root', '/proc/1/exe'):
    try:
        os.readlink(p); print(p, 'READ')
    except OSError as e:
        print(p, e.errno)
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
buf = ctypes.create_string_buffer(16)
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
remote = iovec(0x400000, 16)
n = libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print('process_vm_readv', n, ctypes.get_errno())
"#,
        case(b"", 30_000),
    );
    // EACCES (13) or EPERM (1): the runner is not dumpable.
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (
            CaseStatus::Ok,
            "/proc/1/environ 13\n/proc/1/mem 13\n/proc/1/maps 13\n/proc/1/auxv 13\n\
             /proc/1/cwd 13\n/proc/1/root 13\n/proc/1/exe 13\nprocess_vm_readv -1 1\n"
        ),
        "{}",
        text(&r.stderr_tail)
    );
    b.check_clean("peeking at the runner");
}

#[test]
fn stdout_kept_in_flight_in_a_unix_socket_cycle_does_not_hang_the_case() {
    let mut b = open("scmcycle", PYTHON);
    let started = Instant::now();
    // Each socket of the pair travels inside the other, with the case's
    // stdout, stderr and stdin: only the kernel's garbage collector of
    // in-flight fds closes them once every process is gone.
    let r = b.py(
        "cycle.py",
        r#"
import os, socket
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
socket.send_fds(a, [b'x'], [b.fileno(), 0, 1, 2])
socket.send_fds(b, [b'x'], [a.fileno()])
print('sent', flush=True)
os._exit(0)
"#,
        case(b"", 30_000),
    );
    assert_ended(&r, CaseStatus::Ok, "sent\n");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    b.check_clean("fds in flight");
}

#[test]
fn odd_shebang_lines_are_the_candidates_own_failure() {
    let mut b = open("oddshebang", BUSYBOX);
    let programs: [(&str, &[u8], Option<i32>); 4] = [
        // /tmp is noexec: EACCES, 126 as a shell says.
        ("tmp", b"#!/tmp\necho hi\n", Some(126)),
        // A NUL byte cannot reach execve.
        ("nul", b"#!/bin/sh\0 -c 'echo pwned'\necho hi\n", Some(126)),
        // Like Linux: the rest of the line is one argument, `-x -y`.
        ("xy", b"#!/bin/sh -x -y\necho hi\n", Some(2)),
        // No newline at all: an empty script.
        ("bare", b"#!/bin/sh", Some(0)),
    ];
    for (name, program, code) in programs {
        let c = run_directly(format!("{name} \u{1b}[31m.sh"), program);
        assert_eq!(b.s().load(&c).expect("load"), LoadOutcome::Ready, "{name}");
        let r = b
            .s()
            .run_case(&case(b"", 30_000))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (r.exit_code, r.stdout.as_slice()),
            (code, &b""[..]),
            "{name}: {r:?}"
        );
        assert_eq!(b.s().reset().expect("reset"), ResetOutcome::Clean, "{name}");
    }
}

#[test]
fn strict_profile_non_root_runner_resets_too() {
    let hardening = Hardening {
        user: Some(sbx::spec::STRICT_USER.into()),
        ipc_none: true,
        fsize: Some(64 << 20),
        memory_swap: Some("256m".into()),
        ..Hardening::default()
    };
    let mut b = open_with("strict", PYTHON, &hardening);
    let r = b.py(
        "all.py",
        r#"
import os, time
print(os.getuid(), os.path.exists('/dev/shm'))
os.makedirs('/tmp/a/b')
os.chmod('/tmp/a/b', 0); os.chmod('/tmp/a', 0)
try:
    with open('/tmp/big', 'wb') as f:
        while True:
            f.write(b'x' * (1 << 20))
except OSError:
    pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(3600)
    os._exit(0)
os.wait()
"#,
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (
            CaseStatus::Ok,
            "65534 False
"
        ),
        "{r:?} {}",
        text(&r.stderr_tail)
    );
    b.check_clean("a non-root candidate");
}

/// What a candidate inherits from the runner besides its files: limits,
/// scheduling, OOM score, timer slack, and the runner's own threads.
const POSTURE: &str = r#"
import os, resource
print([resource.getrlimit(getattr(resource, r)) for r in sorted(dir(resource)) if r.startswith('RLIMIT_')])
print('adj', open('/proc/self/oom_score_adj').read().strip(), 'nice', os.getpriority(os.PRIO_PROCESS, 0),
      'aff', os.sched_getaffinity(0), 'pol', os.sched_getscheduler(0), 'slack', open('/proc/self/timerslack_ns').read().strip())
for t in sorted(os.listdir('/proc/1/task')):
    t = int(t)
    print('runner thread', os.getpriority(os.PRIO_PROCESS, t), os.sched_getaffinity(t), os.sched_getscheduler(t))
"#;

#[test]
fn runner_limits_oom_score_and_affinity_changed_by_a_candidate_are_put_back() {
    let mut b = open("posture", PYTHON);
    let before = b.py("p.py", POSTURE, case(b"", 30_000));
    assert_eq!(
        before.status,
        CaseStatus::Ok,
        "{}",
        text(&before.stderr_tail)
    );
    // prlimit, sched_setaffinity and /proc/1/oom_score_adj check only the
    // uid, not dumpability: under the runner's uid a candidate reached PID 1
    // with all three; under its own, it reaches nothing.
    let r = b.py(
        "attrs.py",
        &format!(
            "{TRY}{}",
            r#"
t('as', lambda: resource.prlimit(1, resource.RLIMIT_AS, (300 << 20, 300 << 20)))
t('stack', lambda: resource.prlimit(1, resource.RLIMIT_STACK, (1 << 20, 1 << 20)))
t('nofile', lambda: resource.prlimit(1, resource.RLIMIT_NOFILE, (64, 64)))
t('oom', lambda: open('/proc/1/oom_score_adj', 'w').write('1000'))
t('affinity', lambda: os.sched_setaffinity(1, {0}))
"#
        ),
        case(b"", 30_000),
    );
    // Another uid's: none of them is the candidate's to change any more.
    assert_ended(
        &r,
        CaseStatus::Ok,
        "as EPERM\nstack EPERM\nnofile EPERM\noom EACCES\naffinity EPERM\n",
    );
    let after = b.py("p.py", POSTURE, case(b"", 30_000));
    assert_eq!(text(&after.stdout), text(&before.stdout));
    b.check_clean("the runner's posture changed");
}

#[test]
fn a_non_root_candidate_reaches_the_runners_limits_too_and_they_are_put_back() {
    let hardening = Hardening {
        user: Some(sbx::spec::STRICT_USER.into()),
        ipc_none: true,
        ..Hardening::default()
    };
    let mut b = open_with("posturestrict", PYTHON, &hardening);
    // The runner is root whatever --user says; candidates are that user.
    let before = b.py("p.py", POSTURE, case(b"", 30_000));
    assert_eq!(
        before.status,
        CaseStatus::Ok,
        "{}",
        text(&before.stderr_tail)
    );
    let r = b.py(
        "attrs.py",
        &format!(
            "{TRY}{}",
            r#"
t('prlimit', lambda: resource.prlimit(1, resource.RLIMIT_AS, (300 << 20, 300 << 20)))
for tid in os.listdir('/proc/1/task'):
    t('affinity', lambda: os.sched_setaffinity(int(tid), {0}))
t('oom', lambda: open('/proc/1/oom_score_adj', 'w').write('1000'))
print(os.getuid())
"#
        ),
        case(b"", 30_000),
    );
    let out = text(&r.stdout);
    assert!(out.starts_with("prlimit EPERM\naffinity EPERM\n"), "{out}");
    assert!(out.ends_with("oom EACCES\n65534\n"), "{out}");
    let after = b.py("p.py", POSTURE, case(b"", 30_000));
    assert_eq!(text(&after.stdout), text(&before.stdout));
    b.check_clean("a non-root candidate's prlimit on PID 1");
}

#[test]
fn runner_nice_sched_policy_or_hard_limit_are_out_of_a_candidates_reach() {
    // What root without capabilities cannot raise again.
    let attacks = [
        ("nice", "os.setpriority(os.PRIO_PROCESS, 1, 19)"),
        (
            "idle",
            "os.sched_setscheduler(max(int(t) for t in os.listdir('/proc/1/task')), os.SCHED_IDLE, os.sched_param(0))",
        ),
        (
            "hard",
            "resource.prlimit(1, resource.RLIMIT_NOFILE, (1000, 1000))",
        ),
    ];
    for (name, attack) in attacks {
        let mut b = open(&format!("dirty{name}"), PYTHON);
        let c = Candidate {
            file_name: "a.py".into(),
            program: format!("{TRY}t('{name}', lambda: {attack})\n").into_bytes(),
            interpreter: Some(vec!["python3".into()]),
            build: None,
        };
        assert_eq!(b.s().load(&c).expect("load"), LoadOutcome::Ready);
        let r = b.s().run_case(&case(b"", 30_000)).expect("case");
        // Under the runner's uid each made the container dirty; under its
        // own, each is refused and the reset is clean.
        assert_eq!(
            (r.status, text(&r.stdout)),
            (CaseStatus::Ok, format!("{name} EPERM\n")),
            "{name}: {}",
            text(&r.stderr_tail)
        );
        assert_eq!(b.s().reset().expect("reset"), ResetOutcome::Clean, "{name}");
    }
}

#[test]
fn a_port_a_candidate_used_on_loopback_is_free_for_the_next_one() {
    let mut b = open("timewait", PYTHON);
    let r = b.py(
        "tw.py",
        r#"
import socket
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(('127.0.0.1', 8080)); srv.listen()
c = socket.create_connection(('127.0.0.1', 8080)); s, _ = srv.accept()
s.close(); c.close(); srv.close()
print('closed')
"#,
        case(b"", 30_000),
    );
    assert_ended(&r, CaseStatus::Ok, "closed\n");
    // A plain server, as a candidate writes it: no SO_REUSEADDR.
    let r = b.py(
        "server.py",
        "import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 8080))\nprint('bound')\n",
        case(b"", 30_000),
    );
    assert_ended(&r, CaseStatus::Ok, "bound\n");
    b.check_clean("a loopback connection");
}

// ---------------------------------------------------------------------------
// How cases end
// ---------------------------------------------------------------------------

#[test]
fn timeout_is_measured_from_the_program_start() {
    let mut b = open("timeout", PYTHON);
    let r = b.py("t.py", "import time\ntime.sleep(60)\n", case(b"", 1_500));
    assert_eq!(r.status, CaseStatus::Timeout, "{r:?}");
    assert_eq!(r.signal, Some(9));
    assert!((1_500..5_000).contains(&r.wall_ms), "{r:?}");
    b.check_clean("a timeout");
}

/// Under the CPU rule, several processes burning stop at the limit by the
/// sum of their CPU time, a sleeper stops at the backstop with a status of
/// its own, and a program that needs a third of the limit passes.
#[test]
fn the_cpu_rule_counts_every_process_and_backstops_sleepers() {
    let mut b = open("cpurule", PYTHON);
    let cpu = |wall_ms| Case {
        rule: TimeRule::Cpu,
        ..case(b"", wall_ms)
    };
    let forker = "import os\nfor _ in range(3):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass\n";
    let r = b.py("burn.py", forker, cpu(1_500));
    assert_eq!(r.status, CaseStatus::Timeout, "{r:?}");
    // Four burners share the container's CPU: the sum reaches the limit.
    assert!(r.cpu_ms >= 1_500, "{r:?}");
    b.check_clean("burners");
    let r = b.py("nap.py", "import time\ntime.sleep(60)\n", cpu(1_500));
    assert_eq!(r.status, CaseStatus::WallTimeout, "{r:?}");
    assert!((1_500..10_000).contains(&r.wall_ms), "{r:?}");
    b.check_clean("a sleeper");
    let slow = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n    pass\nprint('done')\n";
    let r = b.py("slow.py", slow, cpu(1_500));
    assert_ended(&r, CaseStatus::Ok, "done\n");
    assert!(r.cpu_ms >= 450, "{r:?}");
    b.check_clean("a slow program");
}

#[test]
fn output_flood_stops_at_the_limit() {
    let mut b = open("flood", PYTHON);
    let c = Case {
        max_output: 4096,
        ..case(b"", 30_000)
    };
    let r = b.py(
        "f.py",
        "import sys\nwhile True:\n    sys.stdout.write('x' * 1000)\n",
        c,
    );
    assert_eq!(r.status, CaseStatus::OutputLimit, "{r:?}");
    assert_eq!(r.stdout, vec![b'x'; 4096]);
    assert!(r.stdout_truncated);
    b.check_clean("an output flood");
}

#[test]
fn memory_hog_is_oom_from_the_cgroup_counter() {
    let mut b = open("oom", PYTHON);
    let r = b.py(
        "m.py",
        "x = []\nwhile True:\n    x.append(b'x' * (16 << 20))\n",
        case(b"", 30_000),
    );
    assert_eq!((r.status, r.oom), (CaseStatus::Oom, true), "{r:?}");
    b.check_clean("a memory hog");
    // An exit code of 137 alone is no OOM.
    let r = b.py("e.py", "import sys\nsys.exit(137)\n", case(b"", 30_000));
    assert_eq!(
        (r.status, r.exit_code, r.oom),
        (CaseStatus::RuntimeError, Some(137), false),
        "{r:?}"
    );
}

#[test]
fn the_program_not_the_runner_is_the_oom_killers_choice_root_or_not() {
    let strict = Hardening {
        user: Some(sbx::spec::STRICT_USER.into()),
        ..Hardening::default()
    };
    for (name, hardening) in [("adj", Hardening::default()), ("adj-strict", strict)] {
        let mut b = open_with(name, PYTHON, &hardening);
        // The program and the children it forks score 1000; the runner keeps 0.
        // The runner writes the score right after the program starts, so the
        // program looks a moment later (it raced the write under load).
        let r = b.py(
            "s.py",
            "import os, subprocess, time\ntime.sleep(0.5)\nprint(open('/proc/self/oom_score_adj').read().strip(), subprocess.run(['cat', '/proc/self/oom_score_adj'], capture_output=True).stdout.decode().strip(), open('/proc/1/oom_score_adj').read().strip())\n",
            case(b"", 30_000),
        );
        assert_eq!(text(&r.stdout), "1000 1000 0\n", "{name}: {r:?}");
    }
}

#[test]
fn crash_signal_exit_code_stdin_rusage_and_stderr() {
    let mut b = open("ends", PYTHON);
    let r = b.py(
        "c.py",
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, r.signal, r.exit_code),
        (CaseStatus::Signal, Some(11), None),
        "{r:?}"
    );
    let r = b.py(
        "e.py",
        "import sys\nsys.stderr.write('E' * 100000)\nsys.exit(3)\n",
        case(b"", 30_000),
    );
    assert_eq!(
        (r.status, r.exit_code),
        (CaseStatus::RuntimeError, Some(3)),
        "{r:?}"
    );
    assert_eq!(r.stderr_tail.len(), 64 << 10);
    assert!(r.stderr_truncated);
    let stdin: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    let r = b.py(
        "s.py",
        "import sys, hashlib\nd = sys.stdin.buffer.read()\nprint(len(d), hashlib.sha256(d).hexdigest()[:8])\nx = b'x' * (50 << 20)\nsum(range(3000000))\n",
        case(&stdin, 30_000),
    );
    let want = {
        use sha2::{Digest, Sha256};
        let h = Sha256::digest(&stdin);
        format!(
            "300000 {}\n",
            &h.iter().map(|b| format!("{b:02x}")).collect::<String>()[..8]
        )
    };
    assert_eq!((r.status, text(&r.stdout)), (CaseStatus::Ok, want), "{r:?}");
    assert!(r.max_rss_kib > 50 << 10, "{r:?}");
    assert!(r.cpu_ms > 0, "{r:?}");
    // A program that never reads its stdin is fine (EPIPE is normal).
    let r = b.py(
        "n.py",
        "print('no read')\n",
        case(&vec![b'y'; 1 << 20], 30_000),
    );
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "no read\n"),
        "{r:?}"
    );
    b.check_clean("crashes");
}

#[test]
fn cpu_limit_is_its_own_status() {
    let mut b = open("cpulimit", PYTHON);
    let c = Case {
        cpu_limit_s: Some(1),
        ..case(b"", 30_000)
    };
    let r = b.py("spin.py", "while True:\n    pass\n", c);
    assert_eq!(r.status, CaseStatus::CpuLimit, "{r:?}");
    // SIGXCPU comes at the soft limit, measured precisely by the kernel;
    // rusage's sampled user+system time reads lower on a loaded host.
    assert!(r.cpu_ms >= 500 && r.wall_ms < 30_000, "{r:?}");
    b.check_clean("a cpu limit");
}

#[test]
fn shebang_candidates_run_through_their_interpreter_in_busybox() {
    let mut b = open("shebang", BUSYBOX);
    let r = b.run(
        "t.sh",
        "#!/bin/sh\nread x\necho \"got $x\"\nls /tmp | wc -l\nls /work\n",
        None,
        case(b"hello\n", 30_000),
    );
    // /tmp is the candidate's and empty; the program is /work/t.sh, alone.
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "got hello\n0\nt.sh\n"),
        "{r:?}"
    );
    // No `#!` and no interpreter: refused, the candidate's fault.
    let c = run_directly("t.txt", b"echo hi\n");
    assert!(matches!(b.s().load(&c).unwrap(), LoadOutcome::Refused(_)));
    // A missing interpreter: nothing ran; exit 127, as a shell says.
    let r = b.run("t.py", "print(1)\n", Some("python3"), case(b"", 30_000));
    assert_eq!(
        (r.status, r.exit_code),
        (CaseStatus::NotStarted, Some(127)),
        "{r:?}"
    );
}

#[test]
fn a_case_without_a_reset_before_it_is_refused() {
    let mut b = open("noreset", BUSYBOX);
    let c = run_directly("t.sh", b"#!/bin/sh\necho 1\n");
    b.s().load(&c).unwrap();
    b.s().run_case(&case(b"", 30_000)).unwrap();
    let err = b.s().run_case(&case(b"", 30_000)).unwrap_err();
    assert!(err.to_string().contains("reset"), "{err}");
}

#[test]
fn a_delivered_build_runs_as_the_candidate_cannot_be_changed_and_goes_with_unload() {
    let mut b = open("build", BUSYBOX);
    // An executable of the build (a script: the kernel runs its `#!` line,
    // which only an exec-allowed place permits), run as the command.
    let build = Some(vec![
        BuildFile {
            path: "bin/probe".into(),
            bytes: b"#!/bin/sh\nid -u; id -g; id -G\n".to_vec(),
        },
        BuildFile {
            path: "data.txt".into(),
            bytes: b"kept\n".to_vec(),
        },
    ]);
    let probe = Candidate {
        file_name: "task".into(),
        program: b"the source\n".to_vec(),
        interpreter: Some(vec!["/sbx/build/bin/probe".into()]),
        build: build.clone(),
    };
    assert_eq!(b.s().load(&probe).expect("load"), LoadOutcome::Ready);
    let r = b.s().run_case(&case(b"", 30_000)).expect("case");
    assert_eq!(
        (r.status, text(&r.stdout).as_str()),
        (CaseStatus::Ok, "65534\n65534\n65534\n"),
        "{r:?} {}",
        text(&r.stderr_tail)
    );
    assert_eq!(b.s().reset().expect("reset"), ResetOutcome::Clean);
    // The same build, with a shell as its command: the candidate tries to
    // change it and to write beside it; it can only read and run it.
    let attack = "rm -f /sbx/build/data.txt; chmod 777 /sbx/build/data.txt; \
        echo x >> /sbx/build/data.txt; mkdir /sbx/x /sbx/build/x; touch /sbx/y; \
        cat /sbx/build/data.txt; ls -A /sbx /sbx/build; stat -c '%a %u' /sbx /sbx/build /sbx/build/bin/probe /sbx/build/data.txt; \
        cat /work/task";
    let shell = Candidate {
        interpreter: Some(vec!["/bin/sh".into(), "-c".into(), attack.into()]),
        ..probe.clone()
    };
    assert_eq!(b.s().unload().expect("unload"), ResetOutcome::Clean);
    assert_eq!(b.s().load(&shell).expect("load"), LoadOutcome::Ready);
    let r = b.s().run_case(&case(b"", 30_000)).expect("case");
    assert_eq!(
        text(&r.stdout),
        "kept\n/sbx:\nbuild\n\n/sbx/build:\nbin\ndata.txt\n755 0\n755 0\n555 0\n555 0\nthe source\n",
        "{r:?} {}",
        text(&r.stderr_tail)
    );
    // Nothing changed: the reset that verifies the build is clean.
    assert_eq!(b.s().reset().expect("reset"), ResetOutcome::Clean);
    // Unloaded, the next candidate finds no build and no source.
    assert_eq!(b.s().unload().expect("unload"), ResetOutcome::Clean);
    let r = b.run(
        "look.sh",
        "#!/bin/sh\nls -A /sbx; ls -A /work\n",
        None,
        case(b"", 30_000),
    );
    assert_eq!(text(&r.stdout), "look.sh\n", "{r:?}");
    // A build path that leaves the build directory is refused (and the
    // session, now broken, is discarded).
    let bad = Candidate {
        build: Some(vec![BuildFile {
            path: "../escape".into(),
            bytes: b"x".to_vec(),
        }]),
        ..probe
    };
    let err = b.s().load(&bad).unwrap_err();
    assert!(err.to_string().contains("bad build path"), "{err}");
}

#[test]
fn a_load_without_a_reset_before_it_is_refused() {
    let mut b = open("noresetload", BUSYBOX);
    let c = run_directly("t.sh", b"#!/bin/sh\necho 1\n");
    b.s().load(&c).unwrap();
    b.s().run_case(&case(b"", 30_000)).unwrap();
    let err = b.s().load(&c).unwrap_err();
    assert!(err.to_string().contains("clean reset"), "{err}");
}

#[test]
fn a_runner_killed_mid_session_is_an_infrastructure_error() {
    let mut b = open("killed", BUSYBOX);
    let name = b.s().name().unwrap().to_string();
    let c = run_directly("t.sh", b"#!/bin/sh\nsleep 60\n");
    b.s().load(&c).unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        common::docker(&["kill", "--", &name]);
    });
    let err = b.s().run_case(&case(b"", 30_000)).unwrap_err();
    killer.join().unwrap();
    assert!(
        matches!(err, sbx::runner::host::RunnerError::Closed(_)),
        "{err}"
    );
}

#[test]
fn this_build_can_be_the_runner_on_this_engine() {
    common::require_engine();
    // The test binary is built by the same cargo configuration as sbx.
    assert_eq!(
        sbx::runner::host::runner_unsupported(&Docker::new("docker")),
        None
    );
}

// ---------------------------------------------------------------------------
// The zygote: `python3 -c` cases forked from a warm interpreter
// ---------------------------------------------------------------------------

/// A candidate whose command is `PROGRAM -c CODE ARGS...`.
fn minus_c(program: &[&str], code: &str, args: &[&str]) -> Candidate {
    let mut interpreter: Vec<String> = program.iter().map(|w| w.to_string()).collect();
    interpreter.push("-c".into());
    interpreter.push(code.into());
    interpreter.extend(args.iter().map(|a| a.to_string()));
    Candidate {
        file_name: "task".into(),
        program: b"ignored\n".to_vec(),
        interpreter: Some(interpreter),
        build: None,
    }
}

impl Box_ {
    fn run_candidate(&mut self, candidate: &Candidate, case: Case) -> CaseResult {
        assert_eq!(self.s().load(candidate).expect("load"), LoadOutcome::Ready);
        let result = self.s().run_case(&case).expect("case");
        assert_eq!(self.s().reset().expect("reset"), ResetOutcome::Clean);
        result
    }
}

/// What a `python3 -c` program can see of how it was started.
const SELF_PORTRAIT: &str = r#"
import os, resource, signal, sys
print('argv', sys.argv, __name__, sorted(globals()), sys.path[0] == '', sys.flags)
print('stdin', repr(sys.stdin.read()), sys.stdin.encoding, sys.stdout.encoding, sys.stdout.line_buffering)
print('ids', os.getresuid(), os.getresgid(), os.getgroups(), os.getpgid(0) == os.getpid(), os.getsid(0) != os.getpid())
st = dict(l.split(':', 1) for l in open('/proc/self/status'))
print('caps', [st[k].strip() for k in ('CapEff', 'CapPrm', 'CapInh', 'CapAmb', 'NoNewPrivs')])
print('oom', open('/proc/self/oom_score_adj').read().strip(), 'cwd', os.getcwd(), 'umask', os.umask(0))
print('fds', sorted(os.listdir('/proc/self/fd')))
def tell(f):
    try:
        return f.tell()
    except Exception as e:
        return type(e).__name__
print('io', [(f.seekable(), f.isatty(), tell(f)) for f in (sys.stdin, sys.stdout, sys.stderr)])
print('dumpable', os.stat('/proc/self/status').st_uid == os.getuid())
print('main', sys.path[0], __spec__, type(globals().get('__loader__')).__name__, globals().get('__file__'), list(globals()))
print('limits', [resource.getrlimit(r) for r in range(16)])
print('signals', [str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGPIPE, signal.SIGTERM, signal.SIGCHLD)])
print('env', sorted(os.environ.items()))
"#;

/// The same words run by the zygote (`python3 -c`) and spawned directly
/// (`env python3 -c`, which the zygote does not take): everything a
/// program can see of its start is the same, but its parent.
#[test]
fn a_forked_case_is_started_as_a_spawned_one_is() {
    let mut b = open("zygote-parity", PYTHON);
    let mut cpu = case(b"in\n", 30_000);
    cpu.cpu_limit_s = Some(7);
    let parent = "import os; print(os.getppid() > 1, [l.split()[1:] for l in open('/proc/%d/status' % os.getppid()) if l.startswith('Uid:')])";
    let forked = b.run_candidate(&minus_c(&["python3"], parent, &[]), case(b"", 30_000));
    assert_ended(&forked, CaseStatus::Ok, "True [['0', '0', '0', '0']]\n");
    let spawned = b.run_candidate(
        &minus_c(&["env", "python3"], parent, &[]),
        case(b"", 30_000),
    );
    assert_ended(&spawned, CaseStatus::Ok, "False [['0', '0', '0', '0']]\n");
    let programs: &[(&str, &[&str])] = &[
        (SELF_PORTRAIT, &["a b", "-x"]),
        ("raise SystemExit(3)", &[]),
        ("raise SystemExit('said')", &[]),
        ("print('partial', end=''); 1/0", &[]),
        ("import os; os.kill(os.getpid(), 9)", &[]),
        (
            "import sys; sys.stdout.write(sys.stdin.read()); sys.stdout.close(); print('x')",
            &[],
        ),
        ("def f(:", &[]),
        // A warning of the compile (the zygote compiles a `-c` source once
        // for its children, but not one that warns: the child shows it).
        ("assert (1, 'always'), 'true'\nprint('ran')", &[]),
        ("raise KeyboardInterrupt", &[]),
        // How a program ends, as the interpreter's exit does it: atexit,
        // threads still running, `__del__`, files not flushed, odd codes,
        // a flush or a handler that fails.
        ("import atexit; atexit.register(print, 'bye'); print('hi')", &[]),
        (
            "import threading, time\ndef late():\n    time.sleep(0.2); print('late')\nthreading.Thread(target=late).start()\nprint('main')",
            &[],
        ),
        (
            "class D:\n    def __del__(self):\n        print('del')\nd = D()\nprint('main')",
            &[],
        ),
        ("f = open(1, 'w', closefd=False)\nf.write('unflushed')", &[]),
        ("import sys; print('x', end=''); sys.exit(256)", &[]),
        ("import sys; sys.exit(True)", &[]),
        ("import sys; sys.exit(-1)", &[]),
        ("import sys; sys.exit(2 ** 70)", &[]),
        ("raise SystemExit(3, 4)", &[]),
        ("import sys; sys.exit(None)", &[]),
        (
            "import sys\nclass W:\n    closed = False\n    def __repr__(self): return 'W'\n    def write(self, s): return len(s)\n    def flush(self): raise OSError('no')\nsys.stdout = W()",
            &[],
        ),
        (
            "import atexit, sys\nclass F:\n    def __repr__(self): return 'F'\n    def __call__(self): 1/0\natexit.register(F()); print('out'); sys.exit(4)",
            &[],
        ),
    ];
    // Each as `python3 -c CODE ARGS`, then as a script (`python3 FILE`,
    // the case's file holding the program): forked, then spawned.
    let script = |interpreter: &[&str], code: &str| Candidate {
        file_name: "task".into(),
        program: code.as_bytes().to_vec(),
        interpreter: Some(interpreter.iter().map(|w| w.to_string()).collect()),
        build: None,
    };
    let seen = |r: &CaseResult| {
        (
            r.status,
            r.exit_code,
            r.signal,
            text(&r.stdout),
            text(&r.stderr_tail),
        )
    };
    for &(code, args) in programs {
        for (form, python, env_python) in [
            (
                "-c",
                minus_c(&["python3"], code, args),
                minus_c(&["env", "python3"], code, args),
            ),
            (
                "script",
                script(&["python3"], code),
                script(&["env", "python3"], code),
            ),
        ] {
            let forked = b.run_candidate(&python, cpu.clone());
            let spawned = b.run_candidate(&env_python, cpu.clone());
            assert_eq!(seen(&forked), seen(&spawned), "{form}: {code}");
            // Again: a `-c` source's code, compiled by the zygote the
            // first time, is run as it is.
            let again = b.run_candidate(&python, cpu.clone());
            assert_eq!(seen(&again), seen(&spawned), "{form} again: {code}");
        }
    }
    // Each forked case draws its own random seed, as a fresh interpreter.
    let draw = "import random; print(random.getrandbits(64))";
    let first = b.run_candidate(&minus_c(&["python3"], draw, &[]), case(b"", 30_000));
    let second = b.run_candidate(&minus_c(&["python3"], draw, &[]), case(b"", 30_000));
    assert_eq!(first.status, CaseStatus::Ok, "{first:?}");
    assert_ne!(text(&first.stdout), text(&second.stdout), "one seed");
    // Limits hold as for a spawned program.
    let mut tight = case(b"", 30_000);
    tight.cpu_limit_s = Some(1);
    let spin = b.run_candidate(&minus_c(&["python3"], "while True: pass", &[]), tight);
    assert_eq!(spin.status, CaseStatus::CpuLimit, "{spin:?}");
    let slow = b.run_candidate(
        &minus_c(&["python3"], "import time; time.sleep(30)", &[]),
        case(b"", 500),
    );
    assert_eq!(slow.status, CaseStatus::Timeout, "{slow:?}");
    b.check_clean("forked cases");
}

/// The scope the zygote prepared with LiveCodeBench's import block holds
/// what the block makes when run in the case itself, name for name and
/// object for object, in the same order; only `argv` (bound by `from sys
/// import *` at its moment) differs.
#[test]
fn the_zygotes_livecodebench_scope_is_the_blocks_own() {
    let mut b = open("zygote-lcb", PYTHON);
    let code = format!(
        "{}\nimport sys, builtins\nprepared = sys._sbx_lcb_prepared\nfresh = _sbx_lcb_block({{'__name__': None, '__builtins__': builtins}})\nmissing = object()\nprint(sorted(k for k in set(prepared) | set(fresh) if prepared.get(k, missing) is not fresh.get(k, missing)), list(prepared) == list(fresh), len(fresh) > 300)",
        sbx_runner::LIVECODEBENCH_BLOCK
    );
    let r = b.run_candidate(&minus_c(&["python3"], &code, &[]), case(b"", 30_000));
    assert_ended(&r, CaseStatus::Ok, "['argv'] True True\n");
    b.check_clean("the prepared scope");
}

/// A daemon forked from a forked case, and one that tries the zygote's
/// socket and fds, are killed by the reset; the zygote still serves.
#[test]
fn the_zygote_outlives_hostile_forked_cases_and_they_do_not_outlive_the_reset() {
    let mut b = open("zygote-hostile", PYTHON);
    let daemon = r#"
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(60)
    os._exit(0)
parent = os.getppid()
for s in (9, 15, 19):
    try:
        os.kill(parent, s); print('signalled')
    except OSError:
        pass
for path in ['/proc/%d/fd/0' % parent, '/proc/%d/fd/3' % parent, '/proc/%d/environ' % parent]:
    try:
        open(path, 'rb'); print('opened', path)
    except OSError:
        pass
try:
    os.killpg(os.getpgid(parent), 9)
except OSError:
    pass
import time
time.sleep(0.1)
if open('/proc/%d/status' % parent).read().split('State:')[1].split()[0] not in 'RS':
    print('the zygote is hurt')
print('done')
"#;
    for round in 0..3 {
        let r = b.run_candidate(&minus_c(&["python3"], daemon, &[]), case(b"", 30_000));
        assert_ended(&r, CaseStatus::Ok, "done\n");
        let after = b.run_candidate(
            &minus_c(&["python3"], "import os; print(os.getppid() > 1)", &[]),
            case(b"", 30_000),
        );
        assert_ended(&after, CaseStatus::Ok, "True\n");
        b.check_clean(&format!("a forked daemon, round {round}"));
    }
}

/// No `python3` in the image: the zygote cannot start, and the case is
/// spawned directly, with the shell's 127, as before.
#[test]
fn without_python_the_case_is_spawned_directly() {
    let mut b = open("zygote-none", BUSYBOX);
    let r = b.run_candidate(&minus_c(&["python3"], "pass", &[]), case(b"", 30_000));
    assert_eq!(
        (r.status, r.exit_code),
        (CaseStatus::NotStarted, Some(127)),
        "{r:?}"
    );
    let sh = b.run("ok.sh", "echo ok\n", Some("sh"), case(b"", 30_000));
    assert_ended(&sh, CaseStatus::Ok, "ok\n");
}

/// A `Steps` request is each of its steps as if it came alone: a load and
/// a case in one round trip, a reset and the next case in the next, an
/// unload before the next candidate's load; a case without the reset owed
/// is refused inside `Steps` as alone, and a candidate the runner cannot
/// run is `Refused` without its case.
#[test]
fn a_steps_round_trip_is_each_step_as_if_alone() {
    use sbx::runner::host::{Before, RunnerError, Stepped};
    let mut b = open("steps", BUSYBOX);
    let echo = run_directly("t.sh", b"#!/bin/sh\nread x\necho \"got $x\"\n");
    let ran = |stepped: Stepped| match stepped {
        Stepped::Ran(r) => text(&r.stdout),
        other => panic!("{other:?}"),
    };
    let first = b
        .s()
        .run_after(Before::Nothing, Some(&echo), &case(b"1\n", 30_000))
        .expect("load and case");
    assert_eq!(ran(first), "got 1\n");
    let second = b
        .s()
        .run_after(Before::Reset, None, &case(b"2\n", 30_000))
        .expect("reset and case");
    assert_eq!(ran(second), "got 2\n");
    // The next candidate after an unload; the first one's file is gone.
    let look = run_directly("u.sh", b"#!/bin/sh\nls -A /work\n");
    let third = b
        .s()
        .run_after(Before::Unload, Some(&look), &case(b"", 30_000))
        .expect("unload, load and case");
    assert_eq!(ran(third), "u.sh\n");
    // No `#!` line: refused, its case not run.
    let plain = run_directly("v.txt", b"echo never\n");
    let refused = b
        .s()
        .run_after(Before::Unload, Some(&plain), &case(b"", 30_000))
        .expect("unload and load");
    assert!(matches!(refused, Stepped::Refused(_)), "{refused:?}");
    // A case without the reset owed before it: refused as alone.
    let mut c = open("steps-noreset", BUSYBOX);
    c.s()
        .run_after(Before::Nothing, Some(&echo), &case(b"1\n", 30_000))
        .expect("first");
    let err = c
        .s()
        .run_after(Before::Nothing, None, &case(b"2\n", 30_000))
        .unwrap_err();
    assert!(
        matches!(&err, RunnerError::Internal(m) if m.contains("clean reset")),
        "{err}"
    );
}
