//! The docker argv, as data: pure functions from a validated request to the
//! exact argument vector. No process is started here.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::spec::{Hardening, Limits};

/// Where the candidate appears inside the container (the seed's path).
pub const TASK_PATH: &str = "/work/task";
/// The label every sbx container carries; its value is the run id.
pub const RUN_LABEL: &str = "sbx.run";
/// The prefix of every container name sbx gives.
pub const NAME_PREFIX: &str = "sbx-";

/// How the docker CLI reaches one engine: the program, and the global
/// options that select the engine (`--context NAME` or `--host URL`; none
/// for the current context). Every docker command sbx runs goes through one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Docker {
    pub program: OsString,
    pub globals: Vec<OsString>,
}

impl Docker {
    /// The current context (or `DOCKER_HOST`), as plain `docker` sees it.
    pub fn new(program: impl Into<OsString>) -> Docker {
        Docker {
            program: program.into(),
            globals: Vec::new(),
        }
    }

    /// The same program, aimed at `endpoint`.
    pub fn at(&self, endpoint: &Endpoint) -> Docker {
        let (option, value) = match endpoint {
            Endpoint::Context(name) => ("--context", name),
            Endpoint::Url(url) => ("--host", url),
        };
        Docker {
            program: self.program.clone(),
            globals: vec![option.into(), value.into()],
        }
    }

    /// The arguments after the program: the global options, then `args`.
    pub fn argv(&self, args: &[OsString]) -> Vec<OsString> {
        let mut argv = self.globals.clone();
        argv.extend_from_slice(args);
        argv
    }

    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// `docker --host URL` as a user would type it (for messages).
    pub fn display(&self) -> String {
        let mut words = vec![self.program.to_string_lossy().into_owned()];
        words.extend(
            self.globals
                .iter()
                .map(|g| g.to_string_lossy().into_owned()),
        );
        words.join(" ")
    }
}

/// Where an engine is: a docker context by name, or an engine URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Context(String),
    Url(String),
}

/// Where the candidate comes from inside its container.
#[derive(Debug, Clone, Copy)]
pub enum Mount<'a> {
    /// The staged copy on the engine's host, bound read-only at `/work/task`
    /// (the seed's way; only for an engine on this machine).
    Bind(&'a Path),
    /// Already in the (baked) image at this path; no bind mount.
    InImage(&'a str),
}

/// Everything that varies between two containers of sbx.
#[derive(Debug, Clone, Copy)]
pub struct Container<'a> {
    /// Unique container name (`sbx-...`), used to remove it on every path.
    pub name: &'a str,
    /// The run id, the value of the `sbx.run` label.
    pub run_id: &'a str,
    /// Pass `-i` so the program gets sbx's stdin (never `-t`).
    pub interactive: bool,
    /// How the candidate gets into the container.
    pub mount: Mount<'a>,
    pub image: &'a str,
    pub limits: &'a Limits,
    pub hardening: &'a Hardening,
    /// Interpreter words placed before `/work/task`; empty runs it directly.
    pub interpreter: &'a [String],
}

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
fn create_args_as(c: &Container<'_>, user: Option<&str>) -> Vec<OsString> {
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

/// No TCP socket is kept in TIME_WAIT in a runner container: otherwise a
/// candidate's closed loopback connection keeps its port taken for a minute
/// after every process is gone, and the next candidate's `bind` without
/// `SO_REUSEADDR` fails (measured: EADDRINUSE after a clean reset).
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
    args
}

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

/// The identity candidates run under in eval, `UID:GID`: the `--user`
/// given (validated: never root) or `STRICT_USER` (65534:65534).
pub fn candidate_identity(h: &Hardening) -> String {
    let user = h.user.as_deref().unwrap_or(crate::spec::STRICT_USER);
    match user.split_once(':') {
        Some(_) => user.to_string(),
        None => format!("{user}:{user}"),
    }
}

/// `docker image inspect`: prints the image ID when the image is present.
pub fn image_inspect_args(image: &str) -> Vec<OsString> {
    to_os(&["image", "inspect", "--format", "{{.Id}}", "--", image])
}

/// `docker pull`, run before any clock starts.
pub fn pull_args(image: &str) -> Vec<OsString> {
    to_os(&["pull", "--", image])
}

