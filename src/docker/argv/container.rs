//! The container of one sandboxed run: `create` with the seed's flags in
//! their order, `start`, the `run` it amounts to, the candidate's identity,
//! gVisor's pids limit, and `rm -f`.

use super::*;

/// The arguments after the docker program that create the container of one
/// sandboxed run. sbx runs them as `docker create` before the clock starts,
/// then `docker start -a` (see `start_args`) under the clock: the container
/// exists, by name, before any kill can happen, so a kill can never race its
/// creation and leave it behind.
///
/// The security flags keep the seed script's order and values; sbx adds a
/// name and label (so the container can always be found and removed),
/// `--log-driver none` (no copy of the output on the host disk),
/// `--pull never` (a missing image is pulled explicitly, before the clock),
/// and `--` before the image so that it can never be read as an option.
pub fn create_args(c: &Container<'_>) -> Vec<OsString> {
    create_args_as(c, c.hardening.user.as_deref())
}

/// `create_args` with `--user` set to `user` (none: the image's user),
/// while the /tmp tmpfs stays owned by `c.hardening.user`, the candidate.
pub(super) fn create_args_as(c: &Container<'_>, user: Option<&str>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::with_capacity(40);
    let mut push = |s: &str| args.push(OsString::from(s));
    push("create");
    push("--rm");
    if c.interactive {
        push("-i");
    }
    push("--name");
    push(c.name);
    push("--label");
    push(&format!("{RUN_LABEL}={}", c.run_id));
    push("--log-driver");
    push("none");
    push("--pull");
    push("never");
    push("--network");
    push(&c.limits.network);
    push("--read-only");
    push("--tmpfs");
    // The tmpfs is root-owned 0755 (engines ignore `mode=` here, measured):
    // a non-root user gets it as its owner, so /tmp stays writable.
    let owner = match c.hardening.user.as_deref() {
        Some(user) => {
            let (uid, gid) = user.split_once(':').unwrap_or((user, user));
            format!(",uid={uid},gid={gid}")
        }
        None => String::new(),
    };
    push(&format!(
        "/tmp:rw,noexec,nosuid,size={}{owner}",
        c.limits.tmpfs_size
    ));
    push("--memory");
    push(&c.limits.memory);
    push("--cpus");
    push(&c.limits.cpus);
    match gvisor_pids(c.hardening.runtime.as_deref(), &c.limits.pids_limit) {
        Some((host, guest)) => {
            push("--pids-limit");
            push(&host.to_string());
            push("--ulimit");
            push(&format!("nproc={guest}:{guest}"));
        }
        None => {
            push("--pids-limit");
            push(&c.limits.pids_limit);
        }
    }
    push("--cap-drop");
    push("ALL");
    push("--security-opt");
    push("no-new-privileges");
    let h = c.hardening;
    if let Some(user) = user {
        push("--user");
        push(user);
    }
    if let Some(runtime) = &h.runtime {
        push("--runtime");
        push(runtime);
    }
    for opt in &h.security_opts {
        push("--security-opt");
        push(opt);
    }
    if h.ipc_none {
        push("--ipc");
        push("none");
    }
    if let Some(fsize) = h.fsize {
        push("--ulimit");
        push(&format!("fsize={fsize}"));
    }
    if let Some(swap) = &h.memory_swap {
        push("--memory-swap");
        push(swap);
    }
    for env in &h.env {
        push("--env");
        push(env);
    }
    let path = match c.mount {
        Mount::Bind(staged) => {
            push("-v");
            let mut volume = staged.as_os_str().to_os_string();
            volume.push(format!(":{TASK_PATH}:ro"));
            args.push(volume);
            TASK_PATH
        }
        Mount::InImage(path) => path,
    };
    args.push("--".into());
    args.push(c.image.into());
    args.extend(c.interpreter.iter().map(OsString::from));
    args.push(path.into());
    args
}

