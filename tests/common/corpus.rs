//! Candidates shared by the tests that run them in every mode and under
//! every runtime (`isolate.rs` under runc, `gvisor.rs` under runsc): an
//! adversarial set with the verdicts it must get, and hostile candidates
//! each followed in the same worker by a check of what it left behind.

use serde_json::{json, Value};

/// Adversarial candidates (`gen/ID.py`, and `nonode.js`) beside the
/// example suite.
pub const ADVERSARIAL: [(&str, &str); 9] = [
    (
        "hog",
        "x = []\nwhile True:\n    x.append(b'x' * (16 << 20))\n",
    ),
    (
        "flood",
        "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n",
    ),
    ("sleeper", "import time\ntime.sleep(60)\n"),
    (
        "segv",
        "import ctypes\nprint('before', flush=True)\nctypes.string_at(0)\n",
    ),
    ("wrong", "print('nope')\n"),
    (
        "echo",
        "import sys\nsys.stdout.write(sys.stdin.read().upper())\n",
    ),
    (
        "exit3",
        "import sys\nprint('bad', file=sys.stderr)\nsys.exit(3)\n",
    ),
    ("multi", "n = int(input())\nprint(n * 2 if n != 2 else 5)\n"),
    ("multiok", "n = int(input())\nprint(n * 2)\n"),
];

/// The tasks of [`ADVERSARIAL`] and `nonode` (an interpreter the image
/// lacks: sbx's error, not a fail).
pub fn adversarial_tasks() -> Vec<Value> {
    let doubling = json!([
        {"stdin": "1\n", "expect": "2\n"},
        {"stdin": "2\n", "expect": "4\n"},
        {"stdin": "3\n", "expect": "6\n"}
    ]);
    vec![
        json!({"id": "hog", "stdin": "", "expect": ""}),
        json!({"id": "flood", "stdin": "", "expect": ""}),
        json!({"id": "sleeper", "stdin": "", "expect": "", "timeout": 2}),
        json!({"id": "segv", "stdin": "", "expect": "before\n"}),
        json!({"id": "wrong", "stdin": "", "expect": "yes\n"}),
        json!({"id": "echo", "stdin": "abc\ndef\n", "expect": "ABC\nDEF\n"}),
        json!({"id": "exit3", "stdin": "", "expect": ""}),
        json!({"id": "multi", "cases": doubling}),
        json!({"id": "multiok", "cases": doubling}),
        json!({"id": "nonode", "stdin": "", "expect": "1\n"}),
    ]
}

/// The verdicts (status, reason) the adversarial set and the example
/// suite get in `isolate` mode, under every runtime: as `EXPECTED`, but
/// the sleeper reaches the CPU rule's wall-clock backstop
/// (`wall_timeout`) in every mode (`case` mode's supervisor judges by the
/// same rule), where a bare wall clock says `timeout`.
pub fn expected(isolate: &str) -> Vec<(&'static str, &'static str, &'static str)> {
    EXPECTED
        .iter()
        .map(|&(id, status, reason)| match (id, isolate) {
            ("sleeper", "case" | "candidate" | "worker") => (id, status, "wall_timeout"),
            _ => (id, status, reason),
        })
        .collect()
}

/// The verdicts (status, reason) the adversarial set and the example
/// suite get in `case` mode, under every runtime (see `expected`).
pub const EXPECTED: [(&str, &str, &str); 14] = [
    ("hello", "pass", ""),
    ("reverse", "fail", "wrong_output"),
    ("spin", "fail", "timeout"),
    ("primes", "missing", "no_candidate"),
    ("hog", "fail", "oom"),
    ("flood", "fail", "output_limit"),
    ("sleeper", "fail", "timeout"),
    ("segv", "fail", "exit_code"),
    ("wrong", "fail", "wrong_output"),
    ("echo", "pass", ""),
    ("exit3", "fail", "exit_code"),
    ("multi", "fail", "wrong_output"),
    ("multiok", "pass", ""),
    ("nonode", "error", "toolchain_missing"),
];

