"""Wall time of the main job: `agency run` with 60 tasks on the embedded defaults.

Runs the real CLI in a fresh directory (no config, no API key), then reads the summary JSON it
wrote. Usage: python benchmarks/bench_run.py [--tasks 60]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from results import write_section


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        subprocess.run(["agency", "run", "--tasks", str(args.tasks)], cwd=tmp, check=True)
        wall_s = time.perf_counter() - started
        summary = json.loads((Path(tmp) / "agency-run.json").read_text())
    rows = summary["summary"]
    lines = [
        f"`agency run --tasks {args.tasks}` on the embedded defaults (3 agents on "
        "SmolLM2-135M-Instruct via llama.cpp, concurrency 2, up to 2 attempts per task), "
        "started from a fresh directory: process start, model load, routing, generation, "
        "grading (code in the sandbox), recording and the summary.",
        "",
        "| metric | value |",
        "| --- | --- |",
        f"| wall time, whole command | {wall_s:.0f} s |",
        f"| wall time inside the run | {summary['wall_s']:.0f} s |",
        f"| tasks / succeeded | {summary['tasks']} / {summary['succeeded']} |",
        f"| simulated | {summary['simulated']} |",
        "",
        "| agent | task type | tasks | success | mean quality | p50 ms | p95 ms | tokens |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r['agent']} | {r['task_type']} | {r['tasks']} | {r['success_rate']:.0%} | "
        f"{r['mean_quality']:.2f} | {r['p50_latency_ms']:.0f} | {r['p95_latency_ms']:.0f} | "
        f"{r['tokens']} |"
        for r in rows
    ]
    lines += [
        "",
        "A 135M model is weak: the success rates are what it really achieves on these graders.",
        "Latency is per task as the arbiter sees it, including waiting for the one shared model.",
    ]
    body = "\n".join(lines)
    write_section("Main job: agency run", body)
    print(body)


if __name__ == "__main__":
    main()
