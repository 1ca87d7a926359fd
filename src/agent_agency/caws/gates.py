"""Quality gates: named checks of one attempt, each scored in [0, 1] against a threshold.

A gate is a function of a `GateInput` (the task, the execution so far, this iteration, the code
extracted from its output, the verifiable grade and the minimal-diff metrics) and its validated
parameters. It returns a `GateCheck`; `run_gate` turns that into the seed's record
`{name, passed, score, threshold, mandatory}` with `passed = score >= threshold`.

`task-correct` and `tests-pass` are one gate under two names: both run the task's own grader
(`agent_agency.tasks.graders.grade`), which for code tasks runs the unit tests in the sandbox.
The second name keeps code-task records readable. `lint-clean` applies to code tasks only and
`minimal-diff` to code edits only; they are left out for other tasks.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import jsonschema
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from agent_agency.caws.settings import EvaluationSettings, GateSpec
from agent_agency.privacy.pii import PLACEHOLDERS, find_pii
from agent_agency.records import (
    Execution,
    GateResult,
    Iteration,
    MinimalDiffMetrics,
    Task,
    invalid,
)
from agent_agency.tasks.answers import assemble_program, function_is_defined, strip_code_fences
from agent_agency.tasks.graders import GradeResult, matchable_text

CODE_TASK_TYPES = frozenset({"code-generation", "code-editing"})
# The built-in task types whose answers hold no code (a test checks them against the suites).
NON_CODE_TASK_TYPES = frozenset(
    {"text-transformation", "arithmetic", "extraction", "classification", "tool-use"}
)
CODE_GRADER_KINDS = frozenset({"python-tests"})
GRADER_GATES = frozenset({"task-correct", "tests-pass"})
LINT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class GateInput:
    task: Task
    execution: Execution
    iteration: Iteration
    code: str | None
    grade: GradeResult | None
    minimal_diff: MinimalDiffMetrics | None


@dataclass(frozen=True)
class GateCheck:
    score: float
    reason: str
    feedback: str | None = None


class GateParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class NoParams(GateParams):
    pass


class LintParams(GateParams):
    select: list[str] = Field(default_factory=lambda: ["E4", "E7", "E9", "F"])
    max_violations: int = Field(default=5, gt=0, description="violations that score 0")

    @field_validator("select")
    @classmethod
    def _ruff_knows_the_selectors(cls, select: list[str]) -> list[str]:
        problem = _ruff_selection_problem(tuple(select))
        if problem is not None:
            raise invalid(f"ruff rejects it: {problem}")
        return select


class FormatParams(GateParams):
    json_schema: dict[str, Any] | None = None
    pattern: str | None = None

    @field_validator("json_schema")
    @classmethod
    def _schema_is_valid(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            try:
                _schema_validator_class(schema).check_schema(schema)
            except jsonschema.SchemaError as error:
                where = "/".join(str(part) for part in error.absolute_path) or "(root)"
                raise invalid(f"not a valid JSON schema at {where}: {error.message}") from None
        return schema

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as error:
                raise invalid(f"not a valid regular expression: {error}") from None
        return pattern


def _visible_phrase(phrase: str) -> str:
    if not matchable_text(phrase):
        raise invalid("must hold visible text: an empty phrase is found in every answer")
    return phrase


class BannedPhrasesParams(GateParams):
    phrases: list[Annotated[str, AfterValidator(_visible_phrase)]] = Field(default_factory=list)


class BudgetParams(GateParams):
    max_tokens: int | None = Field(default=4096, gt=0)
    max_latency_ms: float | None = Field(default=120_000.0, gt=0)
    max_iterations: int | None = Field(default=None, gt=0)


# The entity types `find_pii` reports (its placeholders name all but FILE_PATH, never redacted).
PII_ENTITIES = frozenset([*PLACEHOLDERS, "FILE_PATH"])


def _known_pii_entity(entity: str) -> str:
    if entity not in PII_ENTITIES:
        raise invalid(f"unknown PII entity {entity!r}; known: {', '.join(sorted(PII_ENTITIES))}")
    return entity


class SafetyParams(GateParams):
    secrets: bool = True
    pii_entities: list[Annotated[str, AfterValidator(_known_pii_entity)]] = Field(
        default_factory=lambda: ["EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN"]
    )
    dangerous_calls: bool = True
    allowed_calls: list[str] = Field(default_factory=list)


GateFunction = Callable[[GateInput, Any], GateCheck]
# Which tasks a gate applies to: every task, code tasks, or code edits (which carry the
# original code that minimal-diff compares against).
GateScope = Literal["any", "code", "code-editing"]


@dataclass(frozen=True)
class GateDefinition:
    name: str
    params_model: type[GateParams]
    check: GateFunction
    scope: GateScope = "any"

    def applies_to(self, task: Task) -> bool:
        if self.scope == "code":
            return is_code_task(task)
        if self.scope == "code-editing":
            return task.type == "code-editing"
        return True

    def never_applies_to(self, task_type: str) -> str | None:
        """Why the gate can never apply to tasks of `task_type`, or None when it may."""
        if self.scope == "code" and task_type in NON_CODE_TASK_TYPES:
            return f"{self.name} checks code, and {task_type!r} tasks have none"
        if self.scope == "code-editing" and task_type not in ("*", "code-editing"):
            return (
                f"{self.name} compares an edit with the task's metadata.original_code: it applies "
                "to code-editing tasks only"
            )
        return None


def is_code_task(task: Task) -> bool:
    return task.type in CODE_TASK_TYPES or task.grader.kind in CODE_GRADER_KINDS


def _entry_point(task: Task) -> str | None:
    entry_point = task.grader.reference.get("entry_point") or task.metadata.get("entry_point")
    return entry_point if isinstance(entry_point, str) and entry_point else None


def extract_code(task: Task, output: str) -> str:
    """The Python code the agent wrote: the fenced code, completed with the task's prompt when
    the answer is only a function body (HumanEval style)."""
    entry_point = _entry_point(task)
    if entry_point is None:
        return strip_code_fences(output)
    prompt = str(task.grader.reference.get("prompt", ""))
    code = strip_code_fences(output, prefer=f"def {entry_point}")
    if not function_is_defined(code, entry_point):
        return assemble_program(prompt, output, entry_point)
    # A full definition replaces the prompt's; only the prompt's imports still apply to it.
    imports = [
        line
        for line in prompt.splitlines()
        if line.startswith(("import ", "from ")) and line not in code.splitlines()
    ]
    return "\n".join([*imports, code]) if imports else code


# --------------------------------------------------------------------------------------------
# The gates
# --------------------------------------------------------------------------------------------


def _check_grader(gate: GateInput, params: NoParams) -> GateCheck:
    if gate.grade is None:
        raise ValueError("grader gate evaluated without a grade")  # evaluator always grades
    return GateCheck(gate.grade.score, gate.grade.reason, gate.grade.feedback)


def _run_ruff(code: str, select: Sequence[str]) -> subprocess.CompletedProcess[str]:
    # --ignore-noqa: a suppression comment in the answer (for a line or the whole file) must
    # not silence its own lint.
    return subprocess.run(
        [
            "ruff",
            "check",
            "--isolated",
            "--no-cache",
            "--ignore-noqa",
            "--output-format",
            "json",
            "--select",
            ",".join(select),
            "--stdin-filename",
            "solution.py",
            "-",
        ],
        input=code,
        capture_output=True,
        text=True,
        timeout=LINT_TIMEOUT_S,
        cwd=tempfile.gettempdir(),
        check=False,
    )


def _ruff_error(completed: subprocess.CompletedProcess[str]) -> str:
    """What ruff said went wrong ('Unknown rule selector `X` ...'), from its standard error."""
    lines = [line.strip() for line in completed.stderr.splitlines() if line.strip()]
    causes = [line.removeprefix("Cause:").strip() for line in lines if line.startswith("Cause:")]
    return (causes or lines or [f"exit status {completed.returncode}"])[-1]


@functools.lru_cache(maxsize=64)
def _ruff_selection_problem(select: tuple[str, ...]) -> str | None:
    """Ruff's complaint about a rule selection (run on no code: ruff checks its arguments
    first), or None; cached, as the gate's parameters are validated again for every answer."""
    completed = _run_ruff("", select)
    return None if completed.returncode in (0, 1) else _ruff_error(completed)


