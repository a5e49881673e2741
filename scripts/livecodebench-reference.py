"""Judges LiveCodeBench's files with LiveCodeBench's own evaluator, for
scripts/bench.sh: its `codegen_metrics` with its defaults (16 processes,
6 s per test), on the problems as its `CodeGenerationProblem` reads them
and the samples' `code_list` as its custom evaluator passes them.

    python livecodebench-reference.py LCB_CHECKOUT PROBLEMS SAMPLES OUT.json

Needs numpy and tqdm (LiveCodeBench's evaluation imports them). Writes
{question_id: [passed, ...]} to OUT.json and prints pass@1. The pickled
private tests are the bench's own fixture's (scripts/livecodebench-scaled.py),
unpickled here as LiveCodeBench does it; sbx never unpickles."""
import base64
import json
import pickle
import sys
import zlib


def main():
    checkout, problems_path, samples_path, out = sys.argv[1:5]
    sys.path.insert(0, checkout)
    from lcb_runner.evaluation.compute_code_generation_metrics import codegen_metrics

    problems = {}
    with open(problems_path) as f:
        for line in f:
            if not line.strip():
                continue
            p = json.loads(line)
            public = json.loads(p["public_test_cases"])
            try:
                private = json.loads(p["private_test_cases"])
            except ValueError:
                private = json.loads(pickle.loads(zlib.decompress(
                    base64.b64decode(p["private_test_cases"].encode()))))
            tests = public + private
            problems[p["question_id"]] = {"input_output": json.dumps({
                "inputs": [t["input"] for t in tests],
                "outputs": [t["output"] for t in tests],
                "fn_name": json.loads(p["metadata"]).get("func_name"),
            })}
    with open(samples_path) as f:
        samples = sorted(json.load(f), key=lambda s: s["question_id"])
    metrics, results, _ = codegen_metrics(
        [problems[s["question_id"]] for s in samples],
        [s["code_list"] for s in samples],
        k_list=[1],
    )
    passed = {s["question_id"]: [bool(res) and all(r > 0 for r in res) for res in results[i]]
              for i, s in enumerate(samples)}
    with open(out, "w") as f:
        json.dump(passed, f)
    print("pass@1", metrics["pass@1"])


if __name__ == "__main__":
    main()
