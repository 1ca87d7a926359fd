"""Benchmark data pool: ingest rate, query latency, anonymization cost, storage, PII recall.

Run: python benchmarks/bench_pool.py  (PostgreSQL figures when AGENCY_TEST_POSTGRES_URL is set).
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pool"))
from pool_records import make_point  # noqa: E402
from results import write_section  # noqa: E402

from agent_agency.config import AnonymizationPolicy  # noqa: E402
from agent_agency.pool import schema  # noqa: E402
from agent_agency.pool.anonymize import Anonymizer  # noqa: E402
from agent_agency.pool.engine import RawJson  # noqa: E402
from agent_agency.pool.pii import find_pii  # noqa: E402
from agent_agency.pool.queries import get_agent_statistics  # noqa: E402
from agent_agency.pool.store import Store, data_point_row  # noqa: E402
from agent_agency.records import DataPoint, Message, utcnow  # noqa: E402

os.environ.setdefault("AGENCY_TENANT_SECRET", "benchmark-secret")
RNG = random.Random(7)
NOW = utcnow()
AGENTS = [f"agent-{i}" for i in range(10)]
TYPES = ["math", "code", "extraction", "classification", "text"]
CODE = "def calculateTotal(prices):\n    total = sum(prices)\n    return total * 1.2\n"


def realistic_point(i: int, pii: bool) -> DataPoint:
    prompt = f"Task {i}: write a function that applies a 20% tax to a list of prices."
    if pii:
        prompt += f" Send it to user{i}@example.com, config in /home/u{i}/proj/tax.py"
    answer = f"```python\n{CODE}```\nThe total for [10, 20] is {36 + i % 7}."
    point = make_point(
        f"p{i}",
        agent=AGENTS[i % 10],
        task_type=TYPES[i % 5],
        prompt=prompt,
        output=answer,
        quality=0.5 + (i % 50) / 100,
        when=NOW - timedelta(minutes=i),
    )
    conversation = [
        Message(role="system", content="You are a careful assistant. Think step by step."),
        Message(role="user", content=prompt),
        Message(role="assistant", content=answer),
    ]
    return point.model_copy(
        update={"task": point.task.model_copy(update={"conversation": conversation})}
    )


def bench_ingest(url: str, n: int, batch: int) -> tuple[float, float]:
    """(points/s with the default policy, points/s for points already anonymized)."""
    points = [realistic_point(i, pii=i % 10 == 0) for i in range(n)]
    rates = []
    for pre_anonymized in (False, True):
        with Store.open(url) as store:
            with store.engine.begin() as connection:
                connection.execute(schema.data_points.delete())
            batch_points = points
            if pre_anonymized:
                batch_points = [store.anonymizer.anonymize(p) for p in points]
            store.ingest(batch_points[:10])  # warm up Presidio and the connection
            with store.engine.begin() as connection:
                connection.execute(schema.data_points.delete())
            start = time.perf_counter()
            for offset in range(0, n, batch):
                report = store.ingest(batch_points[offset : offset + batch])
                assert report.quarantined == 0, report.reasons
            rates.append(n / (time.perf_counter() - start))
    return rates[0], rates[1]


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
    return pages * size / n


def bench_query(url: str, n: int) -> tuple[float, float]:
    """p50 and p99 ms of get_agent_statistics(agent, type, last 7 days) over n stored points."""
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
        timings = []
        for i in range(2000):
            start = time.perf_counter()
            stats = get_agent_statistics(
                store, AGENTS[i % 10], TYPES[i % 5], time_range=timedelta(days=7)
            )
            timings.append((time.perf_counter() - start) * 1000)
            assert stats.n > 0
    return float(np.percentile(timings, 50)), float(np.percentile(timings, 99))


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


FIRST = ["James", "Maria", "Wei", "Priya", "Olivia", "Ahmed", "Chloe", "Lucas"]
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
    makers = {
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
        sqlite_default, sqlite_pre = bench_ingest(f"sqlite:///{tmp / 'ingest.db'}", 20_000, 1000)
        pg = postgres_url()
        pg_rates = bench_ingest(pg, 20_000, 1000) if pg else None
        per_point = bench_storage(tmp, 5_000)
        q50, q99 = bench_query(f"sqlite:///{tmp / 'query.db'}", 1_000_000)
        a50, a50_pii, a99 = bench_anonymization(5_000)
        recall = bench_recall(200)
    pg_cell = (
        f"{pg_rates[0]:,.0f} / {pg_rates[1]:,.0f}" if pg_rates else "not run (no server URL set)"
    )
    rows = [
        "| metric | value | target |",
        "| --- | --- | --- |",
        f"| ingest SQLite, default policy (10% PII) / already anonymized, points/s | "
        f"{sqlite_default:,.0f} / {sqlite_pre:,.0f} | ≥ 20,000 |",
        f"| ingest PostgreSQL, same two cases, points/s | {pg_cell} | |",
        f"| get_agent_statistics (agent, type, 7 days), 1M points, p50 / p99 | "
        f"{q50:.2f} / {q99:.2f} ms | p99 < 5 ms |",
        f"| anonymization per sample, p50 (all) / p50 (PII samples) / p99 | "
        f"{a50:.2f} / {a50_pii:.2f} / {a99:.2f} ms | p50 < 2 ms |",
        f"| storage per warm data point with conversation (SQLite file) | "
        f"{per_point / 1024:.2f} KB | ≤ 10 KB |",
    ]
    recall_rows = ["| PII type | recall |", "| --- | --- |"] + [
        f"| {name} | {value:.1%} |" for name, value in recall.items()
    ]
    body = f"""
20,000 realistic points (3-message conversation with a code block; 10% carry an e-mail and a
path) ingested in batches of 1,000 through the full pipeline (validation gates, anonymization,
one transaction per batch). "Already anonymized" points skip the anonymizer but still pass every
gate, including the privacy scan. Query: 1,000,000 rows over 90 days, 10 agents × 5 task types,
2,000 queries. Anonymization: policy with every rule on (identifier renaming included).

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
