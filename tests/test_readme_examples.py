"""Every Python example in the README runs as printed, each in a fresh interpreter and an empty
directory, so a newcomer copying one gets what the README says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _examples() -> list[str]:
    return EXAMPLE.findall(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_examples() -> None:
    assert len(_examples()) >= 2


@pytest.mark.parametrize("number", range(len(_examples())))
def test_a_readme_example_runs(number: int, tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _examples()[number]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
