//! Candidates under an identity of their own, against the real engine, in
//! every eval mode: what a candidate is (uid, gid, groups, capabilities,
//! no_new_privs), that it cannot reach PID 1 (the runner) by any of the
//! ways the kernel offers a process of the same uid, that nothing it can
//! write can be executed, what it sees of /work, and that a sibling's code
//! is out of reach with `--deliver image`. In `worker` mode every hostile
//! candidate is followed, in the same container, by a correct one that
//! must pass. Containers are labelled with the test's run id and removed
//! on every path.

use crate::common;

use std::time::Duration;

use serde_json::{json, Value};

use common::scratch::Scratch;
use common::{by_id, report};

const LIMIT: Duration = Duration::from_secs(400);

/// A scratch folder and run id for `test`.
fn scratch(test: &str) -> Scratch {
    Scratch::new("idt", "identity", test, LIMIT)
}
const MODES: [&str; 3] = ["case", "candidate", "worker"];

/// Prints what the candidate is and what each way to PID 1 answers (as
/// errno names). In `case` mode PID 1 is the supervisor, root as a
/// runner is.
const PROBE: &str = r#"
import ctypes, errno, os, resource
libc = ctypes.CDLL(None, use_errno=True)
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return line.split(':', 1)[1].strip()
def attempt(f):
    try:
        f()
        return 'ok'
    except OSError as e:
        return errno.errorcode[e.errno]
def write(path, data):
    with open(path, 'w') as f:
        f.write(data)
out = ['uid %d %d gid %d %d groups %r' % (os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups())]
out.append('caps eff %s prm %s inh %s amb %s nnp %s' % tuple(status(k) for k in ('CapEff', 'CapPrm', 'CapInh', 'CapAmb', 'NoNewPrivs')))
if os.getpid() == 1:
    out.append('pid1-self')
else:
    out.append('kill ' + attempt(lambda: os.kill(1, 0)))
    out.append('prlimit ' + attempt(lambda: resource.prlimit(1, resource.RLIMIT_AS, (1 << 20, 1 << 20))))
    out.append('sched ' + attempt(lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))))
    out.append('nice ' + attempt(lambda: os.setpriority(os.PRIO_PROCESS, 1, 19)))
    out.append('oom ' + attempt(lambda: write('/proc/1/oom_score_adj', '-1000')))
    r = libc.ptrace(16, 1, 0, 0)
    out.append('ptrace %d %s' % (r, errno.errorcode.get(ctypes.get_errno(), '?') if r else ''))
out.append('dev ' + attempt(lambda: write('/dev/x', 'x')))
print('\n'.join(out))
"#;

const CAPS: &str = "caps eff 0000000000000000 prm 0000000000000000 inh 0000000000000000 amb 0000000000000000 nnp 1";

fn probe_expect() -> String {
    // PID 1 is root in every mode (the runner, or in `case` mode sbx's
    // supervisor), the candidate another uid with no group: every way to
    // PID 1 is refused.
    let pid1 = [
        "kill EPERM",
        "prlimit EPERM",
        "sched EPERM",
        "nice EPERM",
        "oom EACCES",
        "ptrace -1 EPERM",
    ]
    .map(|l| format!("{l}\n"))
    .concat();
    format!("uid 65534 65534 gid 65534 65534 groups []\n{CAPS}\n{pid1}dev EACCES\n")
}

/// Walks the whole file system (but /proc and /sys) as the candidate; in
/// every directory where it can create a file, it copies an executable
/// there and tries to run it. Prints each place where that worked.
const COPY_AND_EXEC: &str = r#"
import os, shutil, subprocess
ran = []
seen = set()
for top in ['/'] + ['/dev/shm', '/dev/mqueue', '/tmp', '/work', '/run', '/var/tmp']:
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in ('/proc', '/sys')]
        if root in seen:
            continue
        seen.add(root)
        target = os.path.join(root, 'sbx-probe-exec')
        try:
            shutil.copy('/bin/echo', target)
            os.chmod(target, 0o755)
        except OSError:
            continue
        try:
            r = subprocess.run([target, 'ran'], capture_output=True)
            if r.stdout == b'ran\n':
                ran.append(root)
        except OSError:
            pass
        try:
            os.unlink(target)
        except OSError:
            pass
print('ran in: ' + ' '.join(sorted(ran)))
"#;

