//! The runner container: root with three capabilities, the IPC and network
//! limits, and sbx itself as its entrypoint.

use super::container::create_args_as;
use super::*;

/// No TCP socket is kept in TIME_WAIT in a runner container: otherwise a
/// candidate's closed loopback connection keeps its port taken for a minute
/// after every process is gone, and the next candidate's `bind` without
/// `SO_REUSEADDR` fails (measured: EADDRINUSE after a clean reset).
pub const RUNNER_NET_SYSCTL: &str = "net.ipv4.tcp_max_tw_buckets=0";

/// Where the runner (sbx itself) is inside a runner container.
pub const RUNNER_PATH: &str = "/.sbx/sbx";

/// The IPC namespace's own limits, set to zero in runner containers: SysV
/// shared memory, message queues and semaphores and POSIX message queues
/// cannot be created, so none can outlive a candidate. POSIX shared memory
/// and semaphores (`/dev/shm`) keep working.
pub const RUNNER_SYSCTLS: [&str; 4] = [
    "kernel.shmmni=0",
    "kernel.msgmni=0",
    "kernel.sem=0 0 0 0",
    "fs.mqueue.queues_max=0",
];

/// The arguments after the docker program that create a runner container:
/// `create_args`' flags in their order, with `-i` (the protocol is the
/// container's stdin and stdout), then `RUNNER_SYSCTLS` (and
/// `RUNNER_NET_SYSCTL` unless the network is `host`), the runner (from
/// `c.mount`: a read-only bind mount of sbx's staged copy at `RUNNER_PATH`,
/// or already in a baked image) as the entrypoint, and the hidden
/// subcommand. `c.interactive` and `c.interpreter` are ignored.
pub fn runner_create_args(c: &Container<'_>, subcommand: &str) -> Vec<OsString> {
    let identity = candidate_identity(c.hardening);
    let hardening = Hardening {
        user: Some(identity.clone()),
        ..c.hardening.clone()
    };
    let c = &Container {
        hardening: &hardening,
        ..*c
    };
    let (volume, entrypoint) = match c.mount {
        Mount::Bind(runner) => {
            let mut volume = runner.as_os_str().to_os_string();
            volume.push(format!(":{RUNNER_PATH}:ro"));
            (Some(volume), RUNNER_PATH)
        }
        Mount::InImage(path) => (None, path),
    };
    let plain = Container {
        interactive: true,
        mount: Mount::InImage(entrypoint),
        interpreter: &[],
        ..*c
    };
    // The runner is root (whatever the image's USER says) so that it can
    // switch each candidate to its own identity; the /tmp tmpfs belongs to
    // the candidate.
    let mut args = create_args_as(&plain, Some(RUNNER_USER));
    // create_args ends with `-- IMAGE ENTRYPOINT`.
    args.truncate(args.len() - 3);
    for cap in RUNNER_CAPS {
        args.push("--cap-add".into());
        args.push(cap.into());
    }
    args.push("--tmpfs".into());
    args.push(WORK_TMPFS.into());
    args.push("--tmpfs".into());
    args.push(BUILD_TMPFS.into());
    for sysctl in RUNNER_SYSCTLS {
        args.push("--sysctl".into());
        args.push(sysctl.into());
    }
    // The host's network namespace is not the container's to tune (docker
    // refuses net.* sysctls there).
    if c.limits.network != "host" {
        args.push("--sysctl".into());
        args.push(RUNNER_NET_SYSCTL.into());
    }
    // No core dumps, and none a candidate could turn back on: on a host
    // that pipes cores to a program, a crash would make the host work.
    args.push("--ulimit".into());
    args.push("core=0:0".into());
    if let Some(volume) = volume {
        args.push("-v".into());
        args.push(volume);
    }
    args.push("--entrypoint".into());
    args.push(entrypoint.into());
    args.push("--".into());
    args.push(c.image.into());
    args.push(subcommand.into());
    args.push(identity.into());
    // gVisor's kernel gives each process several MiB more than Linux does:
    // a fork bomb from a zygote's child reaches the memory limit before
    // the pids limit, where one from a fresh interpreter does not (the
    // hostile corpus, measured). Under gVisor, cases are spawned directly.
    if !zygote_runs(c.hardening.runtime.as_deref()) {
        args.push(RUNNER_NO_ZYGOTE.into());
    }
    args
}

