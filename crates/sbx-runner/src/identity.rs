//! The candidates' identity: the uid and gid every candidate process
//! runs under, and the runner borrowing them as its real ids for a call.

/// The uid and gid every candidate process runs under: never root's, and
/// never the runner's (root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    pub uid: u32,
    pub gid: u32,
}

impl Identity {
    /// `UID:GID` as the runner's argument.
    pub(crate) fn from_args(arg: Option<&str>) -> Result<Identity, String> {
        let arg = arg.ok_or("the candidates' UID:GID must follow the subcommand")?;
        let parsed = arg
            .split_once(':')
            .and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)));
        match parsed {
            Some((0, _) | (_, 0)) => Err(format!(
                "candidates never run as root (uid or gid 0), asked `{arg}`"
            )),
            Some((uid, gid)) => Ok(Identity { uid, gid }),
            None => Err(format!("expected the candidates' UID:GID, got `{arg}`")),
        }
    }
}

/// Runs `f` on this thread with the candidate's uid and gid as its *real*
/// ids, effective and saved ids staying root's: the kernel lets one process
/// `prlimit` another only when the caller's real ids are the target's, and
/// the runner has no `CAP_SYS_RESOURCE` (engines may not grant it). The
/// effective ids stay 0, so the runner keeps its capabilities and takes
/// its real ids back right after. Ids are per thread on Linux: no other
/// thread of the runner changes.
pub(crate) fn as_real_identity<T>(
    identity: Identity,
    f: impl FnOnce() -> rustix::io::Result<T>,
) -> Result<T, String> {
    use rustix::process::{Gid, Uid};
    use rustix::thread::{set_thread_res_gid, set_thread_res_uid};
    let (uid, gid) = (Uid::from_raw(identity.uid), Gid::from_raw(identity.gid));
    set_thread_res_gid(gid, None, None).map_err(|e| format!("setresgid: {e}"))?;
    let r = set_thread_res_uid(uid, None, None)
        .map_err(|e| format!("setresuid: {e}"))
        .map(|()| f());
    let back = set_thread_res_uid(Uid::ROOT, None, None)
        .and_then(|()| set_thread_res_gid(Gid::ROOT, None, None));
    if let Err(e) = back {
        return Err(format!("the runner could not take back its ids: {e}"));
    }
    r?.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_candidates_identity_is_never_root() {
        assert_eq!(
            Identity::from_args(Some("65534:65534")),
            Ok(Identity {
                uid: 65534,
                gid: 65534
            })
        );
        for bad in [
            None,
            Some("0:0"),
            Some("0:1"),
            Some("1:0"),
            Some("1"),
            Some("a:b"),
        ] {
            assert!(Identity::from_args(bad).is_err(), "{bad:?}");
        }
    }
}