/// What /work holds, who owns the program, and whether it may write it.
const WORK: &str = r#"
import os
st = os.stat('/work/task')
print(sorted(os.listdir('/work')), st.st_uid, os.access('/work/task', os.W_OK), os.access('/work', os.W_OK))
"#;

/// Wrong (prints 41, not 42) after trying to take the runner down or hold
/// it back: none may become `error`, or `pass`.
const ATTACKS: [(&str, &str); 6] = [
    (
        "prlimit-as",
        r#"
import resource
try:
    resource.prlimit(1, resource.RLIMIT_AS, (1 << 20, 1 << 20))
except OSError:
    pass
print(41)
"#,
    ),
    (
        "starve",
        r#"
import os
for tid in os.listdir('/proc/1/task'):
    try:
        os.sched_setscheduler(int(tid), os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, int(tid), 19)
    except OSError:
        pass
for _ in range(40):
    if os.fork() == 0:
        while True:
            pass
print(41, flush=True)
while True:
    pass
"#,
    ),
    (
        "oom-score",
        r#"
for v in ('1000', '-1000'):
    try:
        with open('/proc/1/oom_score_adj', 'w') as f:
            f.write(v)
    except OSError:
        pass
print(41)
"#,
    ),
    (
        "kill",
        r#"
import os, signal
for s in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):
    try:
        os.kill(1, s)
    except OSError:
        pass
print(41)
"#,
    ),
    (
        "ptrace",
        r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace(16, 1, 0, 0)
print(41)
"#,
    ),
    (
        "dev-exec",
        r#"
import shutil, subprocess
try:
    shutil.copy('/bin/echo', '/dev/myecho')
    subprocess.run(['/dev/myecho', '42'])
except OSError:
    print(41)
"#,
    ),
];

const CORRECT: &str = "print(42)\n";

