"""The names a user imports from `agent_agency`: each resolves, and importing the package alone
loads none of the stages (they are imported on first use)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agent_agency


@pytest.mark.parametrize("name", [name for name in agent_agency.__all__ if name != "__version__"])
def test_every_public_name_resolves_to_the_object_its_module_defines(name: str) -> None:
    value = getattr(agent_agency, name)
    assert getattr(value, "__name__", name) == name
    assert name in dir(agent_agency)


def test_all_lists_exactly_the_lazily_exported_names() -> None:
    assert set(agent_agency.__all__) == {"__version__", *agent_agency._EXPORTS}


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="'Routr'"):
        agent_agency.Routr  # noqa: B018


def test_importing_the_package_loads_no_stage_and_no_heavy_dependency() -> None:
    probe = (
        "import sys, agent_agency; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'sqlalchemy', 'pydantic', 'numpy', 'typer', 'presidio_analyzer', 'llama_cpp'} "
        "or m.startswith('agent_agency.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"