@dataclass(frozen=True)
class LintViolation:
    rule: str
    row: int
    message: str
    source_line: str  # stripped

    def __str__(self) -> str:
        return f"{self.rule} line {self.row}: {self.message}"


def _ruff_violations(code: str, select: Sequence[str]) -> list[LintViolation]:
    completed = _run_ruff(code, select)
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"ruff failed (exit {completed.returncode}): {_ruff_error(completed)}")
    lines = code.splitlines()
    violations = []
    for item in json.loads(completed.stdout or "[]"):
        row = item["location"]["row"]
        source_line = lines[row - 1].strip() if 0 < row <= len(lines) else ""
        violations.append(
            LintViolation(item["code"] or "syntax", row, item["message"], source_line)
        )
    return violations


@functools.lru_cache(maxsize=256)
def _given_violations(given: str, select: tuple[str, ...]) -> frozenset[tuple[str, str]]:
    """(rule, source line) of each violation in code the task supplied (not syntax errors)."""
    return frozenset(
        (violation.rule, violation.source_line)
        for violation in _ruff_violations(given, select)
        if violation.rule != "syntax"
    )


def _given_code(task: Task) -> list[str]:
    """Code the task hands the agent: a HumanEval-style prompt (given a body, so it parses) and
    a code edit's original."""
    given: list[str] = []
    prompt = task.grader.reference.get("prompt")
    entry_point = _entry_point(task)
    if isinstance(prompt, str) and prompt.strip() and entry_point is not None:
        given.append(assemble_program(prompt, "pass", entry_point))
    original = task.metadata.get("original_code")
    if isinstance(original, str):
        given.append(original)
    return given