/// `docker rm -f NAME...`: exits 0 even when a name is already gone.
pub fn remove_args(names: &[String]) -> Vec<OsString> {
    let mut args = to_os(&["rm", "-f", "--"]);
    args.extend(names.iter().map(OsString::from));
    args
}

/// `docker ps -a` of the containers carrying the label of `run_id`.
pub fn list_run_args(run_id: &str) -> Vec<OsString> {
    to_os(&[
        "ps",
        "-a",
        "-q",
        "--no-trunc",
        "--filter",
        &format!("label={RUN_LABEL}={run_id}"),
    ])
}

/// `docker ps -a` of every container that carries the `sbx.run` label, one
/// tab-separated line each: ID, name, creation time, run id.
pub fn list_labelled_args() -> Vec<OsString> {
    to_os(&[
        "ps",
        "-a",
        "--no-trunc",
        "--filter",
        &format!("label={RUN_LABEL}"),
        "--format",
        &format!("{{{{.ID}}}}\t{{{{.Names}}}}\t{{{{.CreatedAt}}}}\t{{{{.Label \"{RUN_LABEL}\"}}}}"),
    ])
}

/// `docker events` of every container labelled with `run_id`, from `since`
/// (Unix seconds on the engine's clock; the daemon replays what it logged
/// since then) and for as long as it runs: one JSON event per line.
pub fn events_stream_args(run_id: &str, since: f64) -> Vec<OsString> {
    to_os(&[
        "events",
        "--since",
        &format!("{since:.9}"),
        "--filter",
        &format!("label={RUN_LABEL}={run_id}"),
        "--filter",
        "type=container",
        "--format",
        "{{json .}}",
    ])
}

/// The repository of the images sbx bakes for engines that cannot see this
/// machine's files; the tag is `<run id>-<n>`.
pub const BAKED_REPOSITORY: &str = "sbx-deliver";

/// The label of a baked image: its own tag, so that `sbx gc` removes only
/// images sbx built under that very name (a label is inherited by images
/// built or committed from it, a tag's value is not theirs).
pub const BAKE_LABEL: &str = "sbx.bake";

/// `docker build` of a baked image: the task image plus every staged
/// candidate, labelled with the run id so that it can always be found and
/// with its own tag ([`BAKE_LABEL`]); its intermediate containers are
/// removed even when the build fails.
pub fn build_args(tag: &str, run_id: &str, dockerfile: &Path, context: &Path) -> Vec<OsString> {
    let mut args = to_os(&[
        "build",
        "--quiet",
        "--force-rm",
        "--network",
        "none",
        "--label",
        &format!("{RUN_LABEL}={run_id}"),
        "--label",
        &format!("{BAKE_LABEL}={tag}"),
        "--tag",
        tag,
        "--file",
    ]);
    args.push(dockerfile.into());
    args.push("--".into());
    args.push(context.into());
    args
}

/// What marks the tag a bake puts on its base image for a moment:
/// `sbx-deliver:<run>-FROM-<n>` (upper case never appears in a run id).
pub const BASE_TAG_MARK: &str = "-FROM";

/// `docker image inspect` of how many tags an image has.
pub fn tag_count_args(image: &str) -> Vec<OsString> {
    to_os(&[
        "image",
        "inspect",
        "--format",
        "{{len .RepoTags}}",
        "--",
        image,
    ])
}

/// `docker tag SOURCE TARGET`.
pub fn tag_args(source: &str, target: &str) -> Vec<OsString> {
    to_os(&["tag", source, target])
}

/// `docker image inspect` of what baking needs to know of an image: its
/// `ONBUILD` triggers (JSON) and how many tags and digests it has,
/// tab-separated.
pub fn bake_inspect_args(image: &str) -> Vec<OsString> {
    to_os(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config.OnBuild}}\t{{len .RepoTags}}\t{{len .RepoDigests}}",
        "--",
        image,
    ])
}

/// `docker rmi` of a tag (never `-f`: an image that is still in use, or
/// whose last tag this is, stays).
pub fn untag_args(tag: &str) -> Vec<OsString> {
    to_os(&["rmi", "--no-prune", "--", tag])
}

