"""Exports: selection (held-out never leaves), each format's columns, batch records, idempotence,
prerequisites, and human feedback flowing into rewards and preference pairs."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from export_points import GRADERS, T0, make_point
from sqlalchemy import select

from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.pool.sql_store import SqlStore
from agent_agency.records import Split
from agent_agency.tasks.graders import reward_function
from agent_agency.training.export import ExportError, export_batch
from agent_agency.training.feedback import NoAnswer, record_feedback
from agent_agency.training.formats import FORMATS, Format
from agent_agency.training.selection import Selection, select_points
from agent_agency.training_settings import TrainingSettings

LAPTOP = TrainingSettings(profile="laptop")


def _fill(store: SqlStore, count: int = 20) -> None:
    """`count` train tasks answered by two agents (one right, one wrong), and held-out tasks."""
    points = []
    for n in range(count):
        when = T0 + timedelta(minutes=n)
        points.append(make_point(f"sum-{n}", point_id=f"good-{n}", when=when, answer=str(17 + n)))
        points.append(
            make_point(
                f"sum-{n}",
                point_id=f"bad-{n}",
                agent="stepwise",
                success=False,
                quality=0.2,
                answer="3",
                when=when + timedelta(seconds=30),
            )
        )
    for n in range(5):
        points.append(make_point(f"held-{n}", point_id=f"held-{n}", split=Split.HELDOUT, when=T0))
    store.ingest(points)


def _export(store: SqlStore, out: Path, format_: Format, **selection: object) -> list[dict]:
    result = export_batch(
        store,
        LAPTOP,
        format_=format_,
        out=out,
        selection=Selection.model_validate(selection),
        graders=GRADERS,
        check=False,
    )
    if result.file.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(result.file).to_pylist()
    return [json.loads(line) for line in result.file.read_text().splitlines()]


@pytest.mark.parametrize("format_", FORMATS)
def test_held_out_points_are_never_exported(
    store: SqlStore, tmp_path: Path, format_: Format
) -> None:
    _fill(store, 10)
    _export(store, tmp_path, format_)
    text = (
        tmp_path / next(p.name for p in tmp_path.iterdir() if p.name != "batch.json")
    ).read_bytes()
    assert b"held-" not in text
    with store.engine.connect() as connection:
        marked = connection.execute(select(schema.training_batch_points.c.point_id)).scalars().all()
    assert marked and not any(point_id.startswith("held-") for point_id in marked)


def test_selection_filters(store: SqlStore) -> None:
    _fill(store, 6)
    every = select_points(store, Selection())
    assert len(every) == 12 and all(p.task.split == Split.TRAIN for p in every)
    assert {p.id for p in select_points(store, Selection(include_failures=False))} == {
        f"good-{n}" for n in range(6)
    }
    assert len(select_points(store, Selection(min_quality=0.5))) == 6
    late = select_points(store, Selection(since=T0 + timedelta(minutes=4)))
    assert {p.task.task_id for p in late} == {"sum-4", "sum-5"}
    early = select_points(store, Selection(until=T0 + timedelta(minutes=1, seconds=10)))
    assert {p.task.task_id for p in early} == {"sum-0", "sum-1"}
    # a fixed `now`: T0 is yesterday noon, so the points' age by the clock passes 12 h only
    # a few minutes after midnight
    assert select_points(store, Selection(max_age_days=0.5), now=T0 + timedelta(days=1)) == []
    assert select_points(store, Selection(task_types=["code"])) == []


def test_balance_keeps_as_many_points_of_each_type_as_the_rarest(store: SqlStore) -> None:
    points = [
        make_point(f"sum-{n}", point_id=f"m-{n}", when=T0 + timedelta(minutes=n)) for n in range(6)
    ]
    points += [make_point(f"c-{n}", point_id=f"c-{n}", task_type="code") for n in range(2)]
    store.ingest(points)
    chosen = select_points(store, Selection(balance=True))
    types = [p.task.task_type for p in chosen]
    assert types.count("math") == 2 and types.count("code") == 2
    assert [p.id for p in select_points(store, Selection(balance=True))] == [p.id for p in chosen]


def test_trl_sft_rows_are_conversations_with_tool_turns(store: SqlStore, tmp_path: Path) -> None:
    _fill(store, 4)
    rows = _export(store, tmp_path, "trl-sft")
    assert len(rows) == 4  # SFT takes the answers that succeeded
    assert set(rows[0]) == {"messages"}
    roles = [message["role"] for message in rows[0]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    call = rows[0]["messages"][2]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "calculator"
    assert json.loads(call["function"]["arguments"]) == {"expression": "17+0"}
    assert rows[0]["messages"][3]["tool_call_id"] == call["id"]
    assert rows[0]["messages"][-1] == {"role": "assistant", "content": "17"}


def test_trl_grpo_rows_carry_what_the_graders_score(store: SqlStore, tmp_path: Path) -> None:
    _fill(store, 4)
    rows = _export(store, tmp_path, "trl-grpo")
    assert len(rows) == 4  # one row per task: the trainer samples its own answers
    assert {"prompt", "grader", "reference", "task_id", "task_type"} <= set(rows[0])
    assert [m["role"] for m in rows[0]["prompt"]] == ["system", "user"]
    reward = reward_function(rows[0]["grader"])
    prompts = [row["prompt"] for row in rows]
    right = [[{"role": "assistant", "content": str(17 + int(row["task_id"][4:]))}] for row in rows]
    wrong = [[{"role": "assistant", "content": "-1"}] for _ in rows]
    references = [row["reference"] for row in rows]
    assert reward(prompts, right, reference=references) == [1.0] * 4
    assert reward(prompts, wrong, reference=references) == [0.0] * 4


def test_trl_dpo_pairs_same_prompt_answers_with_different_rewards(
    store: SqlStore, tmp_path: Path
) -> None:
    _fill(store, 3)
    rows = _export(store, tmp_path, "trl-dpo")
    assert len(rows) == 3
    for row in rows:
        assert set(row) == {"prompt", "chosen", "rejected"}
        assert row["rejected"] == [{"role": "assistant", "content": "3"}]
        assert row["chosen"][0]["content"] != "3"


def test_verl_parquet_has_the_columns_verl_reads(store: SqlStore, tmp_path: Path) -> None:
    _fill(store, 3)
    rows = _export(store, tmp_path, "verl")
    assert len(rows) == 3
    row = rows[0]
    assert set(row) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    assert row["ability"] == "math" and row["data_source"] == "agency/custom"
    assert row["reward_model"]["style"] == "rule"
    assert json.loads(row["reward_model"]["ground_truth"]) == {"answer": 17}
    assert row["prompt"][-1]["role"] == "user" and "17" in row["prompt"][-1]["content"]
    assert row["extra_info"]["split"] == "train" and row["extra_info"]["grader"] == "exact-number"


def test_openrlhf_rows_have_input_and_label(store: SqlStore, tmp_path: Path) -> None:
    _fill(store, 2)
    rows = _export(store, tmp_path, "openrlhf")
    assert len(rows) == 4
    assert {"input", "output", "label", "reward"} <= set(rows[0])
    assert rows[0]["input"][-1]["role"] == "user"
    assert json.loads(rows[0]["label"]) == {"answer": 17}


def test_jsonl_rows_are_the_stored_points_with_their_credit(
    store: SqlStore, tmp_path: Path
) -> None:
    _fill(store, 2)
    rows = _export(store, tmp_path, "jsonl")
    points = [DataPoint.model_validate(row["point"]) for row in rows]
    assert {p.id for p in points} == {"good-0", "good-1", "bad-0", "bad-1"}
    assert all(p.anonymization_policy is not None for p in points)
    credit = {row["point"]["id"]: row["credit"] for row in rows}
    assert [turn["reward"] for turn in credit["good-0"]["turns"]] == [0.6, 0.9]
    assert credit["good-0"]["advantage"] == pytest.approx(1.0)
    assert credit["bad-0"]["advantage"] == pytest.approx(-1.0)


def test_a_batch_is_recorded_once_and_described(store: SqlStore, tmp_path: Path) -> None:
    _fill(store, 5)
    selection = Selection(min_quality=0.1)
    first = export_batch(store, LAPTOP, format_="jsonl", out=tmp_path / "a", selection=selection)
    again = export_batch(store, LAPTOP, format_="jsonl", out=tmp_path / "b", selection=selection)
    assert first.new and not again.new and first.batch_id == again.batch_id
    assert (tmp_path / "a" / "train.jsonl").read_bytes() == (
        tmp_path / "b" / "train.jsonl"
    ).read_bytes()
    described = json.loads((tmp_path / "a" / "batch.json").read_text())
    assert described["id"] == first.batch_id and described["size"] == 10
    assert described["task_types"] == {"math": 10}
    assert described["quality"]["min"] == pytest.approx(0.2)
    assert described["quality"]["max"] == pytest.approx(0.9)
    assert described["time_range"][0].startswith(T0.date().isoformat())
    assert described["profile"] == "laptop" and described["policy"]["split"] == "train"
    with store.engine.connect() as connection:
        batches = connection.execute(select(schema.training_batches)).all()
        marked = connection.execute(select(schema.training_batch_points)).all()
    assert len(batches) == 1 and batches[0].summary["size"] == 10
    assert len(marked) == 10
    other = export_batch(
        store, LAPTOP, format_="jsonl", out=tmp_path / "c", selection=Selection(min_quality=0.5)
    )
    assert other.new and other.batch_id != first.batch_id


def test_prerequisites_say_what_is_missing(store: SqlStore, tmp_path: Path) -> None:
    _fill(store, 3)
    production = TrainingSettings(profile="production")
    with pytest.raises(ExportError) as raised:
        export_batch(store, production, format_="trl-sft", out=tmp_path, selection=Selection())
    assert "SFT needs 1,000 points of quality ≥ 0.8 that succeeded, the selection holds 3" in str(
        raised.value
    )
    assert "3 failed" in str(raised.value)
    with pytest.raises(
        ExportError, match=r"GRPO needs 5 task types, the selection holds 1 \(math\)"
    ):
        export_batch(
            store,
            production,
            format_="trl-grpo",
            out=tmp_path,
            selection=Selection(),
            graders=GRADERS,
        )
    assert not (tmp_path / "train.jsonl").exists()  # nothing written


def test_a_person_s_rating_overrides_the_reward_and_a_better_answer_makes_a_pair(
    store: SqlStore, tmp_path: Path
) -> None:
    store.ingest([make_point("sum-0", point_id="only", answer="16", quality=0.7)])
    rating = record_feedback(store, "sum-0", 0.1, better_answer="17")
    assert rating.execution_id == "only" and rating.source == "human"
    rows = _export(store, tmp_path / "raw", "jsonl")
    assert rows[0]["credit"]["final_reward"] == pytest.approx(0.1)
    assert rows[0]["credit"]["reward_source"] == "human"
    assert rows[0]["credit"]["turns"][-1]["reward"] == pytest.approx(0.1)
    pairs = _export(store, tmp_path / "dpo", "trl-dpo")
    assert pairs == [
        {
            "prompt": pairs[0]["prompt"],
            "chosen": [{"role": "assistant", "content": "17"}],
            "rejected": [{"role": "assistant", "content": "16"}],
        }
    ]
    with pytest.raises(NoAnswer, match="'nope'"):
        record_feedback(store, "nope", 0.5)
    with pytest.raises(ValueError, match="score"):
        record_feedback(store, "sum-0", 1.5)


def test_a_dpo_batch_marks_both_answers_of_each_pair(store: SqlStore, tmp_path: Path) -> None:
    _fill(store, 2)
    result = export_batch(
        store, LAPTOP, format_="trl-dpo", out=tmp_path, selection=Selection(), check=False
    )
    assert result.rows == 2 and result.summary["pairs"] == 2
    with store.engine.connect() as connection:
        marked = set(connection.execute(select(schema.training_batch_points.c.point_id)).scalars())
    assert marked == {"good-0", "good-1", "bad-0", "bad-1"}


def test_grpo_prerequisites_count_points_though_rows_are_tasks(
    store: SqlStore, tmp_path: Path
) -> None:
    _fill(store, 3)  # 6 points, 3 tasks
    with pytest.raises(ExportError, match="GRPO needs 32 points, the selection holds 6 "):
        export_batch(
            store, LAPTOP, format_="trl-grpo", out=tmp_path, selection=Selection(), graders=GRADERS
        )