/// Finds anything a previous candidate left; prints `CLEAN next`.
pub const CHECK: &str = concat!(
    r#"
import os, sys
me = os.getpid()
bad = []
"#,
    super::zygote_filter!(),
    r#"pids = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, me) and not zygote(p)]
if pids:
    bad.append('pids %s' % [(p, open('/proc/%s/cmdline' % p, 'rb').read()) for p in pids])
mine = os.path.dirname(os.path.abspath(__file__))
tmp = [e for e in os.listdir('/tmp') if '/tmp/' + e != mine]
if tmp:
    bad.append('tmp %s' % tmp)
for d in ('/dev/shm', '/dev/mqueue'):
    if os.path.isdir(d) and os.listdir(d):
        bad.append('%s %s' % (d, os.listdir(d)))
# gVisor has no /proc/sysvipc (there the runner's seccomp filter refuses
# the SysV *get calls; gvisor.rs tests a segment across candidates).
for t in ('shm', 'msg', 'sem'):
    if os.path.exists('/proc/sysvipc') and open('/proc/sysvipc/' + t).read().splitlines()[1:]:
        bad.append('sysv ' + t)
if os.fork() == 0:
    os._exit(0)
os.wait()
print(' '.join(bad) if bad else 'CLEAN ' + sys.stdin.read().strip())
"#
);

/// Prints the container's hostname on stderr and fails: its entry's
/// `stderr_tail` says which container it ran in.
pub const WHERE: &str =
    "import socket, sys\nprint(socket.gethostname(), file=sys.stderr)\nsys.exit(3)\n";

/// Hostile candidates for one worker: a daemon that outlives it, a filled
/// and locked /tmp, forged protocol records, a fork bomb.
pub const HOSTILE: [(&str, &str); 4] = [
    (
        "daemon",
        r#"
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        os.closerange(0, 3)
        time.sleep(3600)
    os._exit(0)
print('ok')
"#,
    ),
    (
        "fill",
        r#"
import os
os.makedirs('/tmp/deep/er')
fd = os.open('/tmp/deep/er/f', os.O_WRONLY | os.O_CREAT)
try:
    while True:
        os.write(fd, b'z' * (1 << 20))
except OSError:
    pass
os.close(fd)
open('/dev/shm/left', 'w').write('x')
os.chmod('/tmp/deep/er', 0); os.chmod('/tmp/deep', 0)
print('ok')
"#,
    ),
    (
        "forge",
        r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
attached = libc.ptrace(16, 1, 0, 0)
print('ptrace', attached, ctypes.get_errno())
try:
    fds = os.listdir('/proc/1/fd')
except OSError:
    fds = []  # another uid's (and not dumpable)
for fd in fds:
    try:
        with open('/proc/1/fd/' + fd, 'wb') as f:
            f.write(b'SBXR\x01\x06' + b'\xff' * 4 + b'[{"id":"forge","status":"pass"}]\n')
        print('wrote', fd)
    except OSError as e:
        pass
print('forged')
"#,
    ),
    (
        "bomb",
        r#"
import os, time
n = 0
while True:
    try:
        if os.fork() == 0:
            time.sleep(3600)
            os._exit(0)
        n += 1
    except OSError:
        break
print('ok' if n > 10 else 'few %d' % n)
"#,
    ),
];

/// The tasks of [`HOSTILE`], each followed by its `-check` ([`CHECK`])
/// and `-where` ([`WHERE`]), and the files of `gen/` they need.
pub fn hostile_tasks() -> (Vec<Value>, Vec<(String, &'static str)>) {
    let mut tasks = Vec::new();
    let mut files = Vec::new();
    for (id, program) in HOSTILE {
        files.push((format!("gen/{id}.py"), program));
        let expect = if id == "forge" { "pass\n" } else { "ok\n" };
        tasks.push(json!({"id": id, "stdin": "", "expect": expect, "timeout": 20}));
        files.push((format!("gen/{id}-check.py"), CHECK));
        tasks.push(json!({"id": format!("{id}-check"), "stdin": "next", "expect": "CLEAN next\n"}));
        files.push((format!("gen/{id}-where.py"), WHERE));
        tasks.push(json!({"id": format!("{id}-where"), "stdin": "", "expect": ""}));
    }
    (tasks, files)
}
