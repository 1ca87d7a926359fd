"""`agency routing …`: off-policy evaluation of routing strategies on logged decisions."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy import select
from sqlalchemy.engine import Engine

from agent_agency.arbiter.ope import Estimate, LoggedOutcome, evaluate_policy, replay_policy
from agent_agency.cli_options import ConfigOption, DbOption, load_settings, open_store
from agent_agency.pool.outcomes import final_evaluations, final_quality
from agent_agency.pool.queries import simulated_agents, simulated_label, simulation_banner
from agent_agency.pool.schema import executions, routing_decisions
from agent_agency.records import RoutingDecision, RoutingStrategy

routing_app = typer.Typer(help="Routing: evaluate strategies off-policy on logged decisions.")


@routing_app.callback()
def routing() -> None:
    """Routing: evaluate strategies off-policy on logged decisions."""


def read_logged_outcomes(engine: Engine) -> tuple[list[LoggedOutcome], int]:
    """Logged decisions with their outcome, in time order; plus how many had none.

    A decision's outcome is the execution it started (`executions.decision_id`): that
    execution's own success flag (the arbiter's verdict) and the quality of its final evaluation
    (`pool.outcomes`), 0.0 if it was never evaluated. An execution that ended without an
    evaluation (backend error, time-out) is a failure. A decision with no stored execution is a
    failure when a later fallback decision for the same task names its agent as failed;
    otherwise it is unfinished and left out (and counted).
    """
    with engine.connect() as connection:
        decisions = [
            RoutingDecision.model_validate(row.payload)
            for row in connection.execute(
                select(routing_decisions.c.payload).order_by(routing_decisions.c.timestamp)
            )
        ]
        started = (
            select(executions.c.id, executions.c.decision_id, executions.c.success)
            .where(executions.c.decision_id.is_not(None))
            .order_by(executions.c.timestamp)
        )
        # one execution per decision; should there be more, the latest one counts
        by_decision = {
            decision_id: (execution_id, bool(success))
            for execution_id, decision_id, success in connection.execute(started)
        }
        final = final_evaluations(
            connection, started.with_only_columns(executions.c.id).order_by(None)
        )
    failed_agents: dict[str, set[str]] = defaultdict(set)
    for decision in decisions:
        if decision.fallback_of is not None:
            failed_agents[decision.task_id].add(decision.fallback_of)
    logs: list[LoggedOutcome] = []
    unfinished = 0
    for decision in decisions:
        started_execution = by_decision.get(decision.id)
        if started_execution is not None:
            execution_id, success = started_execution
            quality = final_quality(final, execution_id)
            logs.append(LoggedOutcome(decision=decision, success=success, quality=quality))
        elif decision.selected_agent in failed_agents[decision.task_id]:
            logs.append(LoggedOutcome(decision=decision, success=False, quality=0.0))
        else:
            unfinished += 1
    return logs, unfinished


def _interval(estimate: Estimate) -> str:
    if math.isnan(estimate.value):
        return "no overlap with the logged actions"
    return f"[{estimate.ci_low:.3f}, {estimate.ci_high:.3f}]"


@routing_app.command()
def evaluate(
    policy: Annotated[
        RoutingStrategy, typer.Option("--policy", help="routing strategy to evaluate")
    ],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Estimate how POLICY would have done on the logged decisions (IPS, SNIPS, DR, 95% CI)."""
    settings = load_settings(config, db)
    url = settings.storage.url
    console = Console()
    with open_store(settings, create=False) as store:
        logs, unfinished = read_logged_outcomes(store.engine)
        simulated = simulated_agents(store.engine)
    if not logs:
        console.print(f"[red]No logged decisions with outcomes in {url}[/red]")
        raise typer.Exit(code=1)
    banner = simulation_banner(simulated)
    if banner is not None:
        console.print(f"[yellow]{banner}[/yellow]", soft_wrap=True)
    target = replay_policy(policy, settings.routing, settings.agents)
    result = evaluate_policy(
        logs, target, quality_weight=settings.routing.quality_weight, name=policy.value
    )
    strategies = sorted({log.decision.strategy for log in logs})
    table = Table(title=f"Off-policy value of '{policy.value}' on {len(logs)} logged decisions")
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
        table.add_row(label, f"{estimate.value:.3f}", _interval(estimate))
    console.print(table)
    notes = [f"effective sample size {result.effective_sample_size:.1f}"]
    if unfinished:
        notes.append(f"{unfinished} decisions without an outcome left out")
    agents = Counter(log.decision.selected_agent for log in logs)
    console.print(
        "logged decisions per agent: "
        + ", ".join(f"{simulated_label(a, simulated)} {n}" for a, n in sorted(agents.items())),
        soft_wrap=True,
    )
    console.print("; ".join(notes))
