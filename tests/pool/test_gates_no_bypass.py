"""What a point cannot bring into the pool: a policy of its own that skips anonymization, PII in
its ids and names, rewards out of bounds, an empty id, timestamps outside retention; and what
quarantine keeps of it (valid JSON, timestamps intact)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pool_records import make_point, one_attempt, unvalidated
from sqlalchemy import func, select

from agent_agency.data_point import Attempt, DataPoint
from agent_agency.pool import schema
from agent_agency.pool.anonymize import Anonymizer, hash_tenant
from agent_agency.pool.point_fields import (
    free_text_fields,
    free_texts,
    identifying_fields,
    identifying_values,
)
from agent_agency.pool.prepare import prepare_batch
from agent_agency.pool.queries import validate_quality
from agent_agency.pool.store import Store
from agent_agency.pool.tiers import compact
from agent_agency.pool.validation import identifier_entities
from agent_agency.privacy.pii import checksum_entities, find_pii, pii_entities, plain_word
from agent_agency.privacy.settings import AnonymizationPolicy
from agent_agency.records import JudgeVerdict, Message, ToolCall, utcnow


def _payloads(store: Store) -> dict[str, dict[str, Any]]:
    table = schema.data_points
    with store.engine.connect() as connection:
        rows = connection.execute(select(table.c.id, table.c.payload))
        return {point_id: dict(payload) for point_id, payload in rows}


def _quarantined(store: Store) -> list[tuple[str | None, Any, list[str]]]:
    table = schema.quarantine
    with store.engine.connect() as connection:
        query = select(table.c.point_id, table.c.payload, table.c.reasons)
        return [(row[0], row[1], list(row[2])) for row in connection.execute(query)]


def _point_with_raw_pii(point_id: str) -> DataPoint:
    point = make_point(point_id, prompt="Mail ivan@example.com the total.", tenant="acme-real")
    point.trajectory = one_attempt(
        Message(role="user", content=point.task.prompt, name="heidi"),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="c1", name="send", arguments={"to": "ivan@example.com"})],
        ),
    )
    return point


def test_a_point_recording_its_own_policy_is_anonymized_all_the_same(store: Store) -> None:
    raw = _point_with_raw_pii("raw")
    claims = raw.model_copy(update={"id": "claims", "anonymization_policy": {}})
    report = store.ingest([claims, raw], strict=False)
    assert report.accepted == 2, report.reasons
    payloads = _payloads(store)
    assert payloads["claims"] == {**payloads["raw"], "id": "claims"}  # no head start for a claim
    stored = payloads["claims"]
    assert stored["anonymization_policy"] == AnonymizationPolicy().model_dump()
    assert stored["tenant_id"].startswith("t_") and "acme" not in json.dumps(stored)
    assert "ivan@example.com" not in json.dumps(stored)
    assert stored["trajectory"][0]["messages"][0]["name"] is None


def test_anonymizing_an_anonymized_point_changes_nothing(store: Store) -> None:
    assert store.ingest([_point_with_raw_pii("p1")], strict=False).accepted == 1
    once = _payloads(store)["p1"]
    again = store.anonymizer.anonymize(DataPoint.model_validate(once))
    assert again.model_dump(mode="json") == once


def test_a_hashed_tenant_is_not_hashed_again() -> None:
    hashed = hash_tenant("acme", b"one secret")
    assert hash_tenant(hashed, b"another secret") == hashed
    assert hash_tenant("acme", b"another secret") != hashed


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("routing.selected_agent", lambda p: p.routing.__setattr__("selected_agent", "ann@x.org")),
        ("task.task_id", lambda p: p.task.__setattr__("task_id", "ask Mr. Watson")),
        ("task.suite", lambda p: p.task.__setattr__("suite", "/home/jane/suite.jsonl")),
        (
            "evaluation.gates.0.name",
            lambda p: p.evaluation.gates[0].__setattr__("name", "Dr. Watson"),
        ),
    ],
)
def test_pii_in_an_id_or_name_quarantines_the_point_naming_the_field(
    store: Store, field: str, change: Any
) -> None:
    point = make_point("leaky")
    point.trajectory = []
    change(point)
    report = store.ingest([point], strict=False)
    assert report.accepted == 0
    [reason] = [r for r in report.reasons["leaky"] if r.startswith("privacy:")]
    assert reason.startswith(f"privacy: {field}: contains ")


@pytest.mark.parametrize(
    "point_id",
    [
        "4b791e3b-2106-4527-9491-6f3b513a4c45",  # a canonical UUID: "2106-4527-9491"
        "4111111111111111",  # digits only, Luhn-valid
        "run-2026-11-16-141139",
        "order-536-22-8741",  # shaped like a US social security number
    ],
)
def test_ids_shaped_like_numbers_are_not_taken_for_phone_or_card_numbers(
    store: Store, point_id: str
) -> None:
    assert store.ingest([make_point(point_id)]).accepted == 1


def test_an_argument_key_holding_pii_is_redacted_like_its_value(store: Store) -> None:
    point = make_point("p")
    call = ToolCall(id="c1", name="f", arguments={"ann@x.org": "mail ann@x.org"})
    point.trajectory = one_attempt(Message(role="assistant", tool_calls=[call]))
    assert store.ingest([point], strict=False).accepted == 1
    [message] = _payloads(store)["p"]["trajectory"][0]["messages"]
    assert message["tool_calls"][0]["arguments"] == {"[EMAIL]": "mail [EMAIL]"}


def test_argument_keys_redacted_alike_keep_every_value(store: Store) -> None:
    point = make_point("p")
    arguments = {"a@x.org": "1", "b@x.org": "2", "[EMAIL]#2": "3"}
    call = ToolCall(id="c1", name="f", arguments=arguments)
    point.trajectory = one_attempt(Message(role="assistant", tool_calls=[call]))
    assert store.ingest([point], strict=False).accepted == 1
    [message] = _payloads(store)["p"]["trajectory"][0]["messages"]
    assert message["tool_calls"][0]["arguments"] == {
        "[EMAIL]": "1",
        "[EMAIL]#2": "2",
        "[EMAIL]#2#2": "3",
    }


IBAN = "DE89370400440532013000"
WALLET = "1BoatSLRHtKNngkdXEeobR76b53LETtpyT"


@pytest.mark.parametrize(
    ("field", "change", "entity"),
    [
        ("id", {"id": IBAN}, "IBAN_CODE"),
        ("routing.selected_agent", {"agent": f"agent-{WALLET}"}, "CRYPTO"),
        ("task.task_type", {"task_type": f"iban {IBAN[:4]} {IBAN[4:]}"}, "IBAN_CODE"),
    ],
)
def test_ids_and_names_holding_an_iban_or_a_wallet_address_are_rejected(
    store: Store, field: str, change: dict[str, str], entity: str
) -> None:
    names = {key: value for key, value in change.items() if key != "id"}
    report = store.ingest([make_point(change.get("id", "p"), **names)], strict=False)
    assert report.quarantined == 1
    [reasons] = report.reasons.values()
    assert f"privacy: {field}: contains {entity}" in reasons
    stored = json.dumps(_quarantined(store))
    assert IBAN not in stored and WALLET not in stored


def test_an_unknown_field_named_with_pii_is_redacted_in_its_reason(store: Store) -> None:
    line = make_point("p").model_dump(mode="json") | {"jane.roe@example.com": "x"}
    report = store.ingest([line], strict=False)
    assert report.reasons["p"] == ["type: [EMAIL]: Extra inputs are not permitted"]
    assert "jane.roe" not in json.dumps(_quarantined(store))


def test_an_id_holding_pii_is_redacted_in_quarantine_and_in_the_report(store: Store) -> None:
    report = store.ingest([make_point("jane.roe@example.com")], strict=False)
    assert list(report.reasons) == ["[EMAIL]"]
    [(point_id, _, reasons)] = _quarantined(store)
    assert point_id == "[EMAIL]"
    assert "privacy: id: contains EMAIL_ADDRESS" in reasons


def test_random_hex_ids_are_never_taken_for_pii() -> None:
    ids = [uuid.uuid4().hex for _ in range(20_000)]
    assert [i for i in ids if pii_entities(i) or find_pii(i, use_presidio=False)] == []


@given(st.from_regex(r"[A-Za-z0-9_]{1,40}", fullmatch=True))
def test_the_word_shortcut_agrees_with_the_full_scan(word: str) -> None:
    full = tuple(sorted({f.entity for f in find_pii(word, use_presidio=False)}))
    assert pii_entities(word) == full


_IDENTIFIERS = st.one_of(
    st.from_regex(r"[A-Za-z0-9_]{1,40}", fullmatch=True),
    st.uuids().map(lambda value: value.hex),
    st.from_regex(r"\d{1,24}", fullmatch=True),
    st.from_regex(r"[A-Z]{2}\d{2}[A-Z0-9]{8,30}", fullmatch=True),  # IBAN-like
    st.from_regex(r"[13][a-km-zA-HJ-NP-Z1-9]{24,36}|bc1[a-z0-9]{24,40}", fullmatch=True),
    st.from_regex(r"[a-z0-9_]{0,6}(?:ghp_|sk_|hf_|npm_|AKIA|AIza|eyJ|xox)\w{0,24}", fullmatch=True),
    st.from_regex(r"[\w.+-]{1,12}@[a-z]{1,8}\.(?:com|org|de)", fullmatch=True),
    st.from_regex(r"\+?\d{1,3}[ .-]?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}", fullmatch=True),
    st.sampled_from(
        [
            "DE89370400440532013000",  # a valid IBAN
            "GB82WEST12345698765432",
            "xDE89370400440532013000",
            "1BoatSLRHtKNngkdXEeobR76b53LETtpyT",  # a valid wallet address
            "AKIAIOSFODNN7EXAMPLE",
            "4111111111111111",
            "run_2026_11_16_141139",
        ]
    ),
    st.text(max_size=40),
)


@settings(deadline=None)  # the first id Presidio checks waits for its import
@given(_IDENTIFIERS)
def test_the_plain_word_shortcut_of_the_identifier_gate_finds_what_both_scans_find(
    text: str,
) -> None:
    if plain_word(text):
        assert pii_entities(text) == ()
        assert checksum_entities(text) == ()
        assert identifier_entities(text) == ()
    else:
        own = {e for e in pii_entities(text) if e not in {"PHONE_NUMBER", "CREDIT_CARD", "US_SSN"}}
        expected = tuple(sorted(own | set(checksum_entities(text))))
        assert identifier_entities(text) == expected


def test_ids_holding_a_checksum_entity_are_no_plain_words() -> None:
    for text, entity in [
        ("DE89370400440532013000", "IBAN_CODE"),
        ("1BoatSLRHtKNngkdXEeobR76b53LETtpyT", "CRYPTO"),
    ]:
        assert not plain_word(text)
        assert identifier_entities(text) == (entity,)


def test_a_card_number_standing_alone_is_still_found_in_an_id() -> None:
    assert pii_entities("4111111111111111") == ("CREDIT_CARD",)
    assert pii_entities("order a4111111111111111") == ()  # glued to a letter: an id, not a card


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"id": ""}, "completeness: id: empty id"),
        ({"id": "   "}, "completeness: id: empty id"),
        (
            {
                "execution": {
                    **make_point("p").model_dump(mode="json")["execution"],
                    "execution_id": "",
                }
            },
            "completeness: execution.execution_id: empty id",
        ),
        (
            {"rl_labels": {"reward": 0.5, "turn_rewards": [5.0, 0.5]}},
            "bounds: rl_labels.turn_rewards.0: 5.0 is outside [0, 1]",
        ),
        ({"tenant_id": ""}, "completeness: tenant_id: empty tenant id"),
        (
            {
                "routing": {
                    **make_point("p").model_dump(mode="json")["routing"],
                    "selected_agent": " ",
                }
            },
            "completeness: routing.selected_agent: empty agent name",
        ),
        (
            {"task": {**make_point("p").model_dump(mode="json")["task"], "task_type": "\t "}},
            "completeness: task.task_type: empty task type",
        ),
    ],
)
def test_gates_reject_empty_ids_and_names_and_turn_rewards_out_of_bounds(
    store: Store, change: dict[str, Any], reason: str
) -> None:
    document = {**make_point("p").model_dump(mode="json"), **change}
    report = store.ingest([json.dumps(document)], strict=False)
    assert report.accepted == 0
    assert reason in next(iter(report.reasons.values()))


def test_a_record_changed_after_validation_cannot_bring_a_non_finite_advantage(
    store: Store,
) -> None:
    point = unvalidated(make_point("p"), "rl_labels.advantages", [0.5, float("nan")])
    report = store.ingest([point], strict=False)
    assert report.reasons["p"] == ["bounds: rl_labels.advantages.1: nan is not a finite number"]


def test_timestamps_in_the_future_or_past_retention_are_quarantined(store: Store) -> None:
    now = utcnow()
    future = make_point("future", when=now + timedelta(days=2))
    ancient = make_point("ancient", when=now - timedelta(days=91))
    skewed = make_point("skewed", when=now + timedelta(minutes=30))  # a clock a little ahead
    report = store.ingest([future, ancient, skewed], strict=False)
    assert report.accepted == 1
    assert report.reasons["future"] == [
        f"retention: timestamp: {future.timestamp.isoformat()} is in the future"
    ]
    [retention] = report.reasons["ancient"]
    assert retention.startswith("retention: timestamp: ") and "pool.warm_days" in retention


def test_reingesting_after_compaction_counts_nothing_twice(store: Store) -> None:
    now = utcnow()
    points = [make_point(f"p{i}", when=now - timedelta(days=80 + i)) for i in range(5)]
    assert store.ingest(points).accepted == 5
    later = now + timedelta(days=30)  # all of them are past the warm tier by then
    assert compact(store, now=later).moved_to_cold == 5
    report = store.commit(prepare_batch(points, store.anonymizer, store.settings, now=later))
    assert report.accepted == 0 and report.quarantined == 5
    with store.engine.connect() as connection:
        daily = schema.agent_stats_daily
        assert connection.execute(select(func.sum(daily.c.n))).scalar() == 5


def test_quarantine_keeps_non_finite_numbers_as_valid_json_and_stores_the_rest(
    store: Store,
) -> None:
    good = make_point("good").model_dump_json()
    bad = make_point("bad").model_dump_json().replace('"latency_ms":', '"latency_ms":NaN,"x":', 1)
    report = store.ingest([good, bad], strict=False)
    assert report.accepted == 1 and report.quarantined == 1
    [(point_id, payload, _)] = _quarantined(store)
    assert point_id == "bad"
    text = payload if isinstance(payload, str) else json.dumps(payload)
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} stored in JSON"))
    assert "NaN" in text


def test_quarantine_keeps_timestamps_as_they_were(store: Store) -> None:
    point = make_point("bad", quality=0.0)  # success with quality 0: consistency
    report = store.ingest([point.model_dump(mode="json")], strict=False)
    assert report.quarantined == 1
    [(_, payload, _)] = _quarantined(store)
    document = payload if isinstance(payload, dict) else json.loads(payload)
    assert document["timestamp"] == point.model_dump(mode="json")["timestamp"]


def test_scrubbing_a_payload_keeps_timestamps_and_redacts_the_rest() -> None:
    anonymizer = Anonymizer(AnonymizationPolicy(), b"secret")
    payload = {"timestamp": "2026-11-17T23:38:14.123456+00:00", "note": "call 415-555-0132"}
    assert anonymizer.scrub_payload(payload) == {
        "timestamp": "2026-11-17T23:38:14.123456+00:00",
        "note": "call [PHONE]",
    }


def test_the_gates_value_lists_follow_their_field_lists() -> None:
    point = make_point("p")
    point.task.requirements = ["answer in JSON"]
    point.trajectory = one_attempt(
        Message(role="user", content="hi", name="bob"),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="c1", name="f", arguments={"a": ["x", {"b": "y"}], "n": 1})],
        ),
        Message(role="tool", content="ok", tool_call_id="c1"),
    )
    assert identifying_values(point) == [value for _, value in identifying_fields(point)]
    assert free_texts(point) == [value for _, value in free_text_fields(point)]
    fields = dict(identifying_fields(point))
    assert fields["trajectory.0.messages.1.tool_calls.0.arguments.a.1.b"] == "b"  # a key
    texts = dict(free_text_fields(point))
    assert texts["trajectory.0.messages.1.tool_calls.0.arguments.a.1.b"] == "y"  # a value
    assert fields["trajectory.0.messages.0.name"] == "bob"


def test_the_gates_value_lists_follow_their_field_lists_over_attempts_and_judges() -> None:
    point = make_point("p")
    first = point.trajectory[0]
    first.feedback = "try again"
    first.turns[0].rewards[0].tool_called = "search"
    again = [Message(role="user", content="again", name="eve"), Message(role="assistant")]
    point.trajectory = [first, Attempt(number=2, messages=again)]
    point.execution.failure_reason = "timeout"
    point.evaluation.judges = [
        JudgeVerdict(judge="j1", rationale="fine", error="late"),
        JudgeVerdict(judge="j2"),
    ]
    values, texts = identifying_values(point), free_texts(point)
    assert values == [value for _, value in identifying_fields(point)]
    assert texts == [value for _, value in free_text_fields(point)]
    assert {"search", "eve", "j1", "j2"} <= set(values)
    assert {"try again", "again", "timeout", "fine", "late"} <= set(texts)


@pytest.mark.parametrize("points", ['{"id": "p"}', {"id": "p"}])
def test_validate_quality_refuses_a_single_point_as_the_batch(points: Any) -> None:
    with pytest.raises(TypeError, match="points: expected a sequence of data points"):
        validate_quality(points)
