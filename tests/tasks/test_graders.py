import pytest

from agent_agency.records import GraderSpec, Task, ToolCall, ToolUse
from agent_agency.tasks.graders import GraderError, GradeResult, grade, validate_grader_spec


def make_task(kind: str, **reference: object) -> Task:
    return Task(id="t", type="x", prompt="p", grader=GraderSpec(kind=kind, reference=reference))


TEXT = make_task(
    "text-rules",
    banned_phrases=["hey team"],
    required_keywords=["Friday", "deploy"],
    min_words=5,
    max_words=30,
    formal=True,
)


def test_text_rules_pass() -> None:
    result = grade(TEXT, "Dear team, the deployment will be postponed until Friday. Thank you.")
    assert result == GradeResult(passed=True, score=1.0, reason="all text rules satisfied")


def test_text_rules_banned_phrase_feedback_matches_seed() -> None:
    result = grade(TEXT, "Hey team, the deployment will be postponed until Friday. Thank you.")
    assert not result.passed
    assert result.feedback == "Remove banned phrases: 'hey team'"
    assert 0.5 < result.score < 1.0


def test_text_rules_reports_every_failed_rule() -> None:
    result = grade(TEXT, "hey team, we're gonna ship it")
    assert not result.passed
    feedback = result.feedback or ""
    assert "Remove banned phrases: 'hey team'" in feedback
    assert "mention 'Friday', 'deploy'" in feedback
    assert "'we're'" in feedback and "'gonna'" in feedback
    assert result.score < 0.5


def test_text_rules_length_bounds() -> None:
    long = "The deployment moves to Friday. " + "Indeed " * 40
    result = grade(TEXT, long)
    assert not result.passed
    assert "between 5 and 30 words" in (result.feedback or "")


def test_text_rules_possessive_is_not_a_contraction() -> None:
    result = grade(TEXT, "The deployment of the team's service moves to Friday. Thank you.")
    assert result.passed


EXACT = make_task("exact-number", answer=1234)


@pytest.mark.parametrize(
    "output",
    [
        "1234",
        "Answer: 1234",
        "First 1000 + 200 = 1200, then 1200 + 34 = 1234.",
        "The total is 1,234 apples.",
        "Answer: 1234.0",
        "Step 1: 5 - 3 = 2\nAnswer: 1234\nThat was 7 steps.",
    ],
)
def test_exact_number_accepts(output: str) -> None:
    assert grade(EXACT, output).passed


@pytest.mark.parametrize("output", ["1235", "Answer: 1243 (not 1234)", "no idea", "12-34", ""])
def test_exact_number_rejects(output: str) -> None:
    result = grade(EXACT, output)
    assert not result.passed and result.score == 0.0
    assert result.feedback and "Answer:" in result.feedback


def test_exact_number_negative() -> None:
    assert grade(make_task("exact-number", answer=-7), "The change is -7.").passed
    assert not grade(make_task("exact-number", answer=-7), "10-7").passed


TOOL = make_task("tool-answer", answer=14104692, tool="calculator")
CALL = ToolCall(name="calculator", arguments={"expression": "4837 * 2916"})


def test_tool_answer_needs_answer_and_tool() -> None:
    used = [ToolUse(call=CALL, result="14104692")]
    assert grade(TOOL, "Answer: 14104692", used).passed
    no_tool = grade(TOOL, "Answer: 14104692")
    assert not no_tool.passed and no_tool.score == pytest.approx(0.7)
    assert "Call the calculator tool" in (no_tool.feedback or "")
    wrong = grade(TOOL, "Answer: 14104000", used)
    assert not wrong.passed and wrong.score == pytest.approx(0.3)
    failed_call = [ToolUse(call=CALL, error="calculator: bad")]
    assert not grade(TOOL, "Answer: 14104692", failed_call).passed


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
JSON_TASK = make_task("json-match", schema=SCHEMA, expected={"name": "Ana Silva", "age": 31})


@pytest.mark.parametrize(
    "output",
    [
        '{"name": "Ana Silva", "age": 31}',
        '```json\n{"name": "ana  silva", "age": 31}\n```',
        'Here you go: {"name": "Ana Silva", "age": 31} Hope that helps {"x": 1}',
        'Sure {not json} then {"age": 31, "name": "Ana Silva"}',
    ],
)
def test_json_match_accepts(output: str) -> None:
    assert grade(JSON_TASK, output).passed


