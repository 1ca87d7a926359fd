"""The machinery every settings model of `agency.yaml` is built on: `Section`, the base of each
package's settings model; `cross_field_check`, its checks across fields; and `ConfigError`, what a
bad configuration raises, naming the file, the field path and the reason.

Each package owns the model of its section (`arbiter.settings`, `caws.settings`, `pool.settings`,
`privacy.settings`, `run_settings`); `config` composes them and reads the file.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, Self, TypeVar, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType

from agent_agency.records import error_reason


class ConfigError(ValueError):
    """The configuration file is unreadable or invalid; the message says where and why."""


# --------------------------------------------------------------------------------------------
# Every problem of a file at once. Pydantic runs a validator of a whole model only when all of
# its fields are valid, and such a validator stops at its first `raise`: a file with a mistake
# in one field and another across fields would be reported one round at a time. A section's
# checks across fields are therefore `cross_field_check` methods, which yield every problem
# they find and run wherever the fields they need are valid.
# --------------------------------------------------------------------------------------------

Problem = tuple[str, str]
"""(field, reason): the field's dotted path below the section ('' for the section itself)."""
Location = tuple[str | int, ...]  # an error's location, as pydantic gives it
_Check = TypeVar("_Check", bound=Callable[..., Iterator[Problem]])
_NEEDS = "_cross_field_needs"
_ERROR_TYPES = frozenset(get_args(ErrorType))
# Set while a section is validated again without its failed fields (`_without_failed`): the
# sections inside it have reported their problems already.
_revalidating: ContextVar[bool] = ContextVar("revalidating", default=False)


def cross_field_check(*needs: str) -> Callable[[_Check], _Check]:
    """Marks a method of a `Section` as a check across its fields: it yields a `Problem` for
    everything wrong, and runs when the fields it `needs` (dotted paths below the section) are
    valid, whether or not the others are."""

    def mark(check: _Check) -> _Check:
        setattr(check, _NEEDS, [tuple(need.split(".")) for need in needs])
        return check

    return mark


class Section(BaseModel):
    # NaN and infinity pass every bound (NaN fails no comparison) and break arithmetic later.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="wrap")
    @classmethod
    def _every_problem(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """The section, or one `ValidationError` with every problem: its fields' errors, then
        those of the checks across fields whose fields are valid. Where fields failed, those
        checks run on the section validated again with the failed values left out."""
        if _revalidating.get():
            return handler(data)
        try:
            section = handler(data)
        except ValidationError as error:
            found = error.errors()
            failed = [_error_path(item) for item in found]
            partial = _without_failed(handler, data, failed)
            problems = [] if partial is None else partial._problems(failed)
            if not problems:
                raise
            raise _validation_error(cls.__name__, data, found, problems) from None
        problems = section._problems([])
        if problems:
            raise _validation_error(cls.__name__, data, [], problems)
        return section

    def _problems(self, failed: Sequence[Location]) -> list[Problem]:
        """What the checks across fields find, leaving out those that need a failed field."""
        problems: list[Problem] = []
        for klass in reversed(type(self).__mro__):
            for check in vars(klass).values():
                needs = getattr(check, _NEEDS, None)
                if needs is None or any(_overlap(need, path) for need in needs for path in failed):
                    continue
                problems.extend(check(self))
        return problems


def _error_path(item: ErrorDetails) -> Location:
    """Where an error is: its location, and below it the field a check of a whole model named
    (`records.invalid(..., field=...)`)."""
    field = (item.get("ctx") or {}).get("field")
    return item["loc"] + (tuple(str(field).split(".")) if field else ())


def _overlap(need: tuple[str, ...], path: Location) -> bool:
    """Whether the field at `need` lies inside the one at `path`, or holds it."""
    parts = tuple(str(part) for part in path)
    return parts[: len(need)] == need or need[: len(parts)] == parts


def _without_failed(
    handler: ModelWrapValidatorHandler[Section], data: Any, failed: Sequence[Location]
) -> Section | None:
    """The section validated again with each failed value left out (so its default stands in:
    no check that needs a failed field runs), or None where that cannot be done. A failed value
    inside a list takes the whole list out, as its neighbours' positions must not shift."""
    if not isinstance(data, dict) or not all(failed):
        return None
    pruned = copy.deepcopy(data)
    for path in failed:
        parent: dict[Any, Any] | None = None
        key: Any = None
        node: Any = pruned
        for part in path:
            if not isinstance(node, dict) or part not in node:
                break
            parent, key, node = node, part, node[part]
        if parent is not None:
            del parent[key]
    token = _revalidating.set(True)
    try:
        return handler(pruned)
    except ValidationError:
        return None
    finally:
        _revalidating.reset(token)


def _validation_error(
    title: str, data: Any, found: Sequence[ErrorDetails], problems: Sequence[Problem]
) -> ValidationError:
    """One error holding the errors `found` and the `problems` of the checks across fields."""
    details = [_init_details(item) for item in found]
    for field, reason in problems:
        location = tuple(int(p) if p.isdigit() else p for p in field.split(".")) if field else ()
        details.append(
            {
                "type": PydanticCustomError("invalid", "{reason}", {"reason": reason}),
                "loc": location,
                "input": data,
            }
        )
    return ValidationError.from_exception_data(title, details)


def _init_details(item: ErrorDetails) -> InitErrorDetails:
    """An error as found, in the form that raises it again."""
    context = item.get("ctx")
    kind = item["type"]
    if kind in _ERROR_TYPES:
        known: InitErrorDetails = {"type": kind, "loc": item["loc"], "input": item["input"]}
        if context is not None:
            known["ctx"] = context
        return known
    # A custom error (`records.invalid` and the like): its message stands as it was written.
    template, values = (
        ("{reason}", context)
        if context is not None and "reason" in context
        else ("{message}", {**(context or {}), "message": item["msg"]})
    )
    return {
        "type": PydanticCustomError(kind, template, values),
        "loc": item["loc"],
        "input": item["input"],
    }


def problems_of(error: ValidationError) -> list[Problem]:
    """Each error of `error` as (field, reason): the field's dotted path, below it the field a
    check of a whole model named."""
    return [
        (".".join(str(part) for part in _error_path(item)), error_reason(item))
        for item in error.errors()
    ]
