"""The early-stopping phone recognizer finds what Presidio's finds, with less parsing."""

from __future__ import annotations

import random
from typing import Any

import phonenumbers
import pytest
from presidio_analyzer.predefined_recognizers import PhoneRecognizer

from agent_agency.privacy import phone_recognizer
from agent_agency.privacy.phone_recognizer import EarlyStopPhoneRecognizer

REGIONS = PhoneRecognizer.DEFAULT_SUPPORTED_REGIONS
FORMATS = (
    phonenumbers.PhoneNumberFormat.NATIONAL,
    phonenumbers.PhoneNumberFormat.INTERNATIONAL,
    phonenumbers.PhoneNumberFormat.E164,
)


def _example_numbers() -> list[str]:
    numbers = []
    for region in REGIONS:
        for kind in (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE):
            example = phonenumbers.example_number_for_type(region, kind)
            numbers += [phonenumbers.format_number(example, f) for f in FORMATS]
    return numbers


def _texts(count: int) -> list[str]:
    """Example numbers of every region and format, next to each other (several separators) and
    to short and long digit runs that are no numbers."""
    rng = random.Random(11)
    numbers = _example_numbers()
    texts = []
    for _ in range(count):
        parts = rng.sample(numbers, rng.randint(1, 3))
        parts += [str(rng.randint(10**5, 10**11)) for _ in range(rng.randint(0, 1))]
        rng.shuffle(parts)
        separator = rng.choice([" or ", ", ", "; ", " / ", " (", "\n"])
        lead = rng.choice(["call ", "Task 40: 7 items, call ", "(", "ticket 12-3, phone:"])
        texts.append(lead + separator.join(parts) + rng.choice([" today", ".", ")", ", 3 pm"]))
    return texts


def _spans(results: list[Any]) -> set[tuple[int, int]]:
    return {(r.start, r.end) for r in results}


@pytest.mark.parametrize("text", _texts(120))
def test_every_number_presidio_finds_is_found(text: str) -> None:
    theirs = _spans(PhoneRecognizer().analyze(text, ["PHONE_NUMBER"]))
    ours = _spans(EarlyStopPhoneRecognizer().analyze(text, ["PHONE_NUMBER"]))
    assert theirs, text
    # every digit of what Presidio's finds is found ...
    covered = {index for start, end in ours for index in range(start, end)}
    for start, end in theirs:
        digits = {index for index in range(start, end) if text[index].isdigit()}
        assert digits <= covered, (text, start, end)
    # ... and anything else found is a valid number of a region (Presidio's matcher can miss a
    # number next to others: "76011076961 / 074104 10123 / (506) 234-5678")
    for start, end in ours:
        if not any(s <= start and end <= e for s, e in theirs):
            assert _valid_in_some_region(text[start:end]), (text, start, end)


def _valid_in_some_region(number: str) -> bool:
    for region in REGIONS:
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(number, region)):
                return True
        except phonenumbers.NumberParseException:
            continue
    return False


def _regions_tried(monkeypatch: pytest.MonkeyPatch, text: str) -> list[str]:
    tried: list[str] = []
    matcher = phonenumbers.PhoneNumberMatcher

    def recording_matcher(text: str, region: str, **options: Any) -> Any:
        tried.append(region)
        return matcher(text, region, **options)

    monkeypatch.setattr(phone_recognizer.phonenumbers, "PhoneNumberMatcher", recording_matcher)
    EarlyStopPhoneRecognizer().analyze(text, ["PHONE_NUMBER"])
    return tried


def test_stops_after_the_region_that_finds_the_last_number(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "ring 07400 123456 or the office on +33 1 40 40 40 40"
    assert _regions_tried(monkeypatch, text) == ["US", "GB"]


def test_a_digit_run_no_region_explains_keeps_every_region(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _regions_tried(monkeypatch, "order 1234 5678 9 shipped") == list(REGIONS)
