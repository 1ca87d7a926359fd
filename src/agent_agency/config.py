"""One optional YAML file (`agency.yaml`) → typed settings.

Every setting has a default, so no file is needed. A bad file fails with `ConfigError`, whose
message names the file, the field path and the reason.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Self, TypeVar, get_args

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from agent_agency.records import (
    AgentSpec,
    Message,
    RoutingStrategy,
    SplitChoice,
    error_reason,
    invalid,
)

DEFAULT_CONFIG_FILE = "agency.yaml"
CONFIG_ENV_VAR = "AGENCY_CONFIG"


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


# --------------------------------------------------------------------------------------------
# The default team: three agents on the embedded model that differ in prompting, decoding and
# tool access, so the router has a real difference to learn.
# --------------------------------------------------------------------------------------------


def default_team() -> list[AgentSpec]:
    """Three agents on the embedded model. Their few-shot turns are written for this project
    (none is a built-in task): a 135M model copies the form of what it is shown, so the
    examples teach the answer formats (label only, a JSON instance, a tool call)."""
    return [
        AgentSpec(
            name="direct",
            system_prompt=(
                "You are a precise assistant. Reply with only what is asked for: a label, a JSON "
                "object, a number or the rewritten text. No explanation."
            ),
            few_shot=[
                Message(
                    role="user",
                    content=(
                        "Classify the sentiment of this review as one of: positive, negative, "
                        "neutral.\nReply with the label only.\n\nReview: The soup was cold and "
                        "the waiter ignored us."
                    ),
                ),
                Message(role="assistant", content="negative"),
                Message(
                    role="user",
                    content=(
                        "Extract name, age, city from the text below. Reply with only a JSON "
                        "object that matches this JSON schema:\n"
                        '{"type": "object", "properties": {"name": {"type": "string"}, '
                        '"age": {"type": "integer"}, "city": {"type": "string"}}, '
                        '"required": ["name", "age", "city"]}\n\n'
                        "Text: Priya is 27 and lives in Leeds."
                    ),
                ),
                Message(role="assistant", content='{"name": "Priya", "age": 27, "city": "Leeds"}'),
                Message(
                    role="user",
                    content=(
                        "Rewrite the following message in a formal, professional tone. Keep "
                        "every fact. Do not use contractions or slang, and do not use these "
                        "phrases: 'hi all'.\n\nMessage: hi all, budget review's moved to 3pm "
                        "tmrw, don't be late"
                    ),
                ),
                Message(
                    role="assistant",
                    content=(
                        "Dear colleagues, the budget review has been moved to 3 p.m. tomorrow. "
                        "Please be punctual."
                    ),
                ),
            ],
            temperature=0.0,
            max_tokens=192,
            capabilities=["text", "code", "math", "extraction", "classification"],
        ),
        AgentSpec(
            name="stepwise",
            system_prompt=(
                "You are a careful assistant. Think briefly step by step, then give the final "
                "answer on the last line."
            ),
            few_shot=[
                Message(role="user", content="Tom has 3 apples and buys 4 more. How many now?"),
                Message(role="assistant", content="3 + 4 = 7.\nAnswer: 7"),
                Message(
                    role="user",
                    content="Classify the sentiment (positive/negative): 'I loved this film.'",
                ),
                Message(role="assistant", content="The speaker loved it.\nAnswer: positive"),
            ],
            temperature=0.2,
            max_tokens=256,
            tools_enabled=True,
            capabilities=["text", "code", "math", "extraction", "classification", "tools"],
        ),
        AgentSpec(
            name="toolsmith",
            system_prompt=(
                "You are an assistant that uses tools whenever a tool can compute the answer. "
                "After a tool result, reply with 'Answer: <result>'."
            ),
            few_shot=[
                Message(
                    role="user",
                    content=(
                        "What is 1234 × 5678? Use the calculator tool to compute it, then reply "
                        "with the exact result as 'Answer: <n>'."
                    ),
                ),
                Message(role="assistant", content='CALL calculator {"expression": "1234 * 5678"}'),
                Message(role="tool", name="calculator", content="7006652"),
                Message(role="assistant", content="Answer: 7006652"),
            ],
            temperature=0.0,
            max_tokens=128,
            tools_enabled=True,
            capabilities=["math", "tools", "extraction", "classification", "text"],
        ),
    ]


# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------


class BreakerSettings(Section):
    failure_threshold: int = Field(default=3, gt=0, description="consecutive failures to open")
    cooldown_s: float = Field(
        default=30.0,
        gt=0,  # also how long an unanswered probe holds the probe slot: 0 would let every call in
        le=86_400,
        description="seconds before half-open (more than 0, at most a day)",
    )


class RoutingSettings(Section):
    strategy: RoutingStrategy = RoutingStrategy.THOMPSON
    per_task_type: dict[str, RoutingStrategy] = Field(default_factory=dict)
    epsilon: float = Field(default=0.1, ge=0.0, le=1.0)
    epsilon_decay: float = Field(default=0.999, gt=0.0, le=1.0)
    # Exploration weights: far above a useful value at 100, and low enough that scores times
    # them stay finite.
    ucb_c: float = Field(default=2.0, gt=0.0, le=100.0)
    linear_alpha: float = Field(default=1.0, gt=0.0, le=100.0)
    quality_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="weight of quality vs success in the reward"
    )
    inherit_prior_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="share of a parent's evidence a new version gets"
    )
    fallback: bool = True
    breaker: BreakerSettings = Field(default_factory=BreakerSettings)
    seed: int | None = Field(default=None, ge=0)
    propensity_draws: int = Field(
        default=64, gt=0, description="posterior draws that estimate Thompson propensities"
    )
    context_task_types: list[str] = Field(
        default_factory=list, description="task types with their own slot in contextual features"
    )
    context_features: list[str] = Field(
        default_factory=list, description="Task.features names with their own contextual slot"
    )
    context_hash_buckets: int = Field(
        default=8, gt=0, description="hashed slots for other task types and other features"
    )

    def strategy_for(self, task_type: str) -> RoutingStrategy:
        return self.per_task_type.get(task_type, self.strategy)


class GateSpec(Section):
    name: str
    threshold: float = Field(default=1.0, ge=0.0, le=1.0)
    mandatory: bool = True
    params: dict[str, Any] = Field(default_factory=dict)

    # The gates live in caws.gates, which imports this module: import them when validating.

    @field_validator("name")
    @classmethod
    def _known_gate(cls, name: str) -> str:
        from agent_agency.caws.gates import GATES, gate_names

        if name not in GATES:
            raise invalid(f"unknown gate {name!r}; known gates: {', '.join(gate_names())}")
        return name

    @field_validator("params")
    @classmethod
    def _params_fit_the_gate(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        from agent_agency.caws.gates import GATES

        gate = info.data.get("name")  # absent when the name was invalid: reported already
        if gate is None:
            return params
        try:
            GATES[gate].params_model.model_validate(params)
        except ValidationError as error:
            items = error.errors()
            if len(items) == 1 and items[0]["loc"]:  # named as `params.<field>`
                field = ".".join(str(part) for part in items[0]["loc"])
                raise invalid(f"{error_reason(items[0])} (gate {gate!r})", field=field) from None
            problems = "; ".join(
                f"{'.'.join(str(part) for part in item['loc']) or '(top level)'}: "
                f"{error_reason(item)}"
                for item in items
            )
            raise invalid(f"{problems} (gate {gate!r})") from None
        return params


def _not_blank(text: str) -> str:
    if not text.strip():
        raise invalid("must not be empty or blank")
    return text


class JudgeSpec(Section):
    """A model judge: a configured agent's backend grading answers against `criteria`."""

    name: Annotated[str, AfterValidator(_not_blank)]
    agent: str = Field(description="name of a configured agent whose backend judges")
    criteria: Annotated[str, AfterValidator(_not_blank)]
    task_types: list[str] = Field(default_factory=list, description="empty means every type")
    max_retries: int = Field(default=1, ge=0)


