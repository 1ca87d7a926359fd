"""One optional YAML file (`agency.yaml`) → typed settings.

Every setting has a default, so no file is needed. Each package owns the model of its section
(`routing`: `arbiter.settings`, `evaluation`: `caws.settings`, `storage` and `pool`:
`pool.settings`, `run`: `run_settings`, `deploy`: `deploy_settings`); `AgencyConfig` composes
them with the agents, and checks what spans sections. A bad file fails with `ConfigError`, whose
message names the file, the field path and the reason; a file too big to be a configuration (its
size, or what its aliases expand to) is refused before it is expanded.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Hashable, Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, TypeAdapter, ValidationError, field_validator

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.settings import EmbeddedModelSettings
from agent_agency.arbiter.settings import RoutingSettings
from agent_agency.caws.settings import EvaluationSettings
from agent_agency.deploy_settings import DeploySettings
from agent_agency.pool.settings import PoolSettings, StorageSettings
from agent_agency.run_settings import RunSettings
from agent_agency.sandbox.settings import SandboxSettings
from agent_agency.sections import ConfigError, Problem, Section, cross_field_check, problems_of
from agent_agency.storable_text import storable, unstorable_reason
from agent_agency.training_settings import TrainingSettings

DEFAULT_CONFIG_FILE = "agency.yaml"
CONFIG_ENV_VAR = "AGENCY_CONFIG"

# What a configuration file may be: a real one is a few kilobytes, a few hundred values nested at
# most ten levels deep. The bounds refuse, before anything is expanded, a file that would take the
# process's memory or stack: one too big, one whose aliases (`*name`) repeat a value so often that
# the expanded document is vast (nine levels of nine aliases expand to 9⁹ values), one nested
# deeper than the parser's recursion can go, or a number too long to convert.
MAX_CONFIG_BYTES = 1024 * 1024
MAX_ALIAS_EXPANSION = 10_000
"""Values the aliases of a file may add to it, expanded."""
MAX_DEPTH = 100
MAX_NUMBER_CHARS = 100

# Read below `agent_agency`, not through `agent_agency.agents`, whose import loads the backends.
_DEFAULT_TEAM_FILE = ("agents", "default_team.yaml")
_TEAM = TypeAdapter(list[AgentSpec])


@functools.cache
def _default_team() -> tuple[AgentSpec, ...]:
    text = files("agent_agency").joinpath(*_DEFAULT_TEAM_FILE).read_text(encoding="utf-8")
    # As a file's `agents:` is read: strictly, through JSON (see `parse_config`).
    return tuple(_TEAM.validate_json(json.dumps(yaml.safe_load(text)), strict=True))


def default_team() -> list[AgentSpec]:
    """The default team of `agents/default_team.yaml`: three agents on the embedded model that
    differ in prompting, decoding and tool access, so the router has a real difference to learn.
    Fresh copies: the caller may change them."""
    return [spec.model_copy(deep=True) for spec in _default_team()]


class AgencyConfig(Section):
    agents: list[AgentSpec] = Field(
        default_factory=default_team,
        description="the agents the router chooses among; an entry named like a default agent "
        "(direct, stepwise, toolsmith) starts from that agent's settings",
    )
    routing: RoutingSettings = Field(
        default_factory=RoutingSettings,
        description="how the router chooses an agent for each task",
    )
    evaluation: EvaluationSettings = Field(
        default_factory=EvaluationSettings,
        description="how answers are graded: attempts, gates, rubric weights and judges",
    )
    storage: StorageSettings = Field(
        default_factory=StorageSettings,
        description="the database records are written to, and how they are written",
    )
    run: RunSettings = Field(
        default_factory=RunSettings,
        description="what `agency run` takes and how its tasks run",
    )
    embedded: EmbeddedModelSettings = Field(
        default_factory=EmbeddedModelSettings,
        description="how local models (the embedded one, a .gguf file) are served: instances "
        "and threads",
    )
    pool: PoolSettings = Field(
        default_factory=PoolSettings,
        description="the benchmark data pool: anonymization, privacy budget, retention tiers",
    )
    training: TrainingSettings = Field(
        default_factory=TrainingSettings,
        description="training from the pool: the profile of each phase's prerequisites, and "
        "turn-level credit",
    )
    sandbox: SandboxSettings = Field(
        default_factory=SandboxSettings,
        description="where generated code runs: whether it may run where no isolation is possible",
    )
    deploy: DeploySettings = Field(
        default_factory=DeploySettings,
        description="canary share, staged rollout and automatic rollback of a candidate version",
    )

    @field_validator("agents", mode="before")
    @classmethod
    def _start_from_the_default_agents(cls, value: Any) -> Any:
        """An entry named after a default-team agent starts from that agent's settings, so
        `- name: direct` in a file means the default `direct`; fields it sets override them."""
        if not isinstance(value, list):
            return value
        defaults = {spec.name: spec.model_dump(exclude_defaults=True) for spec in _default_team()}
        return [
            {**defaults[entry["name"]], **entry}
            if isinstance(entry, dict) and entry.get("name") in defaults
            else entry
            for entry in value
        ]

    @cross_field_check("agents")
    def _agents_distinct(self) -> Iterator[Problem]:
        if not self.agents:
            yield "agents", "at least one agent is required"
        seen: dict[str, int] = {}
        for index, agent in enumerate(self.agents):
            if agent.key in seen:
                first = f"agents.{seen[agent.key]}"
                yield f"agents.{index}", f"agent {agent.key!r} is defined twice (first as {first})"
            else:
                seen[agent.key] = index
        yield from self._parents_form_no_cycle()

    @cross_field_check("agents")
    def _backends_registered(self) -> Iterator[Problem]:
        from agent_agency.agents.registry import backend_names

        known = backend_names()
        for index, agent in enumerate(self.agents):
            if agent.backend not in known:
                reason = f"unknown backend {agent.backend!r}; known backends: {', '.join(known)}"
                yield f"agents.{index}.backend", reason

    @cross_field_check("agents", "run.agents")
    def _run_agents_known(self) -> Iterator[Problem]:
        chosen: set[str] = set()
        for index, name in enumerate(self.run.agents):
            try:
                key = self.agent(name).key
            except KeyError as error:  # it says which agents are configured
                yield f"run.agents.{index}", error.args[0]
                continue
            if key in chosen:
                yield f"run.agents.{index}", f"{name!r} names {key} a second time"
            chosen.add(key)

    @cross_field_check("agents", "evaluation.judges")
    def _judges_agents_known(self) -> Iterator[Problem]:
        for index, judge in enumerate(self.evaluation.judges):
            try:
                self.agent(judge.agent)
            except KeyError as error:
                yield f"evaluation.judges.{index}.agent", error.args[0]

    def _parents_form_no_cycle(self) -> Iterator[Problem]:
        """Each parent names a configured agent (`name@version`, or `name` for its first
        configured version) and no agent descends from itself (each cycle reported once, at
        its first agent)."""
        keys = {spec.key: index for index, spec in enumerate(self.agents)}
        parent_of: dict[str, str] = {}
        for index, spec in enumerate(self.agents):
            if spec.parent is None:
                continue
            try:
                parent_of[spec.key] = self.agent(spec.parent).key
            except KeyError as error:  # it says which agents are configured
                yield f"agents.{index}.parent", error.args[0]
        in_a_reported_cycle: set[str] = set()
        for start in parent_of:
            if start in in_a_reported_cycle:
                continue
            chain = [start]
            key = parent_of.get(start)
            while key is not None and key not in chain:
                chain.append(key)
                key = parent_of.get(key)
            if key == start:
                in_a_reported_cycle.update(chain)
                reason = (
                    f"{start} descends from itself (parent chain {' → '.join([*chain, start])})"
                )
                yield f"agents.{keys[start]}.parent", reason

    def tasks_in_flight(self) -> int:
        """`run.concurrency`, its automatic value (0) resolved: two tasks per embedded model
        instance, so that each instance has a task to generate while another is graded."""
        return self.run.concurrency or 2 * self.embedded.sizing()[0]

    def team(self) -> list[AgentSpec]:
        """The agents a run uses: `run.agents` if given, else every configured agent."""
        if not self.run.agents:
            return list(self.agents)
        return [self.agent(name) for name in self.run.agents]

    def agent(self, name: str) -> AgentSpec:
        """The agent named `name` (or `name@version`); `KeyError` naming the known ones."""
        for spec in self.agents:
            if name in (spec.name, spec.key):
                return spec
        known = ", ".join(dict.fromkeys(spec.key for spec in self.agents))
        raise KeyError(f"unknown agent {name!r}; configured agents: {known}")


def config_path(explicit: str | Path | None = None) -> Path | None:
    """The file to read: explicit path, then $AGENCY_CONFIG, then ./agency.yaml if present."""
    if explicit is not None:
        return Path(explicit)
    env = os.environ.get(CONFIG_ENV_VAR)
    if env:
        return Path(env)
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.exists() else None


def parse_config(data: Any, source: str = "<config>") -> AgencyConfig:
    """The configuration `data` (as YAML reads a file) holds; `ConfigError` naming `source` and
    every field at fault otherwise."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    unread: list[Problem] = []
    data = _readable(data, "", unread)
    try:
        # As JSON, strictly: `hash_tenant: 0`, `tasks: "5"` or `seed: 3.0` is a type error, not
        # quietly converted (`false`, `5`, `3`); JSON's own forms (a number for a float, a string
        # for an enum or a path) are accepted. A value YAML reads that JSON has no form for (an
        # unquoted date) is read as its text.
        config = AgencyConfig.model_validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as error:
        # A number too long to read stands as null: an error about that null would only say
        # again, less clearly, what `unread` says.
        found = [
            problem
            for problem in problems_of(error)
            if not any(_inside(problem[0], field) for field, _ in unread)
        ]
        raise ConfigError(_invalid(source, [*unread, *found])) from None
    if unread:
        raise ConfigError(_invalid(source, unread))
    return config


