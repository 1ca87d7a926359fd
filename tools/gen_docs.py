"""Generate the reference parts of `docs/cli.md` (from the Typer app) and `docs/configuration.md`
(from the settings models composed by `agent_agency.config.AgencyConfig`).

Each of those files has hand-written text around one generated part, between `BEGIN` and `END`
below; `python tools/gen_docs.py` rewrites that part, `--check` only says which files are stale
(exit status 1). `tests/test_docs.py` fails when one is.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import typer
import typer.main
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python tools/gen_docs.py"
BEGIN = f"<!-- BEGIN GENERATED: edit the code it comes from, then run `{COMMAND}` -->"
END = "<!-- END GENERATED -->"


# --------------------------------------------------------------------------------------------
# docs/cli.md: the command tree
# --------------------------------------------------------------------------------------------


def cli_reference() -> str:
    from agent_agency.cli.app import app

    return command_reference(app)


def command_reference(app: typer.Typer, name: str = "agency") -> str:
    """Every visible command of `app`, depth first, as Markdown: its help, usage, arguments and
    options with their types, defaults and bounds."""
    root = typer.main.get_command(app)
    context = root.make_context(name, [], resilient_parsing=True)
    commands = list(_commands(root, context, name))
    lines = [_help_text(root), ""]
    lines += [f"- [`{path}`](#{_slug(path)})" for path, _, _ in commands]
    for path, command, command_context in commands:
        lines += ["", f"## `{path}`", "", "```", _usage(path, command), "```"]
        help_text = _help_text(command)
        if help_text:
            lines += ["", help_text]
        rows = [_param_row(param) for param in command.params if _documented(param)]
        if rows:
            lines += ["", "| argument or option | type | default | description |"]
            lines += ["| --- | --- | --- | --- |", *rows]
        subcommands = _subcommand_names(command, command_context)
        if subcommands:
            listed = ", ".join(f"[`{name}`](#{_slug(f'{path} {name}')})" for name in subcommands)
            lines += ["", f"Commands: {listed}."]
    return "\n".join(lines) + "\n"


def _commands(group: Any, context: Any, prefix: str) -> Iterator[tuple[str, Any, Any]]:
    """(path, command, its context) of every visible command below `group`, depth first, in the
    order `agency --help` lists them."""
    for name in _subcommand_names(group, context):
        command = group.get_command(context, name)
        path = f"{prefix} {name}"
        sub_context = command.make_context(name, [], parent=context, resilient_parsing=True)
        yield path, command, sub_context
        yield from _commands(command, sub_context, path)


def _subcommand_names(command: Any, context: Any) -> list[str]:
    if not hasattr(command, "list_commands"):
        return []
    names: list[str] = command.list_commands(context)
    return [name for name in names if not command.get_command(context, name).hidden]


def _help_text(command: Any) -> str:
    # click ends the help at a form feed: what follows is for the code's readers only
    return inspect.cleandoc((command.help or "").split("\f")[0])


def _documented(param: Any) -> bool:
    return not param.hidden and param.name != "help"


def _usage(path: str, command: Any) -> str:
    pieces = [path]
    if any(_documented(p) and p.param_type_name == "option" for p in command.params):
        pieces.append("[OPTIONS]")
    for param in command.params:
        if param.param_type_name == "argument":
            name = param.metavar or param.name.upper()
            name += "..." if param.nargs == -1 else ""
            pieces.append(name if param.required else f"[{name}]")
    if hasattr(command, "list_commands"):
        pieces.append("COMMAND [ARGS]...")
    return " ".join(pieces)


def _param_row(param: Any) -> str:
    if param.param_type_name == "argument":
        name = f"`{param.metavar or param.name.upper()}`"
    else:
        flags = sorted(param.opts + param.secondary_opts, key=len)
        name = ", ".join(
            f"`{flag}{'' if param.is_flag or not param.metavar else ' ' + param.metavar}`"
            for flag in flags
        )
    description = param.help or ""
    notes = [_bounds(param)]
    notes.append("repeatable" if param.multiple and "repeatable" not in description else "")
    notes.append("required" if param.required else "")
    listed = "; ".join(note for note in notes if note)
    if listed:
        description = f"{description} ({listed})" if description else listed
    default = "" if param.default is None or param.required else _default_text(param.default)
    return f"| {_cell(name)} | {_cell(_param_type(param))} | {default} | {_cell(description)} |"


def _param_type(param: Any) -> str:
    if param.param_type_name == "option" and param.is_flag:
        return "flag"
    annotation = _unwrapped(param.type_descriptor.annotation)
    if param.multiple and get_origin(annotation) is list:  # given once per value
        (annotation,) = get_args(annotation)
    return _type_text(annotation)


def _bounds(param: Any) -> str:
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    parts = ([f"≥ {low}"] if low is not None else []) + ([f"≤ {high}"] if high is not None else [])
    return ", ".join(parts)


# --------------------------------------------------------------------------------------------
# docs/configuration.md: the settings models
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Section:
    """A model's place in agency.yaml: `routing.breaker`, `agents[]`, `evaluation.gates.<key>[]`.
    `ancestors` are the sections it lies in: a model among its own fields' types would otherwise
    be walked without end."""

    path: str
    model: type[BaseModel]
    ancestors: tuple[type[BaseModel], ...] = ()


def configuration_reference() -> str:
    from agent_agency.config import AgencyConfig

    return settings_reference(AgencyConfig)


def settings_reference(root: type[BaseModel]) -> str:
    """Every setting below `root`, section by section, with its type, default and description,
    walked from the composed model whatever module defines each section."""
    pending = [_Section("", root)]
    lines: list[str] = []
    while pending:
        section = pending.pop(0)
        inside = (*section.ancestors, section.model)
        nested = [
            _Section(_join(section.path, name) + suffix, model, inside)
            for name, field in section.model.model_fields.items()
            for suffix, model in [_nested_model(field.annotation)]
            if model is not None and model not in inside
        ]
        heading = f"`{section.path}`" if section.path else "Top level"
        lines += [f"## {heading}", ""]
        doc = _own_doc(section.model)
        if doc:
            lines += [doc, ""]
        lines += ["| key | type | default | description |", "| --- | --- | --- | --- |"]
        for name, field in section.model.model_fields.items():
            lines.append(_field_row(section.path, name, field, inside))
        lines.append("")
        pending = nested + pending
    return "\n".join(lines)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _nested_model(annotation: Any) -> tuple[str, type[BaseModel] | None]:
    """The model a field's values are made of, and the path suffix that reaches one from the
    field: '' for a section, '[]' for a list's entries, '.<key>' for a mapping's values."""
    annotation = _unwrapped(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "", annotation
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        return _nested_model(present[0]) if len(present) == 1 else ("", None)
    if origin is list and args:
        suffix, model = _nested_model(args[0])
        return "[]" + suffix, model
    if origin is dict and len(args) == 2:
        suffix, model = _nested_model(args[1])
        return ".<key>" + suffix, model
    return "", None


def _own_doc(model: type[BaseModel]) -> str:
    doc = vars(model).get("__doc__")  # a class's docstring, not one it inherits
    return inspect.cleandoc(doc) if doc else ""


def _field_row(path: str, name: str, field: FieldInfo, walked: tuple[type[BaseModel], ...]) -> str:
    """The field's table row; a model among `walked` has no section of its own here."""
    suffix, model = _nested_model(field.annotation)
    if model is not None and model not in walked:
        target = _join(path, name) + suffix
        kind = "section" if not suffix else f"{_type_text(field.annotation)}"
        type_text = f"{kind}: see [`{target}`](#{_slug(target)})"
    else:
        type_text = _type_text(field.annotation)
        bounds = _constraints(field)
        if bounds:
            type_text += f", {bounds}"
    return (
        f"| `{name}` | {_cell(type_text)} | {_field_default(field, model)} "
        f"| {_cell(field.description or '')} |"
    )


