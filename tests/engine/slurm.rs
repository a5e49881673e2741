//! A real Slurm array job: `scripts/slurm.sh check` brings up a one-node
//! cluster on 127.0.0.1 (installing Debian's Slurm and munge when missing),
//! judges a HumanEval-format run whole and as an array of 4 partitions,
//! checks that `sbx merge` gives the single run's results file byte for
//! byte and its exit code, and stops the cluster. It needs root, apt (for
//! the first install) and the engine, and takes about three minutes; it
//! runs with the rest of the tests (CI runs as root), and fails loudly
//! where it cannot.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::finish;

#[test]
fn slurm_array_of_partitions_merges_to_the_single_run() {
    common::require_engine();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm.sh");
    let mut cmd = Command::new(script);
    cmd.arg("check").env("SBX", env!("CARGO_BIN_EXE_sbx"));
    let out = finish(cmd, None, Duration::from_secs(900));
    assert_eq!(out.code(), 0, "scripts/slurm.sh check failed: {out:?}");
    assert!(out.stderr.contains("merged = single run"), "{out:?}");
}