#[test]
fn candidates_have_no_privilege_and_cannot_reach_pid_1_in_any_mode() {
    common::require_engine();
    let s = scratch("reach");
    let mut tasks = vec![];
    s.file("gen/probe.py", PROBE.as_bytes());
    tasks.push(json!({"id": "probe", "stdin": "", "expect": "placeholder", "timeout": 30}));
    for (id, program) in ATTACKS {
        s.file(&format!("gen/{id}.py"), program.as_bytes());
        let timeout = if id == "starve" { 3 } else { 30 };
        tasks.push(json!({"id": id, "stdin": "", "expect": "42\n", "timeout": timeout}));
        s.file(&format!("gen/{id}-after.py"), CORRECT.as_bytes());
        tasks.push(
            json!({"id": format!("{id}-after"), "stdin": "", "expect": "42\n", "timeout": 30}),
        );
    }
    for mode in MODES {
        tasks[0]["expect"] = json!(probe_expect());
        let started = std::time::Instant::now();
        let out = s.eval(
            &Value::Array(tasks.clone()),
            &["--isolate", mode, "-j", "1"],
        );
        let results = by_id(&report(&out));
        let probe = &results["probe"];
        assert_eq!(probe["status"], "pass", "{mode}: {probe}");
        for (id, _) in ATTACKS {
            let r = &results[id];
            assert_eq!(r["status"], "fail", "{mode} {id}: {r}");
            let after = &results[&format!("{id}-after")];
            assert_eq!(after["status"], "pass", "{mode}: after {id}: {after}");
        }
        assert_eq!(
            results["starve"]["reason"], "timeout",
            "{mode}: {}",
            results["starve"]
        );
        assert_eq!(out.code(), 1, "{mode}: {out:?}");
        // Wide: 14 candidates on a shared machine; the starving one alone
        // took 135 s before.
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{mode}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn nothing_a_candidate_can_write_can_be_executed_and_work_holds_only_task() {
    common::require_engine();
    let s = scratch("write-exec");
    s.file("gen/walk.py", COPY_AND_EXEC.as_bytes());
    s.file("gen/work.py", WORK.as_bytes());
    s.file("gen/walk-after.py", CORRECT.as_bytes());
    let tasks = json!([
        {"id": "walk", "stdin": "", "expect": "ran in: \n", "timeout": 150},
        {"id": "walk-after", "stdin": "", "expect": "42\n", "timeout": 30},
        {"id": "work", "stdin": "", "expect": "['task'] 0 False False\n", "timeout": 30},
    ]);
    for mode in MODES {
        let out = s.eval(&tasks, &["--isolate", mode, "-j", "1"]);
        let results = by_id(&report(&out));
        for id in ["walk", "walk-after", "work"] {
            assert_eq!(
                results[id]["status"], "pass",
                "{mode} {id}: {}",
                results[id]
            );
        }
        assert_eq!(out.code(), 0, "{mode}: {out:?}");
    }
}

/// Runs every sibling candidate it can find and prints the first answer
/// that looks like one (today's bug: all of them were in the baked image).
const SIBLING: &str = r#"
import glob, subprocess, sys
for path in sorted(glob.glob('/work/tasks/*/*') + glob.glob('/work/tasks/*')):
    try:
        r = subprocess.run([sys.executable, path], capture_output=True, timeout=5)
    except Exception:
        continue
    if r.stdout.strip().isdigit():
        sys.stdout.write(r.stdout.decode())
        break
else:
    print('alone')
"#;

#[test]
fn a_sibling_is_out_of_reach_with_deliver_image() {
    common::require_engine();
    let s = scratch("sibling");
    s.file("gen/a.py", CORRECT.as_bytes());
    s.file("gen/b.py", SIBLING.as_bytes());
    let tasks = json!([
        {"id": "a", "stdin": "", "expect": "42\n", "timeout": 30},
        {"id": "b", "stdin": "", "expect": "42\n", "timeout": 30},
    ]);
    // One image holding every candidate: refused, in one line.
    let out = s.eval(&tasks, &["--isolate", "case", "--deliver", "image"]);
    assert_eq!(out.code(), 2, "{out:?}");
    let stderr = &out.stderr;
    assert!(
        stderr.contains("--isolate case") && stderr.contains("--deliver image"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty() || report(&out).is_empty(), "{out:?}");
    for mode in ["candidate", "worker"] {
        let out = s.eval(
            &tasks,
            &["--isolate", mode, "--deliver", "image", "-j", "1"],
        );
        let results = by_id(&report(&out));
        assert_eq!(results["a"]["status"], "pass", "{mode}: {}", results["a"]);
        assert_eq!(results["b"]["status"], "fail", "{mode}: {}", results["b"]);
        assert_eq!(
            results["b"]["reason"], "wrong_output",
            "{mode}: {}",
            results["b"]
        );
    }
}

#[test]
fn root_is_refused_for_candidates() {
    let s = scratch("root");
    s.file("gen/a.py", CORRECT.as_bytes());
    let tasks = json!([{"id": "a", "stdin": "", "expect": "42\n"}]);
    for user in ["0", "0:0", "1000:0"] {
        let out = s.eval(&tasks, &["--user", user]);
        assert_eq!(out.code(), 2, "{user}: {out:?}");
        let stderr = &out.stderr;
        assert!(stderr.contains("never run as root"), "{user}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{user}: {stderr}");
    }
}

/// A function test's candidate (sealed: its return value is compared
/// outside): what it is, that the runner's zygote forked it (its parent is
/// root's and not PID 1), and what each way into that parent answers.
const FORKED_PROBE: &str = r#"
def probe():
    import ctypes, errno, os, posix
    libc = ctypes.CDLL(None, use_errno=True)
    def status(pid, key):
        for line in open('/proc/%s/status' % pid):
            if line.startswith(key + ':'):
                return line.split(':', 1)[1].split()
    def attempt(f):
        try:
            f()
            return 'ok'
        except OSError as e:
            return errno.errorcode[e.errno]
    def c_call(r):
        if r != 0:
            raise OSError(ctypes.get_errno(), 'c')
    def write(path, data):
        with open(path, 'w') as f:
            f.write(data)
    parent = os.getppid()
    out = ['uid %d %d gid %d %d groups %r' % (os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups())]
    out.append('caps ' + ' '.join(status('self', k)[0] for k in ('CapEff', 'CapPrm', 'CapInh', 'CapAmb', 'NoNewPrivs')))
    out.append('parent %s uids %s' % ('forked' if parent > 1 else parent, ' '.join(status(parent, 'Uid'))))
    out.append('kill ' + attempt(lambda: posix.kill(parent, 0)))
    limit = (ctypes.c_ulong * 2)(1 << 20, 1 << 20)
    out.append('prlimit ' + attempt(lambda: c_call(libc.prlimit(parent, 9, limit, None))))
    out.append('sched ' + attempt(lambda: os.sched_setscheduler(parent, os.SCHED_IDLE, os.sched_param(0))))
    out.append('nice ' + attempt(lambda: os.setpriority(os.PRIO_PROCESS, parent, 19)))
    out.append('oom ' + attempt(lambda: write('/proc/%d/oom_score_adj' % parent, '1000')))
    out.append('environ ' + attempt(lambda: open('/proc/%d/environ' % parent, 'rb').read()))
    out.append('mem ' + attempt(lambda: open('/proc/%d/mem' % parent, 'rb').read(1)))
    out.append('fd ' + attempt(lambda: os.listdir('/proc/%d/fd' % parent)))
    out.append('ptrace ' + attempt(lambda: c_call(libc.ptrace(16, parent, 0, 0))))
    return '\n'.join(out)
"#;

const FORKED_EXPECT: &str = "uid 65534 65534 gid 65534 65534 groups []\n\
caps 0000000000000000 0000000000000000 0000000000000000 0000000000000000 1\n\
parent forked uids 0 0 0 0\nkill EPERM\nprlimit EPERM\nsched EPERM\nnice EPERM\n\
oom EACCES\nenviron EACCES\nmem EACCES\nfd EACCES\nptrace EPERM";

/// A correct function that first leaves a process behind (a raw fork, out
/// of the harness's sight), which must die with the case.
const FORK_AND_LEAVE: &str = r#"
import ctypes, time
if ctypes.CDLL(None).fork() == 0:
    time.sleep(60)
def probe():
    return 'left one'
"#;

/// A wrong stdio candidate that leaves a daemon of its own session.
const DAEMON: &str = r#"
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(60)
    os._exit(0)
print(41)
"#;

#[test]
fn function_test_candidates_are_forked_as_the_candidate_and_cannot_reach_the_zygote() {
    common::require_engine();
    let s = scratch("zygote");
    let check =
        |expect: &str| format!("def check(candidate):\n    assert candidate() == {expect:?}\n");
    let mut tasks = vec![];
    for (id, program, expect) in [
        ("probe", FORKED_PROBE, FORKED_EXPECT),
        ("leave", FORK_AND_LEAVE, "left one"),
        ("probe-after-leave", FORKED_PROBE, FORKED_EXPECT),
    ] {
        s.file(&format!("gen/{id}.py"), program.as_bytes());
        tasks.push(json!({"id": id, "entry_point": "probe", "test": check(expect), "timeout": 30}));
    }
    s.file("gen/daemon.py", DAEMON.as_bytes());
    tasks.push(json!({"id": "daemon", "stdin": "", "expect": "42\n", "timeout": 30}));
    s.file("gen/probe-after-daemon.py", FORKED_PROBE.as_bytes());
    tasks.push(json!({"id": "probe-after-daemon", "entry_point": "probe", "test": check(FORKED_EXPECT), "timeout": 30}));
    for mode in ["candidate", "worker"] {
        let out = s.eval(
            &Value::Array(tasks.clone()),
            &["--isolate", mode, "-j", "1"],
        );
        let results = by_id(&report(&out));
        for id in ["probe", "leave", "probe-after-leave", "probe-after-daemon"] {
            let r = &results[id];
            assert_eq!(r["status"], "pass", "{mode} {id}: {r}");
            assert_eq!(r["judged"], "sealed", "{mode} {id}: {r}");
        }
        assert_eq!(
            results["daemon"]["status"], "fail",
            "{mode}: {}",
            results["daemon"]
        );
        assert_eq!(out.code(), 1, "{mode}: {out:?}");
    }
}

/// Ways for a candidate's process to look dead, or to outlive the kill at
/// a case's end, while it holds the case's stdout open. Each prints a
/// wrong answer (or never ends); each must be the candidate's own `fail`,
/// never `error`, and quickly (no rerun).
const LOOK_DEAD: [(&str, &str); 9] = [
    // A name that is not UTF-8 (no ctypes, no thread).
    (
        "comm-ff",
        r#"
import os, time
if os.fork() == 0:
    os.setsid()
    open('/proc/self/comm', 'wb').write(b'\xff')
    time.sleep(120)
print(41)
"#,
    ),
    // A name made to confuse a reader of /proc/PID/stat.
    (
        "comm-paren",
        r#"
import os, time
if os.fork() == 0:
    open('/proc/self/comm', 'wb').write(b') Z 1 (\n)')
    time.sleep(120)
print(41)
"#,
    ),
    // A session of its own, named as the runner.
    (
        "comm-sbx",
        r#"
import os, time
if os.fork() == 0:
    os.setsid()
    open('/proc/self/comm', 'w').write('sbx')
    time.sleep(120)
print(41)
"#,
    ),
    // The leader leaves with SYS_exit while a thread holds stdout: the
    // program itself never ends (the leader shows Z).
    (
        "leader-exit",
        r#"
import ctypes, threading, time
threading.Thread(target=time.sleep, args=(120,)).start()
print(41, flush=True)
ctypes.CDLL(None).syscall(60, 0)
"#,
    ),
    // The same in a daemon child, named with a byte that is not UTF-8.
    (
        "daemon-leader-exit",
        r#"
import ctypes, os, threading, time
if os.fork() == 0:
    os.setsid()
    open('/proc/self/comm', 'wb').write(b'\xfe\xff')
    threading.Thread(target=time.sleep, args=(120,)).start()
    ctypes.CDLL(None).syscall(60, 0)
print(41)
"#,
    ),
    // A holder stopped by SIGSTOP.
    (
        "stopped",
        r#"
import os, signal, time
if os.fork() == 0:
    os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(120)
time.sleep(0.2)
print(41)
"#,
    ),
    // A holder stopped under ptrace by a sibling that stays too.
    (
        "traced",
        r#"
import ctypes, os, time
holder = os.fork()
if holder == 0:
    time.sleep(120)
    os._exit(0)
if os.fork() == 0:
    libc = ctypes.CDLL(None)
    libc.ptrace(16, holder, 0, 0)
    time.sleep(120)
    os._exit(0)
time.sleep(0.3)
print(41)
"#,
    ),
    // A holder that ignores every signal it may and forks on.
    (
        "forker",
        r#"
import os, signal, time
if os.fork() == 0:
    os.setsid()
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_IGN)
    while True:
        try:
            if os.fork() == 0:
                time.sleep(120)
        except OSError:
            pass
        time.sleep(0.01)
time.sleep(0.2)
print(41)
"#,
    ),
    // A vfork-style child (posix_spawn) of a program that keeps stdout.
    (
        "spawned",
        r#"
import os
os.posix_spawn('/bin/sleep', ['sleep', '120'], dict(os.environ))
print(41)
"#,
    ),
];

#[test]
fn no_candidate_can_make_itself_error_by_looking_dead_or_outliving_the_kill() {
    common::require_engine();
    let s = scratch("look-dead");
    let mut tasks = vec![];
    for (id, program) in LOOK_DEAD {
        s.file(&format!("gen/{id}.py"), program.as_bytes());
        let timeout = if id == "leader-exit" { 3 } else { 30 };
        tasks.push(json!({"id": id, "stdin": "", "expect": "42\n", "timeout": timeout}));
        s.file(&format!("gen/{id}-after.py"), CORRECT.as_bytes());
        tasks.push(
            json!({"id": format!("{id}-after"), "stdin": "", "expect": "42\n", "timeout": 30}),
        );
    }
    for mode in MODES {
        let started = std::time::Instant::now();
        let out = s.eval(
            &Value::Array(tasks.clone()),
            &["--isolate", mode, "-j", "1"],
        );
        let results = by_id(&report(&out));
        for (id, _) in LOOK_DEAD {
            let r = &results[id];
            assert_eq!(r["status"], "fail", "{mode} {id}: {r}");
            // The leader's thread sleeps past the limit: the backstop.
            let want = if id == "leader-exit" {
                "wall_timeout"
            } else {
                "wrong_output"
            };
            assert_eq!(r["reason"], want, "{mode} {id}: {r}");
            let after = &results[&format!("{id}-after")];
            assert_eq!(after["status"], "pass", "{mode}: after {id}: {after}");
        }
        assert_eq!(out.code(), 1, "{mode}: {out:?}");
        // Wide: 18 candidates on a shared machine; one that made itself
        // `error` took 19 s of reruns alone.
        assert!(
            started.elapsed() < Duration::from_secs(150),
            "{mode}: {:?}",
            started.elapsed()
        );
    }
}

/// A function test's candidate that tries every way to start a process;
/// a child that ran writes `CHILD-RAN` to fd 2 (the case's stderr), and
/// the function answers what each try did.
const SPAWNER: &str = r#"
def probe():
    import os, sys
    tried = []
    exe = sys.executable
    marker = "import os; os.write(2, b'CHILD-RAN\\n')"
    def attempt(name, f):
        try:
            f()
            tried.append(name + ' went through')
        except BaseException as e:
            tried.append(name + ' ' + type(e).__name__)
    def fork_exec():
        import _posixsubprocess
        r, w = os.pipe()
        _posixsubprocess.fork_exec(
            [exe, '-c', marker], [os.fsencode(exe)], True, (w,), None, None,
            -1, -1, -1, -1, -1, -1, r, w, False, False, -1, None, None, None,
            -1, None, False)
    def raw_fork():
        pid = __import__('posix').fork()
        if pid == 0:
            os.write(2, b'CHILD-RAN\n')
            os._exit(0)
    def subprocess_run():
        import subprocess
        subprocess.run([exe, '-c', marker])
    def posix_spawn():
        os.posix_spawn(exe, [exe, '-c', marker], dict(os.environ))
    def libc(name, *args):
        import ctypes
        f = getattr(ctypes.CDLL(None, use_errno=True), name)
        pid = f(*args)
        if pid == 0:
            os.write(2, b'CHILD-RAN\n')
            os._exit(0)
        if pid < 0:
            raise OSError(ctypes.get_errno(), name)
    attempt('fork_exec', fork_exec)
    attempt('fork', raw_fork)
    attempt('subprocess', subprocess_run)
    attempt('posix_spawn', posix_spawn)
    attempt('execv', lambda: os.execv(exe, [exe, '-c', marker]))
    attempt('libc-fork', lambda: libc('fork'))
    attempt('clone', lambda: libc('syscall', 56, 17, 0, 0, 0, 0))
    import time
    time.sleep(0.5)
    print(' | '.join(tried), file=sys.stderr)
    return ' | '.join(tried)
"#;

#[test]
fn function_tests_cannot_start_a_process_in_any_mode() {
    common::require_engine();
    let s = scratch("no-process");
    s.file("gen/spawn-sealed.py", SPAWNER.as_bytes());
    s.file("gen/spawn-inproc.py", SPAWNER.as_bytes());
    let sealed = "def check(candidate):\n    assert candidate() == 'all started'\n";
    // A loop is not a plain list of assertions: the test stays in-process.
    let inproc = "def check(candidate):\n    for _ in range(1):\n        r = candidate()\n        assert r == 'all started', r\n";
    let tasks = json!([
        {"id": "spawn-sealed", "entry_point": "probe", "test": sealed, "timeout": 30},
        {"id": "spawn-inproc", "entry_point": "probe", "test": inproc, "timeout": 30},
    ]);
    for mode in MODES {
        let out = s.eval(&tasks, &["--isolate", mode, "-j", "1"]);
        let results = by_id(&report(&out));
        for (id, judged) in [("spawn-sealed", "sealed"), ("spawn-inproc", "in_process")] {
            let r = &results[id];
            assert_eq!(r["status"], "fail", "{mode} {id}: {r}");
            assert_eq!(r["judged"], judged, "{mode} {id}: {r}");
            // What the function answered is in the message (sealed) or
            // the assertion's (in-process); a child writes to stderr.
            let seen = r.to_string();
            assert!(
                !seen.contains("CHILD-RAN"),
                "{mode} {id}: a process started: {r}"
            );
            // Every try ran and was refused (the kernel's EPERM for the
            // ways no audit event covers).
            assert!(
                seen.contains("fork_exec PermissionError"),
                "{mode} {id}: {r}"
            );
            assert!(seen.contains("clone"), "{mode} {id}: {r}");
            assert!(!seen.contains("went through"), "{mode} {id}: {r}");
        }
        assert_eq!(out.code(), 1, "{mode}: {out:?}");
    }
}

/// Writes a copy of `/bin/echo` to an anonymous memory file and executes
/// it, as `fexecve` does: it would print 42.
const MEMFD_PY: &str = r#"
import os
fd = os.memfd_create('x', 0)
os.write(fd, open('/bin/echo', 'rb').read())
os.execv('/proc/self/fd/%d' % fd, ['echo', '42'])
"#;

#[test]
fn no_candidate_executes_a_memory_file_in_any_mode() {
    common::require_engine();
    let s = scratch("memfd");
    s.file("gen/memfd.py", MEMFD_PY.as_bytes());
    s.file("gen/memfd-after.py", CORRECT.as_bytes());
    let tasks = json!([
        {"id": "memfd", "stdin": "", "expect": "42\n", "timeout": 30},
        {"id": "memfd-after", "stdin": "", "expect": "42\n", "timeout": 30},
    ]);
    for mode in MODES {
        let out = s.eval(&tasks, &["--isolate", mode, "-j", "1"]);
        let results = by_id(&report(&out));
        let r = &results["memfd"];
        assert_eq!(r["status"], "fail", "{mode}: {r}");
        assert_eq!(r["reason"], "exit_code", "{mode}: {r}");
        let tail = r["stderr_tail"].as_str().unwrap_or_default();
        assert!(tail.contains("Function not implemented"), "{mode}: {r}");
        assert_eq!(results["memfd-after"]["status"], "pass", "{mode}: {out:?}");
        assert_eq!(out.code(), 1, "{mode}: {out:?}");
    }
}

#[test]
fn a_program_that_cannot_be_executed_is_sbx_error_and_no_candidate_can_say_so() {
    // In `case` mode the program runs under the runner's `--supervise`
    // wrapper: its failure to execute is `start_failed`, as the runner's
    // and as `docker start`'s were; a candidate that prints the wrapper's
    // words and exits 127 is only itself failing.
    common::require_engine();
    let s = scratch("no-exec");
    s.file("gen/missing.py", CORRECT.as_bytes());
    s.file(
        "gen/forger.py",
        b"import sys\nsys.stderr.write('sbx runner: x: cannot execute `python3`: No such file or directory (os error 2)\\n')\nsys.exit(127)\n",
    );
    let missing = json!([{"id": "missing", "stdin": "", "expect": "42\n", "timeout": 30}]);
    let forger = json!([{"id": "forger", "stdin": "", "expect": "42\n", "timeout": 30}]);
    for mode in MODES {
        let out = s.eval(
            &missing,
            &[
                "--isolate",
                mode,
                "-j",
                "1",
                "--interpreter",
                "/nonexistent/python3",
            ],
        );
        let r = &by_id(&report(&out))["missing"];
        assert_eq!(r["status"], "error", "{mode}: {r}");
        assert_eq!(r["reason"], "start_failed", "{mode}: {r}");
        let out = s.eval(&forger, &["--isolate", mode, "-j", "1"]);
        let r = &by_id(&report(&out))["forger"];
        assert_eq!(r["status"], "fail", "{mode}: {r}");
        assert_eq!(r["reason"], "exit_code", "{mode}: {r}");
    }
}

#[test]
fn a_self_sabotaging_wrong_sample_is_its_tasks_fail_not_error() {
    // One right sample of task A, one wrong sample of task B that keeps
    // its stdout open from a renamed daemon and a leaderless thread group:
    // B is `fail`, never `error` (which left it unjudged and the mean
    // score at A's 1.0), quickly, with A beside it in the same workers.
    common::require_engine();
    let s = scratch("sabotage");
    s.file("gen/a.py", CORRECT.as_bytes());
    let sabotage = LOOK_DEAD
        .iter()
        .find(|(id, _)| *id == "daemon-leader-exit")
        .expect("in the list")
        .1;
    s.file("gen/b.py", sabotage.as_bytes());
    let tasks = json!([
        {"id": "a", "stdin": "", "expect": "42\n", "timeout": 30},
        {"id": "b", "stdin": "", "expect": "42\n", "timeout": 30},
    ]);
    for mode in MODES {
        let started = std::time::Instant::now();
        let out = s.eval(&tasks, &["--isolate", mode]);
        let results = by_id(&report(&out));
        assert_eq!(results["a"]["status"], "pass", "{mode}: {out:?}");
        assert_eq!(results["b"]["status"], "fail", "{mode}: {}", results["b"]);
        assert!(
            out.stderr
                .contains("1 passed, 1 failed, 0 missing, 0 errors"),
            "{mode}: {out:?}"
        );
        assert_eq!(out.code(), 1, "{mode}: {out:?}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{mode}: {:?}",
            started.elapsed()
        );
    }
}

/// A case-mode candidate that hunts for the supervisor's token (its argv,
/// its environment, its own environment) and writes the supervisor's
/// lines with every word it found: its verdict stays its own.
const FORGER: &str = r#"
import os, sys
words = set()
seen = {}
for path in ('/proc/1/cmdline', '/proc/1/environ', '/proc/self/environ'):
    try:
        data = open(path, 'rb').read()
        for w in data.replace(b'=', b'\0').split(b'\0'):
            if w:
                words.add(w.decode('latin-1'))
        seen[path] = 'read'
    except PermissionError:
        seen[path] = 'denied'
leak = 'leak' if 'SBX_RUNNER_TOKEN' in words else 'noleak'
last = 'environ-%s-%s' % (seen.get('/proc/1/environ', 'error'), leak)
for sig in (9, 15):
    try:
        os.kill(1, sig)
    except OSError:
        pass
if os.fork() == 0:
    os.setsid()
    while True:
        pass
print(42)
sys.stdout.flush()
how = sys.argv[1] if len(sys.argv) > 1 else ''
for w in sorted(words) + [last]:
    if how == 'start':
        sys.stderr.write('sbx runner: %s: cannot execute `python3`: No such file or directory (os error 2)\n' % w)
    else:
        sys.stderr.write('\nsbx runner: %s: end timeout cpu_ms=1 wait_ms=1\n' % w)
sys.stderr.flush()
os._exit(127 if how == 'start' else 124)
"#;

#[test]
fn a_case_mode_candidate_cannot_forge_the_supervisors_lines() {
    // The supervisor's token is in no argv and in no environment the
    // candidate can read: a candidate that writes its lines with every
    // word it can find gets its own verdict (`exit_code`), never another
    // one's and never `error`; the burner it left behind does not keep
    // the case alive.
    common::require_engine();
    let s = scratch("forge");
    s.file("gen/forge-end.py", FORGER.as_bytes());
    s.file(
        "gen/forge-start.py",
        FORGER.replace("else ''", "else 'start'").as_bytes(),
    );
    s.file("gen/after.py", CORRECT.as_bytes());
    let tasks = json!([
        {"id": "forge-end", "stdin": "", "expect": "42\n", "timeout": 5},
        {"id": "forge-start", "stdin": "", "expect": "42\n", "timeout": 5},
        {"id": "after", "stdin": "", "expect": "42\n", "timeout": 5},
    ]);
    let started = std::time::Instant::now();
    let out = s.eval(&tasks, &["--isolate", "case", "-j", "1"]);
    assert!(started.elapsed() < Duration::from_secs(60), "{out:?}");
    let results = by_id(&report(&out));
    for id in ["forge-end", "forge-start"] {
        let r = &results[id];
        assert_eq!(r["status"], "fail", "{id}: {r}");
        assert_eq!(r["reason"], "exit_code", "{id}: {r}");
        let tail = r["stderr_tail"].as_str().unwrap_or_default();
        // PID 1's environment is not its to read, and its own holds no
        // token (the last forged line says so).
        assert!(
            tail.contains("sbx runner: environ-denied-noleak: "),
            "{id}: {r}"
        );
        // What it cost is the supervisor's report, not the forged one's.
        assert!(r["cpu_ms"].as_u64().is_some(), "{id}: {r}");
    }
    assert_eq!(results["after"]["status"], "pass", "{out:?}");
    assert!(
        out.stderr
            .contains("1 passed, 2 failed, 0 missing, 0 errors"),
        "{out:?}"
    );
}

/// Makes its parent its tracer (`PTRACE_TRACEME` needs no privilege; in
/// runner modes the parent is the root zygote, which holds no capability),
/// then stops itself: every stop of a traced child is reported to the
/// parent's `wait4`, which took the first for the program's end (measured:
/// `exit_code` with no exit code, in 20 ms, where `case` mode said
/// `timeout`). Judged now as a program that stops itself.
const TRACE_ME: &str = r#"
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
print('traceme', libc.ptrace(0, 0, 0, 0), flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
print(42)
"#;

#[test]
fn a_candidate_traced_by_its_parent_is_judged_by_its_end_not_its_stop() {
    common::require_engine();
    let s = scratch("trace-me");
    s.file("gen/traceme.py", TRACE_ME.as_bytes());
    s.file("gen/traceme-after.py", CORRECT.as_bytes());
    let tasks = json!([
        {"id": "traceme", "stdin": "", "expect": "42\n", "timeout": 2},
        {"id": "traceme-after", "stdin": "", "expect": "42\n", "timeout": 30},
    ]);
    for mode in MODES {
        let out = s.eval(&tasks, &["--isolate", mode, "-j", "1"]);
        let results = by_id(&report(&out));
        let r = &results["traceme"];
        assert_eq!(r["status"], "fail", "{mode}: {r}");
        // The backstop stops a program that is stopped, in every mode
        // (`case` mode's supervisor keeps the same time rule).
        assert_eq!(r["reason"], "wall_timeout", "{mode}: {r}");
        assert_eq!(
            results["traceme-after"]["status"], "pass",
            "{mode}: {out:?}"
        );
        assert_eq!(out.code(), 1, "{mode}: {out:?}");
    }
}
