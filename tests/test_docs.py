"""The documentation: generated parts current, relative links whole, and the generator itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import pytest
import typer
from pydantic import BaseModel, Field
from tools.gen_docs import (
    BEGIN,
    COMMAND,
    END,
    GENERATED,
    command_reference,
    generated_part,
    regenerated,
    settings_reference,
)

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


@pytest.mark.parametrize("path", sorted(GENERATED))
def test_a_generated_doc_matches_the_code_it_comes_from(path: str) -> None:
    text = (ROOT / path).read_text(encoding="utf-8")
    fresh = generated_part(regenerated(text, path), path)
    assert generated_part(text, path) == fresh, (
        f"{path} is stale: run `PYTHONPATH=src {COMMAND}` and commit the result"
    )


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_relative_link_points_to_a_file_that_exists(document: Path) -> None:
    text = FENCED.sub("", document.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):  # a URL, or this page
            continue
        file = target.split("#", 1)[0]
        if not (document.parent / file).exists():
            broken.append(target)
    assert not broken, f"{document.relative_to(ROOT)} links to missing files: {broken}"


def test_the_markers_are_required() -> None:
    with pytest.raises(ValueError, match="docs/x.md: no generated part"):
        generated_part("# hand-written only\n", "docs/x.md")


def test_regenerating_keeps_the_hand_written_text_around_the_markers() -> None:
    path = "docs/cli.md"
    text = f"# Title\n\nbefore\n\n{BEGIN}\nstale\n{END}\n\nafter\n"
    fresh = regenerated(text, path)
    assert fresh.startswith(f"# Title\n\nbefore\n\n{BEGIN}\n\n")
    assert fresh.endswith(f"\n\n{END}\n\nafter\n")
    assert "stale" not in fresh and "## `agency run`" in fresh
    assert regenerated(fresh, path) == fresh


# --- the command reference, from a small Typer app -------------------------------------------

tool = typer.Typer(help="A tool.")
things = typer.Typer(help="Things.")
tool.add_typer(things, name="things")


@things.command("add")
def _add(
    name: Annotated[str, typer.Argument(metavar="NAME", help="what to add")],
    count: Annotated[int, typer.Option(min=1, max=9, metavar="N", help="how many")] = 2,
    tag: Annotated[list[str] | None, typer.Option(metavar="TAG", help="a label")] = None,
    mode: Annotated[str, typer.Option(metavar="a|b", help="the mode")] = "a",
    dry: Annotated[bool, typer.Option("--dry", help="change nothing")] = False,
) -> None:
    """Add a thing.

    Longer text, kept as written.
    """


@things.command("secret", hidden=True)
def _secret() -> None:
    """Not listed."""


def test_the_command_reference_lists_every_visible_command_and_option() -> None:
    text = command_reference(tool, "tool")
    assert "## `tool things add`" in text and "secret" not in text
    assert "```\ntool things add [OPTIONS] NAME\n```" in text
    assert "Add a thing.\n\nLonger text, kept as written." in text
    assert "Commands: [`add`](#tool-things-add)." in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `NAME` | string |  | what to add (required) |",
        "| `--count N` | integer | `2` | how many (≥ 1, ≤ 9) |",
        "| `--tag TAG` | string |  | a label (repeatable) |",
        '| `--mode a\\|b` | string | `"a"` | the mode |',
        "| `--dry` | flag | `false` | change nothing |",
    ]


# --- the settings reference, from a small model tree -----------------------------------------


class Limits(BaseModel):  # as if defined in another package: only the composition names it
    """How far it may go."""

    seconds: float = Field(default=1.5, gt=0, le=60, description="wall-clock limit")


class Rule(BaseModel):
    name: str
    inner: Rule | None = None  # a model among its own fields' types


class Settings(BaseModel):
    limits: Limits = Field(default_factory=Limits)
    rules: dict[str, list[Rule]] = Field(default_factory=dict, description="per kind")
    tags: list[str] = Field(default_factory=lambda: ["x"], min_length=1)


def test_the_settings_reference_walks_every_section_with_descriptions_and_defaults() -> None:
    text = settings_reference(Settings)
    headings = re.findall(r"^## (.*)$", text, re.MULTILINE)
    assert headings == ["Top level", "`limits`", "`rules.<key>[]`"]
    assert "How far it may go." in text
    assert "| `seconds` | number, > 0, ≤ 60 | `1.5` | wall-clock limit |" in text
    assert "| `limits` | section: see [`limits`](#limits) | its section's defaults |  |" in text
    assert "see [`rules.<key>[]`](#ruleskey) | `{}` | per kind |" in text
    assert '| `tags` | list of string, length ≥ 1 | `["x"]` |  |' in text
    assert "| `name` | string | required |  |" in text
    assert "| `inner` | Rule or null | `null` |  |" in text  # walked once, not without end


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """The README's second command installs the same extras as `.ci/run` and runs pytest."""
    first_block = (ROOT / "README.md").read_text(encoding="utf-8").split("```")[1]
    test_command = first_block.strip().splitlines()[2]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install = re.search(r'^pip install -e "([^"]+)"', ci, re.MULTILINE)
    assert install is not None
    assert test_command == f'pip install -e "{install.group(1)}" && python -m pytest'
    assert "\npython -m pytest\n" in ci
