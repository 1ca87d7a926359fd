"""The main job on every core: `agency run` with one model instance (the old default) against
the default now (one one-thread instance per core, more tasks in flight), in the same run.

Each configuration runs the real CLI in a fresh directory on the same tasks (same seed), taking
turns, `--rounds` times. Reported per configuration: wall time, tasks per minute, CPU use of the
command (user + system time over wall time; 200% is both cores of two busy) and its peak
resident memory. The machine's load before each run is reported beside it.

Usage: python benchmarks/bench_cores.py [--tasks 30] [--rounds 1]
Writes the "Main job on every core" section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import write_section

# (label, agency.yaml): the old default serialized every model call on one instance
CONFIGS = {
    "one instance, concurrency 2 (before)": (
        "embedded:\n  instances: 1\n  threads: 1\nrun:\n  concurrency: 2\n"
    ),
    "default: an instance per core": "",
}
# Runs the command and prints its resource use, so each run's peak memory is its own.
MEASURE = (
    "import json, resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps({'code': code, 'cpu_s': usage.ru_utime + usage.ru_stime, "
    "'max_rss_kb': usage.ru_maxrss}))\n"
)


def one_run(config: str, tasks: int) -> dict[str, float]:
    agency = str(Path(sys.executable).with_name("agency"))
    with tempfile.TemporaryDirectory() as tmp:
        if config:
            (Path(tmp) / "agency.yaml").write_text(config, encoding="utf-8")
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, agency, "run", "--tasks", str(tasks)],
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
        )
        wall_s = time.perf_counter() - started
        usage = json.loads(done.stdout.strip().splitlines()[-1])
        if usage["code"] != 0:
            raise SystemExit(f"agency run failed ({usage['code']}): {done.stderr[-2000:]}")
        summary = json.loads((Path(tmp) / "agency-run.json").read_text())
    return {
        "wall_s": wall_s,
        "tasks_per_min": summary["tasks"] / wall_s * 60,
        "cpu_percent": 100 * usage["cpu_s"] / wall_s,
        "max_rss_mb": usage["max_rss_kb"] / 1024,
        "succeeded": summary["succeeded"],
        "load_before": load,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in CONFIGS}
    for _ in range(args.rounds):
        for label, config in CONFIGS.items():
            runs[label].append(one_run(config, args.tasks))
            print(label, runs[label][-1], flush=True)
    baseline = statistics.median(r["tasks_per_min"] for r in runs[next(iter(CONFIGS))])
    lines = [
        f"`agency run --tasks {args.tasks}` on the embedded model, each configuration from a "
        f"fresh directory, taking turns ({args.rounds} round(s)); {os.cpu_count()} cores. "
        "CPU is user + system time of the whole command over its wall time.",
        "",
        "| configuration | wall s | tasks/min | × before | CPU | peak RSS | succeeded | "
        "load before |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, results in runs.items():
        rate = statistics.median(r["tasks_per_min"] for r in results)
        loads = ", ".join(f"{r['load_before']:.1f}" for r in results)
        lines.append(
            f"| {label} | {statistics.median(r['wall_s'] for r in results):.0f} | {rate:.1f} | "
            f"{rate / baseline:.2f} | "
            f"{statistics.median(r['cpu_percent'] for r in results):.0f}% | "
            f"{max(r['max_rss_mb'] for r in results):.0f} MB | "
            f"{statistics.median(r['succeeded'] for r in results):.0f} | "
            f"{loads} |"
        )
    lines += [
        "",
        f"Command: `python benchmarks/bench_cores.py --tasks {args.tasks} --rounds {args.rounds}`.",
    ]
    body = "\n".join(lines)
    write_section("Main job on every core", body)
    print(body)


if __name__ == "__main__":
    main()
