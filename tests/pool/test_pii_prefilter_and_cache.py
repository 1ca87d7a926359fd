"""The PII pre-filter hides no finding; cached scans and the cheap anonymized view are exact."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pool_records import make_point, one_attempt
from sqlalchemy import text as sql_text

from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.queries import get_agent_statistics
from agent_agency.pool.store import Store
from agent_agency.privacy import pii, urls
from agent_agency.privacy.pii import (
    CACHE_MAX_CHARS,
    PRESIDIO_TRIGGERS,
    find_pii,
    may_hold_pii,
    pii_entities,
    redact,
)
from agent_agency.privacy.presidio import ANY_TRIGGER
from agent_agency.privacy.settings import AnonymizationPolicy
from agent_agency.privacy.spans import (
    DIGIT,
    AnyNeeds,
    Recognizer,
    literal_searches,
    literals,
    may_match_any,
    required_atoms,
    scan,
    shape,
    trie_pattern,
)
from agent_agency.privacy.structured import (
    OBFUSCATED_AT_NEEDS,
    may_be_obfuscated_at,
    structured_findings,
)
from agent_agency.privacy.urls import in_url_authority
from agent_agency.records import Message, ToolCall, utcnow

FIRST = sorted(pii._FIRST_NAMES)
WORDS = ["the", "Report", "total", "x", "=", ":", "/", ".", "(", ")", "-", "+", "\n", "id", "Ave"]


def _digits(low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet="0123456789", min_size=low, max_size=high)


hex_group = st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=4)
separator = st.sampled_from(["", " ", "-", ".", "(", ")", " (", ") ", "/", "\n"])
# Values shaped like every entity type, plus near misses around each recognizer's edges.
pii_values = st.one_of(
    st.builds(
        lambda u, d: f"{u}@{d}.com",
        st.from_regex(r"[a-z.]{1,8}", fullmatch=True),
        st.from_regex(r"[a-z]{1,6}", fullmatch=True),
    ),
    st.builds("".join, st.lists(st.one_of(_digits(1, 4), separator), min_size=1, max_size=9)),
    st.builds(lambda *g: ".".join(g), *[_digits(1, 3)] * 4),
    st.builds(lambda g: ":".join(g), st.lists(hex_group, min_size=2, max_size=8)),
    st.builds(
        lambda f, l_: f"{f} {l_}",
        st.sampled_from(FIRST),
        st.from_regex(r"[A-Z][a-z]{1,6}", fullmatch=True),
    ),
    st.builds(
        lambda h, n: f"{h} {n}",
        st.sampled_from(["Mr", "Mrs.", "Dr.", "Prof", "Ms"]),
        st.from_regex(r"[A-Z][a-z]{1,6}", fullmatch=True),
    ),
    st.builds(
        lambda n, s: f"{n} Elm {s}",
        _digits(1, 5),
        st.sampled_from(["Street", "Ave", "Road", "Blvd", "Way"]),
    ),
    st.builds(
        lambda k, v: f"{k}{v}",
        st.sampled_from(["user_id=", "UID: ", "userid =", "uid:"]),
        st.from_regex(r"[\w.-]{1,6}", fullmatch=True),
    ),
    st.builds(
        lambda p: "/" + "/".join(p),
        st.lists(st.from_regex(r"[\w.@-]{1,6}", fullmatch=True), min_size=1, max_size=4),
    ),
    st.builds(lambda p: "C:\\" + p, st.from_regex(r"[\w.]{1,8}", fullmatch=True)),
    st.sampled_from(
        [
            "https://a.example/x",
            "www.example.org",
            "my name is Ada Lovelace",
            "DE89 3704 0044 0532 0130 00",
            "078-05-1120",
            "536 22 8741",
            "4111 1111 1111 1111",
            "1BoatSLRHtKNngkdXEeobR76b53LETtpyT",
            "+1 (415) 555-2671",
            "::1",
        ]
    ),
)
texts = st.lists(
    st.one_of(pii_values, st.sampled_from(WORDS), st.text(max_size=6)), max_size=6
).map(" ".join)


def uncached_findings(text: str, *, use_presidio: bool) -> set[tuple[str, int, int]]:
    """What the recognizers find when asked directly: no pre-filter, no cache."""
    found = {(f.entity, f.start, f.end) for f in pii._own_findings(text)}
    if use_presidio:
        found |= {(f.entity, f.start, f.end) for f in pii._presidio_findings(text)}
    return found


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_prefilter_never_hides_what_our_recognizers_find(text: str) -> None:
    if pii._own_findings(text):
        assert may_hold_pii(text), text


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_prefilter_passes_every_text_presidio_would_be_asked_about(text: str) -> None:
    if any(trigger.search(text) for trigger in PRESIDIO_TRIGGERS.values()):
        assert may_hold_pii(text), text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
@example("0 0.0.0.00 4111 1111 1111 1111")  # an IP running into a card: both redacted
@example("a@a.com DE89 3704 0044 0532 0130 00")  # an IBAN whose digits our phone rule finds
@example("0 0.0.0.0 a@a.com ::1")  # an IPv6 loopback only Presidio finds
@example("DE89 3704 0044 0532 0130 00 0.279.030.251 +1 (415) 555-2671")  # a version string kept
@example("343.15.1.886 2 userid =x DE89 3704 0044 0532 0130 00")  # one running into a number
def test_find_pii_equals_the_uncached_unfiltered_scan(text: str) -> None:
    expected = uncached_findings(text, use_presidio=True)
    own = uncached_findings(text, use_presidio=False)
    kept = [(f.entity, f.start, f.end) for f in find_pii(text)]
    assert all(a[2] <= b[1] for a, b in itertools.pairwise(kept)), kept  # no overlaps
    # each kept span joins raw findings (it starts at one and ends at one)
    assert all(
        any(s == start for _, s, _ in expected) and any(e == end for _, _, e in expected)
        for _, start, end in kept
    )
    # what our recognizers find is covered completely; what Presidio alone would find from a
    # trigger inside our findings (it is not asked then) at least overlaps a kept span
    for _entity, start, end in own:
        assert any(s <= start and end <= e for _, s, e in kept), (text, start, end)
    for _entity, start, end in expected:
        assert any(s < end and start < e for _, s, e in kept), (text, start, end)
    assert pii_entities(text) == tuple(
        sorted({f.entity for f in find_pii(text, use_presidio=False)})
    )


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
@example("Task 7: total? /home/x 12 Main St, NY 10001 [12/")
def test_gated_needs_answer_as_every_recognizer_asked_in_turn(text: str) -> None:
    assert pii._ANY_NEEDS(text) == may_match_any(pii.RECOGNIZERS, text), text


_NEEDS = sorted({r.needs.pattern: r.needs for r in pii.RECOGNIZERS}.values(), key=str)


@pytest.mark.parametrize("needs", _NEEDS, ids=lambda needs: needs.pattern[:30])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_match_of_a_need_holds_one_of_its_required_atoms(
    needs: re.Pattern[str], data: st.DataObject
) -> None:
    atoms = required_atoms(needs)
    if atoms is None:
        return
    match = data.draw(st.from_regex(needs))
    found = needs.search(match)
    assert found is not None
    held = found.group()
    assert any(re.search(r"\d", held) if atom == DIGIT else atom in held for atom in atoms), (
        needs.pattern,
        held,
        atoms,
    )


def test_literals_are_every_string_a_pattern_matches_when_finitely_many() -> None:
    def words(pattern: str) -> list[str] | None:
        return literals(re.compile(pattern))

    assert words(r"[Tt]oken|ab(?:c|d)") == ["Token", "token", "abc", "abd"]
    assert words(r"Hi|Hello|Hey") == ["Hi", "Hello", "Hey"]  # the parser factors out the "H"
    for infinite_or_unanalysed in (
        r"a+",
        r"ab?",
        r"\bx",
        r"[^a]",
        r"[a-c]",
        r"\d",
        r"(?i:x)",
        r"(?=a)a",
    ):
        assert words(infinite_or_unanalysed) is None, infinite_or_unanalysed
    assert words(r"(?i)x") is None


# the needs of recognizers asked through their `needs` alone that match finitely many strings
_LITERAL_NEEDS = sorted(
    {
        r.needs.pattern: r.needs
        for r in pii.RECOGNIZERS
        if type(r).may_match is Recognizer.may_match and literals(r.needs) is not None
    }.values(),
    key=str,
)


def test_the_key_words_and_token_prefixes_are_searched_as_literals() -> None:
    assert len(_LITERAL_NEEDS) >= 6


@pytest.mark.parametrize("needs", _LITERAL_NEEDS, ids=lambda needs: needs.pattern[:30])
def test_each_literal_of_a_need_is_found_by_the_one_pattern_searched_for_them(
    needs: re.Pattern[str],
) -> None:
    gated = AnyNeeds(pii.RECOGNIZERS)
    words = literals(needs)
    assert words is not None
    searches = literal_searches(words)
    for word in words:
        assert needs.fullmatch(word), word
        text = f"plain {word} words"
        assert any(search(text) for search in searches) and gated(text), word
        # one character short of the word, no need of this pattern holds: neither searched
        # pattern finds one
        shorter = f"plain {word[:-1]}"
        found = any(search(shorter) for search in searches)
        assert found == bool(needs.search(shorter)), word


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text(alphabet="abAB-_ ", min_size=1, max_size=4), min_size=1), st.text("abAB-_ ")
)
def test_a_trie_pattern_finds_a_match_where_one_of_its_words_occurs(
    words: list[str], text: str
) -> None:
    assert bool(trie_pattern(words).search(text)) == any(word in text for word in words)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text(alphabet="abAB-_ :ß", min_size=1, max_size=5), max_size=8),
    st.text("abAB-_ :ß", max_size=30),
)
@example(["token", "sk-", "Dear", "ich heiße"], "a task-list")
def test_the_literal_searches_find_a_match_where_one_of_their_words_occurs(
    words: list[str], text: str
) -> None:
    found = any(search(text) for search in literal_searches(words))
    assert found == any(word in text for word in words), (words, text)


def test_required_atoms_take_only_what_every_match_contains() -> None:
    def atoms(pattern: str) -> frozenset[str] | None:
        return required_atoms(re.compile(pattern))

    assert atoms(r"ab:c") == frozenset(":")
    assert atoms(r"a/b|c:d") == frozenset("/:")
    assert atoms(r"\d{5}[ \t]+[A-Z]") == frozenset([DIGIT])
    assert atoms(r"x:?y") == frozenset("x")  # an optional ':' is not required
    # both required, the rarer in text is taken: a '\' rather than the ':' before it
    assert atoms(r"[A-Za-z]:\\|/x") == frozenset("\\/")
    assert atoms(r"a|b*") is None  # a branch that may match nothing requires nothing
    assert atoms(r"(?i:q)") is None  # a case-insensitive literal is not analysed
    assert atoms(r"[^:]") is None
    gated = AnyNeeds(pii.RECOGNIZERS)
    assert not gated("plain words only") and gated("Dear Ada")


def test_no_rule_of_the_prefilter_holds_in_a_short_number() -> None:
    # every number the short-number path passes, asked of every rule: none holds
    for length in range(1, pii.SHORT_NUMBER_DIGITS + 1):
        for digits in itertools.product("0123456789", repeat=length):
            assert not pii._may_hold_pii("".join(digits)), digits
    # the path is only taken by short ASCII numbers: longer ones and other digits are scanned
    assert may_hold_pii("415555") and pii._may_hold_pii("415555")
    assert not may_hold_pii("42") and may_hold_pii("4155552671")


def test_prefilter_rejects_ordinary_task_text() -> None:
    for text in (
        "Task 7: a shop sells 12 pens at 3 dollars each. Total?",
        "You are a careful assistant. Think step by step before you answer.",
        "```python\ndef f(prices):\n    return sum(prices) * 1.2\n```",
        "negative",
    ):
        assert not may_hold_pii(text)
        assert find_pii(text) == []


def test_cache_returns_identical_fresh_results() -> None:
    pii.clear_scan_cache()
    text = "Mail jane.doe@example.com or call +1 (415) 555-2671 from 10.0.0.7"
    first = find_pii(text)
    first.clear()  # callers may mutate what they get; the cache must not see it
    second = find_pii(text)
    assert second == find_pii(text) and second
    assert {(f.entity, f.start, f.end) for f in second} <= uncached_findings(
        text, use_presidio=True
    )
    assert redact(text) == redact(text)


def test_long_texts_bypass_the_cache_with_the_same_result() -> None:
    body = "plain words " * (CACHE_MAX_CHARS // 12 + 1)
    text = body + " write to jane.doe@example.com"
    assert len(text) > CACHE_MAX_CHARS
    [finding] = find_pii(text)
    assert finding.entity == "EMAIL_ADDRESS" and finding.start == len(body) + 10
    anonymizer = Anonymizer(AnonymizationPolicy(), b"secret")
    assert anonymizer.clean_text(text) == body + " write to [EMAIL]"


def _point_with_everything() -> object:
    point = make_point(
        prompt="Mail jane.doe@example.com about /home/jane/app/main.py",
        output="```python\ndef calculateTotal(userName):\n    return userName\n```",
    )
    conversation = [
        Message(role="system", content="You are careful. Contact Dr. Watson if unsure."),
        Message(role="user", content="Hi, my name is Ada Lovelace", name="ada-123"),
        Message(
            role="assistant",
            content="calling",
            tool_calls=[ToolCall(name="send", arguments={"to": ["bob@corp.example.com"], "n": 3})],
        ),
        Message(role="tool", content="sent to 10.0.0.7", tool_call_id="c1"),
    ]
    point.trajectory = one_attempt(*conversation)
    point.execution.failure_reason = "timeout calling +44 20 7946 0958"
    return point


@pytest.mark.parametrize("rename", [False, True])
def test_anonymized_view_equals_the_full_copy(rename: bool) -> None:
    point = _point_with_everything()
    policy = AnonymizationPolicy(rename_identifiers=rename)
    anonymizer = Anonymizer(policy, b"secret")
    before = point.model_dump()  # type: ignore[attr-defined]
    view = anonymizer.anonymized_view(point)  # type: ignore[arg-type]
    full = anonymizer.anonymize(point)  # type: ignore[arg-type]
    assert view.model_dump() == full.model_dump()
    assert point.model_dump() == before  # type: ignore[attr-defined]  # input untouched
    dumped = full.model_dump_json()
    for secret in (
        "jane.doe",
        "/home/jane",
        "Watson",
        "Lovelace",
        "ada-123",
        "bob@corp",
        "10.0.0.7",
        "7946 0958",  # whole groups: four digits alone can occur in a random hex id
    ):
        assert secret not in dumped
    assert full.trajectory[0].messages[2].tool_calls[0].arguments == {"to": ["[EMAIL]"], "n": 3}
    assert ("func1" in full.execution.final_output) is rename


def test_redaction_cache_follows_a_policy_changed_after_construction() -> None:
    anonymizer = Anonymizer(AnonymizationPolicy(), b"secret")
    text = "see /home/jane/app/main.py"
    assert anonymizer.clean_text(text) == "see /[PATH]/[FILE].py"
    anonymizer.policy = AnonymizationPolicy(generalize_paths=False)
    assert anonymizer.clean_text(text) == text


def test_anonymize_returns_an_independent_copy() -> None:
    point = make_point(prompt="plain text")
    full = Anonymizer(AnonymizationPolicy(), b"secret").anonymize(point)
    full.rl_labels.reward = 0.0
    full.routing.selected_agent = "changed"
    assert point.rl_labels.reward == 0.9
    assert point.routing.selected_agent == "direct"


def test_agent_statistics_read_the_covering_index(store: Store) -> None:
    if store.engine.dialect.name != "sqlite":
        pytest.skip("EXPLAIN QUERY PLAN is SQLite's")
    query = (
        "EXPLAIN QUERY PLAN SELECT count(*), sum(success), sum(quality), sum(reward), "
        "sum(latency_ms), sum(tokens) FROM data_points "
        "WHERE agent = 'a' AND task_type = 'x' AND timestamp >= '2026-01-01'"
    )
    with store.engine.connect() as connection:
        plan = " ".join(str(row[-1]) for row in connection.execute(sql_text(query)))
    assert "COVERING INDEX ix_data_points_agent_type_time_stats" in plan


@pytest.mark.parametrize("task_type", [None, "math"])
@pytest.mark.parametrize("days", [None, 3])
def test_agent_statistics_every_shape_matches_a_direct_count(
    store: Store, task_type: str | None, days: int | None
) -> None:
    now = utcnow()
    points = [
        make_point(
            f"s{i}",
            agent=("a", "b")[i % 2],
            task_type=("math", "code")[(i // 2) % 2],
            quality=0.1 + i / 20,
            success=i % 3 != 0,
            when=now - timedelta(days=i % 6, hours=1),
        )
        for i in range(16)
    ]
    assert store.ingest(points).accepted == len(points)
    for agent in ("a", "b"):
        window = timedelta(days=days) if days is not None else None
        expected = [
            p
            for p in points
            if p.routing.selected_agent == agent
            and (task_type is None or p.task.task_type == task_type)
            and (window is None or p.timestamp >= now - window)
        ]
        stats = get_agent_statistics(store, agent, task_type, window)
        assert stats.n == len(expected) > 0
        assert stats.successes == sum(p.execution.success for p in expected)
        assert stats.mean_quality == pytest.approx(
            sum(p.evaluation.quality_score for p in expected) / len(expected)
        )


# ASCII texts dense in what the shape conditions are about: digit runs and their separators,
# capitals, blanks of every kind, brackets, "at" and "@".
shape_texts = st.one_of(
    texts.filter(str.isascii),
    st.text(alphabet="0123456789 \t\n\x0b\x1f.-()[]/:@%_,+#AZKaxbt", max_size=48),
    st.lists(
        st.sampled_from(["12", "4111", " ", "-", ".", "(", ")", "DE", "44", "at", "AT", "[", "]"]),
        max_size=16,
    ).map("".join),
)
_ASCII = "".join(map(chr, range(128)))
# (a rule, its necessary condition in an ASCII text's shape), for every shape condition in use
_SHAPED: list[tuple[re.Pattern[str], Callable[[bytes], object]]] = [
    (r.needs, r.shape_needs.search) for r in pii.RECOGNIZERS if r.shape_needs is not None
] + [
    (pii._DIGIT_LED, lambda text_shape: pii._may_hold_digit_rule("", text_shape)),
    (pii._FIRST_AND_LAST, pii._FIRST_AND_LAST_SHAPE.search),
]


def test_the_shape_names_each_ascii_character_by_its_class() -> None:
    assert shape("Ab9 \t\n\x1f_-[@é") is None  # not all ASCII
    assert shape("Ab9 \t\n\x0b\x1c_-[@") == b"Aa0     _-[@"
    for character in _ASCII:
        mapped = shape(character)
        assert mapped is not None and len(mapped) == 1
        assert (mapped == b"0") == bool(re.fullmatch(r"\d", character))
        assert (mapped == b" ") == bool(re.fullmatch(r"\s", character))
        assert (mapped in (b"A", b"a")) == character.isalpha()


@pytest.mark.parametrize(
    "rule, shape_needs", _SHAPED, ids=lambda p: str(getattr(p, "pattern", ""))[:24]
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_match_of_a_shaped_rule_holds_its_shape_condition(
    rule: re.Pattern[str], shape_needs: Callable[[bytes], object], data: st.DataObject
) -> None:
    # (two capitals past ASCII, which a rule may require: a text holding them has no shape)
    text = data.draw(st.one_of(st.from_regex(rule, alphabet=_ASCII + "ÀØ"), shape_texts))
    text_shape = shape(text)
    if text_shape is not None and rule.search(text):
        assert shape_needs(text_shape), (rule.pattern, text)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(texts, shape_texts, st.from_regex(OBFUSCATED_AT_NEEDS)))
def test_the_obfuscated_at_gate_answers_as_its_pattern(text: str) -> None:
    assert may_be_obfuscated_at(text) == bool(OBFUSCATED_AT_NEEDS.search(text)), text


def _every_rule_asked(text: str) -> bool:
    """The pre-filter with no gate: each rule searched in turn."""
    return bool(
        "@" in text
        or pii._COLON_RULES.search(text)
        or pii._USER_ID_EQ.search(text)
        or pii._DIGIT_LED.search(text)
        or OBFUSCATED_AT_NEEDS.search(text)
        or may_match_any(pii.RECOGNIZERS, text)
        or any(m.group(1) in pii._FIRST_NAMES for m in pii._FIRST_AND_LAST.finditer(text))
    )


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(texts, shape_texts))
@example("Task 3: what is 3 + 21? Answer with the number only.")
@example("Reply to [EMAIL] when done. 12 Main St, NY 10001 [12/Jan/2024")
def test_the_gated_prefilter_answers_as_every_rule_asked(text: str) -> None:
    assert pii._may_hold_pii(text) == _every_rule_asked(text), text


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(texts, shape_texts))
@example("+1 (415) 555-2671, 4111 1111 1111 1111, 078-05-1120, DE89 3704 0044 0532 0130 00")
@example("SSN: 078051120 from 10.0.0.7 and fe80:0:0:0:0:0:0:1 or 5 Elm Street")
def test_the_gated_scan_finds_what_every_recognizer_asked_finds(text: str) -> None:
    text_shape = shape(text)
    assert pii._ANY_NEEDS.findings(text, text_shape) == scan(pii.RECOGNIZERS, text), text
    assert structured_findings(text, text_shape) == structured_findings(text, None), text


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(texts, shape_texts))
@example("Task 10: 10 + 70? Reply to user10@example.com or fe80::1")
@example("xDE89 3704 0044 0532 0130 00 a@b.co")
def test_presidio_is_skipped_only_where_no_trigger_matches_the_residual(text: str) -> None:
    own = tuple(pii._own_findings(text))
    if not pii._may_trigger_presidio(text, own):
        residual, _never = pii._residual(text, own)
        assert not ANY_TRIGGER.search(residual), text


@settings(max_examples=300, deadline=None)
@given(st.one_of(texts, st.from_regex(r"[a-z]+://[^\s/@]{0,8}@?[\w.]*")))
def test_a_url_authority_is_looked_for_only_after_a_scheme_separator(text: str) -> None:
    for start in range(len(text) + 1):
        window = max(0, start - 120)
        expected = urls._AUTHORITY_BEFORE.search(text, window, start) is not None
        assert in_url_authority(text, start) == expected, (text, start)


# The two pre-filter rules as they were before they were made to start with a character class.
_STARTING_AT_A_BOUNDARY = {
    "_FIRST_AND_LAST": re.compile(rf"(?=[A-Z])\b([A-Z][a-z]+)\s+{pii._CAPITALIZED}\b"),
    "_DIGIT_LED": re.compile(
        r"(?=\d)(?:\d(?:\.\d+\.\d+\.\d|\d{2}[ .-]?\d{3}|[\d ().-]{6,}\d|[\d -]{11,}\d)"
        r"|\d(?<=[A-Z]{2}\d)\d[A-Z0-9 ]{10,}"
        r"|[13][a-km-zA-HJ-NP-Z1-9]{25,34}"
        r"|1(?<=bc1)[a-z0-9]{25,})"
    ),
}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(texts, shape_texts, st.text(alphabet="Ab1c3 xZ_é\n0", max_size=40)))
@example("McDonald Anna Berg")
@example("xbc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")
def test_the_rewritten_rules_match_where_they_did(text: str) -> None:
    for name, before in _STARTING_AT_A_BOUNDARY.items():
        rule = getattr(pii, name)
        assert [m.span() for m in rule.finditer(text)] == [
            m.span() for m in before.finditer(text)
        ], (name, text)
