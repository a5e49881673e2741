//! A compiled candidate: its compile container, the script it runs, and
//! the build volume mounted in the runs that follow.

use super::*;

/// Where a compiled candidate's output is inside its containers (the
/// compile's writes it, the run's reads it): see `spec::languages`.
pub use crate::spec::languages::BUILD_DIR;

/// The most the compile step may write, in MiB: its build directory
/// (`BUILD_DIR`) is a tmpfs of this size (counted in `--compile-memory`),
/// and no file it writes anywhere may be larger (`ulimit -f`, so that a
/// sparse file cannot pass for a small one). Its /tmp is the run's tmpfs.
pub const COMPILE_DISK_MIB: u64 = 128;

/// Where the build volume is in the compile container: the build is
/// copied there from the tmpfs once the compiler succeeded.
pub const BUILD_KEEP_DIR: &str = "/sbx/keep";

/// The compiler's part of both compile scripts, run as the candidates'
/// uid and gid (see [`COMPILE_SCRIPT`]): the source from stdin written as
/// `$1` in a fresh /tmp/src, then `$2`, the compiler, looked up (missing:
/// `TOOLCHAIN_MISSING_MARK` on stderr and 127), then the file size limit
/// (`COMPILE_DISK_MIB` in 512-byte blocks; it can only fail where a lower
/// hard limit holds already, `--profile strict`'s `--ulimit fsize`, which
/// then stays), then the compiler. A constant.
pub const COMPILER_SCRIPT: &str = "set -e
mkdir /tmp/src
cd /tmp/src
cat > \"$1\"
shift
if ! command -v \"$1\" >/dev/null 2>&1; then
  echo \"sbx-toolchain-missing: $1\" >&2
  exit 127
fi
ulimit -f 262144 2>/dev/null || :
exec \"$@\"";

/// The start both compile scripts share, as root (no capability but
/// `SETUID` and `SETGID`): `$1` is the candidates' `UID:GID`, `$2` the
/// compiler's script ([`COMPILER_SCRIPT`]), the rest its arguments. The
/// compiler runs under `setpriv` as that uid and gid, with no group and no
/// capability left, so it reads only what the candidates may read, when
/// the image allows it: a `setpriv` that can (util-linux's; busybox's
/// cannot) and a /tmp that uid can write (the tmpfs takes the mode of the
/// image's /tmp). Otherwise it runs as root, as the script does. A macro,
/// so that each script stays one literal (`concat!`).
macro_rules! compile_prelude {
    () => {
        "set -e
user=$1
compiler=$2
shift 2
set -- /bin/sh -c \"$compiler\" sbx-compiler \"$@\"
drop=\"setpriv --reuid=${user%%:*} --regid=${user##*:} --clear-groups --\"
if $drop /bin/sh -c 'mkdir /tmp/.sbx-probe && rmdir /tmp/.sbx-probe && test -w /sbx/build' 2>/dev/null; then
  $drop \"$@\""
    };
}

/// The end of the prelude: the compiler as root, where it cannot drop.
macro_rules! compile_as_root {
    () => {
        "
else
  \"$@\""
    };
}

/// The compile container's program (`sh -c COMPILE_SCRIPT sbx-compile
/// UID:GID COMPILER_SCRIPT SOURCE COMMAND...`): as the candidates' uid and
/// gid, the source arrives on stdin and is written as SOURCE in a fresh
/// directory of /tmp, then COMMAND runs there, writing the build into the
/// tmpfs at `BUILD_DIR`; once it succeeded, root copies the build into the
/// volume (`BUILD_KEEP_DIR`), which the runs mount. A constant: nothing of
/// the candidate or the command is ever part of the script.
pub const COMPILE_SCRIPT: &str = concat!(
    compile_prelude!(),
    compile_as_root!(),
    "
fi
cp -R /sbx/build/. /sbx/keep/"
);

/// `COMPILE_SCRIPT` for a build that the runner will receive: the
/// compiler's own output goes to stderr, and once it succeeded the build
/// is copied into the volume and written to stdout as a tar archive, which
/// sbx reads strictly (`eval::judge::build_archive`) and delivers over the runner
/// protocol. Without `tar` in the image stdout stays empty (the build is
/// then run from the volume, a container per case). A constant too.
pub const COMPILE_PACK_SCRIPT: &str = concat!(
    compile_prelude!(),
    " >&2",
    compile_as_root!(),
    " >&2
fi
cp -R /sbx/build/. /sbx/keep/
cd /sbx/build
command -v tar >/dev/null 2>&1 || exit 0
exec tar -cf - ."
);

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

/// The candidates' identity when none is set (`sbx eval` always sets one).
const COMPILER_USER: &str = "65534:65534";