# Weights are relative (the rubric is their weighted mean); the bound keeps their sum finite.
MAX_RUBRIC_WEIGHT = 1_000.0


class EvaluationSettings(Section):
    max_iterations: int = Field(default=2, ge=1, description="attempts, feedback in between")
    gates: dict[str, list[GateSpec]] = Field(
        default_factory=dict, description="extra gates per task type ('*' for every type)"
    )
    weights: dict[str, float] = Field(
        default_factory=lambda: {
            "format": 0.1,
            "tool": 0.1,
            "task": 0.5,
            "minimal": 0.1,
            "cost": 0.1,
            "safety": 0.1,
        }
    )
    pass_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    judges: list[JudgeSpec] = Field(default_factory=list)

    @cross_field_check("weights")
    def _weights_known_and_positive(self) -> Iterator[Problem]:
        known = {"format", "tool", "task", "minimal", "cost", "safety"}
        valid = True
        for name, weight in self.weights.items():
            if name not in known:
                valid = False
                reason = f"unknown rubric weight {name!r}; known: {', '.join(sorted(known))}"
                yield f"weights.{name}", reason
            elif not 0 <= weight <= MAX_RUBRIC_WEIGHT:
                valid = False
                reason = f"must be between 0 and {MAX_RUBRIC_WEIGHT:g}, got {weight}"
                yield f"weights.{name}", reason
        if valid and sum(self.weights.values()) <= 0:
            yield "weights", "rubric weights must not all be zero"

    @cross_field_check("gates")
    def _gates_apply_to_their_task_type(self) -> Iterator[Problem]:
        from agent_agency.caws.gates import GATES

        for task_type, specs in self.gates.items():
            for index, spec in enumerate(specs):
                reason = GATES[spec.name].never_applies_to(task_type)
                if reason is not None:
                    yield f"gates.{task_type}.{index}.name", reason


