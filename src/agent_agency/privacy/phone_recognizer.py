"""Presidio's phone recognizer, doing only the `phonenumbers` work that can still find a number.

Presidio's `PhoneRecognizer` runs `phonenumbers`' matcher over the whole text once per region (8
by default), parsing every digit run of the text in every pass, then parses every match again
only to name its region in an explanation. This one runs the same matcher region by region, in
the same order, with three cuts, each resting on Presidio's phone trigger (a run of at least 8
digits and ` ().-`) being necessary for any match:

- candidates shorter than the trigger ("Task 40", "7 dollars") are not parsed
  (`min_candidate_length`);
- a later region's pass does not see the numbers found so far (masked with a character the
  matcher neither reads as part of a number nor as a letter next to one): it could only find a
  number overlapping one already found;
- the passes stop as soon as no trigger is left outside the numbers found.

Numbers in international format are found by the first region; a national number by its own
region. Results carry no per-region explanation.
"""

from __future__ import annotations

from typing import Any

import phonenumbers
from presidio_analyzer import EntityRecognizer, RecognizerResult
from presidio_analyzer.predefined_recognizers import PhoneRecognizer

from agent_agency.privacy.presidio import PRESIDIO_TRIGGERS
from agent_agency.privacy.spans import Finding, text_outside

MIN_CANDIDATE_CHARS = 8  # the shortest text Presidio's phone trigger matches
_MASK = "_"  # no part of a phone number or its extension, and no letter (which would veto one)


class EarlyStopPhoneRecognizer(PhoneRecognizer):
    """`PhoneRecognizer` finding the same numbers with a fraction of its parsing."""

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: Any = None
    ) -> list[RecognizerResult]:
        trigger = PRESIDIO_TRIGGERS["PHONE_NUMBER"]
        leniency = phonenumbers.Leniency.VALID if self.leniency is None else self.leniency
        results: list[RecognizerResult] = []
        unexplained = text
        for region in self.supported_regions:
            matches = phonenumbers.PhoneNumberMatcher(
                unexplained, region, leniency=leniency, min_candidate_length=MIN_CANDIDATE_CHARS
            )
            # the analyzer engine adds this recognizer's id to each result (its context step)
            results += [
                RecognizerResult(self.supported_entities[0], match.start, match.end, self.SCORE)
                for match in matches
            ]
            found = tuple(Finding("PHONE_NUMBER", r.start, r.end) for r in results)
            unexplained = text_outside(text, found, _MASK)
            if not trigger.search(unexplained):
                break
        return list(EntityRecognizer.remove_duplicates(results))