def _check_lint(gate: GateInput, params: LintParams) -> GateCheck:
    """Ruff's violations in the answer's code, less those of lines the task supplied: the same
    rule on the same line of the prompt or the original code (HumanEval's `from typing import
    List` unused by a solution, its signature's parameter `l`) is not the answer's doing."""
    select = tuple(params.select)
    supplied: set[tuple[str, str]] = set()
    for given in _given_code(gate.task):
        supplied |= _given_violations(given, select)
    violations = [
        violation
        for violation in _ruff_violations(gate.code or "", select)
        if (violation.rule, violation.source_line) not in supplied
    ]
    if not violations:
        return GateCheck(1.0, "ruff: no violations")
    score = max(0.0, 1.0 - len(violations) / params.max_violations)
    listed = "; ".join(map(str, violations[:5]))
    return GateCheck(score, f"ruff: {len(violations)} violation(s): {listed}", f"Fix: {listed}")


def _check_minimal_diff(gate: GateInput, params: NoParams) -> GateCheck:
    metrics = gate.minimal_diff
    if metrics is None:
        return GateCheck(0.0, "no original_code in the task metadata to compare against")
    reason = (
        f"AST similarity {metrics.ast_similarity:.2f}, line change ratio "
        f"{metrics.line_change_ratio:.2f}, scaffolding penalty {metrics.scaffolding_penalty:.2f}"
    )
    feedback = None
    if metrics.reward_multiplier < 1.0:
        feedback = (
            "Keep the fix minimal: change only what the bug needs, without new helpers, "
            "prints, dead branches or tests"
        )
    return GateCheck(metrics.reward_multiplier, reason, feedback)


def _schema_validator_class(schema: Mapping[str, Any]) -> type[jsonschema.protocols.Validator]:
    """The validator for the draft `schema` names as its `$schema`, by default Draft 2020-12."""
    validator: type[jsonschema.protocols.Validator] = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    return validator


def _json_value(output: str) -> Any:
    text = strip_code_fences(output).strip()
    return json.loads(text)


def _check_format(gate: GateInput, params: FormatParams) -> GateCheck:
    schema = params.json_schema or gate.task.grader.reference.get("schema")
    output = gate.iteration.output
    if params.pattern is not None:
        if re.fullmatch(params.pattern, output.strip(), re.DOTALL) is None:
            return GateCheck(
                0.0, f"output does not match {params.pattern!r}", "Follow the required format"
            )
        if schema is None:
            return GateCheck(1.0, f"output matches {params.pattern!r}")
    if not isinstance(schema, dict):
        return GateCheck(0.0, "format gate has no json_schema or pattern, and the task no schema")
    try:
        value = _json_value(output)
    except json.JSONDecodeError as error:
        return GateCheck(0.0, f"output is not JSON: {error.msg}", "Reply with only one JSON object")
    errors = list(_schema_validator_class(schema)(schema).iter_errors(value))
    if errors:
        where = "/".join(str(part) for part in errors[0].absolute_path) or "(root)"
        message = f"schema violation at {where}: {errors[0].message}"
        return GateCheck(0.5, message, f"Fix the JSON: {message}")
    return GateCheck(1.0, "output is valid JSON matching the schema")


