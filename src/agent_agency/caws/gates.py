"""Quality gates: named checks of one attempt, each scored in [0, 1] against a threshold.

A gate is a function of a `GateInput` (the task, the execution so far, this iteration, the code
extracted from its output, the verifiable grade and the minimal-diff metrics) and its validated
parameters. It returns a `GateCheck`; `run_gate` turns that into the seed's record
`{name, passed, score, threshold, mandatory}` with `passed = score >= threshold`.

`task-correct` and `tests-pass` are one gate under two names: both run the task's own grader
(`agent_agency.tasks.graders.grade`), which for code tasks runs the unit tests in the sandbox.
The second name keeps code-task records readable. Code-only gates (`lint-clean`,
`minimal-diff`) do not apply to tasks without code and are left out for them.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from agent_agency.config import EvaluationSettings, GateSpec
from agent_agency.pool.pii import find_pii
from agent_agency.records import (
    Execution,
    GateResult,
    Iteration,
    MinimalDiffMetrics,
    Task,
)
from agent_agency.tasks.answers import assemble_program, function_is_defined, strip_code_fences
from agent_agency.tasks.graders import GradeResult

CODE_TASK_TYPES = frozenset({"code-generation", "code-editing"})
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
    model_config = ConfigDict(extra="forbid")


class NoParams(GateParams):
    pass


class LintParams(GateParams):
    select: list[str] = Field(default_factory=lambda: ["E4", "E7", "E9", "F"])
    max_violations: int = Field(default=5, gt=0, description="violations that score 0")


class FormatParams(GateParams):
    json_schema: dict[str, Any] | None = None
    pattern: str | None = None


class BannedPhrasesParams(GateParams):
    phrases: list[str] = Field(default_factory=list)


class BudgetParams(GateParams):
    max_tokens: int | None = Field(default=4096, gt=0)
    max_latency_ms: float | None = Field(default=120_000.0, gt=0)
    max_iterations: int | None = Field(default=None, gt=0)


class SafetyParams(GateParams):
    secrets: bool = True
    pii_entities: list[str] = Field(
        default_factory=lambda: ["EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN"]
    )
    dangerous_calls: bool = True
    allowed_calls: list[str] = Field(default_factory=list)


GateFunction = Callable[[GateInput, Any], GateCheck]


@dataclass(frozen=True)
class GateDefinition:
    name: str
    params_model: type[GateParams]
    check: GateFunction
    code_only: bool = False


def is_code_task(task: Task) -> bool:
    return task.type in CODE_TASK_TYPES or task.grader.kind in CODE_GRADER_KINDS


def extract_code(task: Task, output: str) -> str:
    """The Python code the agent wrote: the fenced code, completed with the task's prompt when
    the answer is only a function body (HumanEval style)."""
    reference = task.grader.reference
    entry_point = reference.get("entry_point") or task.metadata.get("entry_point")
    if not isinstance(entry_point, str) or not entry_point:
        return strip_code_fences(output)
    prompt = str(reference.get("prompt", ""))
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


def _ruff_violations(code: str, select: Sequence[str]) -> list[str]:
    completed = subprocess.run(
        [
            "ruff",
            "check",
            "--isolated",
            "--no-cache",
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
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"ruff failed (exit {completed.returncode}): {completed.stderr[:300]}")
    return [
        f"{item['code'] or 'syntax'} line {item['location']['row']}: {item['message']}"
        for item in json.loads(completed.stdout or "[]")
    ]


def _check_lint(gate: GateInput, params: LintParams) -> GateCheck:
    violations = _ruff_violations(gate.code or "", params.select)
    if not violations:
        return GateCheck(1.0, "ruff: no violations")
    score = max(0.0, 1.0 - len(violations) / params.max_violations)
    listed = "; ".join(violations[:5])
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
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if errors:
        where = "/".join(str(part) for part in errors[0].absolute_path) or "(root)"
        message = f"schema violation at {where}: {errors[0].message}"
        return GateCheck(0.5, message, f"Fix the JSON: {message}")
    return GateCheck(1.0, "output is valid JSON matching the schema")


def _normalize(text: str) -> str:
    return " ".join(text.lower().replace("\u2019", "'").split())


def _check_banned_phrases(gate: GateInput, params: BannedPhrasesParams) -> GateCheck:
    task_phrases = gate.task.grader.reference.get("banned_phrases", [])
    phrases = list(dict.fromkeys([*params.phrases, *task_phrases]))
    if not phrases:
        return GateCheck(1.0, "no banned phrases configured for this task")
    text = _normalize(gate.iteration.output)
    found = [phrase for phrase in phrases if _normalize(phrase) in text]
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
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token)\b\s*[:=]\s*"
            r"['\"][^'\"\s]{6,}['\"]"
        ),
    ),
]

# Calls that reach the shell, the process table, the network or arbitrary code loading.
_DANGEROUS_CALLS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "__import__",
        "os.system",
        "os.popen",
        "os.fork",
        "os.kill",
        "os.remove",
        "os.unlink",
        "os.rmdir",
        "shutil.rmtree",
        "importlib.import_module",
        "ctypes.CDLL",
        "pickle.loads",
        "marshal.loads",
    }
)
_DANGEROUS_PREFIXES = ("subprocess.", "socket.", "os.exec", "os.spawn", "os.posix_spawn")
_DANGEROUS_MODULES = frozenset({"subprocess", "socket", "ctypes", "multiprocessing"})


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


def _dotted(node: ast.expr, aliases: Mapping[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))


def dangerous_calls(code: str, allowed: Sequence[str] = ()) -> list[str]:
    """Dangerous calls and imports in `code`, found in its syntax tree (never by running it)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    aliases = _import_aliases(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func, aliases)
            if name is None or name in allowed:
                continue
            if name in _DANGEROUS_CALLS or name.startswith(_DANGEROUS_PREFIXES):
                found.append(f"{name}() at line {node.lineno}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for module in modules:
                if module.split(".")[0] in _DANGEROUS_MODULES and module not in allowed:
                    found.append(f"import {module} at line {node.lineno}")
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
        GateDefinition("lint-clean", LintParams, _check_lint, code_only=True),
        GateDefinition("minimal-diff", NoParams, _check_minimal_diff, code_only=True),
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
    replaces a default of the same name. Code-only gates are dropped for non-code tasks."""
    specs = {spec.name: spec for spec in default_gates(task)}
    for key in ("*", task.type):
        for spec in settings.gates.get(key, []):
            specs[spec.name] = spec
    code = is_code_task(task)
    return [spec for spec in specs.values() if code or not GATES[spec.name].code_only]


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