def test_json_match_partial_and_schema_errors() -> None:
    wrong_age = grade(JSON_TASK, '{"name": "Ana Silva", "age": 30}')
    assert not wrong_age.passed and wrong_age.score == pytest.approx(0.5)
    assert "Field 'age'" in (wrong_age.feedback or "")
    bad_type = grade(JSON_TASK, '{"name": "Ana Silva", "age": "31"}')
    assert not bad_type.passed and "Schema violation at age" in (bad_type.feedback or "")
    extra = grade(JSON_TASK, '{"name": "Ana Silva", "age": 31, "city": "Lyon"}')
    assert not extra.passed and extra.score == pytest.approx(0.5)
    missing = grade(JSON_TASK, "name: Ana Silva, age: 31")
    assert not missing.passed and missing.score == 0.0
    assert "No JSON object" in (missing.feedback or "")


LABEL = make_task("label", labels=["positive", "negative", "neutral"], answer="negative")


@pytest.mark.parametrize(
    "output",
    ["negative", "Negative.", "  NEGATIVE\n", "The review is negative.", "Answer: negative"],
)
def test_label_accepts(output: str) -> None:
    assert grade(LABEL, output).passed


@pytest.mark.parametrize(
    "output", ["positive", "negative or neutral", "", "bad", "It is positive, not negative."]
)
def test_label_rejects(output: str) -> None:
    result = grade(LABEL, output)
    assert not result.passed
    assert "positive, negative, neutral" in (result.feedback or "")


CODE = make_task(
    "python-tests",
    entry_point="add",
    prompt='def add(a: int, b: int) -> int:\n    """Add two numbers."""\n',
    test=(
        "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
    ),
    timeout_s=5,
)


@pytest.mark.parametrize(
    "output",
    [
        "    return a + b\n",
        "return a + b",
        "def add(a, b):\n    return a + b\n",
        "Here is the fix:\n```python\ndef add(a, b):\n    return b + a\n```\nDone.",
        "```python\nimport math\n\ndef add(a, b):\n    return int(math.fsum([a, b]))\n",
    ],
)
def test_python_tests_accepts_bodies_functions_and_fences(output: str) -> None:
    result = grade(CODE, output)
    assert result.passed, result.reason


def test_python_tests_failure_names_the_assertion() -> None:
    result = grade(CODE, "def add(a, b):\n    return a - b\n")
    assert not result.passed and result.score == 0.0
    assert "assert candidate(2, 3) == 5" in (result.feedback or "")


def test_python_tests_timeout_and_empty() -> None:
    looping = make_task(
        "python-tests", entry_point="f", test="def check(c):\n    c()\n", timeout_s=1
    )
    result = grade(looping, "def f():\n    while True:\n        pass\n")
    assert not result.passed and "timed out" in result.reason
    assert not grade(CODE, "   ").passed


def test_code_never_runs_in_process() -> None:
    marker = make_task("python-tests", entry_point="f", test="def check(c):\n    assert c() == 1\n")
    result = grade(marker, "import builtins\nbuiltins.LEAKED = 1\ndef f():\n    return 1\n")
    assert result.passed
    import builtins

    assert not hasattr(builtins, "LEAKED")


@pytest.mark.parametrize(
    "output",
    [
        "    exit()\n",
        "def add(a, b):\n    return a - b\n\nraise SystemExit(0)\n",
        "import os\ndef add(a, b):\n    return a - b\n\nos._exit(0)\n",
        "import atexit, os\natexit.register(lambda: os._exit(0))\ndef add(a, b):\n    return 0\n",
        "import os, sys\nsys.excepthook = lambda *a: os._exit(0)\ndef add(a, b):\n    return 0\n",
    ],
)
def test_python_tests_exiting_never_passes(output: str) -> None:
    result = grade(CODE, output)
    assert not result.passed
    assert result.feedback and result.feedback.startswith("Your function `add` fails its tests")


# The reviewer's generic cheat: answer each call with the expected value found in the tests.
READS_THE_TESTS = """```python
import ast
def add(*args):
    for line in open(__file__).read().splitlines():
        line = line.strip()
        if line.startswith("assert candidate(") and " == " in line:
            call, want = line[len("assert "):].rsplit(" == ", 1)
            if ast.literal_eval("(" + call[len("candidate("):-1] + ",)") == args:
                return ast.literal_eval(want)
```"""


