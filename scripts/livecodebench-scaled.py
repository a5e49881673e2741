"""Writes a scaled LiveCodeBench fixture for scripts/bench.sh: PROBLEMS
problems (half stdin, half functional), each with TESTS tests (two public,
the rest private, every other problem's private tests compressed as
LiveCodeBench publishes them: base64 of zlib of a pickled str), and
SAMPLES samples per problem in custom_evaluator's format: most right
(each text distinct), one wrong answer and one runtime error.

    python3 livecodebench-scaled.py OUT_DIR [PROBLEMS TESTS SAMPLES]

Writes OUT_DIR/problems.jsonl and OUT_DIR/samples.json. Deterministic
(a fixed seed)."""
import base64
import json
import pickle
import random
import sys
import zlib
from pathlib import Path


def compress(tests):
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()


# Stdin problems: (name, make input, answer, right programs, wrong, error).
STDIN = [
    (
        "sum",
        lambda r: [r.randint(-10**9, 10**9) for _ in range(r.randint(1, 200))],
        lambda xs: str(sum(xs)),
        [
            "n = int(input())\nprint(sum(map(int, input().split())))\n",
            "import sys\ndata = sys.stdin.read().split()\nprint(sum(int(x) for x in data[1:]))\n",
            "def main():\n    n = int(input())\n    xs = list(map(int, input().split()))\n    t = 0\n    for x in xs:\n        t += x\n    print(t)\nmain()\n",
        ],
        "n = int(input())\nprint(sum(map(int, input().split())) + 1)\n",
    ),
    (
        "sort",
        lambda r: [r.randint(0, 10**6) for _ in range(r.randint(1, 200))],
        lambda xs: " ".join(map(str, sorted(xs))),
        [
            "input()\nprint(*sorted(map(int, input().split())))\n",
            "import sys\nn, *xs = map(int, sys.stdin.read().split())\nprint(' '.join(map(str, sorted(xs))))\n",
            "from heapq import heapify, heappop\ninput()\nh = list(map(int, input().split()))\nheapify(h)\nprint(*[heappop(h) for _ in range(len(h))])\n",
        ],
        "input()\nprint(*sorted(map(int, input().split()), reverse=True))\n",
    ),
    (
        "distinct",
        lambda r: [r.randint(0, 50) for _ in range(r.randint(1, 300))],
        lambda xs: str(len(set(xs))),
        [
            "input()\nprint(len(set(input().split())))\n",
            "from collections import Counter\ninput()\nprint(len(Counter(map(int, input().split()))))\n",
        ],
        "input()\nprint(len(input().split()))\n",
    ),
]

# Functional problems: (name, func, make args, answer, right, wrong).
FUNCTIONAL = [
    (
        "maxSub",
        "maxSubarray",
        lambda r: [[r.randint(-100, 100) for _ in range(r.randint(1, 100))]],
        lambda a: max(max(sum(a[0][i:j]) for j in range(i + 1, len(a[0]) + 1)) for i in range(len(a[0]))),
        [
            "class Solution:\n    def maxSubarray(self, nums: List[int]) -> int:\n        best = cur = nums[0]\n        for x in nums[1:]:\n            cur = max(x, cur + x)\n            best = max(best, cur)\n        return best\n",
            "class Solution:\n    def maxSubarray(self, nums):\n        best, cur = -10**18, 0\n        for x in nums:\n            cur = max(cur + x, x)\n            best = max(best, cur)\n        return best\n",
        ],
        "class Solution:\n    def maxSubarray(self, nums: List[int]) -> int:\n        return max(nums)\n",
    ),
    (
        "twoSum",
        "countPairs",
        lambda r: [[r.randint(0, 20) for _ in range(r.randint(2, 80))], r.randint(0, 40)],
        lambda a: sum(1 for i in range(len(a[0])) for j in range(i + 1, len(a[0])) if a[0][i] + a[0][j] == a[1]),
        [
            "class Solution:\n    def countPairs(self, nums: List[int], target: int) -> int:\n        seen = Counter()\n        n = 0\n        for x in nums:\n            n += seen[target - x]\n            seen[x] += 1\n        return n\n",
            "class Solution:\n    def countPairs(self, nums, target):\n        return sum(1 for i in range(len(nums)) for j in range(i + 1, len(nums)) if nums[i] + nums[j] == target)\n",
        ],
        "class Solution:\n    def countPairs(self, nums, target):\n        return sum(1 for i in range(len(nums)) for j in range(len(nums)) if i != j and nums[i] + nums[j] == target)\n",
    ),
]

ERROR = "print(undefined_name)\n"


def main():
    out = Path(sys.argv[1])
    problems_n, tests_n, samples_n = (int(x) for x in (sys.argv[2:5] or (50, 20, 10)))
    r = random.Random(20261204)
    out.mkdir(parents=True, exist_ok=True)
    problems, samples = [], []
    for p in range(problems_n):
        qid = "scaled_%03d" % p
        if p % 2 == 0:
            name, make, answer, right, wrong = STDIN[(p // 2) % len(STDIN)]
            tests = []
            for _ in range(tests_n):
                xs = make(r)
                tests.append({"input": "%d\n%s\n" % (len(xs), " ".join(map(str, xs))),
                              "output": answer(xs) + "\n", "testtype": "stdin"})
            metadata, platform, starter = {}, "atcoder", ""
        else:
            name, func, make, answer, right, wrong = FUNCTIONAL[(p // 2) % len(FUNCTIONAL)]
            tests = []
            for _ in range(tests_n):
                args = make(r)
                tests.append({"input": "\n".join(json.dumps(a) for a in args),
                              "output": json.dumps(answer(args)), "testtype": "functional"})
            metadata, platform = {"func_name": func}, "leetcode"
            starter = right[0].split(":\n        ")[0] + ":\n        "
        public, private = tests[:2], tests[2:]
        problems.append({
            "question_title": "%s %d" % (name, p),
            "question_content": "A scaled bench problem of sbx: " + name,
            "platform": platform,
            "question_id": qid,
            "contest_id": "sbx-bench",
            "contest_date": "2025-01-01T00:00:00",
            "starter_code": starter,
            "difficulty": "easy",
            "public_test_cases": json.dumps(public),
            "private_test_cases": compress(private) if p % 4 < 2 else json.dumps(private),
            "metadata": json.dumps(metadata),
        })
        codes = []
        for s in range(samples_n):
            if s == samples_n - 1:
                codes.append(wrong)
            elif s == samples_n - 2:
                codes.append(ERROR)
            else:
                # Distinct texts: the right programs, each with its own comment.
                codes.append("# sample %d\n" % s + right[s % len(right)])
        samples.append({"question_id": qid, "code_list": codes})
    with open(out / "problems.jsonl", "w") as f:
        for problem in problems:
            f.write(json.dumps(problem) + "\n")
    (out / "samples.json").write_text(json.dumps(samples))


main()