def _invalid(source: str, problems: list[Problem]) -> str:
    lines = [f"{source}: invalid configuration"]
    lines.extend(f"  {field or '(top level)'}: {reason}" for field, reason in problems)
    return "\n".join(lines)


def _inside(field: str, outer: str) -> bool:
    return field == outer or field.startswith(f"{outer}.")


class _LongNumber:
    """A number in the file longer than MAX_NUMBER_CHARS, left unconverted (Python refuses to
    convert one of over 4,300 digits, and no setting needs more than a few)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        length = len(self.text)
        return f"a number of {length:,} characters, too long to read (at most {MAX_NUMBER_CHARS})"


def _readable(node: Any, path: str, unread: list[Problem]) -> Any:
    """`node` with each number too long to read replaced by null (and a problem for it added to
    `unread`), and each mapping key JSON has no form for (a date) replaced by its text. Text no
    database can store (a NUL, a lone surrogate: YAML's "\\0" and "\\ud800") is a problem
    too, as everywhere a person supplies text (`storable_text`)."""
    if isinstance(node, _LongNumber):
        unread.append((path, str(node)))
        return None
    if isinstance(node, str):
        if (reason := unstorable_reason(node)) is not None:
            unread.append((path, reason))
        return storable(node)
    if isinstance(node, list):
        return [_readable(item, _joined(path, index), unread) for index, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    readable: dict[Any, Any] = {}
    for key, value in node.items():
        if isinstance(key, _LongNumber):
            unread.append((path, f"a key is {key}"))
            continue
        if isinstance(key, str) and (reason := unstorable_reason(key)) is not None:
            unread.append((path, f"a key {reason}"))
            continue
        name = key if key is None or isinstance(key, str | int | float | bool) else str(key)
        readable[name] = _readable(value, _joined(path, name), unread)
    return readable


def _joined(path: str, key: object) -> str:
    name = json.dumps(key) if key is None or isinstance(key, bool) else str(key)
    return f"{path}.{name}" if path else name


class _Refused(Exception):
    """The file is valid YAML but beyond what a configuration may be; the message says why."""


class _ConfigLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that names a key twice (plain YAML keeps the last
    value, so a setting written twice, `run:` in two places, would silently lose the first), and
    refusing, before it is built, a document nested too deep or whose aliases expand it too far.
    A number too long to convert is kept as a `_LongNumber`, reported as its field's error."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1  # type: ignore[no-untyped-call]
                raise _Refused(f"line {line}: values nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # the safe loader's own error says so
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_number(self, node: yaml.ScalarNode) -> int | _LongNumber:
        text = self.construct_scalar(node)
        if len(text) > MAX_NUMBER_CHARS:
            return _LongNumber(text)
        return self.construct_yaml_int(node)


_ConfigLoader.add_constructor("tag:yaml.org,2002:int", _ConfigLoader.construct_number)


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value


def _check_expansion(root: yaml.Node) -> None:
    """`_Refused` where the document, with each alias replaced by the value it names, would hold
    more than MAX_ALIAS_EXPANSION values beyond those written, nest more than MAX_DEPTH deep, or
    never end (a value holding an alias of itself). An alias is the node it names, shared: each
    node is visited once, its expanded size and depth counted from its children's."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the path from the root to the node visited
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            children = [id(child) for child in _children(node)]
            size[key] = 1 + sum(size[child] for child in children)
            depth[key] = 1 + max((depth[child] for child in children), default=0)
            if depth[key] > MAX_DEPTH:
                line = node.start_mark.line + 1
                raise _Refused(
                    f"line {line}: values nested more than {MAX_DEPTH} levels deep, aliases "
                    "expanded"
                )
            continue
        if key in size:
            continue
        if key in open_nodes:
            line = node.start_mark.line + 1
            raise _Refused(f"line {line}: a value holds an alias of itself, so it would never end")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    if size[id(root)] - len(size) > MAX_ALIAS_EXPANSION:
        raise _Refused(
            f"its YAML aliases (*name) would expand it by more than {MAX_ALIAS_EXPANSION:,} "
            "values, far beyond any configuration: refused, as such a file (an alias bomb) can "
            "take all memory"
        )


def _yaml_problem(error: yaml.YAMLError) -> str:
    """Where and why a file is not valid YAML, without PyYAML's quote of the parsed text's name
    ('in "<unicode string>"'): 'line 2 is not valid YAML: mapping values are not allowed here
    (column 9)'."""
    if not isinstance(error, yaml.MarkedYAMLError) or error.problem_mark is None:
        return f"not valid YAML: {error}"
    mark = error.problem_mark
    reason = "; ".join(part for part in (error.context, error.problem) if part)
    return f"line {mark.line + 1} is not valid YAML: {reason} (column {mark.column + 1})"


def load_config(path: str | Path | None = None) -> AgencyConfig:
    """Read the effective configuration; defaults when there is no file."""
    resolved = config_path(path)
    if resolved is None:
        return AgencyConfig()
    if not resolved.exists():
        raise ConfigError(f"{resolved}: configuration file not found")
    try:
        with resolved.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise _Refused(
                f"larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB, the most a configuration "
                "file may be"
            )
        data = yaml.load(raw.decode("utf-8"), Loader=_ConfigLoader)
    except OSError as error:
        raise ConfigError(
            f"{resolved}: cannot read configuration file: {error.strerror or error}"
        ) from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{resolved}: not UTF-8 text ({error.reason} at byte {error.start + 1})"
        ) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{resolved}: {_yaml_problem(error)}") from None
    except _Refused as refused:
        raise ConfigError(f"{resolved}: {refused}") from None
    return parse_config(data, source=str(resolved))