/// `docker rmi` of images by name (never `-f`).
pub fn rmi_args(images: &[String]) -> Vec<OsString> {
    let mut args = to_os(&["rmi", "--"]);
    args.extend(images.iter().map(OsString::from));
    args
}

/// `docker rmi -f` of images by name.
pub fn remove_images_args(images: &[String]) -> Vec<OsString> {
    let mut args = to_os(&["rmi", "-f", "--"]);
    args.extend(images.iter().map(OsString::from));
    args
}

/// `docker image inspect` of the labels that make a baked image sbx's,
/// one line per image found: its [`BAKE_LABEL`] (its own tag when sbx
/// baked it) and its `sbx.run` label, tab-separated.
pub fn baked_labels_args(tags: &[String]) -> Vec<OsString> {
    let mut args = to_os(&[
        "image",
        "inspect",
        "--format",
        &format!(
            "{{{{index .Config.Labels \"{BAKE_LABEL}\"}}}}\t{{{{index .Config.Labels \"{RUN_LABEL}\"}}}}"
        ),
        "--",
    ]);
    args.extend(tags.iter().map(OsString::from));
    args
}

/// `docker image ls` of sbx's baked images and of the tags a bake puts on
/// its base for a moment (the repository is sbx's own), one tab-separated
/// line each: repository:tag, creation time.
pub fn list_baked_args() -> Vec<OsString> {
    to_os(&[
        "image",
        "ls",
        "--filter",
        &format!("reference={BAKED_REPOSITORY}"),
        "--format",
        "{{.Repository}}:{{.Tag}}\t{{.CreatedAt}}",
    ])
}

/// `docker version` of the engine only: answers when the engine does.
pub fn ping_args() -> Vec<OsString> {
    to_os(&["version", "--format", "{{.Server.Version}}"])
}

/// `docker context inspect` of the engine address of a context (the current
/// one when `name` is `None`).
pub fn context_host_args(name: Option<&str>) -> Vec<OsString> {
    let mut args = to_os(&[
        "context",
        "inspect",
        "--format",
        "{{.Endpoints.docker.Host}}",
    ]);
    if let Some(name) = name {
        args.push("--".into());
        args.push(name.into());
    }
    args
}

/// `docker version`: the CLI's and the engine's versions, `CLI|ENGINE`.
pub fn version_args() -> Vec<OsString> {
    to_os(&[
        "version",
        "--format",
        "{{.Client.Version}}|{{.Server.Version}}",
    ])
}

/// `docker info`: the cgroup version, default runtime, storage driver, the
/// engine host's kernel release and the runtimes the engine knows.
pub fn info_args() -> Vec<OsString> {
    to_os(&[
        "info",
        "--format",
        "{{.CgroupVersion}}|{{.DefaultRuntime}}|{{.Driver}}|{{.KernelVersion}}|{{range $k, $v := .Runtimes}}{{$k}} {{end}}",
    ])
}

/// The log driver the engine recorded for container `name`.
pub fn log_driver_args(name: &str) -> Vec<OsString> {
    to_os(&[
        "inspect",
        "--format",
        "{{.HostConfig.LogConfig.Type}}",
        "--",
        name,
    ])
}

/// The ID of container `name` (exactly that name), in any state: empty
/// output when it does not exist.
pub fn container_exists_args(name: &str) -> Vec<OsString> {
    to_os(&["ps", "-a", "-q", "--filter", &format!("name=^/{name}$")])
}

/// Where a compiled candidate's output is inside its containers (the
/// compile's writes it, the run's reads it): see `spec::languages`.
pub use crate::spec::languages::BUILD_DIR;

/// The compile container's program (`sh -c COMPILE_SCRIPT sbx-compile
/// SOURCE COMMAND...`): the source arrives on stdin and is written as
/// SOURCE in a fresh directory of /tmp, then COMMAND runs there. A constant:
/// nothing of the candidate or the command is ever part of the script.
pub const COMPILE_SCRIPT: &str = "set -e
mkdir /tmp/src
cd /tmp/src
cat > \"$1\"
shift
if ! command -v \"$1\" >/dev/null 2>&1; then
  echo \"sbx-toolchain-missing: $1\" >&2
  exit 127