def test_python_tests_the_answer_cannot_read_the_tests() -> None:
    result = grade(CODE, READS_THE_TESTS)
    assert not result.passed
    assert result.reason == (
        "tests failed: a test assertion failed (failing check: assert candidate(2, 3) == 5)"
    )


def test_python_tests_result_must_be_a_builtin_value() -> None:
    always_equal = (
        "class Anything(int):\n"
        "    def __eq__(self, other):\n"
        "        return True\n\n"
        "def add(a, b):\n"
        "    return Anything(0)\n"
    )
    result = grade(CODE, always_equal)
    assert not result.passed
    assert "the function returned a Anything, not a builtin value" in result.reason


def test_python_tests_use_the_prompts_helpers_not_the_answers() -> None:
    # Shaped like HumanEval/38: the tests call a helper the prompt defines.
    task = make_task(
        "python-tests",
        entry_point="decode",
        prompt=(
            "def encode(text: str) -> str:\n"
            "    return text[::-1]\n\n\n"
            "def decode(text: str) -> str:\n"
            '    """Undo encode."""\n'
        ),
        test="def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n",
    )
    assert grade(task, "    return text[::-1]\n").passed
    overridden = "def encode(text):\n    return text\n\ndef decode(text):\n    return text\n"
    assert not grade(task, overridden).passed


def test_python_tests_prompt_ending_in_a_signature() -> None:
    task = make_task(
        "python-tests",
        entry_point="add",
        prompt="def add(a, b):\n",
        test="def check(candidate):\n    assert candidate(2, 3) == 5\n",
    )
    assert grade(task, "    return a + b\n").passed
    assert not grade(task, "    return a - b\n").passed


def test_python_tests_timeout_is_capped() -> None:
    task = make_task("python-tests", entry_point="f", test="def check(c):\n    c()\n", timeout_s=61)
    with pytest.raises(
        GraderError, match=r"grader.reference.timeout_s: .*less than or equal to 60"
    ):
        grade(task, "def f():\n    return 1\n")


def test_unknown_kind_and_bad_reference_are_clear_errors() -> None:
    with pytest.raises(GraderError, match="unknown grader kind 'regex'"):
        grade(make_task("regex"), "x")
    with pytest.raises(GraderError, match=r"grader.reference.answer: Field required"):
        grade(make_task("exact-number"), "1")
    with pytest.raises(GraderError, match=r"grader.reference.labels"):
        validate_grader_spec(GraderSpec(kind="label", reference={"labels": "ab", "answer": "a"}))


@pytest.mark.parametrize(
    ("kind", "reference", "message"),
    [
        (
            "exact-number",
            {"answer": True},
            "grader.reference.answer: must be a number, got a boolean",
        ),
        (
            "exact-number",
            {"answer": "5"},
            "grader.reference.answer: must be a number, got a string",
        ),
        (
            "tool-answer",
            {"answer": False, "tool": "calculator"},
            "grader.reference.answer: must be a number, got a boolean",
        ),
        (
            "json-match",
            {"schema": {"type": "nonsense"}, "expected": {}},
            "grader.reference.schema: not a valid JSON schema at type: 'nonsense' is not valid",
        ),
        (
            "json-match",
            {"schema": {"properties": {"a": {"minLength": -1}}}, "expected": {}},
            "grader.reference.schema: not a valid JSON schema at properties/a/minLength: -1",
        ),
        (
            "text-rules",
            {"min_words": 10, "max_words": 2},
            "grader.reference.max_words: must be >= min_words (10), got 2",
        ),
    ],
)
def test_references_no_answer_could_pass_are_rejected(
    kind: str, reference: dict[str, object], message: str
) -> None:
    with pytest.raises(GraderError) as caught:
        validate_grader_spec(GraderSpec(kind=kind, reference=reference))
    assert str(caught.value).startswith(message), caught.value
    assert str(caught.value).endswith(f"(grader kind {kind!r})")


def test_numeric_and_bounded_references_still_pass_good_answers() -> None:
    assert grade(make_task("exact-number", answer=5), "Answer: 5").passed
    assert grade(make_task("exact-number", answer=2.5), "Answer: 2.5").passed
    assert grade(make_task("text-rules", min_words=2, max_words=2), "Kind regards.").passed
