"""The `ner` extra: person names written without context, found by spaCy's English model.

The model is in the dev extra; where it is not installed, the tests that need it skip. The test
session runs with `AGENCY_NER=off` (tests/conftest.py): each test here turns it on.
"""

from __future__ import annotations

import json

import pytest

from agent_agency.pool.anonymize import Anonymizer
from agent_agency.privacy.ner import NER_MODEL, NER_SWITCH_ENV, ner_enabled, person_findings
from agent_agency.privacy.pii import clear_scan_cache, redact
from agent_agency.privacy.settings import AnonymizationPolicy

UNCUED = "Can you loop in Tobias Krüger? They own the Visual Studio Code integration."


@pytest.fixture
def ner_on(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip(NER_MODEL)
    monkeypatch.delenv(NER_SWITCH_ENV, raising=False)
    clear_scan_cache()


def test_the_switch_turns_the_extra_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NER_SWITCH_ENV, "off")
    assert not ner_enabled()
    assert "Krüger" in redact(UNCUED)[0]


@pytest.mark.usefixtures("ner_on")
def test_a_name_without_context_is_found_and_products_and_ids_stay() -> None:
    assert ner_enabled()
    text = UNCUED + " Ticket ORD-2023-123456, client v1.2.3."
    cleaned, entities = redact(text)
    assert "Krüger" not in cleaned and "Tobias" not in cleaned
    assert "[PERSON]" in cleaned and "PERSON" in entities
    for kept in ("Visual Studio Code", "ORD-2023-123456", "v1.2.3"):
        assert kept in cleaned
    # without the extra's model the default misses it: the extra is what found it
    assert "Tobias Krüger" in redact(text, use_ner=False)[0]


@pytest.mark.usefixtures("ner_on")
def test_a_degree_after_the_name_and_a_repeated_name_go_with_it() -> None:
    text = "    Reviewed-with: Olivia Lindau B.A.\n    Thanks to Olivia Lindau for the report.\n"
    found = sorted((f.start, f.end) for f in person_findings(text))
    assert [text[start:end] for start, end in found] == ["Olivia Lindau B.A.", "Olivia Lindau"]
    assert "Lindau" not in redact(text)[0] and "B.A." not in redact(text)[0]


@pytest.mark.usefixtures("ner_on")
def test_the_policy_turns_it_off_per_pool_and_json_stays_valid() -> None:
    text = json.dumps({"note": "Tobias Krüger approved the release", "count": 3})
    on = Anonymizer(AnonymizationPolicy(), b"k" * 32).clean_text(text)
    assert "Krüger" not in on and json.loads(on)["count"] == 3
    off = Anonymizer(AnonymizationPolicy(use_ner=False), b"k" * 32).clean_text(text)
    assert off == text


@pytest.mark.usefixtures("ner_on")
def test_anonymizing_twice_changes_nothing_and_long_lines_are_read_in_pieces() -> None:
    text = "Spoke with Tobias Krüger this morning.\n" + "x " * 60_000 + "\nThanks to Olivia Lindau."
    once = redact(text)[0]
    assert "Krüger" not in once and "Lindau" not in once
    assert redact(once)[0] == once
