//! The identity probe `sbx doctor` runs as a candidate (`sbx __runner
//! --probe`): what the candidate's process is and whether it can reach
//! PID 1.

use std::fs;
use std::io;
use std::path::Path;

use rustix::process::{getrlimit, prlimit, Resource};

/// The argument that makes sbx the identity probe `sbx doctor` runs as a
/// candidate (`sbx __runner --probe`): what it is and whether it can reach
/// PID 1, one `key value` line each, using nothing of the image.
pub const PROBE: &str = "--probe";

/// The probe's report (see `PROBE`). Each reach of PID 1 is tried without
/// changing anything if it succeeds (the same limit, the same nice value,
/// an open without a write, an attach then a detach) and prints `ok` or
/// the errno's name.
pub(crate) fn probe() -> String {
    use rustix::process::{getegid, geteuid, getgid, getuid, Pid};
    let status = fs::read("/proc/self/status").unwrap_or_default();
    let status = String::from_utf8_lossy(&status);
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(","))
            .unwrap_or_else(|| "?".into())
    };
    let errno = |r: Result<(), rustix::io::Errno>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => errno_name(e.raw_os_error()),
    };
    let io_errno = |r: io::Result<()>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => errno_name(e.raw_os_error().unwrap_or(0)),
    };
    let mut out = format!(
        "uid {} {}
gid {} {}
groups {}
",
        getuid().as_raw(),
        geteuid().as_raw(),
        getgid().as_raw(),
        getegid().as_raw(),
        field("Groups")
    );
    for key in ["CapEff", "CapPrm", "CapInh", "CapAmb", "NoNewPrivs"] {
        let mut value = field(key);
        // gVisor's /proc/self/status has no NoNewPrivs line: ask prctl.
        if key == "NoNewPrivs" && value == "?" {
            if let Ok(set) = rustix::thread::no_new_privs() {
                value = u8::from(set).to_string();
            }
        }
        out += &format!(
            "{key} {value}
"
        );
    }
    let kill = nix::sys::signal::kill(nix::unistd::Pid::from_raw(1), None);
    out += &format!(
        "kill {}
",
        match kill {
            Ok(()) => "ok".to_string(),
            Err(e) => errno_name(e as i32),
        }
    );
    let own = getrlimit(Resource::As);
    out += &format!(
        "prlimit {}
",
        errno(prlimit(Some(Pid::INIT), Resource::As, own).map(drop))
    );
    let nice = rustix::process::getpriority_process(Some(Pid::INIT)).unwrap_or(0);
    out += &format!(
        "setpriority {}
",
        errno(rustix::process::setpriority_process(Some(Pid::INIT), nice))
    );
    let oom = fs::OpenOptions::new()
        .write(true)
        .open("/proc/1/oom_score_adj")
        .map(drop);
    out += &format!(
        "oom_score_adj {}
",
        io_errno(oom)
    );
    let traced = nix::sys::ptrace::attach(nix::unistd::Pid::from_raw(1));
    out += &format!(
        "ptrace {}
",
        match traced {
            Ok(()) => {
                let _ = nix::sys::ptrace::detach(nix::unistd::Pid::from_raw(1), None);
                "ok".to_string()
            }
            Err(e) => errno_name(e as i32),
        }
    );
    let dev = Path::new("/dev/sbx-probe");
    let made = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dev)
        .map(drop);
    if made.is_ok() {
        let _ = fs::remove_file(dev);
    }
    out += &format!(
        "dev {}
",
        io_errno(made)
    );
    out
}

fn errno_name(n: i32) -> String {
    match n {
        1 => "EPERM".into(),
        2 => "ENOENT".into(),
        3 => "ESRCH".into(),
        13 => "EACCES".into(),
        30 => "EROFS".into(),
        n => format!("errno {n}"),
    }
}
