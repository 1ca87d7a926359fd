"""Rename identifiers in Python code keeping structure: userName → var1, calculateTotal → func1.

Only names the code itself binds (functions, classes, parameters, assigned variables) are renamed;
builtins, imports and attributes of other objects keep their names, so the code still reads and
runs the same. Code is found as fenced blocks, or as the whole text when it parses as statements.
"""

from __future__ import annotations

import ast
import builtins
import re

from agent_agency.python_syntax import parse_python

_FENCE = re.compile(r"```([\w+-]*)\n(.*?)```", re.S)
_BUILTINS = frozenset(dir(builtins)) | {"self", "cls"}


class IdentifierRenamer:
    """One mapping per data point, so the same name becomes the same alias everywhere in it."""

    def __init__(self) -> None:
        self.mapping: dict[str, str] = {}
        self._counts: dict[str, int] = {}

    def _alias(self, name: str, kind: str) -> str:
        if name in _BUILTINS or (name.startswith("__") and name.endswith("__")):
            return name
        if name not in self.mapping:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self.mapping[name] = f"{kind}{self._counts[kind]}"
        return self.mapping[name]

    def _bound_names(self, tree: ast.AST) -> None:
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                imported.update((a.asname or a.name).split(".")[0] for a in node.names)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self._alias(node.name, "func")
            elif isinstance(node, ast.ClassDef):
                self._alias(node.name, "class")
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) or (
                isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
            ):
                name = node.arg if isinstance(node, ast.arg) else node.id
                if name not in imported:
                    self._alias(name, "var")

    def rename_code(self, code: str) -> str | None:
        """The renamed code, or None when `code` is not Python."""
        try:
            tree = parse_python(code)
        except (SyntaxError, ValueError):
            return None
        self._bound_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                node.name = self.mapping.get(node.name, node.name)
            elif isinstance(node, ast.Name):
                node.id = self.mapping.get(node.id, node.id)
            elif isinstance(node, ast.arg | ast.keyword) and node.arg is not None:
                node.arg = self.mapping.get(node.arg, node.arg)
        return ast.unparse(tree)

    def rename_in_text(self, text: str) -> str:
        """Rename inside fenced code blocks; a text that is all Python code is renamed whole."""
        if "```" in text:

            def replace(match: re.Match[str]) -> str:
                language, body = match.group(1), match.group(2)
                if language not in ("", "python", "py", "python3"):
                    return match.group(0)
                renamed = self.rename_code(body)
                return match.group(0) if renamed is None else f"```{language}\n{renamed}\n```"

            return _FENCE.sub(replace, text)
        if _looks_like_python(text):
            renamed = self.rename_code(text)
            if renamed is not None:
                return renamed
        return text


def _looks_like_python(text: str) -> bool:
    """Prose can parse as an expression; require a statement that binds or imports."""
    if not re.search(
        r"^\s*(?:def |class |import |from \S+ import |[A-Za-z_]\w* *=[^=])", text, re.M
    ):
        return False
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return False
    return any(not isinstance(node, ast.Expr) for node in tree.body)
