"""The `safety` gate: credentials, personal data and dangerous calls in the answer.

Secrets are found by pattern, personal data by `agent_agency.privacy.pii.find_pii` (its regular
expressions, never a model), and dangerous calls in the syntax tree of the answer's code (never by
running it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, Field

from agent_agency.caws.gates.registry import GateCheck, GateInput, GateParams, register_gate
from agent_agency.privacy.pii import PLACEHOLDERS, find_pii
from agent_agency.python_syntax import parse_python
from agent_agency.records import invalid

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
        tree = parse_python(code)
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


register_gate("safety", _check_safety, SafetyParams)