def _field_default(field: FieldInfo, model: type[BaseModel] | None) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is None:
        value = field.default
    else:
        value = field.get_default(call_default_factory=True, validated_data={})
        if value != field.get_default(call_default_factory=True, validated_data={}):
            return "computed when left out"  # e.g. a fresh id
    if isinstance(value, BaseModel):
        return "its section's defaults"
    if model is not None and isinstance(value, list | dict) and value:
        return f"{len(value)} entries (`agency config show` prints them)"
    return _default_text(value)


_BOUNDS: dict[type[Any], tuple[str, str]] = {
    annotated_types.Gt: ("gt", ">"),
    annotated_types.Ge: ("ge", "≥"),
    annotated_types.Lt: ("lt", "<"),
    annotated_types.Le: ("le", "≤"),
}


def _constraints(field: FieldInfo) -> str:
    parts: list[str] = []
    for item in field.metadata:
        if type(item) in _BOUNDS:
            attribute, sign = _BOUNDS[type(item)]
            parts.append(f"{sign} {_number(getattr(item, attribute))}")
        elif isinstance(item, annotated_types.MinLen):
            parts.append(f"length ≥ {item.min_length}")
        elif isinstance(item, annotated_types.MaxLen):
            parts.append(f"length ≤ {item.max_length}")
        elif getattr(item, "pattern", None):
            parts.append(f"matching `{item.pattern}`")
    return ", ".join(parts)


