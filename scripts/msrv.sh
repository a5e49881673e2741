#!/usr/bin/env bash
# Checks that the workspace builds with the oldest Rust it declares
# (Cargo.toml's `rust-version`): `cargo +VERSION check --workspace --locked
# --all-targets`, in a target directory of its own (target/msrv). The
# toolchain is installed with rustup (minimal profile) when it is missing.
# Run by the full lane of scripts/test.sh; see docs/contributing.md for what
# this check and clippy's `incompatible_msrv` lint each catch.
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version = "\([0-9.]*\)"$/\1/p' Cargo.toml)
[ -n "$msrv" ] || { echo "msrv.sh: no rust-version in Cargo.toml" >&2; exit 1; }
if ! rustup run "$msrv" rustc --version >/dev/null 2>&1; then
    rustup toolchain install "$msrv" --profile minimal </dev/null >&2
fi
echo "msrv.sh: checking with $(rustup run "$msrv" rustc --version)" >&2
exec cargo "+$msrv" check --workspace --locked --all-targets --target-dir target/msrv
