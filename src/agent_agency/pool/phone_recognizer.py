"""Presidio's phone recognizer, stopping at the first region after which no number is left.

Presidio's `PhoneRecognizer` runs `phonenumbers`' matcher over the whole text once per region (8
by default, ~0.2 ms each per candidate) and then parses every match again only to name its region
in an explanation. This one runs the same matcher region by region, in the same order, and stops
as soon as no phone-like digit run (Presidio's phone trigger, a necessary condition for any
match) is left outside the numbers found so far: a later region could only find a number
overlapping one already found. Numbers in international format are found by the first region; a
national number by its own region. Results carry no per-region explanation.
"""

from __future__ import annotations

from typing import Any

import phonenumbers
from presidio_analyzer import EntityRecognizer, RecognizerResult
from presidio_analyzer.predefined_recognizers import PhoneRecognizer

from agent_agency.pool.pii import PRESIDIO_TRIGGERS, Finding, text_outside


class EarlyStopPhoneRecognizer(PhoneRecognizer):
    """`PhoneRecognizer` with the same matches, region passes cut short once nothing is left."""

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: Any = None
    ) -> list[RecognizerResult]:
        trigger = PRESIDIO_TRIGGERS["PHONE_NUMBER"]
        leniency = phonenumbers.Leniency.VALID if self.leniency is None else self.leniency
        results: list[RecognizerResult] = []
        for region in self.supported_regions:
            # the analyzer engine adds this recognizer's id to each result (its context step)
            results += [
                RecognizerResult(self.supported_entities[0], match.start, match.end, self.SCORE)
                for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=leniency)
            ]
            found = tuple(Finding("PHONE_NUMBER", r.start, r.end) for r in results)
            if not trigger.search(text_outside(text, found)):
                break
        return list(EntityRecognizer.remove_duplicates(results))
