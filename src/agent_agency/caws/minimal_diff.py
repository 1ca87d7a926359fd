"""Minimal-diff analysis of a code edit: how much of the original survived, and what was added
that the fix did not need.

A reward that only checks the tests can be gamed by rewriting everything, special-casing the
tests or padding the answer with helpers and prints. The reward multiplier in
`MinimalDiffMetrics` shrinks the task reward for such edits (never below 0.1, the seed's floor).
"""

from __future__ import annotations

import ast
import difflib
from collections import Counter
from typing import TypeGuard

from agent_agency.python_syntax import parse_python
from agent_agency.records import MinimalDiffMetrics

# Penalties per occurrence of a scaffolding pattern; their sum is capped at 1.
NEW_HELPER_PENALTY = 0.25
NEW_IMPORT_PENALTY = 0.1
PRINT_PENALTY = 0.15
DEAD_BRANCH_PENALTY = 0.2
TEST_EDIT_PENALTY = 0.3
MODULE_CODE_PENALTY = 0.25
# A fix that changes up to this share of the original lines is not penalised for its size.
FREE_LINE_CHANGE_RATIO = 0.3
SIMILARITY_FLOOR = 0.7
MIN_MULTIPLIER = 0.1

_TEST_MODULES = {"unittest", "pytest", "doctest"}


def _node_tokens(tree: ast.AST) -> list[str]:
    """Node types in walk order, with the names and constants that make code distinct."""
    tokens: list[str] = []
    for node in ast.walk(tree):
        kind = type(node).__name__
        if isinstance(node, ast.Name):
            tokens.append(f"{kind}:{node.id}")
        elif isinstance(node, ast.Attribute):
            tokens.append(f"{kind}:{node.attr}")
        elif isinstance(node, ast.Constant):
            tokens.append(f"{kind}:{node.value!r}"[:60])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            tokens.append(f"{kind}:{node.name}")
        else:
            tokens.append(kind)
    return tokens


def _defined_names(tree: ast.Module) -> set[str]:
    """Functions and classes anywhere, and module-level names bound to a lambda."""
    names = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and isinstance(
            statement.value, ast.Lambda
        ):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def _imported_modules(tree: ast.AST) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


_PRINT_FUNCTIONS = frozenset({"print", "breakpoint"})


def _print_calls(tree: ast.AST) -> int:
    """Calls of print or breakpoint, also through a name bound to them (`p = print`)."""
    names = set(_PRINT_FUNCTIONS)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id in _PRINT_FUNCTIONS
        ):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
    )


# Nodes an expression built only of constants and operators consists of (`not True`, `0 > 1`).
_CONSTANT_EXPRESSION_NODES = (
    ast.Constant,
    ast.UnaryOp,
    ast.BinOp,
    ast.BoolOp,
    ast.Compare,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.unaryop,
    ast.operator,
    ast.boolop,
    ast.cmpop,
    ast.expr_context,
)


def _is_constant(test: ast.expr) -> bool:
    return all(isinstance(node, _CONSTANT_EXPRESSION_NODES) for node in ast.walk(test))


def _dead_branches(tree: ast.AST) -> int:
    """Branches on a constant condition (`if False:`, `if not True:`, `while 0 > 1:`) and
    statements after return/raise/continue/break."""
    count = 0
    for node in ast.walk(tree):
        # `while True:` (or `while 1:`) is a real loop; any other constant condition leaves a
        # branch dead.
        if (
            isinstance(node, ast.If | ast.While | ast.IfExp)
            and _is_constant(node.test)
            and not (
                isinstance(node, ast.While)
                and isinstance(node.test, ast.Constant)
                and bool(node.test.value)
            )
        ):
            count += 1
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for index, statement in enumerate(block[:-1]):
                if isinstance(statement, ast.Return | ast.Raise | ast.Continue | ast.Break):
                    count += len(block) - index - 1
                    break
    return count


def _is_main_block(statement: ast.stmt) -> TypeGuard[ast.If]:
    """`if __name__ == "__main__":`, either way round."""
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Compare):
        return False
    test = statement.test
    sides = [test.left, *test.comparators]
    return (
        len(sides) == 2
        and isinstance(test.ops[0], ast.Eq)
        and any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
        and any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides)
    )


