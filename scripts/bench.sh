#!/usr/bin/env bash
# Benchmarks sbx side by side with the original scripts and with the
# engine's own limit, in one run, on locally built images, and the example
# suite on one engine and on two (a second dockerd on loopback). Prints a table and
# writes bench-results/bench.json. Usage: scripts/bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-engine.sh
scripts/build-images.sh >&2
engine2_env=$(scripts/second-engine.sh start)
trap 'scripts/second-engine.sh stop || true' EXIT
set -a
eval "$engine2_env"
set +a
cargo build --release --locked --quiet
python3 scripts/bench.py "${1:-11}"