/// The single `docker run` command equivalent to `create_args` followed by
/// `start_args` (what `--print-argv` shows, and what the script ran).
pub fn as_run(create: &[OsString]) -> Vec<OsString> {
    let mut args = create.to_vec();
    if let Some(first) = args.first_mut() {
        *first = "run".into();
    }
    args
}

/// `docker start -a [-i] -- NAME`: starts the created container, attached.
pub fn start_args(name: &str, interactive: bool) -> Vec<OsString> {
    let mut args = to_os(&["start", "-a"]);
    if interactive {
        args.push("-i".into());
    }
    args.push("--".into());
    args.push(name.into());
    args
}

/// Host tasks gVisor's sandbox needs before any program runs (its Go
/// runtime, the gofer; 38 measured under the ptrace platform).
pub const GVISOR_PIDS_BASE: u64 = 64;
/// Host tasks gVisor adds per process inside (about 9 measured under the
/// ptrace platform: a stub process and its tracing threads).
pub const GVISOR_PIDS_PER_PROCESS: u64 = 12;

/// Whether `runtime` is gVisor's: sbx recognises it by a name beginning
/// with `runsc` (`runsc`, `runsc-kvm`, ...).
pub fn is_gvisor(runtime: Option<&str>) -> bool {
    runtime.is_some_and(|r| r.starts_with("runsc"))
}

/// Under gVisor the container's host cgroup holds the whole sandbox (its
/// kernel's threads and one stub per process), so `--pids-limit N` there
/// would crash gVisor itself long before the candidate had N processes (a
/// panic, exit 2 with nothing on stderr: measured). The pair is the host
/// cgroup's limit, scaled to the sandbox, and the RLIMIT_NPROC that
/// gVisor's kernel enforces on the candidate's uid (`--ulimit nproc`),
/// which is then the limit the candidate meets. `None` for other runtimes.
pub fn gvisor_pids(runtime: Option<&str>, pids_limit: &str) -> Option<(u64, u64)> {
    if !is_gvisor(runtime) {
        return None;
    }
    let guest: u64 = pids_limit.parse().ok()?;
    Some((
        guest
            .saturating_mul(GVISOR_PIDS_PER_PROCESS)
            .saturating_add(GVISOR_PIDS_BASE),
        guest,
    ))
}

/// The identity candidates run under in eval, `UID:GID`: the `--user`
/// given (validated: never root) or `STRICT_USER` (65534:65534).
pub fn candidate_identity(h: &Hardening) -> String {
    let user = h.user.as_deref().unwrap_or(crate::spec::STRICT_USER);
    match user.split_once(':') {
        Some(_) => user.to_string(),
        None => format!("{user}:{user}"),
    }
}

