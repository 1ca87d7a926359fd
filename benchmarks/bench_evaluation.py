"""CAWS evaluation overhead per task, agent time excluded, and audit verification throughput.

Targets (issue #3): non-code gates p50 < 50 ms; code gates in the sandbox p50 < 300 ms.

Answers are given, not generated, so only the evaluator is timed: for every built-in task the
reference answer (a correct one) and a deliberately wrong one are evaluated through
`Evaluator.evaluate` with the default gates. Code tasks run their unit tests in the sandbox and
ruff in a subprocess. The audit part appends evaluation-sized entries to a SQLite pool and times
`AuditLog.verify` over the whole chain.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from agent_agency.caws.audit import AuditLog
from agent_agency.caws.evaluator import Evaluator
from agent_agency.caws.gates import is_code_task
from agent_agency.caws.settings import EvaluationSettings
from agent_agency.pool.engine import make_engine
from agent_agency.pool.migrate import upgrade
from agent_agency.records import Evaluation, Execution, Iteration, Task
from agent_agency.tasks.suites import load_builtin

from results import write_section

NON_CODE_ROUNDS = 3
CODE_TASKS = 40
AUDIT_ENTRIES = 50_000
AUDIT_BATCH = 1000


def reference_answer(task: Task) -> str:
    reference = task.grader.reference
    if "solution" in task.metadata:
        return str(task.metadata["solution"])
    if task.grader.kind == "json-match":
        return json.dumps(reference["expected"])
    if task.grader.kind == "text-rules":
        keywords = " ".join(reference.get("required_keywords", []))
        return f"Please note the following update regarding {keywords}."
    if task.grader.kind == "label":
        return f"Answer: {reference['answer']}"
    return f"Answer: {reference['answer']}"


def wrong_answer(task: Task) -> str:
    if is_code_task(task):
        return str(task.metadata.get("original_code", "def f():\n    return None\n"))
    return "hey team, gonna say 7 lol"


async def time_evaluations(evaluator: Evaluator, tasks: list[Task]) -> list[float]:
    timings: list[float] = []
    for task in tasks:
        for output in (reference_answer(task), wrong_answer(task)):
            iteration = Iteration(
                number=1, output=output, input_tokens=120, output_tokens=60, latency_ms=900
            )
            execution = Execution(
                task_id=task.id, task_type=task.type, agent="bench", iterations=[iteration]
            )
            started = time.perf_counter()
            await evaluator.evaluate(task, execution, iteration)
            timings.append((time.perf_counter() - started) * 1000)
    return timings


def audit_throughput(sample: Evaluation) -> tuple[float, float, int]:
    payload = sample.model_dump(mode="json")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'audit.db'}"
        upgrade(url)
        engine = make_engine(url)
        log = AuditLog(engine)
        started = time.perf_counter()
        for start in range(0, AUDIT_ENTRIES, AUDIT_BATCH):
            log.append_many(
                ("evaluation", f"evaluation-{i}", payload)
                for i in range(start, start + AUDIT_BATCH)
            )
        append_rate = AUDIT_ENTRIES / (time.perf_counter() - started)
        started = time.perf_counter()
        report = log.verify()
        verify_rate = report.entries / (time.perf_counter() - started)
        assert report.ok and report.entries == AUDIT_ENTRIES, report
        engine.dispose()
    return append_rate, verify_rate, len(json.dumps(payload))


def percentiles(values: list[float]) -> tuple[float, float]:
    return float(np.percentile(values, 50)), float(np.percentile(values, 99))


def main() -> None:
    tasks = load_builtin(None, "all")
    code_tasks = [task for task in tasks if is_code_task(task)][:CODE_TASKS]
    text_tasks = [task for task in tasks if not is_code_task(task)]
    evaluator = Evaluator(EvaluationSettings())

    async def run() -> tuple[list[float], list[float], Evaluation]:
        await time_evaluations(evaluator, text_tasks[:5] + code_tasks[:2])  # warm-up
        non_code = [
            ms
            for _ in range(NON_CODE_ROUNDS)
            for ms in await time_evaluations(evaluator, text_tasks)
        ]
        code = await time_evaluations(evaluator, code_tasks)
        iteration = Iteration(number=1, output=reference_answer(code_tasks[0]))
        execution = Execution(task_id=code_tasks[0].id, task_type=code_tasks[0].type, agent="bench")
        sample = await evaluator.evaluate(code_tasks[0], execution, iteration)
        return non_code, code, sample

    non_code, code, sample = asyncio.run(run())
    append_rate, verify_rate, payload_bytes = audit_throughput(sample)
    nc50, nc99 = percentiles(non_code)
    c50, c99 = percentiles(code)
    body = f"""
Every built-in task evaluated with its default gates, once with the reference answer and once with
a wrong one (agent time excluded: answers are given). Non-code: {len(non_code)} evaluations of
{len(text_tasks)} tasks (task grader, banned phrases, format, safety with PII scan, budget).
Code: {len(code)} evaluations of {len(code_tasks)} code-editing / code-generation tasks (unit tests
in the sandbox: new network, IPC, UTS, mount and PID namespaces, a 64 MB tmpfs work directory,
rlimits, a memory cgroup per run, no_new_privs, a throw-away uid for the answer and another for
the tests, run in a supervisor process calling the answer's process through a pipe; ruff in a
subprocess; minimal-diff; safety AST scan).

| metric | p50 | p99 | target |
| --- | --- | --- | --- |
| evaluation overhead, non-code gates | {nc50:.2f} ms | {nc99:.2f} ms | p50 < 50 ms |
| evaluation overhead, code gates in the sandbox | {c50:.1f} ms | {c99:.1f} ms | p50 < 300 ms |

| audit trail (SQLite, {AUDIT_ENTRIES:,} entries of {payload_bytes:,} B) | value |
| --- | --- |
| append, batches of {AUDIT_BATCH} | {append_rate:,.0f} entries/s |
| verify whole chain | {verify_rate:,.0f} entries/s |
"""
    write_section("CAWS evaluation overhead and audit verification", body)
    print(body)


if __name__ == "__main__":
    main()