_DATABASE_URL_EXAMPLES = "sqlite:///agency.db or postgresql+psycopg://user@host/db"


def check_database_url(url: str) -> str:
    """`url` when SQLAlchemy can parse it and knows its kind of database; `ValueError` saying what
    is expected otherwise."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        raise ValueError(
            f"{url!r} is not a database URL (expected e.g. {_DATABASE_URL_EXAMPLES})"
        ) from None
    try:
        parsed.get_dialect()
    except NoSuchModuleError:  # e.g. postgres://, which libpq takes but SQLAlchemy does not
        raise ValueError(
            f"{url!r} names no kind of database SQLAlchemy knows ({parsed.drivername!r}; "
            f"expected e.g. {_DATABASE_URL_EXAMPLES})"
        ) from None
    return url


class StorageSettings(Section):
    url: Annotated[str, AfterValidator(check_database_url)] = "sqlite:///agency.db"

    batch_size: int = Field(default=256, gt=0)
    flush_interval_s: float = Field(default=0.5, gt=0)


def _builtin_suite(name: str) -> str:
    from agent_agency.tasks.suites import check_builtin_suites  # loads the task package

    try:
        check_builtin_suites([name])
    except ValueError as error:
        raise invalid(str(error)) from None
    return name


class RunSettings(Section):
    tasks: int = Field(default=60, gt=0)
    concurrency: int = Field(
        default=2, gt=0, description="tasks in flight; the embedded model serves one at a time"
    )
    split: SplitChoice = "train"
    suites: list[Annotated[str, AfterValidator(_builtin_suite)]] = Field(
        default_factory=list,
        description="built-in suite names; empty means all (none beside task files of --suite)",
    )
    seed: int = 0
    task_timeout_s: float = Field(default=120.0, gt=0)
    max_tool_turns: int = Field(default=3, ge=1)
    summary_json: str = "agency-run.json"
    agents: list[str] = Field(
        default_factory=list, description="names of the configured agents to use; empty means all"
    )


class AnonymizationPolicy(Section):
    """Which anonymization rules run before a data point is stored; recorded on each point."""

    hash_tenant: bool = Field(default=True, description="tenant ids → HMAC-SHA256 keyed hashes")
    remove_user_ids: bool = True
    generalize_paths: bool = Field(default=True, description="/a/b/file.ts → /[PATH]/[FILE].ts")
    rename_identifiers: bool = Field(
        default=False, description="Python code: userName → var1, calculateTotal → func1 (optional)"
    )
    redact_text_pii: bool = Field(default=True, description="Presidio regex-only + own recognizers")
    reward_noise: bool = Field(
        default=False, description="Laplace noise on rewards, for sharing data across tenants"
    )
    noise_scale: float = Field(default=0.1, gt=0, description="Laplace scale b")
    reward_sensitivity: float = Field(default=0.1, gt=0, description="L1 sensitivity of a reward")


# Presidio's own default for its phone recognizer (`phonenumbers` matching run once per region).
DEFAULT_PHONE_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR", "IL", "IN", "CA", "BR")


def _phone_region(code: str) -> str:
    """A region `phonenumbers` has formats for, upper-cased (`us` means US)."""
    region = code.upper()
    if region in DEFAULT_PHONE_REGIONS:  # known good: no need to import phonenumbers (~30 ms)
        return region
    from phonenumbers import SUPPORTED_REGIONS

    if region not in SUPPORTED_REGIONS:
        raise ValueError(
            f"{code!r} is not a region phonenumbers knows: give ISO 3166-1 alpha-2 codes "
            "such as US, GB or DE"
        )
    return region


class PoolSettings(Section):
    anonymization: AnonymizationPolicy = Field(default_factory=AnonymizationPolicy)
    tenant_hash_secret_env: str = "AGENCY_TENANT_SECRET"
    secret_file: str | None = Field(
        default=None, description="where a generated secret is kept; default ~/.config/agent-agency"
    )
    epsilon_budget_per_tenant: float = Field(default=10_000.0, gt=0)
    hot_days: int = Field(default=7, gt=0)
    warm_days: int = Field(default=90, gt=0)
    cold_days: int = Field(default=730, gt=0, description="daily aggregates kept, then deleted")
    pii_phone_regions: list[Annotated[str, AfterValidator(_phone_region)]] = Field(
        default_factory=lambda: list(DEFAULT_PHONE_REGIONS),
        min_length=1,
        description=(
            "regions (ISO 3166-1 alpha-2 codes, any case, kept upper-case) whose national phone "
            "formats Presidio's phone recognizer matches, one `phonenumbers` pass each (~0.15 ms "
            "per phone-like string per region); international +CC numbers are found under any "
            "region. Default: Presidio's 8"
        ),
    )

    @cross_field_check("hot_days", "warm_days", "cold_days")
    def _tiers_ordered(self) -> Iterator[Problem]:
        if not self.hot_days < self.warm_days < self.cold_days:
            tiers = f"{self.hot_days}, {self.warm_days}, {self.cold_days}"
            yield "", f"tiers must satisfy hot_days < warm_days < cold_days, got {tiers}"


class AgencyConfig(Section):
    agents: list[AgentSpec] = Field(default_factory=default_team)
    routing: RoutingSettings = Field(default_factory=RoutingSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    run: RunSettings = Field(default_factory=RunSettings)
    pool: PoolSettings = Field(default_factory=PoolSettings)

    @field_validator("agents", mode="before")
    @classmethod
    def _start_from_the_default_agents(cls, value: Any) -> Any:
        """An entry named after a default-team agent starts from that agent's settings, so
        `- name: direct` in a file means the default `direct`; fields it sets override them."""
        if not isinstance(value, list):
            return value
        defaults = {spec.name: spec.model_dump(exclude_defaults=True) for spec in default_team()}
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


def _format_validation_error(source: str, error: ValidationError) -> str:
    lines = [f"{source}: invalid configuration"]
    for item in error.errors():
        context = item.get("ctx", {})
        parts = [str(part) for part in item["loc"]]
        if context.get("field"):  # named by a validator of the whole model at `loc`
            parts.append(context["field"])
        lines.append(f"  {'.'.join(parts) or '(top level)'}: {error_reason(item)}")
    return "\n".join(lines)


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
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    try:
        # As JSON, strictly: `hash_tenant: 0`, `tasks: "5"` or `seed: 3.0` is a type error, not
        # quietly converted (`false`, `5`, `3`); JSON's own forms (a number for a float, a string
        # for an enum or a path) are accepted. A value YAML reads that JSON has no form for (an
        # unquoted date) is read as its text.
        return AgencyConfig.model_validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as error:
        raise ConfigError(_format_validation_error(source, error)) from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that names a key twice: plain YAML keeps the last
    value, so a setting written twice (`run:` in two places) would silently lose the first."""

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
        data = yaml.load(resolved.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
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
    return parse_config(data, source=str(resolved))