fi
exec \"$@\"";

/// `COMPILE_SCRIPT` for a build that the runner will receive: the
/// compiler's own output goes to stderr, and once it succeeded the build
/// directory is written to stdout as a tar archive, which sbx reads
/// strictly (`eval::build_archive`) and delivers over the runner protocol.
/// Without `tar` in the image stdout stays empty (the build is then run
/// from the volume, a container per case). A constant too.
pub const COMPILE_PACK_SCRIPT: &str = "set -e
mkdir /tmp/src
cd /tmp/src
cat > \"$1\"
shift
if ! command -v \"$1\" >/dev/null 2>&1; then
  echo \"sbx-toolchain-missing: $1\" >&2
  exit 127
fi
\"$@\" >&2
cd /sbx/build
command -v tar >/dev/null 2>&1 || exit 0
exec tar -cf - .";

/// The line the compile script prints when the compiler is not in the image.
pub const TOOLCHAIN_MISSING_MARK: &str = "sbx-toolchain-missing:";

/// The environment of every compile container: a home and caches in /tmp
/// (the root is read-only), and Go without cgo or modules.
pub const COMPILE_ENV: [&str; 5] = [
    "HOME=/tmp",
    "GOCACHE=/tmp/.cache/go-build",
    "GOPATH=/tmp/go",
    "GO111MODULE=off",
    "CGO_ENABLED=0",
];

/// The arguments after the docker program that create the compile
/// container of one candidate: `create_args`' flags in their order (with
/// `c.limits`, the compile's own), `-i` for the source on stdin,
/// `COMPILE_ENV`, the build volume read-write at `BUILD_DIR`, and
/// `/bin/sh` running `COMPILE_SCRIPT`. It runs as the image's user (root,
/// with no capability) whatever `--user` says, so that it can write the
/// fresh volume, which the engine creates owned by root; the run that
/// follows keeps `--user`. A `--memory-swap` becomes the compile's memory
/// limit (no swap stays no swap). `c.interactive`, `c.mount` and
/// `c.interpreter` are ignored.
pub fn compile_create_args(
    c: &Container<'_>,
    volume: &str,
    source_name: &str,
    command: &[String],
    pack: bool,
) -> Vec<OsString> {
    let hardening = Hardening {
        user: None,
        // No swap (the strict profile) stays no swap, at the compile's
        // own memory limit: docker refuses a swap limit below the memory's.
        memory_swap: c
            .hardening
            .memory_swap
            .as_ref()
            .map(|_| c.limits.memory.clone()),
        ..c.hardening.clone()
    };
    let plain = Container {
        interactive: true,
        mount: Mount::InImage(""),
        interpreter: &[],
        hardening: &hardening,
        ..*c
    };
    let mut args = create_args(&plain);
    // create_args ends with `-- IMAGE PATH`.
    args.truncate(args.len() - 3);
    for env in COMPILE_ENV {
        args.push("--env".into());
        args.push(env.into());
    }
    args.push("-v".into());
    args.push(format!("{volume}:{BUILD_DIR}").into());
    args.push("--entrypoint".into());
    args.push("/bin/sh".into());
    args.push("--".into());
    args.push(c.image.into());
    args.push("-c".into());
    args.push(
        if pack {
            COMPILE_PACK_SCRIPT
        } else {
            COMPILE_SCRIPT
        }
        .into(),
    );
    args.push("sbx-compile".into());
    args.push(source_name.into());
    args.extend(command.iter().map(OsString::from));
    args
}

/// A run container's `create` (from `create_args`) turned into the run of
/// a compiled candidate: the build volume read-only at `BUILD_DIR` (the
/// only place the program may execute from: /tmp stays noexec), and
/// `command` in place of the interpreter and the candidate's path. The
/// candidate's own mount, if any, stays.
pub fn with_build_volume(create: &[OsString], volume: &str, command: &[String]) -> Vec<OsString> {
    let mut args = mounting_build(create, volume);
    let image = args
        .iter()
        .position(|a| a == "--")
        .expect("create_args puts `--` before the image")
        + 1;
    args.truncate(image + 1);
    args.extend(command.iter().map(OsString::from));
    args
}