/// The arguments after the docker program that create the compile
/// container of one candidate: `create_args`' flags in their order (with
/// `c.limits`, the compile's own), `-i` for the source on stdin,
/// `COMPILE_ENV`, `SETUID` and `SETGID` (the only capabilities), a tmpfs
/// of `COMPILE_DISK_MIB` at `BUILD_DIR` for the compiler's output, owned
/// like /tmp by the candidates' uid, the build volume read-write at
/// `BUILD_KEEP_DIR`, and `/bin/sh` running `COMPILE_SCRIPT`. The container
/// runs as the image's user (root), so that it can write the fresh volume,
/// which the engine creates owned by root; the compiler itself runs as
/// `c.hardening.user` (the candidates' uid and gid) under `setpriv`, and
/// so reads only what a candidate may read. A `--memory-swap` becomes the
/// compile's memory limit (no swap stays no swap). `c.interactive`,
/// `c.mount` and `c.interpreter` are ignored.
pub fn compile_create_args(
    c: &Container<'_>,
    volume: &str,
    source_name: &str,
    command: &[String],
    pack: bool,
) -> Vec<OsString> {
    let user = c.hardening.user.as_deref().unwrap_or(COMPILER_USER);
    let hardening = Hardening {
        // /tmp is root's, with the mode of the image's /tmp (1777 in
        // Debian's images, so the compiler's uid can write it).
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
    // No `--user`: the container is root's, the compiler the uid's.
    let mut args = create_args(&plain);
    // create_args ends with `-- IMAGE PATH`.
    args.truncate(args.len() - 3);
    for env in COMPILE_ENV {
        args.push("--env".into());
        args.push(env.into());
    }
    for cap in ["SETUID", "SETGID"] {
        args.push("--cap-add".into());
        args.push(cap.into());
    }
    let (uid, gid) = user.split_once(':').unwrap_or((user, user));
    args.push("--tmpfs".into());
    args.push(
        // 1777 (the image has no BUILD_DIR): the uid's and root's alike.
        format!("{BUILD_DIR}:rw,noexec,nosuid,nodev,size={COMPILE_DISK_MIB}m,mode=1777").into(),
    );
    args.push("-v".into());
    args.push(format!("{volume}:{BUILD_KEEP_DIR}").into());
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
    args.push(format!("{uid}:{gid}").into());
    args.push(COMPILER_SCRIPT.into());
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let want: Vec<String> = seed_create(
            "sbx-r-compile-0",
            "r",
            true,
            "/tmp:rw,noexec,nosuid,size=64m",
            "1g",
            &[
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
                "--cap-add",
                "SETUID",
                "--cap-add",
                "SETGID",
                "--tmpfs",
                "/sbx/build:rw,noexec,nosuid,nodev,size=128m,mode=1777",
                "-v",
                "sbx-r-build-0:/sbx/keep",
                "--entrypoint",
                "/bin/sh",
                "--",
                "img:1",
                "-c",
                COMPILE_SCRIPT,
                "sbx-compile",
                "65534:65534",
                COMPILER_SCRIPT,
                "main.c",
                "gcc",
                "-o",
                "/sbx/build/main",
                "main.c",
            ],
        );
        assert_eq!(strings(&args), want);

        let run = create_args(&Container {
            name: "sbx-r-1",
            interactive: true,
            limits: &Limits::default(),
            interpreter: &["/sbx/build/main".to_string()],
            ..c
        });
        let args = with_build_volume(&run, "sbx-r-build-0", &["/sbx/build/main".to_string()]);
        let want: Vec<String> = seed_create(
            "sbx-r-1",
            "r",
            true,
            "/tmp:rw,noexec,nosuid,size=64m,uid=65534,gid=65534",
            "256m",
            &[
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
            ],
        );
        assert_eq!(strings(&args), want);
    }

    /// The scripts name the directories and the limit the argv gives.
    #[test]
    fn the_scripts_agree_with_the_constants() {
        let blocks = COMPILE_DISK_MIB * 2048;
        let script = COMPILER_SCRIPT;
        assert!(
            script.contains(&format!("\nulimit -f {blocks} 2>/dev/null || :\n")),
            "{script}"
        );
        // The limit comes after the source is written, before the compiler.
        let limit = script.find("ulimit").unwrap();
        assert!(script.find("cat >").unwrap() < limit);
        assert!(limit < script.find("exec \"$@\"").unwrap());
        for script in [COMPILE_SCRIPT, COMPILE_PACK_SCRIPT] {
            // The compiler's script runs as the uid; root copies after it.
            let drop = script.find("setpriv --reuid").unwrap();
            let copy = script
                .find(&format!("cp -R {BUILD_DIR}/. {BUILD_KEEP_DIR}/"))
                .unwrap();
            assert!(drop < copy, "{script}");
            assert!(!script.contains("ulimit"), "{script}");
        }
        assert!(COMPILE_PACK_SCRIPT.contains(&format!("cd {BUILD_DIR}\n")));
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
}
