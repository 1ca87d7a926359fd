"""The registry every extension point keeps: names, duplicates, lookups that list what is known."""

from __future__ import annotations

import pytest

from agent_agency.extensions import RegistrationError, Registry, UnknownName


def test_entries_are_found_by_name_and_listed_sorted() -> None:
    registry: Registry[int] = Registry("widget", "widgets")
    registry.register("b-2", 2)
    registry.register("a.1", 1)
    assert registry.get("a.1") == 1 and registry["b-2"] == 2
    assert registry.names() == ["a.1", "b-2"]
    assert "a.1" in registry and "c" not in registry and 3 not in registry


def test_an_unknown_name_lists_the_known_ones() -> None:
    registry: Registry[int] = Registry("widget", "widgets")
    registry.register("gear", 1)
    with pytest.raises(UnknownName, match=r"^unknown widget 'cog'; known widgets: gear$"):
        registry.get("cog")
    with pytest.raises(UnknownName, match="unknown widget"):
        registry.get(["unhashable"])  # type: ignore[arg-type]  # from loaded data


@pytest.mark.parametrize("name", ["", " gear", "gear box", "-gear", "g" * 101, 7])
def test_a_bad_name_is_refused(name: object) -> None:
    registry: Registry[int] = Registry("widget", "widgets")
    with pytest.raises(RegistrationError, match="widget name .*: must be 1 to 100 letters"):
        registry.register(name, 1)  # type: ignore[arg-type]


def test_a_taken_name_is_refused_unless_replaced_and_can_be_removed() -> None:
    registry: Registry[int] = Registry("widget", "widgets")
    registry.register("gear", 1)
    with pytest.raises(RegistrationError, match="widget 'gear' is registered already"):
        registry.register("gear", 2)
    registry.register("gear", 3, replace=True)
    assert registry.get("gear") == 3
    registry.unregister("gear")
    assert registry.names() == []
    with pytest.raises(UnknownName, match="unknown widget 'gear'"):
        registry.unregister("gear")