/// Any container's `create` (`create_args`, `runner_create_args`) with the
/// build volume read-only at `BUILD_DIR`, just before the `--` that ends
/// the options; the rest unchanged.
pub fn mounting_build(create: &[OsString], volume: &str) -> Vec<OsString> {
    // The first `--` is the builders' own: every value before it is ours
    // and none is `--`.
    let split = create
        .iter()
        .position(|a| a == "--")
        .expect("create_args puts `--` before the image");
    let mut args = create[..split].to_vec();
    args.push("-v".into());
    args.push(format!("{volume}:{BUILD_DIR}:ro").into());
    args.extend_from_slice(&create[split..]);
    args
}

/// `docker volume create` of a candidate's build volume, labelled with the
/// run id so that it can always be found and removed.
pub fn volume_create_args(name: &str, run_id: &str) -> Vec<OsString> {
    to_os(&[
        "volume",
        "create",
        "--label",
        &format!("{RUN_LABEL}={run_id}"),
        "--",
        name,
    ])
}

/// `docker volume rm -f NAME...`.
pub fn volume_remove_args(names: &[String]) -> Vec<OsString> {
    let mut args = to_os(&["volume", "rm", "-f", "--"]);
    args.extend(names.iter().map(OsString::from));
    args
}

/// `docker volume ls` of the volumes carrying the label of `run_id`.
pub fn list_run_volumes_args(run_id: &str) -> Vec<OsString> {
    to_os(&[
        "volume",
        "ls",
        "-q",
        "--filter",
        &format!("label={RUN_LABEL}={run_id}"),
    ])
}

/// `docker volume ls` of every volume that carries the `sbx.run` label,
/// one tab-separated line each: name, run id.
pub fn list_labelled_volumes_args() -> Vec<OsString> {
    to_os(&[
        "volume",
        "ls",
        "--filter",
        &format!("label={RUN_LABEL}"),
        "--format",
        &format!("{{{{.Name}}}}\t{{{{.Label \"{RUN_LABEL}\"}}}}"),
    ])
}

