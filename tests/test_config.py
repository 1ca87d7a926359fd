from pathlib import Path

import pytest

from agent_agency.agent_spec import AgentSpec
from agent_agency.config import AgencyConfig, default_team, load_config, parse_config
from agent_agency.records import RoutingStrategy
from agent_agency.sections import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agency.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_need_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    config = load_config()
    assert config == AgencyConfig()
    assert len(config.agents) >= 3
    assert {agent.backend for agent in config.agents} == {"local"}
    assert config.storage.url == "sqlite:///agency.db"
    assert config.run.tasks == 60


def test_default_team_differs_in_ways_that_matter() -> None:
    agents = AgencyConfig().agents
    prompts = {agent.system_prompt for agent in agents}
    assert len(prompts) == len(agents)
    assert any(agent.tools_enabled for agent in agents)
    assert any(not agent.tools_enabled for agent in agents)
    assert any(agent.few_shot for agent in agents)
    assert len({agent.temperature for agent in agents}) > 1


def test_file_overrides_and_keeps_other_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "routing:\n  strategy: ucb1\n  per_task_type:\n    arithmetic: epsilon_greedy\n"
        "storage:\n  url: sqlite:///x.db\n",
    )
    config = load_config(path)
    assert config.routing.strategy_for("arithmetic") is RoutingStrategy.EPSILON_GREEDY
    assert config.routing.strategy_for("classification") is RoutingStrategy.UCB1
    assert config.storage.url == "sqlite:///x.db"
    assert config.run.tasks == 60


def test_env_var_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "run:\n  tasks: 7\n")
    monkeypatch.setenv("AGENCY_CONFIG", str(path))
    assert load_config().run.tasks == 7


def test_wrong_type_names_file_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "run:\n  tasks: many\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    message = str(error.value)
    assert str(path) in message
    assert "run.tasks" in message
    assert "integer" in message


@pytest.mark.parametrize(
    ("text", "field", "kind"),
    [
        ("pool:\n  anonymization: {hash_tenant: 0}\n", "pool.anonymization.hash_tenant", "boolean"),
        ("pool:\n  anonymization: {reward_noise: 'yes'}\n", "reward_noise", "boolean"),
        ("run:\n  tasks: '5'\n", "run.tasks", "integer"),
        ("run:\n  seed: 3.0\n", "run.seed", "integer"),
        ("routing:\n  breaker: {cooldown_s: '30'}\n", "routing.breaker.cooldown_s", "number"),
    ],
)
def test_a_value_of_another_type_is_an_error_not_converted(
    tmp_path: Path, text: str, field: str, kind: str
) -> None:
    """`hash_tenant: 0` would quietly turn tenant hashing off were it converted to false."""
    with pytest.raises(ConfigError, match=rf"{field}: Input should be a valid {kind}"):
        load_config(write(tmp_path, text))


def test_json_forms_of_a_value_are_taken(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, "routing:\n  strategy: ucb1\n  breaker: {cooldown_s: 30}\n")
    )
    assert config.routing.strategy is RoutingStrategy.UCB1
    assert config.routing.breaker.cooldown_s == 30.0


def test_unknown_field_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "routing:\n  stratgy: thompson\n")
    with pytest.raises(ConfigError, match=r"routing\.stratgy: Extra inputs are not permitted"):
        load_config(path)


def test_unknown_strategy_lists_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, "routing:\n  strategy: psychic\n")
    with pytest.raises(ConfigError, match=r"routing\.strategy: Input should be 'thompson'"):
        load_config(path)


def test_negative_limits_rejected() -> None:
    with pytest.raises(ConfigError, match=r"agents\.0\.max_concurrency"):
        parse_config({"agents": [{"name": "a", "max_concurrency": -1}]})
    with pytest.raises(ConfigError, match=r"run\.concurrency"):
        parse_config({"run": {"concurrency": -1}})


def test_tasks_in_flight_default_to_two_per_model_instance() -> None:
    assert parse_config({"embedded": {"instances": 3}}).tasks_in_flight() == 6
    assert (
        parse_config({"embedded": {"instances": 3}, "run": {"concurrency": 5}}).tasks_in_flight()
        == 5
    )


