"""`agency routing …`: off-policy evaluation of routing strategies on logged decisions."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    command_for,
    load_settings,
    one_of,
    open_store,
)
from agent_agency.records import RoutingDecision, RoutingStrategy

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from agent_agency.arbiter.ope import (
        Estimate,
        LoggedOutcome,
        PolicyEvaluation,
        ReplayedStrategy,
    )

routing_app = typer.Typer(help="Routing: evaluate strategies off-policy on logged decisions.")


@routing_app.callback()
def routing() -> None:
    """Routing: evaluate strategies off-policy on logged decisions."""


STRATEGIES = [strategy.value for strategy in RoutingStrategy]
NO_OUTCOME = "no outcome (the task never finished)"
ZERO_PROPENSITY = "zero propensity (cannot be reweighted)"
CANCELLED = "cancelled (the run was stopped while the task was under way)"
UNGRADED = "ungraded (grader error: no grader could judge the answer)"


@dataclass
class LoggedOutcomes:
    logs: list[LoggedOutcome]
    left_out: Counter[str] = field(default_factory=Counter)  # reason → decisions


def read_logged_outcomes(engine: Engine) -> LoggedOutcomes:
    """Logged decisions with their outcome, in time order, and the decisions left out, by reason.

    A decision's outcome is the execution it started (`executions.decision_id`): that
    execution's own success flag (the arbiter's verdict) and the quality of its final evaluation
    (`pool.outcomes`), 0.0 if it was never evaluated. An execution that ended without an
    evaluation (backend error, time-out) is a failure; one a stopped run cut off (`cancelled`) or
    whose answer no grader could judge (`ungraded`) is no evidence, and its decision is left
    out. A decision with no stored execution is a
    failure when a later fallback decision for the same task names its agent as failed;
    otherwise it is unfinished and left out. A decision logged with propensity 0 cannot be
    reweighted and is left out too.
    """
    from sqlalchemy import select

    from agent_agency.arbiter.ope import LoggedOutcome
    from agent_agency.pool.outcomes import final_evaluations, final_quality
    from agent_agency.pool.schema import executions, routing_decisions

    with engine.connect() as connection:
        decisions = [
            RoutingDecision.model_validate(row.payload)
            for row in connection.execute(
                select(routing_decisions.c.payload).order_by(routing_decisions.c.timestamp)
            )
        ]
        started = (
            select(
                executions.c.id,
                executions.c.decision_id,
                executions.c.success,
                executions.c.cancelled,
                executions.c.ungraded,
            )
            .where(executions.c.decision_id.is_not(None))
            .order_by(executions.c.timestamp)
        )
        # one execution per decision; should there be more, the latest one counts
        by_decision = {
            decision_id: (
                execution_id,
                bool(success),
                _no_evidence(bool(cancelled), bool(ungraded)),
            )
            for execution_id, decision_id, success, cancelled, ungraded in connection.execute(
                started
            )
        }
        final = final_evaluations(
            connection, started.with_only_columns(executions.c.id).order_by(None)
        )
    failed_agents: dict[str, set[str]] = defaultdict(set)
    for decision in decisions:
        if decision.fallback_of is not None:
            failed_agents[decision.task_id].add(decision.fallback_of)
    read = LoggedOutcomes(logs=[])
    for decision in decisions:
        started_execution = by_decision.get(decision.id)
        if started_execution is not None:
            execution_id, success, no_evidence = started_execution
            if no_evidence is not None:
                read.left_out[no_evidence] += 1
                continue
            quality = final_quality(final, execution_id)
        elif decision.selected_agent in failed_agents[decision.task_id]:
            success, quality = False, 0.0
        else:
            read.left_out[NO_OUTCOME] += 1
            continue
        if decision.propensity <= 0.0:
            read.left_out[ZERO_PROPENSITY] += 1
            continue
        read.logs.append(LoggedOutcome(decision=decision, success=success, quality=quality))
    return read


def _no_evidence(cancelled: bool, ungraded: bool) -> str | None:
    """Why an execution is no evidence about its agent (a `left_out` reason); None if it is."""
    if cancelled:
        return CANCELLED
    return UNGRADED if ungraded else None


CLIPPED_MARK = "†"


def _value(estimate: Estimate) -> str:
    if math.isnan(estimate.value):
        return "—"
    mark = CLIPPED_MARK if estimate.clipped_from is not None else ""
    return f"{estimate.value:.3f}{mark}"


def clipped_notes(rows: list[tuple[str, Estimate]]) -> list[str]:
    """One line per estimate the table shows clipped, with its value before clipping."""
    from agent_agency.arbiter.ope import REWARD_RANGE

    low, high = REWARD_RANGE
    return [
        f"{CLIPPED_MARK} {label}: {estimate.clipped_from:.3f} before clipping to the reward range "
        f"[{low:g}, {high:g}], where the true value lies"
        for label, estimate in rows
        if estimate.clipped_from is not None
    ]


def interval_text(estimate: Estimate) -> str:
    """The 95% interval as the table shows it: '—' and the reason where the log supports none
    (the whole reward range it then spans says nothing)."""
    if math.isnan(estimate.value) and estimate.caveat is not None:
        return estimate.caveat
    interval = f"[{estimate.ci_low:.3f}, {estimate.ci_high:.3f}]" if estimate.has_interval else "—"
    return interval if estimate.caveat is None else f"{interval} {estimate.caveat}"


def effective_sample_size_text(size: float) -> str:
    """One decimal, rounded down, so that a size below a threshold the output names (2, 100)
    never shows as that threshold: 1.96 is '1.9', not '2.0'."""
    return str(Decimal(repr(size)).quantize(Decimal("0.1"), rounding=ROUND_FLOOR))


def _decisions(number: int) -> str:
    return f"{number} decision" if number == 1 else f"{number} decisions"


def evaluation_warnings(result: PolicyEvaluation, n: int) -> list[str]:
    """A warning when the log is too small for the 95% intervals to hold 95% of the time."""
    from agent_agency.arbiter.ope import RELIABLE_EFFECTIVE_SAMPLE_SIZE, SIMULATED_COVERAGE

    ess = result.effective_sample_size
    estimates = (result.ips, result.snips, result.doubly_robust)
    if n and not any(estimate.has_interval for estimate in estimates):
        return [
            f"{_decisions(n)}, effective sample size {effective_sample_size_text(ess)}: too few "
            "for any 95% interval; the estimates are of this log alone"
        ]
    if n < RELIABLE_EFFECTIVE_SAMPLE_SIZE or 0 < ess < RELIABLE_EFFECTIVE_SAMPLE_SIZE:
        *most, last = [f"{share} {size}" for size, share in SIMULATED_COVERAGE]
        return [
            f"{_decisions(n)}, effective sample size {effective_sample_size_text(ess)} (below "
            f"{RELIABLE_EFFECTIVE_SAMPLE_SIZE:.0f}): the 95% intervals are approximate and too "
            "narrow. In simulations, the IPS, SNIPS and DR intervals contained the true mean "
            f"reward of the policy they estimate (here '{result.policy}') less often than 95% "
            f"of the time; the share of simulated logs in which they did, by effective sample "
            f"size: {', '.join(most)} and {last}"
        ]
    return []


def left_out_notes(left_out: Counter[str]) -> list[str]:
    return [f"{_decisions(n)} left out: {reason}" for reason, n in sorted(left_out.items())]


def nothing_to_evaluate(url: str, left_out: Counter[str], points_only: bool, db: str | None) -> str:
    """What `evaluate` says where no logged decision has an outcome to evaluate on: nothing to
    report yet, as `agency stats` says of a database without executions, not an error."""
    from agent_agency.pool.engine import shown_url

    said = f"No logged decisions with outcomes in {shown_url(url)}"
    if left_out:
        return f"{said}; {'; '.join(left_out_notes(left_out))}."
    if points_only:
        return (
            f"{said}: it holds only data points stored in the pool (`agency pool ingest`), which "
            f"keep no routing log to evaluate on; `{command_for(db, 'agency pool stats')}` "
            "summarises them."
        )
    return f"{said} yet. Run `agency run` first."


def estimand_note(target: ReplayedStrategy, n: int) -> str | None:
    """What the estimates of a learning strategy are of (the replay in `ope`'s docstring)."""
    if not target.learns:
        return None
    if target.learned_from == 0:
        return (
            f"{target.strategy.value} learns: replayed in log order, its own draw never chose the "
            f"logged agent in the {_decisions(n)} (Li et al. 2011), so it learned from none of "
            "them: the estimates are of its value before it learns anything"
        )
    return (
        f"{target.strategy.value} learns: replayed in log order, it learned from the "
        f"{target.learned_from} of {_decisions(n)} where its own draw chose the logged agent "
        "(Li et al. 2011), so the estimates are of its value over about "
        f"{_decisions(target.learned_from)} of its own (closely so when the logged choices were "
        "uniformly random), not over all of them"
    )


@routing_app.command()
def evaluate(
    policy: Annotated[
        str,
        typer.Option("--policy", metavar="|".join(STRATEGIES), help="routing strategy to evaluate"),
    ],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Estimate how POLICY would have done on the logged decisions (IPS, SNIPS, DR, 95% CI)."""
    from agent_agency.arbiter.ope import ReplayedStrategy, evaluate_policy
    from agent_agency.pool.queries import simulated_agents, simulated_label, simulation_banner

    strategy = RoutingStrategy(one_of("--policy", policy, STRATEGIES))
    settings = load_settings(config, db)
    console = Console()
    with open_store(settings, create=False) as store:
        read = read_logged_outcomes(store.engine)
        simulated = simulated_agents(store.engine)
        points_only = not read.logs and not read.left_out and store.holds_data_points()
    logs = read.logs
    if not logs:
        message = nothing_to_evaluate(settings.storage.url, read.left_out, points_only, db)
        console.print(message, soft_wrap=True, highlight=False, markup=False)
        return
    banner = simulation_banner(simulated)
    if banner is not None:
        console.print(f"[yellow]{banner}[/yellow]", soft_wrap=True)
    target = ReplayedStrategy(strategy, settings.routing, settings.agents)
    result = evaluate_policy(
        logs, target, quality_weight=settings.routing.quality_weight, name=strategy.value
    )
    strategies = sorted({log.decision.strategy for log in logs})
    table = Table(
        title=f"Off-policy value of '{strategy.value}' on {len(logs)} logged "
        f"decision{'' if len(logs) == 1 else 's'}"
    )
    table.add_column("estimator")
    table.add_column("mean reward", justify="right")
    table.add_column("95% CI")
    rows: list[tuple[str, Estimate]] = [
        (f"logged policy ({', '.join(strategies)})", result.logged),
        ("IPS", result.ips),
        ("SNIPS", result.snips),
        ("doubly robust", result.doubly_robust),
    ]
    for label, estimate in rows:
        table.add_row(label, _value(estimate), interval_text(estimate))
    console.print(table)
    for note in clipped_notes(rows):
        console.print(note, soft_wrap=True, highlight=False)
    notes = [f"effective sample size {effective_sample_size_text(result.effective_sample_size)}"]
    notes += left_out_notes(read.left_out)
    agents = Counter(log.decision.selected_agent for log in logs)
    console.print(
        "logged decisions per agent: "
        + ", ".join(f"{simulated_label(a, simulated)} {n}" for a, n in sorted(agents.items())),
        soft_wrap=True,
    )
    console.print("; ".join(notes), soft_wrap=True)
    estimand = estimand_note(target, len(logs))
    if estimand is not None:
        console.print(f"note: {estimand}", soft_wrap=True, highlight=False)
    for warning in evaluation_warnings(result, len(logs)):
        console.print(f"[yellow]warning:[/yellow] {warning}", soft_wrap=True, highlight=False)