fn to_os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn baked_images_carry_their_own_tag_and_gc_reads_it() {
        let args = build_args(
            "sbx-deliver:r1-0",
            "r1",
            Path::new("/s/Dockerfile"),
            Path::new("/s"),
        );
        assert_eq!(
            strings(&args),
            [
                "build",
                "--quiet",
                "--force-rm",
                "--network",
                "none",
                "--label",
                "sbx.run=r1",
                "--label",
                "sbx.bake=sbx-deliver:r1-0",
                "--tag",
                "sbx-deliver:r1-0",
                "--file",
                "/s/Dockerfile",
                "--",
                "/s"
            ]
        );
        assert_eq!(
            strings(&baked_labels_args(&[
                "sbx-deliver:r1-0".into(),
                "sbx-deliver:r1-1".into()
            ])),
            [
                "image",
                "inspect",
                "--format",
                "{{index .Config.Labels \"sbx.bake\"}}\t{{index .Config.Labels \"sbx.run\"}}",
                "--",
                "sbx-deliver:r1-0",
                "sbx-deliver:r1-1"
            ]
        );
    }

    use super::*;

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

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
            [
                "create",
                "--rm",
                "--name",
                "sbx-abc-0",
                "--label",
                "sbx.run=abc",
                "--log-driver",
                "none",
                "--pull",
                "never",
                "--network",
                "none",
                "--read-only",
                "--tmpfs",
                "/tmp:rw,noexec,nosuid,size=64m",
                "--memory",
                "256m",
                "--cpus",
                "0.5",
                "--pids-limit",
                "64",
                "--cap-drop",
                "ALL",
                "--security-opt",
                "no-new-privileges",
                "-v",
                "/tmp/sbx-x/task:/work/task:ro",
                "--",
                "python:3.12-slim",
                "/work/task",
            ]
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
        let c = Container {
            name: "n",
            run_id: "r",
            interactive: false,
            mount: Mount::Bind(Path::new("/t/task")),
            image: "img",
            limits: &limits,
            hardening: &hardening,
            interpreter: &[],
        };
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
        let c = Container {
            name: "n",
            run_id: "r",
            interactive: false,
            mount: Mount::Bind(Path::new("/t/task")),
            image: "img",
            limits: &limits,
            hardening: &hardening,
            interpreter: &[],
        };
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
    fn a_runner_is_root_with_three_capabilities_and_its_candidates_own_tmp() {
        let limits = Limits::default();
        let hardening = Hardening {
            user: Some("1000".into()),
            ..Hardening::default()
        };
        let c = Container {
            name: "n",
            run_id: "r",
            interactive: false,
            mount: Mount::InImage(RUNNER_PATH),
            image: "img",
            limits: &limits,
            hardening: &hardening,
            interpreter: &[],
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
    fn non_utf8_staged_path_survives() {
        use std::os::unix::ffi::OsStrExt;
        let limits = Limits::default();
        let staged = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xff/task"));
        let c = Container {
            name: "n",
            run_id: "r",
            interactive: false,
            mount: Mount::Bind(staged),
            image: "img",
            limits: &limits,
            hardening: &Hardening::default(),
            interpreter: &[],
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

    #[test]
    fn control_commands() {
        assert_eq!(
            strings(&image_inspect_args("img")),
            ["image", "inspect", "--format", "{{.Id}}", "--", "img"]
        );
        assert_eq!(strings(&pull_args("img")), ["pull", "--", "img"]);
        assert_eq!(
            strings(&remove_args(&["a".into(), "b".into()])),
            ["rm", "-f", "--", "a", "b"]
        );
        assert_eq!(
            strings(&list_run_args("r1")),
            [
                "ps",
                "-a",
                "-q",
                "--no-trunc",
                "--filter",
                "label=sbx.run=r1"
            ]
        );
        assert_eq!(
            strings(&list_labelled_args()),
            [
                "ps",
                "-a",
                "--no-trunc",
                "--filter",
                "label=sbx.run",
                "--format",
                "{{.ID}}\t{{.Names}}\t{{.CreatedAt}}\t{{.Label \"sbx.run\"}}"
            ]
        );
        assert_eq!(
            strings(&events_stream_args("r1", 1.5)),
            [
                "events",
                "--since",
                "1.500000000",
                "--filter",
                "label=sbx.run=r1",
                "--filter",
                "type=container",
                "--format",
                "{{json .}}"
            ]
        );
    }

    #[test]
    fn doctor_query_argv_is_exact() {
        assert_eq!(
            strings(&version_args()),
            [
                "version",
                "--format",
                "{{.Client.Version}}|{{.Server.Version}}"
            ]
        );
        assert_eq!(
            strings(&info_args()),
            [
                "info",
                "--format",
                "{{.CgroupVersion}}|{{.DefaultRuntime}}|{{.Driver}}|{{.KernelVersion}}|{{range $k, $v := .Runtimes}}{{$k}} {{end}}"
            ]
        );
        assert_eq!(
            strings(&log_driver_args("sbx-x")),
            [
                "inspect",
                "--format",
                "{{.HostConfig.LogConfig.Type}}",
                "--",
                "sbx-x"
            ]
        );
        assert_eq!(
            strings(&container_exists_args("sbx-x")),
            ["ps", "-a", "-q", "--filter", "name=^/sbx-x$"]
        );
    }

    #[test]
    fn docker_at_an_endpoint() {
        let base = Docker::new("docker");
        let at = base.at(&Endpoint::Url("tcp://127.0.0.1:1".into()));
        assert_eq!(
            at.argv(&["ps".into()]),
            ["--host", "tcp://127.0.0.1:1", "ps"]
        );
        let at = base.at(&Endpoint::Context("b".into()));
        assert_eq!(at.argv(&["ps".into()]), ["--context", "b", "ps"]);
        assert_eq!(base.argv(&["ps".into()]), ["ps"]);
    }

    #[test]
    fn compile_and_compiled_run_argv_are_exact() {
        let limits = Limits {
            memory: "1g".into(),
            ..Limits::default()
        };
        let hardening = Hardening {
            user: Some("65534:65534".into()),
            env: vec!["A=1".into()],
            memory_swap: Some("256m".into()),
            ..Hardening::default()
        };
        let c = Container {
            name: "sbx-r-compile-0",
            run_id: "r",
            interactive: false,
            mount: Mount::Bind(Path::new("/stage/tasks/task-0")),
            image: "img:1",
            limits: &limits,
            hardening: &hardening,
            interpreter: &["ignored".to_string()],
        };
        let command: Vec<String> = ["gcc", "-o", "/sbx/build/main", "main.c"]
            .map(String::from)
            .to_vec();
        let packed = compile_create_args(&c, "sbx-r-build-0", "main.c", &command, true);
        assert!(strings(&packed).contains(&COMPILE_PACK_SCRIPT.to_string()));
        let args = compile_create_args(&c, "sbx-r-build-0", "main.c", &command, false);
        let want: Vec<String> = [
            "create",
            "--rm",
            "-i",
            "--name",
            "sbx-r-compile-0",
            "--label",
            "sbx.run=r",
            "--log-driver",
            "none",
            "--pull",
            "never",
            "--network",
            "none",
            "--read-only",
            "--tmpfs",
            "/tmp:rw,noexec,nosuid,size=64m",
            "--memory",
            "1g",
            "--cpus",
            "0.5",
            "--pids-limit",
            "64",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--memory-swap",
            "1g",
            "--env",
            "A=1",
            "--env",
            "HOME=/tmp",
            "--env",
            "GOCACHE=/tmp/.cache/go-build",
            "--env",
            "GOPATH=/tmp/go",
            "--env",
            "GO111MODULE=off",
            "--env",
            "CGO_ENABLED=0",
            "-v",
            "sbx-r-build-0:/sbx/build",
            "--entrypoint",
            "/bin/sh",
            "--",
            "img:1",
            "-c",
            COMPILE_SCRIPT,
            "sbx-compile",
            "main.c",
            "gcc",
            "-o",
            "/sbx/build/main",
            "main.c",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(strings(&args), want);

        let run = create_args(&Container {
            name: "sbx-r-1",
            interactive: true,
            limits: &Limits::default(),
            interpreter: &["/sbx/build/main".to_string()],
            ..c
        });
        let args = with_build_volume(&run, "sbx-r-build-0", &["/sbx/build/main".to_string()]);
        let want: Vec<String> = [
            "create",
            "--rm",
            "-i",
            "--name",
            "sbx-r-1",
            "--label",
            "sbx.run=r",
            "--log-driver",
            "none",
            "--pull",
            "never",
            "--network",
            "none",
            "--read-only",
            "--tmpfs",
            "/tmp:rw,noexec,nosuid,size=64m,uid=65534,gid=65534",
            "--memory",
            "256m",
            "--cpus",
            "0.5",
            "--pids-limit",
            "64",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--user",
            "65534:65534",
            "--memory-swap",
            "256m",
            "--env",
            "A=1",
            "-v",
            "/stage/tasks/task-0:/work/task:ro",
            "-v",
            "sbx-r-build-0:/sbx/build:ro",
            "--",
            "img:1",
            "/sbx/build/main",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(strings(&args), want);
    }

    #[test]
    fn the_build_volume_goes_before_the_separator() {
        let args: Vec<OsString> = to_os(&["create", "--rm", "--", "img", "/.sbx/sbx", "__runner"]);
        assert_eq!(
            strings(&mounting_build(&args, "v")),
            [
                "create",
                "--rm",
                "-v",
                "v:/sbx/build:ro",
                "--",
                "img",
                "/.sbx/sbx",
                "__runner"
            ]
        );
    }

    #[test]
    fn volume_commands() {
        assert_eq!(
            strings(&volume_create_args("sbx-r-build-0", "r")),
            [
                "volume",
                "create",
                "--label",
                "sbx.run=r",
                "--",
                "sbx-r-build-0"
            ]
        );
        assert_eq!(
            strings(&volume_remove_args(&["a".into(), "b".into()])),
            ["volume", "rm", "-f", "--", "a", "b"]
        );
        assert_eq!(
            strings(&list_run_volumes_args("r")),
            ["volume", "ls", "-q", "--filter", "label=sbx.run=r"]
        );
        assert_eq!(
            strings(&list_labelled_volumes_args()),
            [
                "volume",
                "ls",
                "--filter",
                "label=sbx.run",
                "--format",
                "{{.Name}}\t{{.Label \"sbx.run\"}}"
            ]
        );
    }
}
