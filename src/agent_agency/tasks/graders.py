"""Graders that verify a task's answer, keyed by `GraderSpec.kind`.

Every grader takes its typed reference (validated from `GraderSpec.reference`), the agent's
output, the tool uses of the attempt and a `SandboxPolicy`, and returns a `GradeResult`. Code
never runs in this process: code graders go through `agent_agency.sandbox.run_python`, within the
limits of that policy (the evaluation's deadline, cancellation and hidden databases).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Annotated, Any, Generic, TypeVar

import jsonschema
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agent_agency.records import GraderSpec, Task, ToolUse, invalid
from agent_agency.sandbox import FunctionTests, SandboxPolicy, run_python
from agent_agency.tasks.answers import (
    assemble_program,
    extract_answer_text,
    extract_final_number,
    extract_json_object,
)


class GradeResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    reason: str
    feedback: str | None = Field(default=None, description="how the agent should fix its answer")


class GraderError(ValueError):
    """A grader kind is unknown or its reference data is invalid."""


class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid")


_JSON_TYPE_NAMES = {bool: "a boolean", str: "a string", list: "an array", dict: "an object"}


def _number(value: Any) -> Any:
    # pydantic would take true as 1 and "5" as 5: a reference no answer can then match.
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = _JSON_TYPE_NAMES.get(type(value), "null" if value is None else type(value).__name__)
        raise invalid(f"must be a number, got {kind}")
    return value


Number = Annotated[int | float, BeforeValidator(_number)]


R = TypeVar("R", bound=Reference)


class Grader(Generic[R]):
    """A grader kind: its reference model and the function that grades against it."""

    def __init__(
        self,
        kind: str,
        reference_model: type[R],
        check: Callable[[R, str, Sequence[ToolUse], SandboxPolicy], GradeResult],
    ) -> None:
        self.kind = kind
        self.reference_model = reference_model
        self.check = check

    def parse_reference(self, reference: dict[str, Any]) -> R:
        try:
            return self.reference_model.model_validate(reference)
        except ValidationError as error:
            first = error.errors()[0]
            # a check of the whole reference names its field in the context (`records.invalid`)
            field = first.get("ctx", {}).get("field")
            path = ".".join(str(part) for part in first["loc"]) or field or "(top level)"
            raise GraderError(
                f"grader.reference.{path}: {first['msg']} (grader kind {self.kind!r})"
            ) from None

    def __call__(
        self,
        reference: dict[str, Any],
        output: str,
        tool_uses: Sequence[ToolUse],
        sandbox: SandboxPolicy,
    ) -> GradeResult:
        return self.check(self.parse_reference(reference), output, tool_uses, sandbox)


_REGISTRY: dict[str, Grader[Any]] = {}


def register_grader(grader: Grader[Any]) -> None:
    if grader.kind in _REGISTRY:
        raise GraderError(f"grader kind {grader.kind!r} is already registered")
    _REGISTRY[grader.kind] = grader


def grader_kinds() -> list[str]:
    return sorted(_REGISTRY)


def _grader_for(kind: str) -> Grader[Any]:
    grader = _REGISTRY.get(kind)
    if grader is None:
        raise GraderError(f"grader.kind: unknown grader kind {kind!r}; known: {grader_kinds()}")
    return grader


def validate_grader_spec(spec: GraderSpec) -> None:
    """Raise `GraderError` naming the field if the kind is unknown or the reference invalid."""
    _grader_for(spec.kind).parse_reference(spec.reference)


def grade(
    task: Task,
    output: str,
    tool_uses: Sequence[ToolUse] = (),
    *,
    sandbox: SandboxPolicy | None = None,
) -> GradeResult:
    """Verify `output` (and the attempt's tool uses) against the task's grader; code it runs
    runs within `sandbox` (default: `SandboxPolicy()`), each grader setting its own time limit."""
    policy = sandbox if sandbox is not None else SandboxPolicy()
    return _grader_for(task.grader.kind)(task.grader.reference, output, tool_uses, policy)


def _result(score: float, failures: list[str], ok_reason: str) -> GradeResult:
    if not failures:
        return GradeResult(passed=True, score=1.0, reason=ok_reason)
    return GradeResult(
        passed=False,
        score=max(0.0, min(1.0, score)),
        reason="; ".join(failures),
        feedback="; ".join(failures),
    )


def _quote_all(items: Sequence[str]) -> str:
    return ", ".join(f"'{item}'" for item in items)


# --------------------------------------------------------------------------------------------
# text-rules: a rewrite that must avoid phrases, keep keywords, fit a length, sound formal
# --------------------------------------------------------------------------------------------

CONTRACTION = re.compile(
    r"\b\w+n't\b|\b\w+'(?:re|ve|ll|d|m)\b|\b(?:it|that|what|there|here|he|she|let|who)'s\b",
    re.IGNORECASE,
)
SLANG = frozenset((
    "gonna", "wanna", "gotta", "kinda", "sorta", "yeah", "yep", "nope", "hey", "yo", "guys",
    "folks", "lol", "asap", "btw", "fyi", "thx", "pls", "plz", "u", "ur", "awesome", "cool",
    "stuff", "ya", "y'all", "dunno", "lemme", "gimme", "tbh", "imo", "lmk", "ttyl", "cuz", "bc",
    "omg", "super", "ok", "okay", "heads-up",
))  # fmt: skip


class TextRulesReference(Reference):
    banned_phrases: list[str] = Field(default_factory=list)
    required_keywords: list[str] = Field(default_factory=list)
    min_words: int = Field(default=1, ge=0)
    max_words: int = Field(default=400, gt=0)
    formal: bool = True

    @field_validator("max_words")
    @classmethod
    def _bounds_ordered(cls, max_words: int, info: ValidationInfo) -> int:
        min_words = info.data.get("min_words")  # absent when invalid: reported already
        if min_words is not None and max_words < min_words:
            raise invalid(f"must be >= min_words ({min_words}), got {max_words}")
        return max_words


# Capitals of other scripts drawn like Latin capitals (NFKC already folds fullwidth and
# mathematical letters): a Cyrillic 'е' in "hеy team" would otherwise hide a banned phrase. Text
# is upper-cased before the mapping and case-folded after it, so a letter and its capital map
# alike ('е' and 'Е' both to 'e'), and text in those scripts still matches itself.
_LATIN_LOOKALIKES = str.maketrans(
    "АВЕЅІЈКМНОРСТХУԀҺԚԜΑΒΕΖΗΙΚΜΝΟΡΤΥΧꞬ",  # Cyrillic, Greek, Latin capital script g
    "ABESIJKMHOPCTXYDHQWABEZHIKMNOPTYXG",
)


def matchable_text(text: str) -> str:
    """`text` as phrases and words are matched in it: invisible format characters (Unicode
    category Cf: soft hyphens, zero-width spaces) removed, NFKC-normalized (fullwidth and other
    compatibility forms become their plain letters, a no-break space a space), Cyrillic and Greek
    letters drawn like Latin ones made those Latin letters, case-folded, with each run of
    whitespace made one space."""
    visible = "".join(char for char in text if unicodedata.category(char) != "Cf")
    capitals = unicodedata.normalize("NFKC", visible).upper().translate(_LATIN_LOOKALIKES)
    folded = capitals.replace("\u2019", "'").casefold()
    return " ".join(folded.split())


def informal_words(text: str) -> list[str]:
    """Contractions and slang words found in `text`, in order of appearance, without repeats."""
    normalized = matchable_text(text)
    found = [match.group(0) for match in CONTRACTION.finditer(normalized)]
    found += [word for word in re.findall(r"[a-z'-]+", normalized) if word in SLANG]
    return list(dict.fromkeys(found))


def _check_text_rules(
    ref: TextRulesReference, output: str, tool_uses: Sequence[ToolUse], sandbox: SandboxPolicy
) -> GradeResult:
    text = matchable_text(output)
    failures: list[str] = []
    scores: list[float] = []

    banned = [phrase for phrase in ref.banned_phrases if matchable_text(phrase) in text]
    scores.append(1 - len(banned) / len(ref.banned_phrases) if ref.banned_phrases else 1.0)
    if banned:
        failures.append(f"Remove banned phrases: {_quote_all(banned)}")

    missing = [
        word
        for word in ref.required_keywords
        if not re.search(rf"\b{re.escape(word.lower())}", text)
    ]
    if ref.required_keywords:
        scores.append(1 - len(missing) / len(ref.required_keywords))
    if missing:
        failures.append(f"Keep the key information: mention {_quote_all(missing)}")

    words = len(output.split())
    length_ok = ref.min_words <= words <= ref.max_words
    scores.append(1.0 if length_ok else 0.0)
    if not length_ok:
        failures.append(
            f"Write between {ref.min_words} and {ref.max_words} words (you wrote {words})"
        )

    if ref.formal:
        # A slang word inside a banned phrase is already reported once, as the phrase.
        banned_words = {word for phrase in banned for word in matchable_text(phrase).split()}
        informal = [word for word in informal_words(output) if word not in banned_words]
        scores.append(1.0 if not informal else 0.0)
        if informal:
            failures.append(f"Use a formal register: avoid {_quote_all(informal)}")

    return _result(sum(scores) / len(scores), failures, "all text rules satisfied")


register_grader(Grader("text-rules", TextRulesReference, _check_text_rules))


# --------------------------------------------------------------------------------------------
# python-tests: run the completed function against unit tests in the sandbox
# --------------------------------------------------------------------------------------------


MAX_TEST_TIMEOUT_S = 60.0


class PythonTestsReference(Reference):
    entry_point: str = Field(min_length=1, pattern=r"^[A-Za-z_]\w*$")
    test: str = Field(min_length=1, description="Python defining check(candidate)")
    prompt: str = Field(default="", description="code the completion continues (may be empty)")
    timeout_s: float = Field(default=10.0, gt=0, le=MAX_TEST_TIMEOUT_S)


def _setup_for_tests(ref: PythonTestsReference) -> str:
    """The prompt as code the tests run first, for the helpers they call (HumanEval's `poly`,
    `encode_cyclic`): the tests use the task's own definitions, never the answer's. A prompt that
    ends in a signature gets a body; one that does not compile even then is left out."""
    for setup in (ref.prompt, assemble_program(ref.prompt, "pass", ref.entry_point)):
        try:
            compile(setup, "<setup>", "exec")
        except (SyntaxError, ValueError):
            continue
        return setup
    return ""


def _check_python_tests(
    ref: PythonTestsReference, output: str, tool_uses: Sequence[ToolUse], sandbox: SandboxPolicy
) -> GradeResult:
    if not output.strip():
        return _result(0.0, ["The answer is empty: return the complete Python function"], "")
    tests = FunctionTests(entry_point=ref.entry_point, test=ref.test, setup=_setup_for_tests(ref))
    program = assemble_program(ref.prompt, output, ref.entry_point)
    outcome = run_python(program, replace(sandbox, timeout_s=ref.timeout_s), tests=tests)
    if outcome.ok:
        return GradeResult(passed=True, score=1.0, reason="all tests passed")
    detail = f" (failing check: {outcome.failed_test})" if outcome.failed_test else ""
    reason = f"tests failed: {outcome.reason}{detail}"
    feedback = (
        f"Your function `{ref.entry_point}` fails its tests: {outcome.reason}{detail}. "
        "Return the complete corrected function."
    )
    return GradeResult(passed=False, score=0.0, reason=reason, feedback=feedback)


register_grader(Grader("python-tests", PythonTestsReference, _check_python_tests))


# --------------------------------------------------------------------------------------------
# exact-number and tool-answer: the final number must equal the reference exactly
# --------------------------------------------------------------------------------------------


class ExactNumberReference(Reference):
    answer: Number


def _number_matches(answer: int | float, output: str) -> tuple[bool, Decimal | None]:
    found = extract_final_number(output)
    return found is not None and found == Decimal(str(answer)), found


def _check_exact_number(
    ref: ExactNumberReference, output: str, tool_uses: Sequence[ToolUse], sandbox: SandboxPolicy
) -> GradeResult:
    ok, found = _number_matches(ref.answer, output)
    if ok:
        return GradeResult(passed=True, score=1.0, reason=f"answer {ref.answer} is correct")
    if found is None:
        problem = "no number found in the answer"
    else:
        problem = f"final answer {found} is incorrect"
    return _result(0.0, [f"{problem}; recompute and end with a line 'Answer: <number>'"], "")


register_grader(Grader("exact-number", ExactNumberReference, _check_exact_number))


class ToolAnswerReference(Reference):
    answer: Number
    tool: str = Field(min_length=1)


ANSWER_WEIGHT = 0.7


def _check_tool_answer(
    ref: ToolAnswerReference, output: str, tool_uses: Sequence[ToolUse], sandbox: SandboxPolicy
) -> GradeResult:
    ok, found = _number_matches(ref.answer, output)
    tool_used = any(use.call.name == ref.tool and use.succeeded for use in tool_uses)
    failures: list[str] = []
    if not ok:
        got = "no number found" if found is None else f"final answer {found} is incorrect"
        failures.append(f"{got}; report the exact result")
    if not tool_used:
        failures.append(f"Call the {ref.tool} tool to compute the result")
    score = (ANSWER_WEIGHT if ok else 0.0) + ((1 - ANSWER_WEIGHT) if tool_used else 0.0)
    return _result(score, failures, f"answer {ref.answer} is correct and {ref.tool} was used")


register_grader(Grader("tool-answer", ToolAnswerReference, _check_tool_answer))


# --------------------------------------------------------------------------------------------
# json-match: a JSON object that validates against a schema and equals the expected values
# --------------------------------------------------------------------------------------------


class JsonMatchReference(Reference):
    json_schema: dict[str, Any] = Field(alias="schema")
    expected: dict[str, Any]

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as error:
            where = "/".join(str(part) for part in error.absolute_path)
            at = f" at {where}" if where else ""
            raise invalid(f"not a valid JSON schema{at}: {error.message}") from None
        return schema


def _same_value(expected: Any, actual: Any) -> bool:
    if isinstance(expected, str) and isinstance(actual, str):
        return matchable_text(expected) == matchable_text(actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return Decimal(str(expected)) == Decimal(str(actual))
    return bool(expected == actual)


def _check_json_match(
    ref: JsonMatchReference, output: str, tool_uses: Sequence[ToolUse], sandbox: SandboxPolicy
) -> GradeResult:
    value = extract_json_object(output)
    if value is None:
        return _result(0.0, ["No JSON object found: reply with one JSON object"], "")
    failures: list[str] = []
    validator = jsonschema.Draft202012Validator(ref.json_schema)
    schema_errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    for error in schema_errors[:3]:
        where = "/".join(str(part) for part in error.absolute_path) or "(object)"
        failures.append(f"Schema violation at {where}: {error.message}")
    wrong = [key for key, exp in ref.expected.items() if not _same_value(exp, value.get(key))]
    for key in wrong:
        failures.append(f"Field '{key}' should be extracted from the text (got {value.get(key)!r})")
    matched = 1 - len(wrong) / len(ref.expected) if ref.expected else 1.0
    score = matched if not schema_errors else matched / 2
    return _result(score, failures, "JSON matches the schema and the expected values")


register_grader(Grader("json-match", JsonMatchReference, _check_json_match))


# --------------------------------------------------------------------------------------------
# label: one label from a fixed set
# --------------------------------------------------------------------------------------------


class LabelReference(Reference):
    labels: list[str] = Field(min_length=2)
    answer: str

    @model_validator(mode="after")
    def _answer_is_a_label(self) -> LabelReference:
        # the grader finds one of `labels` in the output: another answer never passes
        if _normalize_label(self.answer) not in {_normalize_label(label) for label in self.labels}:
            raise invalid(f"{self.answer!r} is none of the labels {self.labels}", field="answer")
        return self


def _normalize_label(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def predicted_label(labels: Sequence[str], output: str) -> str | None:
    """The single label the output commits to, or None if it names none or several."""
    answer = _normalize_label(extract_answer_text(output))
    by_normal = {_normalize_label(label): label for label in labels}
    if answer in by_normal:
        return by_normal[answer]
    named = [label for norm, label in by_normal.items() if re.search(rf"\b{norm}\b", answer)]
    return named[0] if len(named) == 1 else None


def _check_label(
    ref: LabelReference, output: str, tool_uses: Sequence[ToolUse], sandbox: SandboxPolicy
) -> GradeResult:
    label = predicted_label(ref.labels, output)
    if label is not None and _normalize_label(label) == _normalize_label(ref.answer):
        return GradeResult(passed=True, score=1.0, reason=f"label {ref.answer!r} is correct")
    choices = ", ".join(ref.labels)
    problem = "no single label found" if label is None else f"label {label!r} is incorrect"
    return _result(0.0, [f"{problem}; answer with exactly one of: {choices}"], "")


register_grader(Grader("label", LabelReference, _check_label))
