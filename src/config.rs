//! The command line's arguments become validated requests here, once:
//! everything below can assume valid input.

use crate::cli::SandboxArgs;
use crate::docker::Docker;
use crate::error::Result;
use crate::session::Sandbox;
use crate::spec::{
    parse_env, parse_runtime, parse_security_opt, parse_user, size_in_bytes, Hardening, Limits,
    Profile, STRICT_USER,
};

/// Validates the options every container-starting subcommand shares.
pub fn sandbox(args: SandboxArgs) -> Result<Sandbox> {
    let limits = Limits::parse(
        &args.memory,
        &args.cpus,
        &args.pids_limit,
        &args.tmpfs_size,
        &args.network,
    )?;
    let hardening = hardening(&args, &limits)?;
    Ok(Sandbox {
        docker: Docker::new(args.engine.docker),
        limits,
        hardening,
        pull: args.pull,
    })
}

/// The hardening the options ask for, validated.
fn hardening(args: &SandboxArgs, limits: &Limits) -> Result<Hardening> {
    let strict = args.profile == Profile::Strict;
    let user = match (&args.user, strict) {
        (Some(user), _) => Some(parse_user(user)?),
        (None, true) => Some(STRICT_USER.to_string()),
        (None, false) => None,
    };
    let runtime = args.runtime.as_deref().map(parse_runtime).transpose()?;
    let security_opts = args
        .security_opt
        .iter()
        .map(|o| parse_security_opt(o))
        .collect::<Result<Vec<_>>>()?;
    let env = args
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>>>()?;
    Ok(Hardening {
        user,
        runtime,
        security_opts,
        ipc_none: strict,
        fsize: strict.then(|| size_in_bytes(&limits.tmpfs_size)),
        memory_swap: strict.then(|| limits.memory.clone()),
        env,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox_args(extra: &[&str]) -> SandboxArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            sandbox: SandboxArgs,
        }
        let argv = std::iter::once("sbx").chain(extra.iter().copied());
        Wrap::try_parse_from(argv).unwrap().sandbox
    }

    #[test]
    fn profiles() {
        let plain = sandbox(sandbox_args(&[])).unwrap();
        assert_eq!(plain.hardening, Hardening::default());
        let strict = sandbox(sandbox_args(&["--profile", "strict", "--memory", "128m"])).unwrap();
        assert_eq!(
            strict.hardening,
            Hardening {
                user: Some(STRICT_USER.into()),
                ipc_none: true,
                fsize: Some(64 << 20),
                memory_swap: Some("128m".into()),
                ..Hardening::default()
            }
        );
        let own_user = sandbox(sandbox_args(&["--profile", "strict", "--user", "1000"])).unwrap();
        assert_eq!(own_user.hardening.user.as_deref(), Some("1000"));
        assert!(sandbox(sandbox_args(&["--security-opt", "seccomp=unconfined"])).is_err());
        assert!(sandbox(sandbox_args(&["--env", "HOME"])).is_err());
    }

    #[test]
    fn hardening_values() {
        assert!(parse_user("65534:65534").is_ok());
        assert!(parse_user("1000").is_ok());
        for bad in [
            "",
            "-1",
            "0:",
            "a b",
            "--privileged",
            "1:2:3",
            "nobody",
            "1:x",
        ] {
            assert!(parse_user(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(parse_runtime("runsc").is_ok());
        assert!(parse_runtime("--x").is_err());
        assert!(parse_security_opt("seccomp=/etc/profile.json").is_ok());
        assert!(parse_security_opt("apparmor=docker-default").is_ok());
        for bad in [
            "label=type:spc_t",
            "label=level:s0",
            "seccomp=unconfined",
            "apparmor=unconfined",
            "no-new-privileges=false",
            "label=disable",
            "seccomp=",
            "privileged",
        ] {
            assert!(
                parse_security_opt(bad).is_err(),
                "{bad:?} should be refused"
            );
        }
        assert!(parse_env("A=1").is_ok());
        assert!(parse_env("A=").is_ok());
        for bad in ["A", "=1", "1A=2", "-e=1"] {
            assert!(parse_env(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(size_in_bytes("64m"), 64 << 20);
        assert_eq!(size_in_bytes("2g"), 2 << 30);
        assert_eq!(size_in_bytes("100"), 100);
    }
}
