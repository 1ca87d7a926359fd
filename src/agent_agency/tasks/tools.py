"""Tools offered to agents by the built-in task suites, and their safe execution."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

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


def _run_calculator(call: ToolCall) -> str:
    unexpected = set(call.arguments) - {"expression"}
    if unexpected:
        raise ToolError(f"calculator: unexpected argument(s) {sorted(unexpected)}")
    expression = call.arguments.get("expression")
    if not isinstance(expression, str | int | float) or isinstance(expression, bool):
        raise ToolError("calculator: argument 'expression' is required and must be a string")
    return format_number(evaluate_expression(str(expression)))


_TOOLS: dict[str, Callable[[ToolCall], str]] = {CALCULATOR.name: _run_calculator}


def run_tool(call: ToolCall) -> str:
    """Run a built-in tool call and return its result as text; `ToolError` if it cannot run."""
    runner = _TOOLS.get(call.name)
    if runner is None:
        raise ToolError(f"unknown tool {call.name!r}; available: {sorted(_TOOLS)}")
    return runner(call)
