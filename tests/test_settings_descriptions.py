"""Every setting of `agency.yaml` says what it does: docs/configuration.md is generated from the
descriptions of the settings models' fields."""

from collections.abc import Iterator
from typing import Any, get_args

from pydantic import BaseModel

from agent_agency.agent_spec import AgentSpec
from agent_agency.config import AgencyConfig
from agent_agency.sections import Section


def settings_models(model: type[BaseModel]) -> Iterator[type[BaseModel]]:
    """`model` and every settings model its fields hold, at any depth (`agents:` entries are
    AgentSpecs; their few-shot messages are conversation records, not settings)."""
    yield model
    for field in model.model_fields.values():
        yield from _inner_settings(field.annotation)


def _inner_settings(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, Section | AgentSpec):
        yield from settings_models(annotation)
    for argument in get_args(annotation):
        yield from _inner_settings(argument)


def test_every_setting_has_a_one_line_description() -> None:
    models = set(settings_models(AgencyConfig))
    assert {"RoutingSettings", "BreakerSettings", "GateSpec", "AnonymizationPolicy"} <= {
        model.__name__ for model in models
    }
    undescribed = [
        f"{model.__name__}.{name}"
        for model in models
        for name, field in model.model_fields.items()
        if not (field.description or "").strip() or "\n" in field.description
    ]
    assert not undescribed
