#!/usr/bin/env bash
# Builds sbx's Python wheel (pyproject.toml: maturin, `bindings = "bin"`, as
# ruff and uv ship theirs): the wheel holds the static sbx executable and no
# Python code, and `pip install` puts it on the virtualenv's PATH.
# Idempotent: maturin comes from PyPI into a throwaway virtualenv under
# target/ (made once), and cargo rebuilds only what changed, in a target
# directory of its own (target/wheel: a `cargo test` holds target/'s lock
# while tests/engine/wheel.rs runs this script). Prints the wheel's path as a
# NAME=VALUE line:
#   SBX_WHEEL  the wheel just built, under target/wheels/
# Usage: scripts/wheel.sh [VENV]   (default: target/wheel-venv)
set -euo pipefail
cd "$(dirname "$0")/.."

# The maturin that builds the wheel (pyproject.toml accepts 1.9 to 1.x).
maturin_version=1.16.0

venv=${1:-target/wheel-venv}
mkdir -p "$(dirname "$venv")"
venv=$(cd "$(dirname "$venv")" && pwd)/$(basename "$venv")
# One builder at a time: tests that run at once may all ask for it.
exec 9>"$venv.lock"
flock 9
if [ "$("$venv/bin/maturin" --version 2>/dev/null)" != "maturin $maturin_version" ]; then
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >&2; then
        # Debian's python3 comes without ensurepip.
        rm -rf "$venv"
        apt-get install -y -qq python3-venv </dev/null >&2
        python3 -m venv "$venv" >&2
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check "maturin==$maturin_version" </dev/null >&2
fi

out=target/wheels
mkdir -p "$out"
# Only this build's wheel is left, so the path printed is the one just built.
rm -f "$out"/sbx_judge-*.whl
# The project's cargo configuration applies (.cargo/config.toml: the host
# target with crt-static), so the executable is the static one that
# containers can run as their runner.
CARGO_TARGET_DIR=target/wheel "$venv/bin/maturin" build --quiet --out "$out" </dev/null >&2
wheels=("$out"/sbx_judge-*.whl)
[ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] || {
    echo "wheel.sh: expected one wheel in $out, found: ${wheels[*]}" >&2
    exit 1
}
echo "SBX_WHEEL=$(pwd)/${wheels[0]}"