/// `docker rm -f NAME...`: exits 0 even when a name is already gone.
pub fn remove_args(names: &[String]) -> Vec<OsString> {
    let mut args = to_os(&["rm", "-f", "--"]);
    args.extend(names.iter().map(OsString::from));
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_flags_in_seed_order() {
        let limits = Limits::default();
        let c = Container {
            name: "sbx-abc-0",
            run_id: "abc",
            interactive: false,
            mount: Mount::Bind(Path::new("/tmp/sbx-x/task")),
            image: "python:3.12-slim",
            limits: &limits,
            hardening: &Hardening::default(),
            interpreter: &[],
        };
        assert_eq!(
            strings(&create_args(&c)),
            seed_create(
                "sbx-abc-0",
                "abc",
                false,
                "/tmp:rw,noexec,nosuid,size=64m",
                "256m",
                &[
                    "-v",
                    "/tmp/sbx-x/task:/work/task:ro",
                    "--",
                    "python:3.12-slim",
                    "/work/task",
                ],
            )
        );
    }

    #[test]
    fn interactive_interpreter_and_limits() {
        let limits = Limits::parse("512m", "1.5", "32", "16m", "bridge").unwrap();
        let interp = vec!["python3".to_string(), "-u".to_string()];
        let c = Container {
            name: "sbx-r-1",
            run_id: "r",
            interactive: true,
            mount: Mount::Bind(Path::new("/t/task")),
            image: "img",
            limits: &limits,
            hardening: &Hardening::default(),
            interpreter: &interp,
        };
        let args = strings(&create_args(&c));
        assert_eq!(&args[..3], ["create", "--rm", "-i"]);
        assert!(!args.iter().any(|a| a == "-t" || a == "--tty"));
        assert_eq!(
            &args[args.len() - 5..],
            ["--", "img", "python3", "-u", "/work/task"]
        );
        for pair in [
            ["--memory", "512m"],
            ["--cpus", "1.5"],
            ["--pids-limit", "32"],
            ["--tmpfs", "/tmp:rw,noexec,nosuid,size=16m"],
            ["--network", "bridge"],
        ] {
            assert!(args.windows(2).any(|w| w == pair), "missing {pair:?}");
        }
    }

    #[test]
    fn gvisor_gets_a_sandbox_sized_pids_limit_and_the_limit_as_nproc() {
        assert_eq!(gvisor_pids(Some("runsc"), "64"), Some((832, 64)));
        assert_eq!(gvisor_pids(Some("runsc-kvm"), "10"), Some((184, 10)));
        assert_eq!(gvisor_pids(Some("runc"), "64"), None);
        assert_eq!(gvisor_pids(None, "64"), None);
        let limits = Limits::default();
        let hardening = Hardening {
            runtime: Some("runsc".into()),
            ..Hardening::default()
        };
        let c = container(&limits, &hardening);
        let args = strings(&create_args(&c));
        let at = args.iter().position(|a| a == "--pids-limit").unwrap();
        assert_eq!(
            &args[at..at + 5],
            [
                "--pids-limit",
                "832",
                "--ulimit",
                "nproc=64:64",
                "--cap-drop"
            ]
        );
    }

    #[test]
    fn hardening_goes_after_the_seed_flags() {
        let limits = Limits::default();
        let hardening = Hardening {
            user: Some("65534:65534".into()),
            runtime: Some("runsc".into()),
            security_opts: vec!["seccomp=/p.json".into()],
            ipc_none: true,
            fsize: Some(64 << 20),
            memory_swap: Some("256m".into()),
            env: vec!["A=1".into()],
        };
        let c = container(&limits, &hardening);
        let args = strings(&create_args(&c));
        assert!(args.windows(2).any(|w| w
            == [
                "--tmpfs",
                "/tmp:rw,noexec,nosuid,size=64m,uid=65534,gid=65534"
            ]));
        let start = args.iter().position(|a| a == "no-new-privileges").unwrap() + 1;
        assert_eq!(
            &args[start..],
            [
                "--user",
                "65534:65534",
                "--runtime",
                "runsc",
                "--security-opt",
                "seccomp=/p.json",
                "--ipc",
                "none",
                "--ulimit",
                "fsize=67108864",
                "--memory-swap",
                "256m",
                "--env",
                "A=1",
                "-v",
                "/t/task:/work/task:ro",
                "--",
                "img",
                "/work/task"
            ]
        );
    }

    #[test]
    fn non_utf8_staged_path_survives() {
        use std::os::unix::ffi::OsStrExt;
        let (limits, hardening) = (Limits::default(), Hardening::default());
        let staged = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xff/task"));
        let c = Container {
            mount: Mount::Bind(staged),
            ..container(&limits, &hardening)
        };
        let args = create_args(&c);
        let volume = args.iter().position(|a| a == "-v").unwrap() + 1;
        assert_eq!(args[volume].as_bytes(), b"/tmp/\xff/task:/work/task:ro");
    }

    #[test]
    fn start_and_run_forms() {
        assert_eq!(
            strings(&start_args("sbx-a-0", false)),
            ["start", "-a", "--", "sbx-a-0"]
        );
        assert_eq!(
            strings(&start_args("sbx-a-0", true)),
            ["start", "-a", "-i", "--", "sbx-a-0"]
        );
        let create = to_os(&["create", "--rm", "--", "img", "/work/task"]);
        assert_eq!(
            strings(&as_run(&create)),
            ["run", "--rm", "--", "img", "/work/task"]
        );
    }
}
