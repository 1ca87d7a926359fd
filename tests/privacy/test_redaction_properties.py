"""Properties of redaction on generated text: anonymizing twice changes nothing, no placeholder
sits next to a piece of the value it replaced, and the independent corpus stays caught."""

from __future__ import annotations

from benchmarks.privacy_corpus import SECRET_SHAPES, generate
from benchmarks.privacy_score import score
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_agency.privacy.pii import find_pii, redact

# Corpus records of every format and locale (the generator is seeded: the same for a seed).
RECORDS = generate(size=72, seed=7)
values = st.one_of(
    st.sampled_from(
        [value for record in RECORDS for value in (p["value"] for p in record["planted"])]
    ),
    st.sampled_from([decoy for record in RECORDS for decoy in record["decoys"]]),
    st.builds(
        lambda shape, seed: SECRET_SHAPES[shape](__import__("random").Random(seed)),
        st.sampled_from(sorted(SECRET_SHAPES)),
        st.integers(0, 10**6),
    ),
)
glue = st.sampled_from(
    [
        " ",
        "\n",
        ", ",
        ": ",
        "=",
        '"',
        "'",
        "(",
        ")",
        "@",
        "/",
        "-",
        ".",
        " at ",
        "Dear ",
        "user ",
        "password: ",
        "https://",
        "://",
        "x",
        "7",
        "\\",
        "Thanks,\n",
    ]
)
texts = st.lists(st.one_of(values, glue, st.text(max_size=8)), max_size=10).map("".join)
record_texts = st.sampled_from([record["text"] for record in RECORDS])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(texts, record_texts))
def test_anonymizing_twice_changes_nothing(text: str) -> None:
    once = redact(text)[0]
    assert redact(once)[0] == once, (text, once)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(texts, record_texts))
def test_no_finding_ends_inside_a_word(text: str) -> None:
    """A replaced span never stops between two letters or digits: what stays beside a placeholder
    is never the rest of the word (the value) it cut into."""
    for finding in find_pii(text):
        start, end = finding.start, finding.end
        assert not (start > 0 and text[start - 1].isalnum() and text[start].isalnum()), (
            text,
            finding,
        )
        assert not (end < len(text) and text[end - 1].isalnum() and text[end].isalnum()), (
            text,
            finding,
        )


def test_the_independent_corpus_is_caught_whole_and_its_decoys_kept() -> None:
    result = score(RECORDS, lambda text: redact(text)[0])
    assert not result.leaks, result.leaks[:5]
    assert result.decoy_rate >= 0.95, result.destroyed[:5]
    assert result.json_rate == 1.0