def _test_code(tree: ast.Module) -> int:
    """Test-like additions: test functions, asserts at module level or under `if __name__ ==
    "__main__":`, test framework imports."""
    count = sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.name.startswith("test") or node.name == "check")
    )
    module_level = list(tree.body)
    for statement in tree.body:
        if _is_main_block(statement):
            module_level += statement.body
    count += sum(1 for statement in module_level if isinstance(statement, ast.Assert))
    count += len(_imported_modules(tree) & _TEST_MODULES)
    return count


_DECLARATIONS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.Assign,
    ast.AnnAssign,
)


def _module_code(tree: ast.Module) -> int:
    """Module-level statements that run on import (calls, loops, `raise SystemExit`, a
    `__main__` block): a fix to a function needs none. Definitions, imports, assignments and
    the docstring are not counted."""
    return sum(
        1
        for statement in tree.body
        if not isinstance(statement, _DECLARATIONS)
        and not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
    )


def _line_changes(original: str, edited: str) -> int:
    changed = 0
    diff = difflib.unified_diff(original.splitlines(), edited.splitlines(), lineterm="", n=0)
    for line in diff:
        if line.startswith(("+++", "---", "@@")):
            continue
        if line.startswith(("+", "-")):
            changed += 1
    return changed


def _added(before: int, after: int) -> int:
    return max(0, after - before)


def scaffolding_findings(original: ast.Module, edited: ast.Module) -> Counter[str]:
    """How many of each scaffolding pattern the edit added relative to the original."""
    findings: Counter[str] = Counter()
    findings["new helper"] = len(_defined_names(edited) - _defined_names(original))
    findings["new import"] = len(_imported_modules(edited) - _imported_modules(original))
    findings["print"] = _added(_print_calls(original), _print_calls(edited))
    findings["dead branch"] = _added(_dead_branches(original), _dead_branches(edited))
    findings["test edit"] = _added(_test_code(original), _test_code(edited))
    findings["module code"] = _added(_module_code(original), _module_code(edited))
    return +findings


_PENALTIES = {
    "new helper": NEW_HELPER_PENALTY,
    "new import": NEW_IMPORT_PENALTY,
    "print": PRINT_PENALTY,
    "dead branch": DEAD_BRANCH_PENALTY,
    "test edit": TEST_EDIT_PENALTY,
    "module code": MODULE_CODE_PENALTY,
}


def minimal_diff_metrics(original: str, edited: str) -> MinimalDiffMetrics:
    """Compare original and edited Python source. Unparseable edits get the floor multiplier."""
    changed_lines = _line_changes(original, edited)
    line_change_ratio = changed_lines / max(1, len(original.splitlines()))
    files_touched = 1 if changed_lines else 0
    try:
        original_tree = parse_python(original)
    except SyntaxError as error:
        raise ValueError(
            f"original_code: not valid Python ({error.msg}, line {error.lineno})"
        ) from None
    try:
        edited_tree = parse_python(edited)
    except SyntaxError:
        return MinimalDiffMetrics(
            ast_similarity=0.0,
            file_touch_count=files_touched,
            line_change_ratio=line_change_ratio,
            scaffolding_penalty=1.0,
            reward_multiplier=MIN_MULTIPLIER,
        )
    similarity = difflib.SequenceMatcher(
        None, _node_tokens(original_tree), _node_tokens(edited_tree), autojunk=False
    ).ratio()
    findings = scaffolding_findings(original_tree, edited_tree)
    scaffolding = min(1.0, sum(_PENALTIES[kind] * count for kind, count in findings.items()))
    size_penalty = min(0.5, max(0.0, line_change_ratio - FREE_LINE_CHANGE_RATIO) * 0.5)
    similarity_penalty = max(0.0, SIMILARITY_FLOOR - similarity)
    multiplier = 1.0 - scaffolding - size_penalty - similarity_penalty
    return MinimalDiffMetrics(
        ast_similarity=round(similarity, 4),
        file_touch_count=files_touched,
        line_change_ratio=round(line_change_ratio, 4),
        scaffolding_penalty=round(scaffolding, 4),
        reward_multiplier=round(min(1.0, max(MIN_MULTIPLIER, multiplier)), 4),
    )