/// Where a runner container sees the control socket's directory (see
/// `with_control`), and the socket's name in it.
pub const CONTROL_DIR: &str = "/.sbx-control";
pub const CONTROL_NAME: &str = "s";

/// Whether a runner container of `runtime` is offered a control socket:
/// every runtime but gVisor, whose sandbox reaches no host socket unless
/// its own configuration allows it.
pub fn control_socket_offered(runtime: Option<&str>) -> bool {
    !is_gvisor(runtime)
}

/// `create`, a vector of `runner_create_args`, with the host directory
/// `host_dir` bound read-only at `CONTROL_DIR` (before `--entrypoint`) and
/// the runner's `--control` option naming the socket in it (last). A
/// vector without `--entrypoint` is returned as it is.
pub fn with_control(create: &[OsString], host_dir: &Path) -> Vec<OsString> {
    let Some(at) = create.iter().position(|a| a == "--entrypoint") else {
        return create.to_vec();
    };
    let mut volume = host_dir.as_os_str().to_os_string();
    volume.push(format!(":{CONTROL_DIR}:ro"));
    let mut args = create[..at].to_vec();
    args.push("-v".into());
    args.push(volume);
    args.extend_from_slice(&create[at..]);
    args.push(RUNNER_CONTROL.into());
    args.push(format!("{CONTROL_DIR}/{CONTROL_NAME}").into());
    args
}

/// The runner's option that names its control socket (the runner crate's
/// `CONTROL`; the runner layer checks that they agree).
pub const RUNNER_CONTROL: &str = "--control";

/// Whether a runner container of `runtime` forks Python cases from its
/// zygote (every runtime but gVisor, see `runner_create_args`).
pub fn zygote_runs(runtime: Option<&str>) -> bool {
    !is_gvisor(runtime)
}

/// The runner's option that keeps its Python zygote off (the runner
/// crate's `NO_ZYGOTE`; the runner layer checks that they agree).
pub const RUNNER_NO_ZYGOTE: &str = "--no-zygote";

/// The user a runner container runs as: root, so that it may give each
/// candidate an identity of its own (it keeps only `RUNNER_CAPS`).
pub const RUNNER_USER: &str = "0:0";

/// What the runner keeps of root's capabilities, each for one thing:
/// `SETUID` and `SETGID` to start each candidate process under the
/// candidate's uid and gid (and drop its groups; also to take the
/// candidate's real ids for a moment, for `prlimit` on the program),
/// `KILL` to kill every candidate process (the kernel compares uids). A
/// candidate gets none of them: switching from root to another uid clears
/// the permitted and effective sets, the inheritable and ambient sets are
/// empty, and `no-new-privileges` keeps any file's capability or setuid
/// bit from giving them back.
pub const RUNNER_CAPS: [&str; 3] = ["SETUID", "SETGID", "KILL"];

/// The build's place in a runner container (`protocol::BUILD_MOUNT`): a
/// root-owned tmpfs mode 0755 where the runner writes a compiled
/// candidate's build at `/sbx/build` (directories 0755, files 0555). The
/// one exec-allowed place a candidate can reach, and one it cannot write:
/// `/tmp`, `/dev/shm` and `/work` stay noexec. Its size is the protocol's
/// largest payload.
pub const BUILD_TMPFS: &str = "/sbx:rw,exec,nosuid,nodev,size=64m,mode=0755,uid=0,gid=0";