# --------------------------------------------------------------------------------------------
# Shared
# --------------------------------------------------------------------------------------------

_TYPE_NAMES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
    Any: "any",
    type(None): "null",
}


def _unwrapped(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _type_text(annotation: Any) -> str:
    annotation = _unwrapped(annotation)
    if annotation in _TYPE_NAMES:
        return _TYPE_NAMES[annotation]
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + ", ".join(f"`{member.value}`" for member in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.__name__
    if origin is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in args)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_text(arg) for arg in args)
    if origin is list and args:
        return f"list of {_type_text(args[0])}"
    if origin is dict and len(args) == 2:
        return f"mapping of {_type_text(args[0])} to {_type_text(args[1])}"
    if origin is not None:
        return _type_text(origin)
    return getattr(annotation, "__name__", str(annotation))


def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"{value}"


def _default_text(value: Any) -> str:
    if value is PydanticUndefined:
        return ""
    return f"`{_cell(json.dumps(to_jsonable_python(value), ensure_ascii=False))}`"


def _cell(text: str) -> str:
    """`text` fit for one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


# --------------------------------------------------------------------------------------------
# The files
# --------------------------------------------------------------------------------------------

GENERATED: dict[str, Callable[[], str]] = {
    "docs/cli.md": cli_reference,
    "docs/configuration.md": configuration_reference,
}


def generated_part(text: str, path: str) -> str:
    """What lies between the markers of `text`; `ValueError` where they are missing."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{path}: no generated part (the lines {BEGIN!r} and {END!r})")
    return text[start + len(BEGIN) : end].strip("\n") + "\n"


def regenerated(text: str, path: str) -> str:
    """`text` with its generated part made anew."""
    generated_part(text, path)  # the markers are there
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{BEGIN}\n\n{GENERATED[path]().strip(chr(10))}\n\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only report stale files")
    check = parser.parse_args(argv).check
    stale = []
    for path in GENERATED:
        file = ROOT / path
        text = file.read_text(encoding="utf-8")
        fresh = regenerated(text, path)
        if fresh == text:
            continue
        stale.append(path)
        if not check:
            file.write_text(fresh, encoding="utf-8")
    verb = "stale" if check else "rewritten"
    for path in stale:
        print(f"{path}: {verb}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
