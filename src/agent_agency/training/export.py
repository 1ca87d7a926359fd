"""Exporting a training batch from the pool: select, check the phase's prerequisites, write the
format's files and record the batch.

Two passes over the selected points, both streamed from the pool's train split
(`pool.point_stream`): the first reads what each point is from its columns (task, type, quality,
reward; the whole point only where its safety gate may have failed, or for DPO, whose pairs need
the answers), decides the batch (the format's and phase's filters, balance, preference pairs,
group advantages) and checks the prerequisites before anything is written; the second decodes
the batch's points from their stored JSON, without validating them again (ingest validated and
anonymized them: what is stored is what may leave the pool), and streams the rows to the file.
Memory holds a few fields per point, never the points.

A batch is recorded in `training_batches` (its selection and summary) with its points in
`training_batch_points`, and described by `batch.json` beside its file. Its id is derived from
the format, phase, profile, selection and point ids, so exporting the same selection again
writes the same files under the same id and records nothing new.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from agent_agency.collector import collector_paused
from agent_agency.pool import schema
from agent_agency.pool.point_stream import stream_facts, stream_payloads
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import GraderSpec, utcnow
from agent_agency.training import formats
from agent_agency.training.credit import (
    group_advantages,
    reward_after_rating,
    safety_failed,
    transitions,
)
from agent_agency.training.feedback import Feedback, latest_feedback
from agent_agency.training.formats import Format, StoredJson
from agent_agency.training.selection import (
    Selection,
    balanced,
    time_range,
    train_points,
)
from agent_agency.training_settings import PREREQUISITES, Phase, Prerequisite, TrainingSettings

DEFAULT_PHASE: dict[Format, Phase | None] = {
    "trl-sft": "sft",
    "trl-grpo": "grpo",
    "trl-dpo": "dpo",
    "verl": "grpo",
    "openrlhf": "grpo",
    "jsonl": None,
}
NEEDS_GRADER: frozenset[Format] = frozenset({"trl-grpo", "verl"})
ONE_ROW_PER_TASK: frozenset[Format] = frozenset({"trl-grpo", "verl"})  # the trainer samples
PHASE_NAMES: dict[Phase, str] = {
    "sft": "SFT",
    "turn-rl": "turn-level RL",
    "grpo": "GRPO",
    "dpo": "DPO",
}
BATCH_FILE = "batch.json"
INSERT_CHUNK = 5000


class ExportError(ValueError):
    """The export cannot be made as asked (nothing selected, prerequisites not met): the
    message says what is missing. Nothing was written."""


@dataclass(slots=True)
class _Info:
    """What the first pass keeps of a point (`answer`: for DPO only)."""

    id: str
    task_id: str
    task_type: str
    timestamp: datetime
    success: bool
    quality: float
    reward: float
    rated: bool
    answer: str | None


@dataclass(frozen=True)
class Pair:
    anchor: str  # the point whose prompt the pair uses
    chosen: str
    rejected: str


@dataclass
class Plan:
    """The batch, decided before anything is written."""

    ids: list[str]
    infos: dict[str, _Info]
    eligible: list[_Info] = field(default_factory=list)  # what the prerequisites count
    pairs: dict[str, list[Pair]] = field(default_factory=dict)
    advantages: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ExportResult:
    batch_id: str
    directory: Path
    file: Path
    rows: int
    summary: dict[str, Any]
    new: bool  # False: the same batch was exported before
    # the batch's points in the order of the rows (row i is point_ids[i], except for trl-dpo,
    # whose pairs a point may anchor several of)
    point_ids: list[str] = field(default_factory=list)


def export_batch(
    store: SqlStore,
    settings: TrainingSettings,
    *,
    format_: Format,
    out: Path,
    selection: Selection,
    phase: Phase | None = None,
    graders: Mapping[str, GraderSpec] | None = None,
    now: datetime | None = None,
    check: bool = True,
) -> ExportResult:
    """Export the batch `selection` takes in `format_` to the directory `out`. `phase` (by
    default the format's) sets the prerequisites checked, under `settings.profile`; `graders`
    maps task ids to their graders (the formats whose rows carry a reference need them).
    `ExportError` when nothing is selected or (unless `check` is False: a test's or a trial's
    small batch) the prerequisites are not met; the phase's filters apply either way."""
    phase = DEFAULT_PHASE[format_] if phase is None else phase
    with collector_paused():
        return _export(store, settings, format_, out, selection, phase, graders or {}, now, check)


def _export(
    store: SqlStore,
    settings: TrainingSettings,
    format_: Format,
    out: Path,
    selection: Selection,
    phase: Phase | None,
    graders: Mapping[str, GraderSpec],
    now: datetime | None,
    check: bool,
) -> ExportResult:
    moment = now or utcnow()
    ratings = latest_feedback(store)
    plan = plan_batch(
        store,
        settings,
        format_=format_,
        selection=selection,
        phase=phase,
        graders=graders,
        now=moment,
        check=check,
        ratings=ratings,
    )
    batch_id = _batch_id(format_, phase, settings.profile, selection, plan.ids)
    summary = _summary(plan, format_, phase, settings, selection, store)
    out.mkdir(parents=True, exist_ok=True)
    path = out / formats.file_name(format_)
    rows = _rows(store, selection, moment, plan, format_, graders, ratings, settings.gamma)
    if format_ in formats.PARQUET_FORMATS:
        written = formats.write_parquet(path, rows, formats.verl_schema())
    else:
        written = formats.write_jsonl(path, rows)
    summary["rows"] = written.rows
    document = {"id": batch_id, "file": path.name, **summary}
    (out / BATCH_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    new = _record(store, batch_id, phase, settings.profile, selection, format_, summary, plan.ids)
    return ExportResult(batch_id, out, path, written.rows, summary, new, plan.ids)


def plan_batch(
    store: SqlStore,
    settings: TrainingSettings,
    *,
    format_: Format,
    selection: Selection,
    phase: Phase | None = None,
    graders: Mapping[str, GraderSpec] | None = None,
    now: datetime | None = None,
    check: bool = True,
    ratings: Mapping[str, Feedback] | None = None,
) -> Plan:
    """What `export_batch` would export, writing nothing: `ExportError` saying what is missing
    when nothing is selected or (with `check`) the phase's prerequisites are not met."""
    phase = DEFAULT_PHASE[format_] if phase is None else phase
    requirement = None if phase is None else settings.prerequisite(phase)
    ratings = latest_feedback(store) if ratings is None else ratings
    plan = _plan(
        _first_pass(store, selection, ratings, now or utcnow(), keep_answers=format_ == "trl-dpo"),
        format_=format_,
        requirement=requirement,
        selection=selection,
        graders=graders or {},
        ratings=ratings,
        margin=settings.dpo_margin,
    )
    if check and phase is not None and requirement is not None:
        _check(plan, phase, requirement, settings.profile, format_)
    if not plan.ids:
        raise ExportError(f"{format_}: {_nothing_selected(plan)}")
    return plan


def _first_pass(
    store: SqlStore,
    selection: Selection,
    ratings: Mapping[str, Feedback],
    now: datetime,
    *,
    keep_answers: bool,
) -> list[_Info]:
    """What each selected point is. From the points' columns alone (their payloads are decoded
    only where the safety gate may have failed), unless the answers are kept (DPO)."""
    where, span = train_points(selection), time_range(selection, now)
    infos = []
    for stored in stream_facts(store.engine, where, span, payloads=keep_answers):
        if not (selection.include_failures or stored.success):
            continue
        point = None if stored.payload is None else formats.decode(stored.payload)
        rating = ratings.get(stored.id)
        reward = reward_after_rating(
            stored.reward,
            point is not None and safety_failed(point),
            None if rating is None else rating.score,
        )
        quality = stored.quality if rating is None else reward
        if quality < selection.min_quality:  # a person's rating below the bar takes it out
            continue
        infos.append(
            _Info(
                stored.id,
                stored.task_id,
                stored.task_type,
                stored.timestamp,
                stored.success,
                quality,
                reward,
                rating is not None,
                formats.final_answer(point) if keep_answers and point is not None else None,
            )
        )
    return infos


def _plan(
    infos: list[_Info],
    *,
    format_: Format,
    requirement: Prerequisite | None,
    selection: Selection,
    graders: Mapping[str, GraderSpec],
    ratings: Mapping[str, Feedback],
    margin: float,
) -> Plan:
    skipped: Counter[str] = Counter()
    eligible = []
    for info in infos:
        if requirement is not None and requirement.successes_only and not info.success:
            skipped["failed"] += 1
        elif requirement is not None and info.quality < requirement.min_quality:
            skipped["below the phase's quality"] += 1
        elif format_ in NEEDS_GRADER and info.task_id not in graders:
            skipped["task grader unknown"] += 1
        else:
            eligible.append(info)
    if selection.balance:
        chosen = balanced([(info.id, info.task_type) for info in eligible])
        skipped["balance"] += len(eligible) - len(chosen)
        eligible = [info for info in eligible if info.id in chosen]
    kept = eligible
    if format_ in ONE_ROW_PER_TASK:
        first_of_task: dict[str, _Info] = {}
        for info in eligible:
            first_of_task.setdefault(info.task_id, info)
        kept = list(first_of_task.values())
        skipped["another answer to a task in the batch"] += len(eligible) - len(kept)
    plan = Plan([info.id for info in kept], {info.id: info for info in kept}, eligible)
    plan.skipped = {reason: count for reason, count in skipped.items() if count}
    plan.advantages = group_advantages({info.id: (info.task_id, info.reward) for info in kept})
    if format_ == "trl-dpo":
        plan.pairs = _pairs(kept, ratings, margin)
        paired = {
            point_id
            for pairs in plan.pairs.values()
            for pair in pairs
            for point_id in (pair.anchor, pair.rejected)
        }
        plan.ids = [point_id for point_id in plan.ids if point_id in paired]
    return plan


def _pairs(
    infos: Sequence[_Info], ratings: Mapping[str, Feedback], margin: float
) -> dict[str, list[Pair]]:
    """Preference pairs: within each task, the best answer against the worst, the second best
    against the second worst, … while their rewards differ by `margin` or more; and each rated
    answer against the better answer its rater gave."""
    pairs: dict[str, list[Pair]] = defaultdict(list)
    by_task: dict[str, list[_Info]] = defaultdict(list)
    for info in infos:
        by_task[info.task_id].append(info)
    for group in by_task.values():
        ranked = sorted(group, key=lambda info: (-info.reward, info.id))
        for best, worst in zip(ranked, reversed(ranked), strict=True):
            if best.reward - worst.reward < margin or best is worst:
                break
            pairs[best.id].append(Pair(best.id, best.id, worst.id))
    for info in infos:
        rating = ratings.get(info.id)
        if rating is not None and rating.better_answer is not None:
            pairs[info.id].append(Pair(info.id, "", info.id))  # chosen: the better answer
    return dict(pairs)


def _check(
    plan: Plan, phase: Phase, requirement: Prerequisite, profile: str, format_: Format
) -> None:
    name = PHASE_NAMES[phase]
    types = sorted({info.task_type for info in plan.eligible})
    held = (
        sum(len(pairs) for pairs in plan.pairs.values()) if phase == "dpo" else len(plan.eligible)
    )
    unit = "preference pairs" if phase == "dpo" else "points"
    what = f"{requirement.points:,} {unit}"
    if requirement.min_quality > 0:
        what += f" of quality ≥ {requirement.min_quality:g}"
    if requirement.successes_only:
        what += " that succeeded"
    problems = []
    if held < requirement.points:
        problems.append(f"{name} needs {what}, the selection holds {held:,}")
    if len(types) < requirement.task_types:
        problems.append(
            f"{name} needs {requirement.task_types} task types, the selection holds "
            f"{len(types)}{' (' + ', '.join(types) + ')' if types else ''}"
        )
    if problems:
        skipped = ", ".join(f"{count:,} {reason}" for reason, count in plan.skipped.items())
        left_out = f"; left out: {skipped}" if skipped else ""
        raise ExportError(f"{'; '.join(problems)} (profile {profile}, format {format_}){left_out}")


def _nothing_selected(plan: Plan) -> str:
    if plan.skipped:
        reasons = ", ".join(f"{count:,} {reason}" for reason, count in plan.skipped.items())
        return f"no point is left to export (left out: {reasons})"
    return "the selection takes no point of the pool's train split"


def _batch_id(
    format_: Format, phase: Phase | None, profile: str, selection: Selection, ids: list[str]
) -> str:
    digest = hashlib.sha256()
    head = {"format": format_, "phase": phase, "profile": profile}
    digest.update(json.dumps(head, sort_keys=True).encode())
    digest.update(selection.model_dump_json().encode())
    for point_id in sorted(ids):
        digest.update(b"\0" + point_id.encode())
    return digest.hexdigest()[:32]


def _summary(
    plan: Plan,
    format_: Format,
    phase: Phase | None,
    settings: TrainingSettings,
    selection: Selection,
    store: SqlStore,
) -> dict[str, Any]:
    infos = [plan.infos[point_id] for point_id in plan.ids]
    qualities = [info.quality for info in infos]
    rewards = [info.reward for info in infos]
    stamps = [info.timestamp for info in infos]
    summary: dict[str, Any] = {
        "format": format_,
        "phase": phase,
        "profile": settings.profile,
        "size": len(infos),
        "task_types": dict(sorted(Counter(info.task_type for info in infos).items())),
        "tasks": len({info.task_id for info in infos}),
        "successes": sum(info.success for info in infos),
        "rated_by_people": sum(info.rated for info in infos),
        "quality": _stats(qualities),
        "reward": _stats(rewards),
        "time_range": [min(stamps).isoformat(), max(stamps).isoformat()] if stamps else None,
        "left_out": plan.skipped,
        "selection": selection.model_dump(mode="json"),
        "policy": {
            "split": "train",
            "anonymization": store.settings.anonymization.model_dump(mode="json"),
            "gamma": settings.gamma,
            "requirement": None if phase is None else _requirement(settings.profile, phase),
        },
    }
    if format_ == "trl-dpo":
        summary["pairs"] = sum(len(pairs) for pairs in plan.pairs.values())
    return summary


def _requirement(profile: str, phase: Phase) -> dict[str, Any]:
    requirement = PREREQUISITES["production" if profile == "production" else "laptop"][phase]
    return {
        "points": requirement.points,
        "min_quality": requirement.min_quality,
        "task_types": requirement.task_types,
        "successes_only": requirement.successes_only,
    }


def _stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "mean": round(statistics.fmean(values), 6),
        "stdev": round(statistics.pstdev(values), 6),
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
    }


def _rows(
    store: SqlStore,
    selection: Selection,
    now: datetime,
    plan: Plan,
    format_: Format,
    graders: Mapping[str, GraderSpec],
    ratings: Mapping[str, Feedback],
    gamma: float,
) -> Iterator[Any]:
    where, span = train_points(selection), time_range(selection, now)
    texts = stream_payloads(store.engine, where, span, wanted=set(plan.ids))
    for index, text in enumerate(texts):
        point = formats.decode(text)
        if format_ == "trl-sft":
            yield formats.sft_row(point)
        elif format_ == "trl-grpo":
            yield formats.grpo_row(point, graders[point["task"]["task_id"]])
        elif format_ == "verl":
            reward = plan.infos[point["id"]].reward
            yield formats.verl_row(point, graders[point["task"]["task_id"]], index, reward)
        elif format_ == "openrlhf":
            reward = plan.infos[point["id"]].reward
            yield formats.openrlhf_row(point, graders.get(point["task"]["task_id"]), reward)
        elif format_ == "trl-dpo":
            yield from _dpo_rows(point, plan, ratings)
        else:
            info = plan.infos[point["id"]]
            yield formats.jsonl_row(text, _credit(point, info, plan, ratings.get(info.id), gamma))


def _dpo_rows(point: StoredJson, plan: Plan, ratings: Mapping[str, Feedback]) -> Iterator[Any]:
    for pair in plan.pairs.get(point["id"], []):
        rejected = plan.infos[pair.rejected].answer or ""
        if pair.chosen:
            chosen = plan.infos[pair.chosen].answer or ""
        else:
            chosen = ratings[point["id"]].better_answer or ""
        yield formats.dpo_row(point, chosen, rejected)


def _credit(
    point: StoredJson, info: _Info, plan: Plan, rating: Feedback | None, gamma: float
) -> dict[str, Any]:
    steps = transitions(point, gamma=gamma, override=None if rating is None else rating.score)
    return {
        "final_reward": info.reward,
        "reward_source": "grader" if rating is None else rating.source,
        "advantage": plan.advantages.get(info.id, 0.0),
        "turns": [
            {
                "attempt": step.attempt,
                "turn": step.turn,
                "reward": step.reward,
                "return": step.discounted_return,
                "input_tokens": step.input_tokens,
                "output_tokens": step.output_tokens,
                "tool_calls": len(step.response.get("tool_calls", ())),
            }
            for step in steps
        ],
    }


def _record(
    store: SqlStore,
    batch_id: str,
    phase: Phase | None,
    profile: str,
    selection: Selection,
    format_: Format,
    summary: dict[str, Any],
    ids: list[str],
) -> bool:
    """Record the batch and mark its points; False when it was recorded before."""
    batches = schema.training_batches
    with store.engine.begin() as connection:
        exists = connection.execute(select(batches.c.id).where(batches.c.id == batch_id)).first()
        if exists is not None:
            return False
        connection.execute(
            insert(batches).values(
                id=batch_id,
                created_at=utcnow(),
                phase=phase or "none",
                profile=profile,
                selection={"format": format_, **selection.model_dump(mode="json")},
                summary=summary,
            )
        )
        # the driver's own executemany: SQLAlchemy's would process each row's parameters
        mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
        table = schema.training_batch_points
        statement = f"INSERT INTO {table.name} (batch_id, point_id) VALUES ({mark}, {mark})"
        for start in range(0, len(ids), INSERT_CHUNK):
            chunk = [(batch_id, point_id) for point_id in ids[start : start + INSERT_CHUNK]]
            connection.exec_driver_sql(statement, chunk)
    return True
