"""Benchmark data pool: ingest rate, query latency, anonymization cost, storage, PII recall.

Run: python benchmarks/bench_pool.py  (PostgreSQL figures when AGENCY_TEST_POSTGRES_URL is set).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
from presidio_analyzer.predefined_recognizers import PhoneRecognizer
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pool"))
from pool_records import make_point  # noqa: E402

from agent_agency.collector import collector_paused  # noqa: E402
from agent_agency.data_point import DataPoint
from agent_agency.pool import schema  # noqa: E402
from agent_agency.pool.anonymize import Anonymizer  # noqa: E402
from agent_agency.pool.engine import RawJson  # noqa: E402
from agent_agency.pool.ingest_workers import (  # noqa: E402
    AHEAD_PER_WORKER,
    commit_in_order,
    ingest_batches,
    prepare_as_worker,
)
from agent_agency.pool.point_inserts import insert_points  # noqa: E402
from agent_agency.pool.prepare import PreparedBatch, data_point_row  # noqa: E402
from agent_agency.pool.queries import get_agent_statistics  # noqa: E402
from agent_agency.pool.settings import PoolSettings  # noqa: E402
from agent_agency.pool.store import Store  # noqa: E402
from agent_agency.pool.validation import (  # noqa: E402
    RawPoint,
    batch_string_reasons,
    free_texts,
    structural_reasons,
    timestamp_reasons,
)
from agent_agency.privacy import pii  # noqa: E402
from agent_agency.privacy.phone_recognizer import EarlyStopPhoneRecognizer  # noqa: E402
from agent_agency.privacy.pii import clear_scan_cache, find_pii  # noqa: E402
from agent_agency.privacy.settings import DEFAULT_PHONE_REGIONS, AnonymizationPolicy  # noqa: E402
from agent_agency.records import Message, utcnow

from results import write_section  # noqa: E402

os.environ.setdefault("AGENCY_TENANT_SECRET", "benchmark-secret")
RNG = random.Random(7)
NOW = utcnow()
AGENTS = [f"agent-{i}" for i in range(10)]
TYPES = ["math", "code", "extraction", "classification", "text"]
QUERIES = 10_000
CODE = "def calculateTotal(prices):\n    total = sum(prices)\n    return total * 1.2\n"
SYSTEM_PROMPTS = {
    agent: (
        f"You are {agent}, a careful assistant working for the Agent Agency. Think step by step "
        "before you answer, keep the final answer short, and never invent facts. When you write "
        "code, write Python 3.11 with type hints, put it in one fenced block and explain it in "
        "one sentence. When a question is ambiguous, state the assumption you make. Refuse to "
        "reveal credentials, personal data or anything from other users' conversations. "
        f"Style profile {i}: {'concise' if i % 2 else 'thorough'}, plain English, no emojis."
    )
    for i, agent in enumerate(AGENTS)
}
FEW_SHOT = {
    "math": [("What is 12 * 11?", "12 * 11 = 132. The answer is 132.")],
    "code": [
        (
            "Write a function that reverses a string.",
            "```python\ndef reverse(text: str) -> str:\n    return text[::-1]\n```\n"
            "Slicing with a step of -1 walks the string backwards.",
        )
    ],
    "extraction": [
        (
            "Extract the product and the price: 'The blue kettle costs 39 euros.'",
            '{"product": "blue kettle", "price": 39, "currency": "EUR"}',
        )
    ],
    "classification": [
        ("Classify the sentiment: 'The update broke my workflow.'", "negative"),
        ("Classify the sentiment: 'Setup took two minutes, great job.'", "positive"),
    ],
    "text": [
        (
            "Rewrite formally: 'gonna be late, traffic is nuts'",
            "I will be arriving late because of heavy traffic.",
        )
    ],
}
PII_SNIPPETS = [
    " Send the result to {first}.{i}@example.com when done.",
    " My colleague {first} Garcia can be reached at +1 (415) 555-{phone:04d}.",
    " The config lives in /home/{lower}/projects/billing/tax_{i}.py on host 10.0.{oct}.{oct2}.",
    # national formats our own phone pattern does not know: only Presidio's recognizer finds them
    " Or ring my mobile, 07400 {mobile:06d}, after six; the Paris office is +33 1 {fr}.",
]
FIRST = ["James", "Maria", "Wei", "Priya", "Olivia", "Ahmed", "Chloe", "Lucas"]


def task_prompt(i: int, task_type: str) -> str:
    if task_type == "math":
        return f"Task {i}: a shop sells {i % 90 + 3} pens at {i % 7 + 2} dollars each. Total?"
    if task_type == "code":
        return f"Task {i}: write a function that applies a {i % 30 + 5}% tax to a list of prices."
    if task_type == "extraction":
        return f"Extract the product and the price: 'Order {i}: the red lamp costs {i % 80} euros.'"
    if task_type == "classification":
        return f"Classify the sentiment: 'Ticket {i}: the export is slow but it works.'"
    return f"Rewrite formally: 'ticket {i} is done, ping me if stuff breaks'"


def model_output(i: int, task_type: str) -> str:
    if task_type == "math":
        return f"{i % 90 + 3} pens at {i % 7 + 2} dollars is {(i % 90 + 3) * (i % 7 + 2)} dollars."
    if task_type == "code":
        return f"```python\n{CODE}```\nThe total for [10, 20] is {36 + i % 7}."
    if task_type == "extraction":
        return f'{{"product": "red lamp", "price": {i % 80}, "currency": "EUR"}}'
    if task_type == "classification":
        return "neutral"
    return f"Ticket {i} has been completed. Please let me know if any problems arise."


def realistic_point(i: int, pii: bool) -> DataPoint:
    """An arbiter-like point: system prompt, few-shot turns, the task prompt, the model's answer.

    With `pii`, the task prompt carries one of four snippets (e-mail; name and phone; file path
    and IP address; national-format phone numbers) and, for every third such point, the answer
    repeats it.
    """
    agent, task_type = AGENTS[i % 10], TYPES[i % 5]
    prompt = task_prompt(i, task_type)
    answer = model_output(i, task_type)
    if pii:
        first = FIRST[i % len(FIRST)]
        snippet = PII_SNIPPETS[(i // 10) % len(PII_SNIPPETS)].format(
            first=first,
            lower=first.lower(),
            i=i,
            phone=i % 10_000,
            oct=i % 250,
            oct2=i % 199,
            mobile=100_000 + i % 900_000,
            fr=f"{i % 90 + 10} {i % 89 + 10} {i % 83 + 10} {i % 79 + 10}",
        )
        prompt += snippet
        if (i // 10) % 3 == 0:
            answer += " I noted:" + snippet
    point = make_point(
        f"p{i}",
        agent=agent,
        task_type=task_type,
        prompt=prompt,
        output=answer,
        quality=0.5 + (i % 50) / 100,
        when=NOW - timedelta(minutes=i),
    )
    conversation = [Message(role="system", content=SYSTEM_PROMPTS[agent])]
    for question, reply in FEW_SHOT[task_type]:
        conversation.append(Message(role="user", content=question))
        conversation.append(Message(role="assistant", content=reply))
    conversation.append(Message(role="user", content=prompt))
    conversation.append(Message(role="assistant", content=answer))
    [attempt] = point.trajectory  # one model call, answering
    turn = attempt.turns[0].model_copy(update={"response": len(conversation) - 1})
    attempt = attempt.model_copy(update={"messages": conversation, "turns": [turn]})
    return point.model_copy(update={"trajectory": [attempt]})


def point_texts(n: int) -> list[str]:
    """`n` points as JSON lines (what `agency pool ingest` reads); every tenth carries PII."""
    return [realistic_point(i, pii=i % 10 == 0).model_dump_json() for i in range(n)]


PIPELINE_WORKERS = [2, 4, 6, 8]  # `bench_pipeline`: as many as `--workers` might start
TEXT_POINTS = 60_000  # long enough that the workers' start-up does not decide the rate
REPEATS = 3  # ingest runs per case; the median by wall clock is reported (the cores are shared)


def bench_ingest(
    url: str, n: int, batch: int, settings: PoolSettings | None = None
) -> list[tuple[float, float]]:
    """(points/s by wall clock, points/s by process CPU time) with the default policy, then for
    points already anonymized: of `REPEATS` runs, the one with the median wall-clock rate. CPU
    time is reported because the machine's 2 cores are shared."""
    points = [realistic_point(i, pii=i % 10 == 0) for i in range(n)]
    rates = []
    for pre_anonymized in (False, True):
        batch_points = points
        if pre_anonymized:
            anonymizer = Anonymizer((settings or PoolSettings()).anonymization, b"benchmark-secret")
            batch_points = [anonymizer.anonymize(p) for p in points]
        runs = sorted(_ingest_once(url, settings, batch_points, batch) for _ in range(REPEATS))
        rates.append(runs[REPEATS // 2])
    return rates


def _ingest_once(
    url: str, settings: PoolSettings | None, points: list[DataPoint], batch: int
) -> tuple[float, float]:
    clear_scan_cache()  # no scan cached from an earlier run (a new store: no anonymizer cache)
    with Store.open(url, settings) as store:
        warm_up = [realistic_point(len(points) + i, pii=i % 2 == 0) for i in range(10)]
        store.ingest(warm_up, strict=False)  # the connection and caches, not the points measured
        pii.presidio_analyzer(store.anonymizer.phone_regions)  # loaded once per process
        with store.engine.begin() as connection:
            connection.execute(schema.data_points.delete())
        start, start_cpu = time.perf_counter(), time.process_time()
        for offset in range(0, len(points), batch):
            report = store.ingest(points[offset : offset + batch], strict=False)
            assert report.quarantined == 0, report.reasons
            assert report.accepted == len(points[offset : offset + batch])
        wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    return len(points) / wall, len(points) / cpu


@dataclass(frozen=True)
class TextIngestRun:
    """One `ingest_batches` run over points as JSON text (`bench_ingest_text`)."""

    overall: float  # points/s from the call to its end: workers' start and stop included
    steady: float  # points/s after start-up: from the report of batch N (N processes preparing;
    # the workers start together, so by then each has delivered its first batch) to the last
    to_first: float  # seconds to the first report (the workers' start-up)
    to_stop: float  # seconds from the last report to the end (stopping the workers)
    cpu_us: float  # µs of this process's CPU per point (with workers: committing only)


def text_run_rows(runs: dict[int, TextIngestRun], committing: str) -> list[str]:
    """A markdown table of `bench_ingest_text` runs by number of processes preparing."""
    return [
        "| processes preparing | points/s after start-up | to the first report "
        f"| to stop the workers | points/s overall | CPU µs per point, {committing} |",
        "| --- | --- | --- | --- | --- | --- |",
    ] + [
        f"| {'this one' if n == 1 else f'{n} workers'} | {run.steady:,.0f} | "
        f"{run.to_first:.1f} s | {run.to_stop:.2f} s | {run.overall:,.0f} | {run.cpu_us:.0f} |"
        for n, run in runs.items()
    ]


def bench_ingest_text(
    tmp: Path, texts: list[str], batch: int, workers: int, repeats: int = REPEATS
) -> TextIngestRun:
    """Points as JSON text (`point_texts`) through `ingest_batches`: of `repeats` runs, the one
    with the median rate after start-up."""
    batches = [texts[offset : offset + batch] for offset in range(0, len(texts), batch)]
    runs = [
        _ingest_text_once(tmp / f"text-{workers}-{run}.db", batches, workers)
        for run in range(repeats)
    ]
    return sorted(runs, key=lambda run: run.steady)[repeats // 2]


def _ingest_text_once(path: Path, batches: list[list[str]], workers: int) -> TextIngestRun:
    n, batch = sum(len(texts) for texts in batches), len(batches[0])
    clear_scan_cache()
    with Store.open(f"sqlite:///{path}") as store:
        if workers == 1:  # loaded once per process, as for bench_ingest
            pii.presidio_analyzer(store.anonymizer.phone_regions)
        start, start_cpu = time.perf_counter(), time.process_time()
        reported = []
        # every batch to the workers: the pipeline's own rate after start-up
        ingested = ingest_batches(
            store, batches, workers=workers, prepare_here_while_starting=False
        )
        for report in ingested:
            assert report.quarantined == 0, report.reasons
            reported.append(time.perf_counter())
        end, cpu = time.perf_counter(), time.process_time() - start_cpu
    if len(reported) <= workers:
        raise ValueError(f"{len(batches)} batches: too few to measure {workers} processes")
    # Counted from the first report, the batches the other workers prepared during start-up
    # would count without the time they took.
    started = reported[workers - 1]
    return TextIngestRun(
        overall=n / (end - start),
        steady=(n - workers * batch) / (reported[-1] - started),
        to_first=reported[0] - start,
        to_stop=end - reported[-1],
        cpu_us=cpu / n * 1e6,
    )


def bench_cli_ingest(tmp: Path, texts: list[str], repeats: int = REPEATS) -> tuple[float, str]:
    """`agency pool ingest FILE` with its defaults (`--workers auto`) on `texts` as JSON lines:
    points/s by wall clock for the whole command (interpreter start, imports and workers
    included), of `repeats` runs the median, and the line saying how many workers it started."""
    agency = shutil.which("agency")
    if agency is None:
        raise RuntimeError("the agency command is not installed: pip install -e .")
    n, source = len(texts), tmp / "cli-points.jsonl"
    source.write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    runs = []
    workers_line = ""
    for run in range(repeats):
        start = time.perf_counter()
        command = [agency, "pool", "ingest", str(source), "--db", str(tmp / f"cli-{run}.db")]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
        runs.append(n / (time.perf_counter() - start))
        assert f"{n} accepted, 0 duplicates, 0 quarantined" in done.stdout, done.stdout
        match = re.search(r"preparing batches in \d+ worker processes", done.stdout)
        workers_line = match.group() if match else "no workers"
    return sorted(runs)[repeats // 2], workers_line


def prepared_batches(store: Store, texts: list[str], batch: int) -> tuple[list[bytes], float]:
    """`texts` in batches prepared as a worker prepares them (bound for SQLite) and pickled as it
    sends them, with the µs of CPU per point preparing took."""
    start_cpu = time.process_time()
    prepared = [
        pickle.dumps(
            prepare_as_worker(
                texts[offset : offset + batch],
                store.anonymizer,
                store.settings,
                bind_for_sqlite=True,
            ),
            protocol=pickle.HIGHEST_PROTOCOL,
        )
        for offset in range(0, len(texts), batch)
    ]
    return prepared, (time.process_time() - start_cpu) / len(texts) * 1e6


def bench_commit_ceiling(
    tmp: Path, texts: list[str], batch: int, repeats: int = REPEATS
) -> tuple[float, float, float]:
    """What bounds `ingest_batches` when there are cores enough for its workers: points/s at
    which this process commits batches already prepared as a worker prepares them (bound for
    SQLite, pickled; unpickled and committed in the timed loop), with µs of CPU per point; and
    µs of CPU per point to prepare them (one worker's cost). Of `repeats` runs, the median by
    commit rate."""
    n, runs = len(texts), []
    for run in range(repeats):
        clear_scan_cache()
        with Store.open(f"sqlite:///{tmp / f'ceiling-{run}.db'}") as store:
            pii.presidio_analyzer(store.anonymizer.phone_regions)
            prepared, prepare_us = prepared_batches(store, texts, batch)
            start, start_cpu = time.perf_counter(), time.process_time()
            for message in prepared:
                with collector_paused():
                    assert store.commit(pickle.loads(message)).accepted == batch
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        runs.append((n / wall, cpu / n * 1e6, prepare_us))
    return sorted(runs)[repeats // 2]


_PREPARED: list[bytes] = []  # in a worker of `bench_pipeline`: the batches it hands back


def _hold_prepared(path: str) -> None:
    global _PREPARED
    _PREPARED = pickle.loads(Path(path).read_bytes())


def _prepared_after(points: list[RawPoint], number: int, seconds: float) -> PreparedBatch:
    """Stands in for a worker preparing batch `number` (`points`): as long as that took, then
    the batch as it was prepared."""
    time.sleep(seconds)
    prepared: PreparedBatch = pickle.loads(_PREPARED[number])
    return prepared


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def bench_pipeline(
    tmp: Path, texts: list[str], batch: int, workers: list[int], prepare_us: float
) -> dict[int, float]:
    """Points/s after start-up (as `bench_ingest_text` counts them) that `ingest_batches`'s pipeline
    (`commit_in_order`: batches sent to worker processes, prepared batches received and
    committed in order) sustains with N workers each on a core of its own, on fewer cores: each
    worker's preparation is replaced by a sleep as long as preparing took (`prepare_us` per
    point) and hands back the batch prepared beforehand. Of `REPEATS` runs, the median."""
    batches = [texts[offset : offset + batch] for offset in range(0, len(texts), batch)]
    source = tmp / "prepared.pickle"
    with Store.open(f"sqlite:///{tmp / 'pipeline-source.db'}") as store:
        source.write_bytes(pickle.dumps(prepared_batches(store, texts, batch)[0]))
    seconds = prepare_us * batch / 1e6
    rates = {}
    for n in workers:
        runs = [
            _pipeline_once(tmp / f"pipeline-{n}-{run}.db", source, batches, n, seconds)
            for run in range(REPEATS)
        ]
        rates[n] = sorted(runs)[REPEATS // 2]
    return rates


def _pipeline_once(
    path: Path, source: Path, batches: list[list[str]], workers: int, seconds: float
) -> float:
    context = multiprocessing.get_context("spawn")
    with (
        ProcessPoolExecutor(
            workers, mp_context=context, initializer=_hold_prepared, initargs=(str(source),)
        ) as executor,
        Store.open(f"sqlite:///{path}") as store,
    ):
        while len(set(executor.map(_pid_after, [0.2] * workers))) < workers:
            pass  # every worker started and holding the batches before the clock
        numbers = itertools.count()

        def submit(points: list[RawPoint], _: date | None) -> Future[PreparedBatch]:
            return executor.submit(_prepared_after, points, next(numbers), seconds)

        reported = []
        for report in commit_in_order(store, batches, submit, AHEAD_PER_WORKER * workers):
            assert report.accepted == len(batches[0]), report
            reported.append(time.perf_counter())
    # from the report by which each worker delivered its first batch, as `_ingest_text_once`
    measured = sum(len(batch) for batch in batches[workers:])
    return measured / (reported[-1] - reported[workers - 1])


def bench_storage(tmp: Path, n: int) -> float:
    url = f"sqlite:///{tmp / 'storage.db'}"
    with Store.open(url) as store:
        store.ingest([realistic_point(i, pii=False) for i in range(n)])
        with store.engine.begin() as connection:
            connection.execute(schema.data_points.update().values(tier="warm"))
        with store.engine.connect() as connection:
            connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
            pages = connection.execute(text("PRAGMA page_count")).scalar_one()
            size = connection.execute(text("PRAGMA page_size")).scalar_one()
    return float(pages * size / n)


def bench_query(url: str, n: int) -> tuple[float, float, float, float]:
    """p50/p99 ms of get_agent_statistics(agent, type, 7 days) over n points: wall, then CPU."""
    template = realistic_point(0, pii=False)
    row = data_point_row(template, "warm")
    payload = RawJson(template.model_dump_json())
    with Store.open(url) as store:
        with store.engine.begin() as connection:
            for offset in range(0, n, 50_000):
                rows = []
                for i in range(offset, min(n, offset + 50_000)):
                    rows.append(
                        row
                        | {
                            "id": f"q{i}",
                            "agent": AGENTS[i % 10],
                            "task_type": TYPES[(i // 10) % 5],
                            "timestamp": NOW - timedelta(seconds=i * 7.776),  # spread on 90 days
                            "quality": (i % 100) / 100,
                            "payload": payload,
                        }
                    )
                connection.execute(schema.data_points.insert(), rows)
        if store.engine.dialect.name == "postgresql":
            with store.engine.connect() as connection:
                connection.execute(text("ANALYZE data_points"))
        timings, cpu = [], []
        for i in range(QUERIES):
            start, start_cpu = time.perf_counter(), time.process_time()
            stats = get_agent_statistics(
                store, AGENTS[i % 10], TYPES[i % 5], time_range=timedelta(days=7)
            )
            timings.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
            assert stats.n > 0
    return (
        float(np.percentile(timings, 50)),
        float(np.percentile(timings, 99)),
        float(np.percentile(cpu, 50)),
        float(np.percentile(cpu, 99)),
    )


def bench_anonymization(n: int) -> tuple[float, float, float]:
    """p50 ms per sample over a corpus with 10% PII samples; p50 of PII samples; p99 overall."""
    policy = AnonymizationPolicy(rename_identifiers=True)
    anonymizer = Anonymizer(policy, b"benchmark-secret")
    samples = [realistic_point(i, pii=i % 10 == 0) for i in range(n)]
    anonymizer.anonymize(samples[0])
    timings, pii_timings = [], []
    for i, sample in enumerate(samples):
        start = time.perf_counter()
        anonymizer.anonymize(sample)
        elapsed = (time.perf_counter() - start) * 1000
        timings.append(elapsed)
        if i % 10 == 0:
            pii_timings.append(elapsed)
    return (
        float(np.percentile(timings, 50)),
        float(np.percentile(pii_timings, 50)),
        float(np.percentile(timings, 99)),
    )


LAST = ["Garcia", "Nguyen", "Okafor", "Smith", "Kowalski", "Haddad", "Larsen", "Brown"]


def luhn_card() -> str:
    digits = [4] + [RNG.randrange(10) for _ in range(14)]
    total = 0
    for index, value in enumerate(reversed(digits)):
        doubled = value * 2 if index % 2 == 0 else value
        total += doubled - 9 if doubled > 9 else doubled
    digits.append((10 - total % 10) % 10)
    raw = "".join(map(str, digits))
    return " ".join(raw[i : i + 4] for i in range(0, 16, 4))


def pii_corpus(per_type: int) -> dict[str, list[tuple[str, str]]]:
    """(text, planted value) per PII type, in prose and in code."""
    makers: dict[str, Callable[[], str]] = {
        "email": lambda: (
            f"{RNG.choice(FIRST).lower()}.{RNG.randrange(999)}@mail{RNG.randrange(9)}.com"
        ),
        "phone": lambda: RNG.choice(
            [
                f"+1 ({RNG.randrange(200, 999)}) {RNG.randrange(200, 999)}-"
                f"{RNG.randrange(1000, 9999)}",
                f"{RNG.randrange(200, 999)}-{RNG.randrange(200, 999)}-{RNG.randrange(1000, 9999)}",
                f"+44 20 {RNG.randrange(1000, 9999)} {RNG.randrange(1000, 9999)}",
            ]
        ),
        "credit card": luhn_card,
        "ip address": lambda: ".".join(str(RNG.randrange(1, 255)) for _ in range(4)),
        "person name": lambda: f"{RNG.choice(FIRST)} {RNG.choice(LAST)}",
        "street address": lambda: (
            f"{RNG.randrange(1, 999)} {RNG.choice(LAST)} "
            f"{RNG.choice(['Street', 'Avenue', 'Road', 'Lane'])}"
        ),
        "file path": lambda: f"/home/{RNG.choice(FIRST).lower()}/src/{RNG.choice(LAST).lower()}.py",
    }
    prose = [
        "Please forward the report to {v} before Friday.",
        "The customer, reachable via {v}, asked for a refund.",
        "Note: {v} was mentioned in the ticket.",
    ]
    code = ['contact = "{v}"\nprint(contact)', "# owner: {v}\nx = 1", 'log("{v}")']
    corpus: dict[str, list[tuple[str, str]]] = {}
    for name, make in makers.items():
        items = []
        for i in range(per_type):
            value = make()
            template = (prose if i % 2 == 0 else code)[i % 3]
            items.append((template.format(v=value), value))
        corpus[name] = items
    return corpus


def bench_recall(per_type: int) -> dict[str, float]:
    recall = {}
    for name, items in pii_corpus(per_type).items():
        found = 0
        for text_, value in items:
            start = text_.index(value)
            end = start + len(value)
            if any(f.start <= start and f.end >= end for f in find_pii(text_)):
                found += 1
        recall[name] = found / len(items)
    return recall


def bench_presidio_share(n: int) -> tuple[float, float]:
    """How many distinct strings per ingested point Presidio is asked about (a trigger outside
    our own findings), and the median ms of one such Presidio call."""
    strings: set[str] = set()
    for i in range(n):
        strings.update(free_texts(realistic_point(i, pii=i % 10 == 0)))
    asked = [
        text_
        for text_ in strings
        if pii._ANY_TRIGGER.search(pii.text_outside(text_, pii._own_scan(text_)))
    ]
    clear_scan_cache()
    timings = []
    for text_ in asked[:200]:
        start = time.perf_counter()
        pii._presidio_findings(text_, DEFAULT_PHONE_REGIONS, pii._own_scan(text_))
        timings.append((time.perf_counter() - start) * 1000)
    return len(asked) / n, float(np.percentile(timings, 50)) if timings else 0.0


def bench_phone_recognizer(n: int) -> tuple[float, float]:
    """Median ms per text of our phone recognizer and of Presidio's own, on the benchmark's
    national-format phone snippet (the texts that reach Presidio's phone matching)."""
    texts = [realistic_point(i, pii=True).task.prompt for i in range(30, 30 + 40 * n, 40)]
    medians = []
    for recognizer in (EarlyStopPhoneRecognizer(), PhoneRecognizer()):
        timings = []
        for text_ in texts:
            start = time.perf_counter()
            recognizer.analyze(text_, ["PHONE_NUMBER"])
            timings.append((time.perf_counter() - start) * 1000)
        medians.append(float(np.percentile(timings, 50)))
    return medians[0], medians[1]


def _time_stages(store: Store, chunk: list[DataPoint], lap: _Laps) -> None:
    now, max_age = utcnow(), timedelta(days=store.settings.warm_days)
    for point in chunk:
        structural_reasons(point) + timestamp_reasons(point, now, max_age)
    lap("gates")
    views = store.anonymizer.anonymized_views(chunk)
    lap("anonymization")
    batch_string_reasons(views)
    lap("privacy gate")
    rows = [data_point_row(view, "hot") for view in views]
    lap("rows (JSON payload)")
    with store.engine.begin() as connection:
        insert_points(connection, rows)
    lap("SQLite insert + commit")


def bench_ingest_stages(n: int, batch: int) -> dict[str, float]:
    """µs of CPU per point in each stage of a default-policy ingest, run stage by stage over the
    same batches (the scan caches are cleared first, as for a fresh process): of `REPEATS` runs,
    the one with the median total."""
    points = [realistic_point(i, pii=i % 10 == 0) for i in range(n)]
    runs = [_stage_costs(points, batch) for _ in range(REPEATS)]
    return sorted(runs, key=lambda run: sum(run.values()))[REPEATS // 2]


def _stage_costs(points: list[DataPoint], batch: int) -> dict[str, float]:
    clear_scan_cache()
    spent = dict.fromkeys(
        ("gates", "anonymization", "privacy gate", "rows (JSON payload)", "SQLite insert + commit"),
        0.0,
    )
    with (
        tempfile.TemporaryDirectory() as tmp_name,
        Store.open(f"sqlite:///{tmp_name}/stages.db") as store,
    ):
        pii.presidio_analyzer(store.anonymizer.phone_regions)  # loaded once, not measured
        for offset in range(0, len(points), batch):
            with collector_paused():  # as Store.ingest runs a batch
                _time_stages(store, points[offset : offset + batch], _Laps(spent))
    return {stage: seconds / len(points) * 1e6 for stage, seconds in spent.items()}


def bench_pickle(n: int) -> float:
    """µs of CPU to pickle and unpickle one point (sending it to a worker process)."""
    points = [realistic_point(i, pii=i % 10 == 0) for i in range(n)]
    start = time.process_time()
    for point in points:
        pickle.loads(pickle.dumps(point, protocol=pickle.HIGHEST_PROTOCOL))
    return (time.process_time() - start) / n * 1e6


class _Laps:
    """Adds the process CPU time since the previous lap to the named stage."""

    def __init__(self, spent: dict[str, float]) -> None:
        self._spent = spent
        self._start = time.process_time()

    def __call__(self, stage: str) -> None:
        now = time.process_time()
        self._spent[stage] += now - self._start
        self._start = now


def postgres_url() -> str | None:
    url = os.environ.get("AGENCY_TEST_POSTGRES_URL")
    if not url:
        return None
    from sqlalchemy import create_engine

    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA IF EXISTS bench_pool CASCADE"))
        connection.execute(text("CREATE SCHEMA bench_pool"))
    engine.dispose()
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options=-csearch_path%3Dbench_pool"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sqlite_rates = bench_ingest(f"sqlite:///{tmp / 'ingest.db'}", 20_000, 1000)
        stages = bench_ingest_stages(20_000, 1000)  # right after: the machine's speed drifts
        us_only = PoolSettings(pii_phone_regions=["US"])
        us_rates = bench_ingest(f"sqlite:///{tmp / 'ingest_us.db'}", 20_000, 1000, us_only)
        texts = point_texts(TEXT_POINTS)
        text_runs = {w: bench_ingest_text(tmp, texts, 1000, w) for w in (1, 2)}
        ceiling, commit_us, prepare_us = bench_commit_ceiling(tmp, texts, 1000)
        pipeline = bench_pipeline(tmp, texts, 1000, PIPELINE_WORKERS, prepare_us)
        cli_rate, cli_workers = bench_cli_ingest(tmp, texts)
        pg = postgres_url()
        pg_rates = bench_ingest(pg, 20_000, 1000) if pg else None
        per_point = bench_storage(tmp, 5_000)
        q50, q99, c50, c99 = bench_query(f"sqlite:///{tmp / 'query.db'}", 1_000_000)
        a50, a50_pii, a99 = bench_anonymization(5_000)
        recall = bench_recall(200)
        presidio_share, presidio_ms = bench_presidio_share(20_000)
        phone_ours, phone_presidio = bench_phone_recognizer(300)
        pickle_us = bench_pickle(2_000)
    sample = realistic_point(30, pii=True)
    sample_size = len(sample.model_dump_json())

    def rates(pair: list[tuple[float, float]]) -> str:
        return " / ".join(f"{wall:,.0f} ({cpu:,.0f} CPU)" for wall, cpu in pair)

    pg_cell = rates(pg_rates) if pg_rates else "not run (no server URL set)"
    text_rows = text_run_rows(text_runs, "this process")
    two_core_bound = 2e6 / (prepare_us + commit_us)  # all the CPU 2 cores give, no overhead
    pipeline_rows = [
        "| workers | would prepare (points/s) | pipeline sustained (points/s) |",
        "| --- | --- | --- |",
    ] + [f"| {n} | {n * 1e6 / prepare_us:,.0f} | {rate:,.0f} |" for n, rate in pipeline.items()]
    enough = [n for n, rate in pipeline.items() if rate >= 20_000]
    projection = (
        f"From {enough[0]} workers on, the pipeline sustained 20,000 points/s: a machine with a\n"
        "free core for each of them and one for the committing process would meet the target, if\n"
        "the workers prepare there as fast as one process does alone."
        if enough
        else "With none of these worker counts did the pipeline sustain 20,000 points/s."
    )
    stage_rows = ["| stage | µs of CPU per point |", "| --- | --- |"] + [
        f"| {stage} | {micros:.0f} |" for stage, micros in stages.items()
    ]
    stage_rows.append(f"| total | {sum(stages.values()):.0f} |")
    rows = [
        "| metric | value | target |",
        "| --- | --- | --- |",
        f"| ingest SQLite, default policy (10% PII) / already anonymized, points/s | "
        f"{rates(sqlite_rates)} | ≥ 20,000 |",
        f"| same, `pool.pii_phone_regions: [US]` (not the default) | {rates(us_rates)} | |",
        f"| ingest PostgreSQL, same two cases, points/s | {pg_cell} | |",
        f"| get_agent_statistics (agent, type, 7 days), 1M points, p50 / p99 wall | "
        f"{q50:.2f} / {q99:.2f} ms | p99 < 5 ms |",
        f"| same, p50 / p99 CPU time per call | {c50:.2f} / {c99:.2f} ms | |",
        f"| anonymization per sample, p50 (all) / p50 (PII samples) / p99 | "
        f"{a50:.2f} / {a50_pii:.2f} / {a99:.2f} ms | p50 < 2 ms |",
        f"| storage per warm data point with conversation (SQLite file) | "
        f"{per_point / 1024:.2f} KB | ≤ 10 KB |",
    ]
    recall_rows = ["| PII type | recall |", "| --- | --- |"] + [
        f"| {name} | {value:.1%} |" for name, value in recall.items()
    ]
    body = f"""
**Ingest.** 20,000 points shaped like the arbiter's records, ingested in batches of 1,000
through the full pipeline (structural gates, anonymization with the default policy, the privacy
gate, one transaction per batch). Each point is a full `DataPoint` (about
{sample_size / 1024:.1f} KB of JSON) whose conversation is: the agent's system prompt (~480
characters, one per agent, 10 agents), the task type's few-shot turns (1–2 user/assistant pairs,
5 task types), the task prompt (unique per point) and the model's answer (unique: arithmetic, a
fenced Python block, a JSON object, a label or a formal sentence); `task.prompt` and
`execution.final_output` repeat the last two. 10% of points carry PII in the prompt, in turn one
of: an e-mail address; a full name and a phone number; a home-directory file path and an IPv4
address; a GB mobile and a Paris number in national/international formats our own phone pattern
does not know; for a third of those the answer repeats it. "Already anonymized" points were
anonymized before: ingest anonymizes them again (a point's own record of a policy is not trusted),
finding no PII left, and they pass every gate. The privacy gate checks every string of a point: its
free text and its ids, names and tool call arguments. Rates are given by wall clock
and, in parentheses, by the process's CPU time (2 cores shared with other work), for the median
of {REPEATS} runs by wall clock.

A batch is anonymized at once: each distinct string is cleaned once per batch (a batch-local
dict; system prompts and few-shot turns repeat in every point) and checked once by the privacy
gate; on SQLite the rows go through one DBAPI executemany with each column's own SQLAlchemy bind
processor, on PostgreSQL through one COPY into a staging table and one INSERT … SELECT … ON
CONFLICT DO NOTHING (a test checks the stored rows equal the point-at-a-time pipeline's, on
SQLite and PostgreSQL). Scans are cached per distinct string (bounded LRU, 4,096 strings of
≤ 16 KB), and a string is only scanned when a cheap pre-filter, a proven superset of every
recognizer's matches (see `pool/pii.py`; property-tested), says it could hold PII. Presidio is
asked about an entity only when its trigger matches outside what our own recognizers found (what
it would find from a trigger inside them overlaps a finding redacted anyway): here
{presidio_share:.4f} distinct strings per point reach it (the national-format phone snippet,
which only Presidio's phone recognizer finds), {presidio_ms:.2f} ms (median) each,
~{presidio_ms * 1000 * presidio_share:.0f} µs averaged over every point. Its phone matching is
`EarlyStopPhoneRecognizer` (`pool/phone_recognizer.py`): on that snippet's prompts it takes
{phone_ours:.2f} ms per text (median) where Presidio's own `PhoneRecognizer` takes
{phone_presidio:.2f} ms, {phone_presidio / phone_ours:.1f}× as long.

**In one process the target is missed by {20_000 / sqlite_rates[0][0]:.1f}×** (wall clock;
{20_000 / sqlite_rates[0][1]:.1f}× by CPU time): 20,000 points/s is a budget of 50 µs per point on
one core. CPU time per point by stage, each stage timed on its own over the same 20 batches (each
batch with the garbage collector paused, as `Store.ingest` runs it; the median of {REPEATS} runs by
total, measured right after the rates above):

{chr(10).join(stage_rows)}

Every stage is single-threaded Python around C (pydantic-core, `re`, SQLite). A writer thread does
not help: SQLite releases the GIL per row step, and the thread then waits for the GIL held by the
next batch's preparation (measured: no gain). Worker processes do: `ingest_batches(store, batches,
workers=N)` (`agency pool ingest --workers N`) prepares batches of JSON text in N processes (the
gates, anonymization, the rows' JSON and their SQLite parameters) while this one only runs each
batch's INSERT and commit, in order. {TEXT_POINTS:,} points as JSON text, batches of 1,000, the
median of {REPEATS} runs; "after start-up" counts from the report by which each process preparing
had delivered a batch to the last report (the workers start together: from the first report, the
batches the others prepared meanwhile would count without the time they took). Here every batch
goes to the workers (`prepare_here_while_starting=False`); by default this process also prepares
and commits batches until the first worker has started where it has a core besides the workers'
(not on 2 cores with 2 workers):

{chr(10).join(text_rows)}

The command a user runs, `agency pool ingest FILE` with its defaults (`--workers auto`; it said
"{cli_workers}"), ingests the same {TEXT_POINTS:,} lines from a file at **{cli_rate:,.0f}
points/s** by wall clock for the whole command, interpreter start, imports and the workers' start
included (median of {REPEATS} runs).

Here the workers and the committing process share 2 cores: the rate is bounded by the total CPU a
point costs. Where there are cores enough, the bound is the committing process. Measured on its
own (the same points prepared beforehand exactly as a worker prepares them, then unpickled and
committed in the timed loop; median of {REPEATS} runs), it commits **{ceiling:,.0f} points/s**
({commit_us:.0f} µs of CPU per point). Preparing costs {prepare_us:.0f} µs of CPU per point,
{1e6 / prepare_us:,.0f} points/s per worker core.
The same two costs bound what 2 workers reach here, where the three processes share 2 cores: at
most 2 × 10⁶ / ({prepare_us:.0f} + {commit_us:.0f}) = {two_core_bound:,.0f} points/s; measured
above, {text_runs[2].steady:,.0f} after start-up
({text_runs[2].steady / two_core_bound:.0%} of that bound).

Whether the committing process keeps up with more workers than there are cores here is measured
with workers that do not compute: each waits as long as preparing its batch took
({prepare_us:.0f} µs per point) and hands back that batch as prepared beforehand, so the batches
travel to and from the workers and are committed as in `ingest_batches` (`commit_in_order`, at
most {AHEAD_PER_WORKER} batches per worker ahead of the commits). Points/s after start-up, the
median of {REPEATS} runs:

{chr(10).join(pipeline_rows)}

{projection} That is a projection: `bench_pool_cores.py` measures ingest where there are more
cores (section "Benchmark data pool: ingest with more cores"). Records built in
the ingesting process (`DataPoint` objects) are not sent to workers: pickling one there and
back costs {pickle_us:.0f} µs of CPU, about as much as preparing it.

`pool.pii_phone_regions` narrows the regions; with `[US]` the rate is in the table. It is not
the default because national formats of the other regions are then missed: measured on
`phonenumbers`' example numbers, GB mobile (07400 123456), DE mobile (01512 3456789), FR
(01 23 45 67 89, 06 12 34 56 78), IN (081234 56789) and BR mobile ((11) 96123-4567) are found only
by their own regions (or by GB/DE/IN/BR), not by our recognizer; international numbers with a
+country code, spaced (+33 1 23 45 67 89) or not (+33123456789), are found under any region, and
US/CA, GB landline, DE landline, IL and BR landline national formats are also caught by our own
phone pattern. The benchmark's recall below is 100% with either setting (its phone corpus is US
and +44 numbers).

**Query.** 1,000,000 rows over 90 days, 10 agents × 5 task types, {QUERIES:,} queries (agent,
task type, last 7 days: ~1,600 matching rows each). The sums come from one statement reading
only the covering index `ix_data_points_agent_type_time_stats` plus the cold tier's daily rows.
Anonymization: policy with every rule on (identifier renaming included).

{chr(10).join(rows)}

PII recall on a generated corpus (200 samples per type, half in prose, half in code strings
and comments): a value counts as found when one finding covers it completely.

{chr(10).join(recall_rows)}

Person names come from our own recognizer (honorifics, a list of common first names followed by
a capitalized word, "my name is …"): Presidio's regex-only mode has no PERSON recognizer, so names
outside that list are missed in real text.
"""
    write_section("Benchmark data pool", body)
    print(body)


if __name__ == "__main__":
    started = datetime.now(UTC)
    main()
    print(f"took {(datetime.now(UTC) - started).total_seconds():.0f} s")