def test_tasks_in_flight_follow_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert AgencyConfig().tasks_in_flight() == 32


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "run:\n  tasks: [1,\n")
    with pytest.raises(ConfigError, match=r"line \d+ is not valid YAML"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("run:\n  tasks: 5\nrun:\n  tasks: 6\n", 3, "run"),
        ("run:\n  tasks: 5\n  tasks: 6\n", 3, "tasks"),
    ],
)
def test_a_key_written_twice_is_an_error_not_the_last_value(
    tmp_path: Path, text: str, line: int, key: str
) -> None:
    with pytest.raises(ConfigError, match=rf"line {line} .*key '{key}' appears twice"):
        load_config(write(tmp_path, text))


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_duplicate_agents_and_unknown_agent_lookup() -> None:
    with pytest.raises(ConfigError, match="defined twice"):
        parse_config({"agents": [{"name": "a"}, {"name": "a"}]})
    config = parse_config({"agents": [{"name": "a"}, {"name": "b", "version": "2"}]})
    assert config.agent("b").version == "2"
    assert config.agent("b@2").name == "b"
    with pytest.raises(KeyError, match="unknown agent 'c'; configured agents: a@1, b@2"):
        config.agent("c")


def test_rubric_weights_validated() -> None:
    with pytest.raises(ConfigError, match="unknown rubric weight 'style'"):
        parse_config({"evaluation": {"weights": {"style": 1.0}}})
    with pytest.raises(ConfigError, match="must be between 0 and 1000, got -1.0"):
        parse_config({"evaluation": {"weights": {"task": -1.0}}})


def test_unknown_agent_in_run_names_field_and_known_agents(tmp_path: Path) -> None:
    path = write(tmp_path, "run:\n  agents: [direct, wizard]\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    message = str(error.value)
    assert str(path) in message
    assert "run.agents.1: unknown agent 'wizard'" in message
    assert "direct@1" in message


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (
            {"run": {"agents": ["x"]}},
            "run.agents.0: unknown agent 'x'; configured agents: direct@1, stepwise@1, toolsmith@1",
        ),
        (
            {"evaluation": {"weights": {"task": -1.0}}},
            "evaluation.weights.task: must be between 0 and 1000, got -1.0",
        ),
        (
            {"evaluation": {"weights": {"style": 1.0}}},
            "evaluation.weights.style: unknown rubric weight 'style'; known: cost, format,",
        ),
        (
            {"evaluation": {"weights": {"task": 0.0}}},
            "evaluation.weights: rubric weights must not all be zero",
        ),
        ({"agents": []}, "agents: at least one agent is required"),
        (
            {"agents": [{"name": "a"}, {"name": "a"}]},
            "agents.1: agent 'a@1' is defined twice (first as agents.0)",
        ),
        (
            {"pool": {"hot_days": 100}},
            "pool: tiers must satisfy hot_days < warm_days < cold_days, got 100, 90, 730",
        ),
        ({"storage": {"url": "nonsense"}}, "storage.url: 'nonsense' is not a database URL"),
    ],
)
def test_cross_field_errors_read_like_field_errors(data: dict[str, object], line: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(data, source="agency.yaml")
    message = str(error.value)
    assert f"\n  {line}" in message
    assert "Value error" not in message and "(top level)" not in message


def test_team_selects_named_agents() -> None:
    config = parse_config({"run": {"agents": ["toolsmith", "direct@1"]}})
    assert [spec.key for spec in config.team()] == ["toolsmith@1", "direct@1"]


def test_storage_url_must_parse() -> None:
    with pytest.raises(ConfigError, match=r"storage\.url: .*'nonsense' is not a database URL"):
        parse_config({"storage": {"url": "nonsense"}})


def test_storage_url_must_name_a_kind_of_database_sqlalchemy_knows() -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"storage": {"url": "postgres://someone@localhost/db"}})
    assert (
        "storage.url: 'postgres://someone@localhost/db' names no kind of database SQLAlchemy "
        "knows ('postgres'; expected e.g. sqlite:///agency.db or postgresql+psycopg://user@host/db)"
    ) in str(error.value)


def test_judge_must_name_a_configured_agent() -> None:
    with pytest.raises(ConfigError, match=r"evaluation\.judges\.0\.agent: unknown agent 'oracle'"):
        parse_config(
            {"evaluation": {"judges": [{"name": "j", "agent": "oracle", "criteria": "polite"}]}}
        )
    config = parse_config(
        {"evaluation": {"judges": [{"name": "j", "agent": "direct", "criteria": "polite"}]}}
    )
    assert config.evaluation.judges[0].task_types == []