/// `/work` in a runner container: a small root-owned tmpfs where the runner
/// writes each candidate as `/work/task` (mode 0444). The candidate can
/// read it but neither write there nor execute anything from it. Its size
/// is the protocol's largest payload. (The engine's default for a bare
/// `--tmpfs /work` is root 0755 noexec with no size limit, measured; the
/// mode and owner are stated anyway.)
pub const WORK_TMPFS: &str = "/work:rw,noexec,nosuid,nodev,size=64m,mode=0755,uid=0,gid=0";

/// A case container's `create` with sbx's staged copy bound read-only at
/// `RUNNER_PATH` as its supervisor (`sbx_runner::supervise`): `IMAGE
/// WORDS...` becomes `IMAGE RUNNER_PATH SUBCOMMAND SUPERVISE UID:GID
/// LIMIT_MS WORDS...`. The supervisor is root with `RUNNER_CAPS`, as a
/// runner is, and starts the program under the candidates' identity (the
/// `--user` that `create` gave, `UID:GID`): the program cannot signal,
/// trace, renice or limit its supervisor. The token is the environment
/// variable `token_env`, which the supervisor keeps from the program
/// (never in an argv the program can read in `/proc/1/cmdline`).
pub fn with_supervisor(
    create: &[OsString],
    runner: &Path,
    (subcommand, supervise): (&str, &str),
    limit_ms: u64,
    (token_env, token): (&str, &str),
) -> Vec<OsString> {
    let split = create
        .iter()
        .position(|a| a == "--")
        .expect("create_args puts `--` before the image");
    let mut args = create[..split].to_vec();
    // `create` runs the program as the candidate; the supervisor is root.
    let user = args.iter().position(|a| a == "--user").map(|i| i + 1);
    let identity = match user {
        Some(i) => {
            let given = args[i].to_string_lossy().into_owned();
            args[i] = RUNNER_USER.into();
            match given.split_once(':') {
                Some(_) => given,
                None => format!("{given}:{given}"),
            }
        }
        None => {
            args.push("--user".into());
            args.push(RUNNER_USER.into());
            crate::spec::STRICT_USER.to_string()
        }
    };
    for cap in RUNNER_CAPS {
        args.push("--cap-add".into());
        args.push(cap.into());
    }
    let mut volume = runner.as_os_str().to_os_string();
    volume.push(format!(":{RUNNER_PATH}:ro"));
    args.push("-v".into());
    args.push(volume);
    args.push("-e".into());
    args.push(format!("{token_env}={token}").into());
    args.extend_from_slice(&create[split..split + 2]);
    for word in [RUNNER_PATH, subcommand, supervise, &identity] {
        args.push(word.into());
    }
    args.push(limit_ms.to_string().into());
    args.extend_from_slice(&create[split + 2..]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runner_is_root_with_three_capabilities_and_its_candidates_own_tmp() {
        let limits = Limits::default();
        let hardening = Hardening {
            user: Some("1000".into()),
            ..Hardening::default()
        };
        let c = Container {
            mount: Mount::InImage(RUNNER_PATH),
            ..container(&limits, &hardening)
        };
        let args = strings(&runner_create_args(&c, "__runner"));
        let users: Vec<_> = args.windows(2).filter(|w| w[0] == "--user").collect();
        assert_eq!(users, [["--user", "0:0"]]);
        assert!(args.windows(2).any(|w| w
            == [
                "--tmpfs",
                "/tmp:rw,noexec,nosuid,size=64m,uid=1000,gid=1000"
            ]));
        assert!(args.windows(2).any(|w| w == ["--tmpfs", WORK_TMPFS]));
        assert!(args.windows(2).any(|w| w == ["--tmpfs", BUILD_TMPFS]));
        assert!(BUILD_TMPFS.contains(",mode=0755,uid=0,gid=0"));
        assert!(WORK_TMPFS.contains("noexec"));
        let caps: Vec<_> = args
            .windows(2)
            .filter(|w| w[0] == "--cap-add")
            .map(|w| w[1].clone())
            .collect();
        assert_eq!(caps, ["SETUID", "SETGID", "KILL"]);
        assert_eq!(args[args.len() - 2..], ["__runner", "1000:1000"]);
        assert_eq!(candidate_identity(&Hardening::default()), "65534:65534");
    }

    #[test]
    fn under_gvisor_the_runner_spawns_every_case_directly() {
        let limits = Limits::default();
        for (runtime, tail) in [
            (None, &["__runner", "65534:65534"][..]),
            (Some("runc"), &["__runner", "65534:65534"]),
            (Some("runsc"), &["__runner", "65534:65534", "--no-zygote"]),
            (
                Some("runsc-kvm"),
                &["__runner", "65534:65534", "--no-zygote"],
            ),
        ] {
            let hardening = Hardening {
                runtime: runtime.map(String::from),
                ..Hardening::default()
            };
            let c = Container {
                mount: Mount::InImage(RUNNER_PATH),
                ..container(&limits, &hardening)
            };
            let args = strings(&runner_create_args(&c, "__runner"));
            assert_eq!(args[args.len() - tail.len()..], *tail, "{runtime:?}");
        }
    }

    #[test]
    fn the_control_directory_is_bound_read_only_and_named_to_the_runner() {
        let limits = Limits::default();
        let hardening = Hardening::default();
        let runner = Path::new("/stage/sbx-runner");
        let c = Container {
            mount: Mount::Bind(runner),
            ..container(&limits, &hardening)
        };
        let create = runner_create_args(&c, "__runner");
        let args = strings(&with_control(&create, Path::new("/tmp/sbx-control-x")));
        let plain = strings(&create);
        let at = plain.iter().position(|a| a == "--entrypoint").unwrap();
        // Everything as before, the bind mount just before `--entrypoint`
        // (after the runner's own), the option last.
        assert_eq!(args[..at], plain[..at]);
        assert_eq!(
            args[at..at + 2],
            ["-v", "/tmp/sbx-control-x:/.sbx-control:ro"]
        );
        assert_eq!(args[at + 2..args.len() - 2], plain[at..]);
        assert_eq!(
            args[args.len() - 4..],
            ["__runner", "65534:65534", "--control", "/.sbx-control/s"]
        );
        // A vector that is not a runner's is left alone.
        let other = to_os(&["create", "--", "img"]);
        assert_eq!(with_control(&other, Path::new("/x")), other);
        assert!(control_socket_offered(None));
        assert!(control_socket_offered(Some("runc")));
        assert!(!control_socket_offered(Some("runsc")));
        assert!(!control_socket_offered(Some("runsc-kvm")));
    }

    #[test]
    fn the_supervisor_is_root_with_the_runners_caps_and_its_token_in_its_environment() {
        let create = to_os(&[
            "create",
            "--rm",
            "--user",
            "1000",
            "--",
            "img",
            "python3",
            "/work/task",
        ]);
        let wrapped = with_supervisor(
            &create,
            Path::new("/s/sbx-runner"),
            ("__runner", "--supervise"),
            3000,
            ("SBX_RUNNER_TOKEN", "tok"),
        );
        assert_eq!(
            wrapped,
            to_os(&[
                "create",
                "--rm",
                "--user",
                "0:0",
                "--cap-add",
                "SETUID",
                "--cap-add",
                "SETGID",
                "--cap-add",
                "KILL",
                "-v",
                "/s/sbx-runner:/.sbx/sbx:ro",
                "-e",
                "SBX_RUNNER_TOKEN=tok",
                "--",
                "img",
                "/.sbx/sbx",
                "__runner",
                "--supervise",
                "1000:1000",
                "3000",
                "python3",
                "/work/task",
            ])
        );
        // Without a `--user`, the candidates' default identity.
        let bare = to_os(&["create", "--", "img", "prog"]);
        let wrapped = strings(&with_supervisor(
            &bare,
            Path::new("/r"),
            ("__runner", "--supervise"),
            1,
            ("T", "t"),
        ));
        assert!(wrapped.windows(2).any(|w| w == ["--user", "0:0"]));
        assert!(wrapped
            .windows(2)
            .any(|w| w == ["--supervise", "65534:65534"]));
    }
}