def _check_banned_phrases(gate: GateInput, params: BannedPhrasesParams) -> GateCheck:
    task_phrases = gate.task.grader.reference.get("banned_phrases", [])
    phrases = list(dict.fromkeys([*params.phrases, *task_phrases]))
    if not phrases:
        return GateCheck(1.0, "no banned phrases configured for this task")
    text = matchable_text(gate.iteration.output)
    found = [phrase for phrase in phrases if matchable_text(phrase) in text]
    if not found:
        return GateCheck(1.0, f"none of {len(phrases)} banned phrases used")
    quoted = ", ".join(f"'{phrase}'" for phrase in found)
    return GateCheck(
        1.0 - len(found) / len(phrases),
        f"banned phrases used: {quoted}",
        f"Remove banned phrases: {quoted}",
    )


def _usage_score(used: float, limit: float) -> float:
    """1.0 for no use, 0.5 at the limit, falling towards 0 beyond it."""
    if used <= limit:
        return 1.0 - 0.5 * used / limit
    return 0.5 * limit / used


def _check_budget(gate: GateInput, params: BudgetParams) -> GateCheck:
    iterations = [it for it in gate.execution.iterations if it.number < gate.iteration.number]
    iterations.append(gate.iteration)
    usage = {
        "tokens": (sum(it.tokens_used for it in iterations), params.max_tokens),
        "latency_ms": (sum(it.latency_ms for it in iterations), params.max_latency_ms),
        "iterations": (len(iterations), params.max_iterations),
    }
    scores: list[float] = []
    over: list[str] = []
    for name, (used, limit) in usage.items():
        if limit is None:
            continue
        scores.append(_usage_score(used, limit))
        if used > limit:
            over.append(f"{name} {used:g} > {limit:g}")
    if not scores:
        return GateCheck(1.0, "no budget limits configured")
    spent = ", ".join(f"{name} {used:g}" for name, (used, _) in usage.items())
    if over:
        return GateCheck(
            min(scores), f"over budget: {', '.join(over)}", f"Be more concise: {over[0]}"
        )
    return GateCheck(min(scores), f"within budget ({spent})")


_SECRET_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private key", re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("OpenAI-style API key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}")),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    (
        "password or secret assignment",
        # The key may end a longer name (DB_PASSWORD, client_secret, OPENAI_API_KEY): '_' and
        # '-' separate words here, so the boundaries are "no letter or digit", not \b.
        re.compile(
            r"(?i)(?<![a-z0-9])(?:password|passwd|pwd|secret(?:[_-]?key)?|api[_-]?key"
            r"|(?:access|auth|bearer|refresh|session|api)[_-]?token)(?![a-z0-9])['\"]?"
            r"\s*[:=]\s*['\"][^'\"\s]{6,}['\"]"
        ),
    ),
]

# Code whose mere reference (called or not) reaches the shell, the process table, deletion in the
# file system, arbitrary code loading, or the interpreter's exit (which could end a test run
# before its failures are reported). Names of modules are as imported; bare names are builtins.
_DANGEROUS_NAMES = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "__import__",
        "__builtins__",
        "__loader__",
        "globals",
        "locals",
        "exit",
        "quit",
        "SystemExit",
        "os.system",
        "os.popen",
        "os.fork",
        "os.forkpty",
        "os.remove",
        "os.unlink",
        "os.rmdir",
        "os.removedirs",
        "os._exit",
        "sys.exit",
        "sys.modules",
        "sys._getframe",
        "shutil.rmtree",
        "pickle.load",
        "pickle.loads",
        "marshal.loads",
    }
)
_DANGEROUS_PREFIXES = (
    "subprocess.",
    "socket.",
    "ctypes.",
    "multiprocessing.",
    "pty.",
    "builtins.",
    "importlib.",
    "posix.",
    "runpy.",
    "os.exec",
    "os.spawn",
    "os.posix_spawn",
    "os.kill",
)
_DANGEROUS_MODULES = frozenset(
    {
        "subprocess",
        "socket",
        "ctypes",
        "multiprocessing",
        "pty",
        "builtins",
        "importlib",
        "posix",
        "runpy",
        "code",
    }
)
# Modules that lead to the names above by any attribute: handed around as a value (getattr(os,
# ...), `f = os`), through their `__dict__`, or star-imported, they are flagged too.
_GATEWAY_MODULES = frozenset({"os", "sys", "shutil", "pickle", "marshal", *_DANGEROUS_MODULES})
# Attributes that reach another module's globals or the builtins from any object.
_ESCAPE_ATTRIBUTES = frozenset(
    {
        "__globals__",
        "__builtins__",
        "__subclasses__",
        "__self__",
        "f_globals",
        "f_builtins",
        "f_locals",
        "f_back",
        "gi_frame",
        "cr_frame",
        "tb_frame",
    }
)


