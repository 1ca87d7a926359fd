"""What a configuration file may be: bounded in size, in what its aliases expand to, in depth and
in the length of a number; beyond a bound, an error naming the file (or the field) and why, never
a traceback or all of memory."""

import resource
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_agency.cli.app import app
from agent_agency.config import (
    MAX_ALIAS_EXPANSION,
    MAX_CONFIG_BYTES,
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    load_config,
)
from agent_agency.records import RoutingStrategy
from agent_agency.sections import ConfigError

ENTRY = "from agent_agency.entry import main; main()"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agency.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def alias_bomb(levels: int, width: int = 9) -> str:
    """`levels` anchors, each a list of `width` aliases of the one before: width**levels values
    once expanded."""
    lines = [f"l0: &l0 [{', '.join(['x'] * width)}]"]
    for level in range(1, levels):
        aliases = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"l{level}: &l{level} [{aliases}]")
    return "\n".join(lines) + "\n"


def refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    return message


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    # 9**5 = 59,049 values: far over the bound, yet harmless were the check to fail (the file
    # would then be reported for its unknown fields instead)
    assert MAX_ALIAS_EXPANSION < 9**5
    message = refusal(write(tmp_path, alias_bomb(5)))
    assert f"its YAML aliases (*name) would expand it by more than {MAX_ALIAS_EXPANSION:,}" in (
        message
    )
    assert "invalid configuration" not in message


def test_aliases_that_repeat_a_little_are_read(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "routing:\n  strategy: &s ucb1\n  per_task_type: {arithmetic: *s}\n"
        "  context_task_types: &types [arithmetic, extraction]\n  context_features: *types\n",
    )
    config = load_config(path)
    assert config.routing.strategy_for("arithmetic") is RoutingStrategy.UCB1
    assert config.routing.context_features == ["arithmetic", "extraction"]


def test_the_nine_by_nine_alias_bomb_ends_the_cli_with_status_2_in_little_memory(
    tmp_path: Path,
) -> None:
    """9**9 values, 21 GB were they expanded: the command runs with 1 GiB of address space, so a
    regression fails this test with a MemoryError instead of taking the machine's memory."""
    write(tmp_path, alias_bomb(9))

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "config", "show"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit_memory,
    )
    assert result.returncode == 2, result.stderr
    assert "error: agency.yaml: its YAML aliases (*name) would expand it" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_value_holding_an_alias_of_itself_is_an_error(tmp_path: Path) -> None:
    message = refusal(write(tmp_path, "run:\n  agents: &a [direct, *a]\n"))
    assert message.endswith("line 2: a value holds an alias of itself, so it would never end")


@pytest.mark.parametrize(
    "text",
    [
        "run:\n  seed: " + "[" * 3000 + "]" * 3000 + "\n",
        # each level nested 60 deep in the file, twice that through the alias
        "a: &a " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 60 + "*a" + "]" * 60 + "\n",
    ],
    ids=["written", "through-an-alias"],
)
def test_nesting_deeper_than_the_bound_is_an_error(tmp_path: Path, text: str) -> None:
    message = refusal(write(tmp_path, text))
    assert f"values nested more than {MAX_DEPTH} levels deep" in message


def test_a_file_over_the_size_bound_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "#" * MAX_CONFIG_BYTES + "\n")
    assert refusal(path) == f"{path}: larger than 1 MiB, the most a configuration file may be"
    path.write_text("#" * (MAX_CONFIG_BYTES - 1) + "\n")
    assert load_config(path).run.tasks == 60


def test_a_file_that_never_ends_is_read_no_further_than_the_bound() -> None:
    assert "larger than 1 MiB" in refusal(Path("/dev/zero"))


@pytest.mark.parametrize(
    "value",
    ["1" * 5000, "0x" + "f" * 5000, "-" + "9" * (MAX_NUMBER_CHARS + 1)],
    ids=["decimal", "hexadecimal", "negative"],
)
def test_a_number_too_long_to_read_is_an_error_of_its_field(tmp_path: Path, value: str) -> None:
    message = refusal(write(tmp_path, f"run:\n  seed: {value}\n  tasks: 0\n"))
    assert message.splitlines()[1:] == [
        f"  run.seed: a number of {len(value):,} characters, too long to read "
        f"(at most {MAX_NUMBER_CHARS})",
        "  run.tasks: Input should be greater than 0",  # every problem at once
    ]


def test_a_number_too_long_in_a_list_or_as_a_key_is_named_by_where_it_is(tmp_path: Path) -> None:
    # YAML takes a key of at most 1,024 characters without `?`
    path = write(
        tmp_path,
        f"routing:\n  context_task_types: [arithmetic, {'7' * 5000}]\n"
        f"  per_task_type: {{{'7' * 200}: ucb1}}\n",
    )
    too_long = f"too long to read (at most {MAX_NUMBER_CHARS})"
    assert refusal(path).splitlines()[1:] == [
        f"  routing.context_task_types.1: a number of 5,000 characters, {too_long}",
        f"  routing.per_task_type: a key is a number of 200 characters, {too_long}",
    ]


def test_a_long_number_through_the_cli_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    write(tmp_path, "pool:\n  hot_days: " + "1" * 5000 + "\n")
    result = CliRunner().invoke(app, ["config", "show"])
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)
    assert "pool.hot_days: a number of 5,000 characters, too long to read" in result.output


def test_a_date_as_a_key_is_read_as_its_text(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "routing:\n  per_task_type: {2024-01-31: ucb1}\n"))
    assert config.routing.strategy_for("2024-01-31") is RoutingStrategy.UCB1


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ('run:\n  summary_json: "run\\0.json"\n', "run.summary_json", "contains a NUL character"),
        (
            'run:\n  summary_json: "run\\ud800.json"\n',
            "run.summary_json",
            "lone surrogate (U+D800)",
        ),
        ('"a\\0": 1\n', "(top level)", "a key contains a NUL character"),
    ],
)
def test_text_no_database_can_store_is_a_field_error(
    tmp_path: Path, text: str, field: str, reason: str
) -> None:
    message = refusal(write(tmp_path, text))
    assert f"  {field}: " in message and reason in message, message
