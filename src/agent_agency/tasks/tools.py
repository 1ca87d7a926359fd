"""Tools agents may call, by name: the registry, running a call, and the built-in calculator.

`register_tool(spec, implementation)` adds a tool a task can offer (`Task.tools` lists its
spec); the arbiter runs each call an agent makes through `run_tool`, which finds the tool here.
An implementation takes the call's arguments and returns its result: text, or anything JSON can
write, which is sent as JSON. It raises `ToolError` for arguments it cannot take; the message
goes back to the agent as the tool's error, as does any other exception it raises. Tools run in
the arbiter's event-loop thread, so they must be quick.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_agency.extensions import RegistrationError, Registry
from agent_agency.records import ToolCall, ToolSpec

MAX_EXPONENT = 100
MAX_EXPRESSION_CHARS = 500
MAX_RESULT_DIGITS = 1000

CALCULATOR = ToolSpec(
    name="calculator",
    description=(
        "Evaluate an arithmetic expression exactly. Supports numbers, + - * / // % ** and "
        "parentheses, e.g. '4837 * 2916 - 12'."
    ),
    parameters={
        "type": "object",
        "properties": {
            "expression": {
                "type": "string",
                "description": "the arithmetic expression to evaluate",
            }
        },
        "required": ["expression"],
        "additionalProperties": False,
    },
)


class ToolError(ValueError):
    """A tool call could not be run; the message says which tool or argument and why."""


Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _evaluate_node(node: ast.AST) -> Number:
    if isinstance(node, ast.Expression):
        return _evaluate_node(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ToolError(f"calculator: unsupported constant {node.value!r}; only numbers")
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _evaluate_node(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _evaluate_node(node.left)
        right = _evaluate_node(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ToolError(
                f"calculator: exponent {right} is too large (limit {MAX_EXPONENT} in magnitude)"
            )
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
            raise ToolError("calculator: division by zero")
        try:
            result = _BINARY[type(node.op)](left, right)
        except OverflowError:
            raise ToolError("calculator: result is too large") from None
        if isinstance(result, complex):
            raise ToolError("calculator: result is not a real number")
        if isinstance(result, float) and not math.isfinite(result):
            raise ToolError("calculator: result is too large")
        if isinstance(result, int) and result.bit_length() > MAX_RESULT_DIGITS * 4:
            raise ToolError(f"calculator: result has more than {MAX_RESULT_DIGITS} digits")
        return result
    raise ToolError(
        f"calculator: unsupported syntax {type(node).__name__}; only numbers, + - * / // % ** "
        "and parentheses are allowed"
    )


def evaluate_expression(expression: str) -> Number:
    """Evaluate an arithmetic expression by walking its syntax tree (never `eval`)."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"calculator: expression longer than {MAX_EXPRESSION_CHARS} characters")
    normalized = expression.replace("×", "*").replace("÷", "/").replace("^", "**")
    try:
        tree = ast.parse(normalized.strip(), mode="eval")
    except SyntaxError as error:
        raise ToolError(
            f"calculator: expression {expression!r} is not valid: {error.msg}"
        ) from None
    return _evaluate_node(tree)


def format_number(value: Number) -> str:
    """Integers exactly; floats without a spurious '.0' when they are whole."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def _run_calculator(arguments: dict[str, Any]) -> str:
    unexpected = set(arguments) - {"expression"}
    if unexpected:
        raise ToolError(f"calculator: unexpected argument(s) {sorted(unexpected)}")
    expression = arguments.get("expression")
    if not isinstance(expression, str | int | float) or isinstance(expression, bool):
        raise ToolError("calculator: argument 'expression' is required and must be a string")
    return format_number(evaluate_expression(str(expression)))


ToolImplementation = Callable[[dict[str, Any]], object]


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    implementation: ToolImplementation


TOOLS: Registry[Tool] = Registry("tool", "tools")
# What OpenAI-compatible servers accept as a function's name.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def register_tool(
    spec: ToolSpec, implementation: ToolImplementation, *, replace: bool = False
) -> None:
    """Make the tool `spec` names callable by agents of tasks that offer it."""
    if not isinstance(spec, ToolSpec):
        raise RegistrationError(f"tool spec must be a ToolSpec, got {spec!r}")
    if not _TOOL_NAME.fullmatch(spec.name):
        raise RegistrationError(
            f"tool name {spec.name!r}: must be 1 to 64 letters, digits, '_' or '-' (the names "
            "OpenAI-compatible servers accept)"
        )
    if not callable(implementation):
        raise RegistrationError(
            f"tool {spec.name!r}: implementation must be callable, got {implementation!r}"
        )
    TOOLS.register(spec.name, Tool(spec, implementation), replace=replace)


def tool_names() -> list[str]:
    return TOOLS.names()


def tool_spec(name: str) -> ToolSpec:
    """The spec of the registered tool `name`, for a task to offer; `ValueError` naming the known
    tools otherwise."""
    return TOOLS.get(name).spec


def run_tool(call: ToolCall) -> str:
    """Run a tool call and return its result as text; `ToolError` if it cannot run."""
    try:
        tool = TOOLS.get(call.name)
    except ValueError as error:
        raise ToolError(str(error)) from None
    try:
        result = tool.implementation(dict(call.arguments))
    except ToolError:
        raise
    except Exception as error:  # a tool's failure is the agent's to see, not the run's to crash on
        raise ToolError(f"{call.name} failed: {type(error).__name__}: {error}") from None
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, allow_nan=False)
    except (TypeError, ValueError):
        kind = type(result).__name__
        raise ToolError(f"{call.name} returned a {kind}, which is neither text nor JSON") from None


register_tool(CALCULATOR, _run_calculator)