def _import_aliases(tree: ast.AST) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _is_dangerous(name: str) -> bool:
    if name in _DANGEROUS_NAMES or name.startswith(_DANGEROUS_PREFIXES):
        return True
    namespace, _, attribute = name.rpartition(".")
    return attribute == "__dict__" and namespace in _GATEWAY_MODULES


def _dotted_parts(node: ast.expr, aliases: Mapping[str, str]) -> list[str] | None:
    """`a.b.c` as ['a', 'b', 'c'], its root resolved through the imports; None unless the
    chain starts at a name."""
    attributes: list[str] = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [*aliases.get(node.id, node.id).split("."), *reversed(attributes)]


@dataclass(frozen=True)
class _Finding:
    name: str  # what `allowed_calls` matches: a dotted name, a module or an attribute
    text: str


def _reference_finding(
    node: ast.Name | ast.Attribute, aliases: Mapping[str, str], is_attribute_base: bool
) -> _Finding | None:
    """The dangerous name a reference reaches (its shortest dangerous prefix), or the gateway
    module it hands around as a value."""
    if isinstance(node, ast.Attribute) and node.attr in _ESCAPE_ATTRIBUTES:
        return _Finding(node.attr, f".{node.attr}")
    if is_attribute_base or not isinstance(node.ctx, ast.Load):
        return None  # judged with the whole chain
    parts = _dotted_parts(node, aliases)
    if parts is None:
        return None
    for end in range(1, len(parts) + 1):
        if _is_dangerous(name := ".".join(parts[:end])):
            return _Finding(name, name)
    imported = isinstance(node, ast.Name) and node.id in aliases  # not a variable named `code`
    name = ".".join(parts)
    if imported and name in _GATEWAY_MODULES:
        return _Finding(name, f"{name} (the module as a value)")
    return None


def _import_findings(node: ast.Import | ast.ImportFrom) -> Iterator[_Finding]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] in _DANGEROUS_MODULES:
                yield _Finding(alias.name, f"import {alias.name}")
        return
    module = node.module or ""
    if node.level or not module:
        return  # a relative import reaches only the answer's own package
    root = module.split(".")[0]
    if root in _DANGEROUS_MODULES:
        yield _Finding(module, f"import {module}")
    for alias in node.names:
        if alias.name == "*" and root in _GATEWAY_MODULES:
            yield _Finding(module, f"from {module} import *")
        elif _is_dangerous(name := f"{module}.{alias.name}"):
            yield _Finding(name, name)


def _is_allowed(name: str, allowed: Sequence[str]) -> bool:
    """`allowed` names a finding's name or a module (or name) it lies under."""
    return any(name == entry or name.startswith(f"{entry}.") for entry in allowed)


