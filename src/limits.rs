//! The open-file limit: each run at once holds a few pipes to its docker
//! client, so a low limit would turn a wide `-j` into spawn errors. sbx
//! raises its soft limit to the hard one at start, and an eval runs fewer
//! at once when even that is not enough.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Open files one run at once may hold at its peak: its client's stdin,
/// stdout and stderr pipes, and the pipes of a client being spawned.
pub(crate) const FILES_PER_JOB: u64 = 8;
/// Open files kept for everything else: sbx's own stdio, the engines'
/// event streams, the run lock, the cache, the files being read.
pub(crate) const FILES_RESERVED: u64 = 32;

/// Raises the soft open-file limit to the hard limit (best effort: the
/// limit stays as it was if the kernel refuses).
pub(crate) fn raise_open_files() {
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        );
    }
}

/// The soft open-file limit in force; `None` when unlimited.
pub(crate) fn open_files() -> Option<u64> {
    getrlimit(Resource::Nofile).current
}

/// How many runs at once an open-file limit allows (at least one).
pub(crate) fn max_jobs(open_files: Option<u64>) -> usize {
    match open_files {
        None => usize::MAX,
        Some(n) => {
            let jobs = n.saturating_sub(FILES_RESERVED) / FILES_PER_JOB;
            usize::try_from(jobs).unwrap_or(usize::MAX).max(1)
        }
    }
}

/// Lowers each engine's `jobs` so that their sum fits in `max`, in
/// proportion, each keeping at least one. Returns whether anything changed.
pub(crate) fn fit(jobs: &mut [usize], max: usize) -> bool {
    let total: usize = jobs.iter().sum();
    if total <= max {
        return false;
    }
    for j in jobs.iter_mut() {
        *j = (*j * max / total).max(1);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_fit_the_limit() {
        assert_eq!(max_jobs(Some(128)), 12);
        assert_eq!(max_jobs(Some(10)), 1);
        assert_eq!(max_jobs(None), usize::MAX);
        let mut jobs = [64];
        assert!(fit(&mut jobs, 12));
        assert_eq!(jobs, [12]);
        let mut jobs = [8, 24];
        assert!(fit(&mut jobs, 12));
        assert_eq!(jobs, [3, 9]);
        let mut jobs = [4, 4];
        assert!(!fit(&mut jobs, 12));
        assert_eq!(jobs, [4, 4]);
        let mut jobs = [1, 1, 1];
        fit(&mut jobs, 1);
        assert_eq!(jobs, [1, 1, 1]);
    }
}
