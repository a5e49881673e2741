#!/usr/bin/env bash
# Benchmarks sbx side by side with the original scripts and with the
# engine's own limit, in one run, on locally built images. Prints a table and
# writes bench-results/bench.json. Usage: scripts/bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-engine.sh
scripts/build-images.sh >&2
cargo build --release --locked --quiet
exec python3 scripts/bench.py "${1:-11}"