def test_the_documented_example_config_is_valid() -> None:
    import re

    import yaml

    page = (Path(__file__).parents[1] / "docs/configuration.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
    assert blocks, "docs/configuration.md shows an example agency.yaml"
    for block in blocks:
        config = parse_config(yaml.safe_load(block), source="docs/configuration.md")
        assert config.agents
    # its `- name: direct` is the default team's agent, which can fall back for `big`
    direct = next(spec for spec in default_team() if spec.name == "direct")
    assert config.agent("direct") == direct


def test_an_agent_named_after_a_default_one_starts_from_its_settings() -> None:
    defaults = {spec.name: spec for spec in default_team()}
    config = parse_config(
        {"agents": [{"name": "direct", "temperature": 0.5}, {"name": "stepwise"}, {"name": "x"}]}
    )
    direct = config.agent("direct")
    assert direct.temperature == 0.5
    assert direct == defaults["direct"].model_copy(update={"temperature": 0.5})
    assert config.agent("stepwise") == defaults["stepwise"]
    assert config.agent("x").capabilities == []  # any other name starts from the field defaults


def test_parent_cycles_are_rejected() -> None:
    with pytest.raises(ConfigError, match=r"agents\.0\.parent: a@1 descends from itself"):
        parse_config({"agents": [{"name": "a", "parent": "a@1"}]})
    with pytest.raises(ConfigError, match=r"agents\.1\.parent: .* descends from itself"):
        parse_config(
            {
                "agents": [
                    {"name": "root"},
                    {"name": "a", "parent": "b@1"},
                    {"name": "b", "parent": "a@1"},
                ]
            }
        )
    chain = parse_config(
        {"agents": [{"name": "a"}, {"name": "a", "version": "2", "parent": "a@1"}]}
    )
    assert chain.agent("a@2").parent == "a@1"


def test_run_agents_may_not_name_one_agent_twice() -> None:
    with pytest.raises(ConfigError, match=r"run\.agents\.1: 'direct@1' names direct@1 a second"):
        parse_config({"run": {"agents": ["direct", "direct@1"]}})


def test_local_backend_model_must_be_the_embedded_one_or_a_gguf_file() -> None:
    with pytest.raises(ConfigError, match=r"agents\.0\.model: the local backend"):
        parse_config({"agents": [{"name": "a", "model": "llama3"}]})
    config = parse_config({"agents": [{"name": "a", "model": "/models/tiny.gguf"}]})
    from agent_agency.agents.registry import build_backend

    with pytest.raises(ValueError, match="model file /models/tiny.gguf not found"):
        build_backend(config.agents[0])


def test_an_unknown_parent_names_the_field() -> None:
    agents = [{"name": "a"}, {"name": "b", "parent": "nosuch@9"}]
    with pytest.raises(ConfigError) as error:
        parse_config({"agents": agents}, source="agency.yaml")
    assert "\n  agents.1.parent: unknown agent 'nosuch@9'; configured agents: a@1, b@1" in str(
        error.value
    )


def test_a_bare_parent_name_is_that_name_s_first_version() -> None:
    config = parse_config({"agents": [{"name": "a"}, {"name": "a", "version": "2", "parent": "a"}]})
    assert config.agent("a@2").parent == "a"
    with pytest.raises(ConfigError, match=r"agents\.0\.parent: a@1 descends from itself"):
        parse_config({"agents": [{"name": "a", "parent": "a"}]})


@pytest.mark.parametrize(
    ("data", "line"),
    [
        ({"routing": {"seed": -1}}, "routing.seed: Input should be greater than or equal to 0"),
        (
            {"routing": {"breaker": {"cooldown_s": 0}}},
            "routing.breaker.cooldown_s: Input should be greater than 0",
        ),
        (
            {"routing": {"linear_alpha": 1e308}},
            "routing.linear_alpha: Input should be less than or equal to 100",
        ),
        ({"routing": {"ucb_c": float("inf")}}, "routing.ucb_c: Input should be a finite number"),
        (
            {"routing": {"breaker": {"cooldown_s": float("nan")}}},
            "routing.breaker.cooldown_s: Input should be a finite number",
        ),
        (
            {"evaluation": {"weights": {"format": float("nan"), "task": 1.0}}},
            "evaluation.weights.format: Input should be a finite number",
        ),
        (
            {"evaluation": {"weights": {"format": float("inf"), "task": 1.0}}},
            "evaluation.weights.format: Input should be a finite number",
        ),
        (
            {"evaluation": {"weights": {"task": 1e308, "format": 1e308}}},
            "evaluation.weights.task: must be between 0 and 1000, got 1e+308",
        ),
        ({"run": {"task_timeout_s": float("inf")}}, "run.task_timeout_s: Input should be a finite"),
        (
            {"evaluation": {"judges": [{"name": "tone", "agent": "direct", "criteria": "   "}]}},
            "evaluation.judges.0.criteria: must not be empty or blank",
        ),
    ],
)
def test_values_that_would_fail_at_run_time_are_rejected_at_load(
    data: dict[str, object], line: str
) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(data, source="agency.yaml")
    assert f"\n  {line}" in str(error.value)


def test_every_mistake_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    """Field errors in several sections, and checks across fields both within a section (rubric
    weights, tiers) and across sections (the agents that run.agents and a judge name)."""
    path = write(
        tmp_path,
        "agents:\n"
        "  - {name: a, backend: scripted}\n"
        "  - {name: a, backend: scripted}\n"
        "  - {name: b, backend: scripted, parent: nosuch}\n"
        "routing:\n  epsilon: 3\n"
        "evaluation:\n"
        "  pass_threshold: 2\n"
        "  weights: {task: -1, style: 1}\n"
        "  judges: [{name: tone, agent: oracle, criteria: 'polite?'}]\n"
        "storage:\n  url: nonsense\n"
        "run:\n  tasks: 0\n  agents: [wizard, a, a@1]\n"
        "pool:\n  hot_days: 100\n  warm_days: 10\n",
    )
    with pytest.raises(ConfigError) as error:
        load_config(path)
    lines = str(error.value).splitlines()
    assert lines[0] == f"{path}: invalid configuration"
    assert [line.split(": ")[0].strip() for line in lines[1:]] == [
        "routing.epsilon",
        "evaluation.pass_threshold",
        "evaluation.weights.task",
        "evaluation.weights.style",
        "storage.url",
        "run.tasks",
        "pool",
        "agents.1",
        "agents.2.parent",
        "run.agents.0",
        "run.agents.2",
        "evaluation.judges.0.agent",
    ]
    assert "  pool: tiers must satisfy hot_days < warm_days < cold_days, got 100, 10, 730" in (
        lines
    )


def test_a_check_across_fields_is_left_out_where_a_field_it_needs_is_invalid() -> None:
    """Its finding would rest on a value the file does not hold (a default standing in)."""
    with pytest.raises(ConfigError) as error:
        parse_config(
            {
                "agents": [{"name": "a", "backend": "scripted", "temperature": 9}],
                "evaluation": {"judges": [{"name": "j", "agent": "oracle", "criteria": "ok?"}]},
                "run": {"agents": ["wizard"]},
                "pool": {"hot_days": 100, "cold_days": 0},
            },
            source="agency.yaml",
        )
    assert str(error.value) == (
        "agency.yaml: invalid configuration\n"
        "  agents.0.temperature: Input should be less than or equal to 2\n"
        "  pool.cold_days: Input should be greater than 0"
    )


def test_one_cycle_of_parents_is_reported_once() -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(
            {"agents": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]},
            source="agency.yaml",
        )
    assert str(error.value) == (
        "agency.yaml: invalid configuration\n"
        "  agents.0.parent: a@1 descends from itself (parent chain a@1 → b@1 → a@1)"
    )


@pytest.mark.parametrize("url", ["   ", "notaurl", "ftp://host/v1", "http://"])
def test_a_base_url_that_is_no_http_url_is_a_config_error(url: str) -> None:
    agents = [{"name": "big", "backend": "openai_compat", "model": "m", "base_url": url}]
    with pytest.raises(ConfigError) as error:
        parse_config({"agents": agents}, source="agency.yaml")
    assert f"agents.0.base_url: {url!r} is not an http(s) URL with a host" in str(error.value)


def test_an_openai_compat_agent_without_base_url_is_valid_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # whether $OPENAI_BASE_URL names its server is asked when the agent runs, not of the file:
    # reading statistics or showing the config must not depend on the shell's environment
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agents = [{"name": "direct"}, {"name": "big", "backend": "openai_compat", "model": "m"}]
    assert parse_config({"agents": agents}).agents[1].base_url is None


def test_call_slots_default_to_four_or_one_per_core_for_local_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    local = AgentSpec(name="a")
    served = AgentSpec(name="b", backend="openai_compat", model="m")
    assert (local.call_slots(), served.call_slots()) == (16, 4)
    assert AgentSpec(name="c", max_concurrency=2).call_slots() == 2
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert local.call_slots() == 4
