#!/usr/bin/env bash
# A throwaway virtualenv with pre-commit from PyPI, for the hook test
# (tests/engine/hook.rs). Idempotent: made once, reused after. Prints the path of
# its `pre-commit`. SBX_PRE_COMMIT_VENV moves it (default: target/).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${SBX_PRE_COMMIT_VENV:-$PWD/target/pre-commit-venv}
# One maker at a time: tests that run at once may all ask for it.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if ! "$venv/bin/pre-commit" --version >/dev/null 2>&1; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >&2; then
    # Debian's python3 comes without ensurepip.
    rm -rf "$venv"
    apt-get install -y python3-venv </dev/null >&2
    python3 -m venv "$venv" >&2
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check pre-commit </dev/null >&2
fi
echo "$venv/bin/pre-commit"
