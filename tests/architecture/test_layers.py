"""Dependencies point one way: a module may import only its own package and the layers below it.

The layers, bottom to top, are those of docs/architecture.md. An import inside a function counts
as much as one at the top of a module: deferring it hides a cycle, it does not remove it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "src" / "agent_agency"

# Each entry is one layer; names in one tuple are peers and must not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("storable_text", "stamps", "collector", "gil", "unvalidated"),
    ("records",),
    ("agent_spec", "data_point", "jsonl", "db_errors", "sections", "extensions", "python_syntax"),
    ("privacy", "sandbox"),
    ("tasks",),
    ("agents",),
    ("tracking",),
    ("pool",),
    ("caws",),
    ("arbiter",),
    ("run_settings", "training_settings", "deploy_settings"),
    ("config",),
    ("runner", "training", "deploy", "coordination", "erasure"),
    ("jobs", "version_training"),
    ("loop", "report"),
    ("service",),
    ("cli",),
    ("entry",),
    ("__main__",),
)
# Top-level names allowed to be imported from anywhere: the package itself is only a re-export.
UNLAYERED = {"__init__"}
# The routing policy stays usable alone: it may import only records, the agent spec and the
# arbiter's own modules that are themselves policy (strategies, bandits, features, breaker,
# explanations, settings).
ROUTER_ONLY_IMPORTS = {"records", "agent_spec", "sections", "arbiter"}
ROUTER_MODULES = ("arbiter/router.py", "arbiter/strategies")


def _layer_of(top: str) -> int:
    for index, names in enumerate(LAYERS):
        if top in names:
            return index
    raise AssertionError(
        f"agent_agency.{top} is in no layer of tests/architecture/test_layers.py: add it there "
        "and to docs/architecture.md"
    )


def _top(module_path: Path) -> str:
    relative = module_path.relative_to(PACKAGE_ROOT)
    return relative.parts[0].removesuffix(".py")


def _imported_tops(module_path: Path) -> set[tuple[str, str]]:
    """(top-level package name, full imported module) for every `agent_agency` import."""
    tree = ast.parse(module_path.read_text(encoding="utf-8"), filename=str(module_path))
    found: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "agent_agency":
                names = [f"agent_agency.{alias.name}" for alias in node.names]
            else:
                names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "agent_agency" and len(parts) > 1:
                found.add((parts[1], name))
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE_ROOT.rglob("*.py") if "migrations" not in p.parts)


@pytest.mark.parametrize("module", _modules(), ids=lambda p: str(p.relative_to(PACKAGE_ROOT)))
def test_a_module_imports_only_its_layer_and_below(module: Path) -> None:
    top = _top(module)
    if top in UNLAYERED:
        return
    own = _layer_of(top)
    upward = [
        name
        for imported, name in _imported_tops(module)
        if imported != top and imported not in UNLAYERED and _layer_of(imported) >= own
    ]
    where = module.relative_to(PACKAGE_ROOT)
    assert not upward, f"{where} imports a layer above or beside it: {upward}"


def test_the_routing_policy_imports_only_records_and_its_own_package() -> None:
    paths = [
        path
        for relative in ROUTER_MODULES
        for path in (
            sorted((PACKAGE_ROOT / relative).rglob("*.py"))
            if (PACKAGE_ROOT / relative).is_dir()
            else [PACKAGE_ROOT / relative]
        )
    ]
    assert paths
    outside = {
        f"{path.relative_to(PACKAGE_ROOT)} -> {name}"
        for path in paths
        for imported, name in _imported_tops(path)
        if imported not in ROUTER_ONLY_IMPORTS or name.startswith("agent_agency.arbiter.arbiter")
    }
    assert not outside, sorted(outside)
