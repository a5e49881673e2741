#!/usr/bin/env bash
# The test command: engine up, test images built (both idempotent), then
# formatting, lints and every test, the real-engine ones included.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-engine.sh
scripts/build-images.sh
cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked --all-targets -- --test-threads 2
