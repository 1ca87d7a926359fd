from __future__ import annotations

import pytest

from agent_agency.privacy import pii
from agent_agency.privacy.code_identifiers import IdentifierRenamer
from agent_agency.privacy.pii import clear_scan_cache, find_pii, generalize_path, redact


@pytest.mark.parametrize(
    ("text", "entity"),
    [
        ("mail ana.lopez@corp.example.org now", "EMAIL_ADDRESS"),
        ("call +44 20 7946 0958 today", "PHONE_NUMBER"),
        ("card 4111-1111-1111-1111 ok", "CREDIT_CARD"),
        ("host 10.0.12.7 down", "IP_ADDRESS"),
        ("ask Dr. Watson", "PERSON"),
        ("ship to 42 Elm Street please", "STREET_ADDRESS"),
        ("open /srv/app/config/settings.yaml", "FILE_PATH"),
        ("see postgresql://app:Hunter2Pw@db.internal/orders", "SECRET"),
        ("anna@web-1:~$ ls", "USERNAME"),
        ("login user_id=8812", "USER_ID"),
    ],
)
def test_each_entity_type_is_found(text: str, entity: str) -> None:
    assert entity in {f.entity for f in find_pii(text)}


@pytest.mark.parametrize(
    "text", ["host 10.0.12.7.", "hosts 10.0.12.7, 10.0.12.8; done", "(10.0.12.7)"]
)
def test_ip_addresses_before_punctuation_are_ours(text: str) -> None:
    assert {f.entity for f in pii._own_findings(text)} == {"IP_ADDRESS"}


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("ssn 536-22-8741.", [("US_SSN", "536-22-8741")]),
        ("ssn 536 22 8741", [("US_SSN", "536 22 8741")]),
        ("mixed 536-22 8741", []),  # delimiters must agree
        ("never issued 666-22-8741 and 536-00-8741", []),
    ],
)
def test_social_security_numbers_are_ours(text: str, found: list[tuple[str, str]]) -> None:
    findings = [f for f in pii._own_findings(text) if f.entity == "US_SSN"]
    assert [(f.entity, text[f.start : f.end]) for f in findings] == found


def test_version_strings_are_not_ip_addresses() -> None:
    assert pii._own_findings("pip 23.2.1.4.5 released") == []


class _CountingAnalyzer:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def analyze(self, text: str, entities: list[str], **_options: object) -> list[object]:
        self.asked.append(entities)
        return []


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        # every trigger sits inside what our recognizers found: Presidio is not asked
        ("call +1 (415) 555-2671 or write to ana@corp.example.org", []),
        ("config in /home/ana/app/tax_110.py on host 10.0.110.110.", []),
        # a phone-like run outside our findings still goes to Presidio, for that entity only
        ("mail ana@corp.example.org or call 07400123456", [["PHONE_NUMBER"]]),
    ],
)
def test_presidio_is_asked_only_about_triggers_outside_our_findings(
    monkeypatch: pytest.MonkeyPatch, text: str, asked: list[list[str]]
) -> None:
    analyzer = _CountingAnalyzer()
    monkeypatch.setattr(pii, "presidio_analyzer", lambda _regions=(): analyzer)
    clear_scan_cache()
    find_pii(text)
    clear_scan_cache()
    assert analyzer.asked == asked


def test_plain_task_text_is_left_alone() -> None:
    text = "What is 17 + 25? Reply with x/2 or 3.14; def f(a): return a"
    assert redact(text) == (text, [])


def test_luhn_invalid_digit_runs_are_not_cards() -> None:
    assert "CREDIT_CARD" not in {f.entity for f in find_pii("order 1234 5678 9012 3456")}


def test_paths_are_generalized_keeping_the_extension() -> None:
    assert generalize_path("/path/to/user-file.ts") == "/[PATH]/[FILE].ts"
    assert generalize_path("C:\\Users\\bob\\notes.txt") == "/[PATH]/[FILE].txt"
    assert generalize_path("/var/log/") == "/[PATH]"


def test_identifiers_renamed_consistently_keeping_builtins_and_imports() -> None:
    renamer = IdentifierRenamer()
    code = (
        "import math\n"
        "def calculateTotal(userName, prices):\n"
        "    total = sum(prices)\n"
        "    return math.floor(total)\n"
    )
    renamed = renamer.rename_in_text(code)
    assert "def func1(var1, var2):" in renamed
    assert "var3 = sum(var2)" in renamed
    assert "math.floor(var3)" in renamed
    fenced = renamer.rename_in_text("Use:\n```python\nprint(calculateTotal(1, [2]))\n```")
    assert "print(func1(1, [2]))" in fenced
    assert renamer.rename_in_text("Calculate the total.") == "Calculate the total."
