import pytest

from agent_agency.records import ToolCall
from agent_agency.tasks.tools import CALCULATOR, ToolError, evaluate_expression, run_tool


def calc(expression: object) -> str:
    return run_tool(ToolCall(name="calculator", arguments={"expression": expression}))


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("4837 * 2916", "14104692"),
        ("(12 + 3) * -2", "-30"),
        ("7 / 2", "3.5"),
        ("8 / 2", "4"),
        ("7 // 2 + 7 % 2", "4"),
        ("2 ** 10", "1024"),
        ("3 × 4 − 0", None),
        ("2 ^ 3", "8"),
        ("-(-5)", "5"),
    ],
)
def test_calculator_evaluates_arithmetic(expression: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(ToolError):
            calc(expression)  # "−" (U+2212) is not an operator Python knows
    else:
        assert calc(expression) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('true')",
        "abs(-3)",
        "x + 1",
        "(1).__class__",
        "[1, 2]",
        "'a' * 3",
        "True + 1",
        "lambda: 1",
        "2 ** 1000",
        "9 ** 99 ** 99",
        "10.0 ** 100 * 10.0 ** 100 * 10.0 ** 100 * 10.0 ** 100",
        "1 / 0",
        "5 % 0",
        "1 +",
        "1" * 600,
    ],
)
def test_calculator_rejects_unsafe_or_invalid(expression: str) -> None:
    with pytest.raises(ToolError, match="calculator"):
        calc(expression)


def test_calculator_accepts_numeric_argument() -> None:
    assert calc(12) == "12"


def test_bad_arguments_and_unknown_tool() -> None:
    with pytest.raises(ToolError, match="'expression' is required"):
        run_tool(ToolCall(name="calculator", arguments={}))
    with pytest.raises(ToolError, match="unexpected argument"):
        run_tool(ToolCall(name="calculator", arguments={"expression": "1", "mode": "x"}))
    with pytest.raises(ToolError, match="unknown tool 'search'"):
        run_tool(ToolCall(name="search", arguments={}))


def test_calculator_spec_is_openai_function_shape() -> None:
    assert CALCULATOR.name == "calculator"
    assert CALCULATOR.parameters["required"] == ["expression"]
    assert CALCULATOR.parameters["properties"]["expression"]["type"] == "string"


def test_exact_integer_results() -> None:
    assert evaluate_expression("123456789 * 987654321") == 121932631112635269
