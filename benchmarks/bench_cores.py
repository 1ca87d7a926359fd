"""The main job on every core: `agency run` with one model instance (the old default) against
the default now (one one-thread instance per core, more tasks in flight), in the same run.

Each configuration runs the real CLI in a fresh directory on the same tasks (same seed), taking
turns, `--rounds` times. Reported per configuration: wall time, tasks per minute, CPU use of the
command (user + system time over wall time; 200% is both cores of two busy) and its peak
resident memory. The machine's load before each run is reported beside it.

`--scaling` measures how the main job scales with the machine's cores instead: 2, 4, 8 … up to
every core's instance (one thread each, two tasks in flight per instance, each of the three
default agents allowed as many model calls as there are instances), beside the defaults of
`run.concurrency` and `max_concurrency` as they were before (4 tasks in flight, 4 calls per
agent), widest first; `--budget-s` stops starting configurations once that much time has gone.

Usage: python benchmarks/bench_cores.py [--tasks 30] [--rounds 1] [--scaling [--budget-s S]]
Writes the "Main job on every core" (or, with --scaling, "Main job on a bigger machine") section
of benchmarks/RESULTS.md; `--json FILE` also writes every run's figures to FILE.
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


DEFAULT_AGENTS = ("direct", "stepwise", "toolsmith")


def sized(instances: int, in_flight: int, agent_calls: int) -> str:
    """agency.yaml for `instances` one-thread instances, `in_flight` tasks at once and
    `agent_calls` model calls at once for each default agent."""
    agents = "".join(
        f"  - name: {name}\n    max_concurrency: {agent_calls}\n" for name in DEFAULT_AGENTS
    )
    return (
        f"embedded:\n  instances: {instances}\n  threads: 1\n"
        f"run:\n  concurrency: {in_flight}\nagents:\n{agents}"
    )


def scaling_configs(cores: int) -> dict[str, str]:
    """Widest first, so that a budget cut leaves the narrow (slow) ones out. The defaults now
    are two tasks in flight per instance and, on more than 4 cores, one call per core per agent."""
    configs = {
        f"{cores} instances, 4 tasks in flight, 4 calls per agent (the defaults before)": sized(
            cores, 4, 4
        ),
        f"{cores} instances, {2 * cores} in flight, 4 calls per agent": sized(cores, 2 * cores, 4),
    }
    widths = [cores]
    while widths[-1] > 2:
        widths.append(max(2, widths[-1] // 2))
    for width in widths:
        calls = max(width, 4)
        configs[f"{width} instances, {2 * width} in flight, {calls} calls per agent"] = sized(
            width, 2 * width, calls
        )
    return configs


def one_run(config: str, tasks: int) -> dict[str, float]:
    agency = [sys.executable, "-m", "agent_agency"]
    with tempfile.TemporaryDirectory() as tmp:
        if config:
            (Path(tmp) / "agency.yaml").write_text(config, encoding="utf-8")
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, *agency, "run", "--tasks", str(tasks)],
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


def scaling(tasks: int, budget_s: float, json_path: Path | None) -> None:
    started = time.perf_counter()
    runs: dict[str, dict[str, float]] = {}
    for label, config in scaling_configs(os.cpu_count() or 1).items():
        if time.perf_counter() - started > budget_s:
            print(f"budget spent: {label} not run", flush=True)
            continue
        runs[label] = one_run(config, tasks)
        print(label, runs[label], flush=True)
        if json_path is not None:
            json_path.write_text(json.dumps(runs, indent=1), encoding="utf-8")
    narrowest = min(runs, key=lambda label: runs[label]["tasks_per_min"])
    lines = [
        f"`agency run --tasks {tasks}` on the embedded model, each configuration from a fresh "
        f"directory, one after the other; {os.cpu_count()} cores. CPU is user + system time of "
        "the whole command over its wall time; × is against the slowest configuration.",
        "",
        "| configuration | wall s | tasks/min | × slowest | CPU | peak RSS | succeeded | "
        "load before |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, run in runs.items():
        lines.append(
            f"| {label} | {run['wall_s']:.0f} | {run['tasks_per_min']:.1f} | "
            f"{run['tasks_per_min'] / runs[narrowest]['tasks_per_min']:.2f} | "
            f"{run['cpu_percent']:.0f}% | {run['max_rss_mb']:.0f} MB | "
            f"{run['succeeded']:.0f} | {run['load_before']:.1f} |"
        )
    lines += ["", f"Command: `python benchmarks/bench_cores.py --scaling --tasks {tasks}`."]
    body = "\n".join(lines)
    write_section("Main job on a bigger machine", body)
    print(body)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--scaling", action="store_true", help="2, 4, 8 … instances up to the cores"
    )
    parser.add_argument("--budget-s", type=float, default=float("inf"))
    parser.add_argument("--json", type=Path, help="also write every run's figures to this file")
    args = parser.parse_args()
    if args.scaling:
        scaling(args.tasks, args.budget_s, args.json)
        return
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
