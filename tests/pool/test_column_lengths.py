"""Values longer than the pool's columns fail early with a field error, or are quarantined."""

from __future__ import annotations

from typing import Any

import pytest
from pool_records import make_point, make_records, make_task
from pydantic import ValidationError
from sqlalchemy import String, select

from agent_agency.agent_spec import AgentSpec
from agent_agency.data_point import DataPoint
from agent_agency.pool import schema
from agent_agency.pool.store import Store
from agent_agency.records import (
    AGENT_MAX,
    ID_MAX,
    TASK_ID_MAX,
    TASK_TYPE_MAX,
    TENANT_MAX,
    Execution,
    Span,
    SpanKind,
    Task,
)


def _point() -> dict[str, Any]:
    return make_point().model_dump(mode="json")


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: make_task("t" * (TASK_ID_MAX + 1)), "id"),
        (lambda: make_task("t1", "x" * (TASK_TYPE_MAX + 1)), "type"),
        (lambda: AgentSpec(name="n" * 200), "name"),
        (lambda: AgentSpec(name="n", version="9" * 50), "version"),
        (lambda: Execution(task_id="t", task_type="x", agent="a" * (AGENT_MAX + 1)), "agent"),
        (lambda: Execution(id="e" * (ID_MAX + 1), task_id="t", task_type="x", agent="a"), "id"),
        (lambda: DataPoint.model_validate({**_point(), "id": "p" * (ID_MAX + 1)}), "id"),
        (lambda: make_point(tenant="t" * (TENANT_MAX + 1)), "tenant_id"),
    ],
)
def test_over_long_values_fail_naming_the_field(build: Any, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        build()
    [error] = caught.value.errors()
    assert error["loc"][-1] == field
    assert error["type"] == "string_too_long"


def test_longest_allowed_agent_key_fits_its_column() -> None:
    spec = AgentSpec(name="n" * (AGENT_MAX - 50), version="9" * 49)
    assert len(spec.key) <= AGENT_MAX
    assert isinstance(schema.executions.c.agent.type, String)
    assert schema.executions.c.agent.type.length == AGENT_MAX


def test_longest_allowed_values_are_stored(store: Store) -> None:
    """At the limit every value fits its column (PostgreSQL enforces the lengths)."""
    task = Task.model_validate(
        {**make_task().model_dump(), "id": "t" * TASK_ID_MAX, "type": "x" * TASK_TYPE_MAX}
    )
    decision, execution, evaluations = make_records(task.id, "a" * AGENT_MAX, task.type)
    store.write_records(decisions=[decision], executions=[execution], evaluations=evaluations)
    [arm] = store.task_aggregates()
    assert (arm.agent, arm.task_type, arm.n) == ("a" * AGENT_MAX, "x" * TASK_TYPE_MAX, 1)


def test_a_point_whose_id_is_too_long_is_quarantined_not_the_batch_lost(store: Store) -> None:
    good = make_point("ok")
    long_id = "p" * 500
    bad = {**make_point("bad").model_dump(mode="json"), "id": long_id}
    report = store.ingest([good.model_dump_json(), bad], strict=False)
    assert (report.accepted, report.quarantined) == (1, 1)
    assert any("id" in reason and "64" in reason for reason in report.reasons[long_id])
    with store.engine.connect() as connection:
        [(point_id, payload)] = connection.execute(
            select(schema.quarantine.c.point_id, schema.quarantine.c.payload)
        ).all()
    assert len(point_id) <= schema.QUARANTINE_POINT_ID_MAX
    assert point_id.startswith("p" * 100)
    assert payload["id"] == long_id  # the full id is kept
    # two different long ids stay two different quarantine point ids
    other = {**bad, "id": "p" * 499 + "q"}
    store.ingest([other], strict=False)
    with store.engine.connect() as connection:
        ids = set(connection.scalars(select(schema.quarantine.c.point_id)))
    assert len(ids) == 2


def test_a_span_with_a_long_name_is_stored_with_its_full_name_in_the_payload(
    store: Store,
) -> None:
    name = "execute_tool " + "x" * 400  # tool names come from the model
    span = Span(trace_id="trace", kind=SpanKind.TOOL, name=name)
    store.write_records(spans=[span])
    with store.engine.connect() as connection:
        [(stored_name, payload)] = connection.execute(
            select(schema.spans.c.name, schema.spans.c.payload)
        ).all()
    assert len(stored_name) <= schema.SPAN_NAME_MAX
    assert Span.model_validate(payload).name == name