def dangerous_calls(code: str, allowed: Sequence[str] = ()) -> list[str]:
    """Dangerous references and imports in `code`, found in its syntax tree (never by running
    it), each with its line; `allowed` names what not to report (`subprocess` allows the module
    and everything in it). A screen for the obvious, not a sandbox: Python offers endless
    indirection, and the sandbox is what contains the code that runs."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    aliases = _import_aliases(tree)
    attribute_bases = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            findings = list(_import_findings(node))
        elif isinstance(node, ast.Name | ast.Attribute):
            finding = _reference_finding(node, aliases, id(node) in attribute_bases)
            findings = [] if finding is None else [finding]
        else:
            continue
        found += [
            f"{finding.text} at line {node.lineno}"
            for finding in findings
            if not _is_allowed(finding.name, allowed)
        ]
    return list(dict.fromkeys(found))


def secret_kinds(text: str) -> list[str]:
    """Kinds of credentials in `text` (the values themselves are never repeated)."""
    return [kind for kind, pattern in _SECRET_PATTERNS if pattern.search(text)]


def _check_safety(gate: GateInput, params: SafetyParams) -> GateCheck:
    output = gate.iteration.output
    problems: list[str] = []
    if params.secrets:
        problems += [f"secret in output: {kind}" for kind in secret_kinds(output)]
    if params.pii_entities:
        wanted = set(params.pii_entities)
        entities = sorted({f.entity for f in find_pii(output, use_presidio=False)} & wanted)
        problems += [f"personal data in output: {entity}" for entity in entities]
    if params.dangerous_calls and gate.code is not None:
        problems += [
            f"dangerous call: {call}" for call in dangerous_calls(gate.code, params.allowed_calls)
        ]
    if not problems:
        return GateCheck(1.0, "no secrets, personal data or dangerous calls found")
    reason = "; ".join(problems[:6])
    return GateCheck(0.0, reason, f"Remove unsafe content: {reason}")


GATES: dict[str, GateDefinition] = {
    definition.name: definition
    for definition in (
        GateDefinition("task-correct", NoParams, _check_grader),
        GateDefinition("tests-pass", NoParams, _check_grader),
        GateDefinition("lint-clean", LintParams, _check_lint, scope="code"),
        GateDefinition("minimal-diff", NoParams, _check_minimal_diff, scope="code-editing"),
        GateDefinition("format", FormatParams, _check_format),
        GateDefinition("banned-phrases", BannedPhrasesParams, _check_banned_phrases),
        GateDefinition("budget", BudgetParams, _check_budget),
        GateDefinition("safety", SafetyParams, _check_safety),
    )
}


def gate_names() -> list[str]:
    return sorted(GATES)


# --------------------------------------------------------------------------------------------
# Which gates apply to a task
# --------------------------------------------------------------------------------------------


def default_gates(task: Task) -> list[GateSpec]:
    """Sensible gates for the task's type; configuration may replace or extend them."""
    budget = GateSpec(name="budget", threshold=0.5, mandatory=False)
    if is_code_task(task):
        gates = [
            GateSpec(name="tests-pass", threshold=1.0, mandatory=True),
            GateSpec(name="lint-clean", threshold=1.0, mandatory=False),
            GateSpec(name="safety", threshold=1.0, mandatory=True),
        ]
        if task.type == "code-editing":
            gates.append(GateSpec(name="minimal-diff", threshold=0.5, mandatory=False))
        return [*gates, budget]
    gates = [GateSpec(name="task-correct", threshold=1.0, mandatory=True)]
    if task.type == "text-transformation" or task.grader.reference.get("banned_phrases"):
        gates.append(GateSpec(name="banned-phrases", threshold=1.0, mandatory=True))
    if isinstance(task.grader.reference.get("schema"), dict):
        gates.append(GateSpec(name="format", threshold=1.0, mandatory=False))
    # Extraction answers legitimately quote contact details from the text they extract from.
    pii: list[str] | None = [] if task.type == "extraction" else None
    safety_params: dict[str, Any] = {} if pii is None else {"pii_entities": pii}
    gates.append(GateSpec(name="safety", threshold=1.0, mandatory=True, params=safety_params))
    return [*gates, budget]


def gates_for(settings: EvaluationSettings, task: Task) -> list[GateSpec]:
    """Default gates, then the '*' entries, then the task type's entries; a configured gate
    replaces a default of the same name. A gate is dropped for tasks it does not apply to (code
    gates for tasks without code, minimal-diff for all but code edits): configuration rejects
    one named for a task type it can never apply to."""
    specs = {spec.name: spec for spec in default_gates(task)}
    for key in ("*", task.type):
        for spec in settings.gates.get(key, []):
            specs[spec.name] = spec
    return [spec for spec in specs.values() if GATES[spec.name].applies_to(task)]


def run_gate(spec: GateSpec, gate: GateInput) -> tuple[GateResult, str | None]:
    """The gate's record and, when it failed, the feedback for the agent."""
    definition = GATES[spec.name]
    params = definition.params_model.model_validate(spec.params)
    check = definition.check(gate, params)
    score = min(1.0, max(0.0, check.score))
    passed = score >= spec.threshold
    result = GateResult(
        name=spec.name,
        passed=passed,
        score=round(score, 6),
        threshold=spec.threshold,
        mandatory=spec.mandatory,
        reason=check.reason,
    )
    feedback = None if passed else (check.feedback or f"{spec.name}: {check.reason}")
    return result, feedback
