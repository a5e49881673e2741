#!/usr/bin/env bash
# Benchmarks sbx side by side with the original scripts and with the
# engine's own limit, in one run, on locally built images, and the example
# suite on one engine and on two (a second dockerd on loopback, started by
# scripts/second-engine.sh for that part only), and gVisor against runc (on
# the engine of scripts/gvisor-engine.sh, for that part only). Prints a table and
# writes bench-results/bench.json. Usage: scripts/bench.sh [RUNS [PART...]]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-engine.sh
scripts/build-images.sh polyglot >&2
# (bench.py starts the second engine for its several-engine part only)
trap 'scripts/second-engine.sh stop || true' EXIT
cargo build --release --locked --quiet
python3 scripts/bench.py "${1:-11}" "${@:2}"
