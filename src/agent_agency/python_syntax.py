"""Parsing Python source into a syntax tree, safely from several threads at once.

CPython 3.11's parser keeps a recursion-depth counter that threads parsing at the same moment can
corrupt: `ast.parse` then raises `SystemError: AST constructor recursion depth mismatch` on valid
code (seen when the evaluator's gates ran in parallel worker threads). Every parse of code the
project checks goes through one lock; a parse takes microseconds to a millisecond.
"""

from __future__ import annotations

import ast
import threading

_PARSE_LOCK = threading.Lock()


def parse_python(source: str) -> ast.Module:
    """`ast.parse(source)`, one thread at a time; a `SyntaxError` as `ast.parse` raises it."""
    with _PARSE_LOCK:
        return ast.parse(source)
