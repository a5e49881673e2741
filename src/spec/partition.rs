//! `--partition hash:K/N` and `count:K/N` (cargo-nextest's words): which
//! share of an eval's units this run judges, and the assignment of a unit
//! to a share. Pure: the same unit goes to the same share on every machine
//! and in every run.
//!
//! A unit is a task, or one sample of a multi-sample task. `count` assigns
//! the unit at 0-based position `p` (in report order) to share `p % N + 1`;
//! `hash` assigns it by the SHA-256 of its identity (a task's id, or
//! `<task id>/<sample name>`): the first eight bytes, big-endian, modulo N,
//! plus one. The hash never depends on Rust's randomized hasher, the
//! machine or the other units, so adding a task moves no other task.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::error::Error;

/// How units are assigned to shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// By a stable hash of the unit's identity.
    Hash,
    /// By the unit's position, modulo N.
    Count,
}

impl Method {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::Hash => "hash",
            Method::Count => "count",
        }
    }
}

/// One share of N: `index` is 1-based, 1..=`total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Partition {
    pub method: Method,
    pub index: usize,
    pub total: usize,
}

impl Partition {
    /// Parses `hash:K/N` or `count:K/N`, with 1 <= K <= N. The error is
    /// an invalid `--partition` (`invalid --partition ...`).
    pub(crate) fn parse(text: &str) -> Result<Partition, Error> {
        let bad = |why: &str| Error::invalid("--partition", format!("`{text}`"), why);
        let (method, share) = text
            .split_once(':')
            .ok_or_else(|| bad("expected hash:K/N or count:K/N"))?;
        let method = match method {
            "hash" => Method::Hash,
            "count" => Method::Count,
            _ => return Err(bad("the method is `hash` or `count`")),
        };
        let (k, n) = share
            .split_once('/')
            .ok_or_else(|| bad("expected hash:K/N or count:K/N"))?;
        let number = |s: &str| {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("K and N are whole numbers"));
            }
            s.parse::<usize>().map_err(|_| bad("K and N are too large"))
        };
        let (index, total) = (number(k)?, number(n)?);
        if total == 0 {
            return Err(bad("N is at least 1"));
        }
        if index == 0 || index > total {
            return Err(bad("K is from 1 to N"));
        }
        Ok(Partition {
            method,
            index,
            total,
        })
    }

    /// The share (1-based) of the unit at `position` with `identity`.
    pub(crate) fn share_of(&self, position: usize, identity: &str) -> usize {
        match self.method {
            Method::Count => position % self.total + 1,
            Method::Hash => hash_share(identity, self.total),
        }
    }

    /// Whether this share holds the unit at `position` with `identity`.
    pub(crate) fn holds(&self, position: usize, identity: &str) -> bool {
        self.share_of(position, identity) == self.index
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}/{}", self.method.name(), self.index, self.total)
    }
}

/// The share (1-based, of `total`) that `hash` gives `identity`.
pub(crate) fn hash_share(identity: &str, total: usize) -> usize {
    let digest = Sha256::digest(identity.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % total as u64) as usize + 1
}

/// A sample's identity: its task's id and its name.
pub(crate) fn sample_identity(task: &str, sample: &str) -> String {
    format!("{task}/{sample}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nextest_words_and_refuses_the_rest() {
        let p = Partition::parse("hash:1/3").unwrap();
        assert_eq!((p.method, p.index, p.total), (Method::Hash, 1, 3));
        assert_eq!(p.to_string(), "hash:1/3");
        let p = Partition::parse("count:3/3").unwrap();
        assert_eq!((p.method, p.index, p.total), (Method::Count, 3, 3));
        assert_eq!(
            Partition::parse("count:1/1").unwrap().to_string(),
            "count:1/1"
        );
        for (bad, why) in [
            ("hash:0/3", "K is from 1 to N"),
            ("count:4/3", "K is from 1 to N"),
            ("foo:1/2", "the method is"),
            ("hash:1/0", "N is at least 1"),
            ("hash:0/0", "N is at least 1"),
            ("hash", "expected hash:K/N"),
            ("hash:1", "expected hash:K/N"),
            ("hash:/3", "whole numbers"),
            ("hash:-1/3", "whole numbers"),
            ("hash:+1/3", "whole numbers"),
            ("hash:1/3/4", "whole numbers"),
            ("hash: 1/3", "whole numbers"),
            ("HASH:1/3", "the method is"),
            ("hash:1/99999999999999999999999", "too large"),
        ] {
            let err = Partition::parse(bad).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("invalid --partition `{bad}`: ")) && err.contains(why),
                "{bad}: {err}"
            );
        }
    }

    /// Every unit in exactly one share, over K = 1..N, for both methods and
    /// several N; and the assignment does not change between calls.
    #[test]
    fn every_unit_in_exactly_one_share() {
        let ids: Vec<String> = (0..500)
            .map(|i| match i % 3 {
                0 => format!("task-{i}"),
                1 => sample_identity(&format!("HumanEval/{}", i / 7), &(i % 7).to_string()),
                _ => sample_identity("many", &format!("{i:04}.py")),
            })
            .collect();
        for method in ["hash", "count"] {
            for n in [1, 2, 3, 4, 7, 16, 64] {
                let shares: Vec<Partition> = (1..=n)
                    .map(|k| Partition::parse(&format!("{method}:{k}/{n}")).unwrap())
                    .collect();
                let mut sizes = vec![0usize; n];
                for (position, id) in ids.iter().enumerate() {
                    let holders: Vec<usize> = shares
                        .iter()
                        .filter(|s| s.holds(position, id))
                        .map(|s| s.index)
                        .collect();
                    assert_eq!(holders.len(), 1, "{method} {n}: {id} is in {holders:?}");
                    assert_eq!(holders[0], shares[0].share_of(position, id));
                    sizes[holders[0] - 1] += 1;
                }
                assert_eq!(sizes.iter().sum::<usize>(), ids.len());
                if method == "count" {
                    // Position modulo N: the sizes differ by at most one.
                    let (min, max) = (sizes.iter().min(), sizes.iter().max());
                    assert!(max.unwrap() - min.unwrap() <= 1, "{sizes:?}");
                } else if n <= 7 {
                    // A hash spreads 500 units over a few shares: none empty.
                    assert!(sizes.iter().all(|&s| s > 0), "{method} {n}: {sizes:?}");
                }
            }
        }
    }

    #[test]
    fn hash_is_stable_and_count_is_positional() {
        // Pinned values: the same on every machine, every build and run (a
        // change here would move units between shares of old runs).
        assert_eq!(hash_share("hello", 3), 2);
        assert_eq!(hash_share("HumanEval/0/0", 4), 4);
        assert_eq!(hash_share("many/0001.py", 7), 2);
        assert_eq!(hash_share("anything", 1), 1);
        let count = Partition::parse("count:2/3").unwrap();
        assert!(count.holds(1, "x") && count.holds(4, "y") && !count.holds(2, "x"));
        // The position does not matter to `hash`, the identity not to `count`.
        let hash = Partition::parse("hash:2/3").unwrap();
        assert_eq!(hash.holds(0, "hello"), hash.holds(99, "hello"));
        assert_eq!(count.holds(4, "a"), count.holds(4, "b"));
    }
}
