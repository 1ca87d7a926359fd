"""One `agency run`: pick tasks, build the team, run them through the arbiter, summarise.

Every record of the run carries its run id. The summary is built from the run's own outcomes,
counted as `agency stats` counts stored executions (`arm_totals.summarise`), never from a time
window another run could overlap; the database is then read by run id to confirm it holds what
was recorded. Records it could not store are counted and named with their spill files.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.local import CONTEXT_TOKENS as LOCAL_CONTEXT_TOKENS
from agent_agency.agents.local import MAX_PROMPT_CHARS as LOCAL_MAX_PROMPT_CHARS
from agent_agency.agents.local import configure_embedded
from agent_agency.agents.registry import build_backend
from agent_agency.arbiter.arbiter import Arbiter, TaskOutcome, TrafficSplit, agent_slots
from agent_agency.arbiter.router import ArmAggregate, Router
from agent_agency.caws.audit import AuditLog
from agent_agency.caws.evaluator import Evaluator
from agent_agency.caws.judges import FailingJudge, Judge, failing_judges
from agent_agency.config import AgencyConfig
from agent_agency.db_errors import database_error_reason
from agent_agency.pool.arm_totals import AgentTaskSummary, outcomes_of, summarise
from agent_agency.pool.engine import shown_url
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store
from agent_agency.records import Execution, Task, check_task_features, new_id, utcnow
from agent_agency.tasks import load_builtin, load_suite_files, select_tasks
from agent_agency.tracking.tracker import Tracker


@dataclass
class PreparedRun:
    config: AgencyConfig
    tasks: list[Task]

    @property
    def simulated(self) -> bool:
        return any(spec.backend == "scripted" for spec in self.config.team())

    def undeclared_requirements(self) -> dict[str, list[Task]]:
        """Each requirement of the tasks that no agent of the team declares as a capability,
        with the tasks that have it. No agent then covers those tasks, and the router considers
        every agent for them."""
        declared = {capability for spec in self.config.team() for capability in spec.capabilities}
        undeclared: dict[str, list[Task]] = {}
        for task in self.tasks:
            for requirement in dict.fromkeys(task.requirements):
                if requirement not in declared:
                    undeclared.setdefault(requirement, []).append(task)
        return undeclared

    def fewer_tasks_than_asked(self) -> str | None:
        """A note when the suites and split hold fewer tasks than `run.tasks` asks for (all of
        them run)."""
        asked, held = self.config.run.tasks, len(self.tasks)
        if held >= asked:
            return None
        return (
            f"{asked} tasks asked for (--tasks / run.tasks), but the suites and split "
            f"({self.config.run.split}) hold {held}: running {held}"
        )

    def unmatched_task_types(self) -> list[str]:
        """A warning for each task type named in the configuration (`routing.per_task_type`,
        `evaluation.gates`, `evaluation.judges[].task_types`) that is neither a type of this
        run's tasks nor a built-in one: most likely a typo, which would otherwise leave the
        setting silently unused. (A built-in type the run happens not to include is fine.)"""
        run_types = sorted({task.type for task in self.tasks})
        evaluation = self.config.evaluation
        named = [("routing.per_task_type", key) for key in self.config.routing.per_task_type]
        named += [("evaluation.gates", key) for key in evaluation.gates if key != "*"]
        named += [
            (f"evaluation.judges.{i}.task_types", key)
            for i, judge in enumerate(evaluation.judges)
            for key in judge.task_types
        ]
        unknown = [(setting, key) for setting, key in dict.fromkeys(named) if key not in run_types]
        if not unknown:
            return []
        known = sorted(set(run_types) | _builtin_task_types())
        warnings = []
        for setting, key in unknown:
            if key in known:
                continue
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            warnings.append(
                f"{setting}: task type {key!r} is neither a type of this run's tasks "
                f"({', '.join(run_types)}) nor a built-in one{hint}"
            )
        return warnings


@functools.cache
def _builtin_task_types() -> frozenset[str]:
    return frozenset(task.type for task in load_builtin(split="all"))


@dataclass
class RunRequest:
    config: AgencyConfig
    suite_files: Sequence[Path] = field(default_factory=list)

    def prepare(self) -> PreparedRun:
        """Load and select the tasks; raises ValueError/OSError naming what is wrong."""
        run = self.config.run
        # Named built-in suites run beside task files; with none named, files alone run. Ids
        # are checked across every split, so no id names a task of one split and one of another.
        builtin = load_builtin(run.suites, "all") if run.suites or not self.suite_files else []
        own = load_suite_files(self.suite_files, alongside=builtin)
        pool = [task for task in builtin + own if run.split in ("all", task.split)]
        if not pool:
            raise ValueError("no tasks match the requested suites and split")
        tasks = select_tasks(pool, run.tasks, run.seed)
        for task in tasks:
            check_task_features(task)
        check_prompt_sizes(tasks, self.config)
        return PreparedRun(config=self.config, tasks=tasks)


def check_prompt_sizes(tasks: Sequence[Task], config: AgencyConfig) -> None:
    """`ValueError` naming the tasks whose prompt is longer than the run's agents take
    (`run.max_prompt_chars`, and the embedded model's bound where a local agent runs): refused
    before any model call, rather than a model call that runs past every time limit."""
    limit, why = config.run.max_prompt_chars, "run.max_prompt_chars"
    if any(spec.backend == "local" for spec in config.team()) and limit > LOCAL_MAX_PROMPT_CHARS:
        limit = LOCAL_MAX_PROMPT_CHARS
        why = f"twice what the embedded model's context of {LOCAL_CONTEXT_TOKENS:,} tokens holds"
    too_long = [task for task in tasks if len(task.prompt) > limit]
    if too_long:
        shown = "; ".join(
            f"task {task.id}: prompt: {len(task.prompt):,} characters" for task in too_long[:3]
        )
        more = f" and {len(too_long) - 3} more" if len(too_long) > 3 else ""
        raise ValueError(
            f"{shown}{more}: longer than the {limit:,} characters this run's agents take ({why}); "
            "shorten the prompt, or leave the task out"
        )


@dataclass
class RunReport:
    tasks: int
    succeeded: int
    wall_s: float
    summary: list[AgentTaskSummary]
    summary_json: Path
    spilled: list[Path]
    failure_reasons: list[tuple[str, int]]
    unanswered: int
    audit_head: str  # the audit trail's head after the run: `agency audit verify --expect-head`
    fallbacks: list[tuple[str, int]] = field(default_factory=list)  # `_fallbacks`
    summary_error: str | None = None  # why summary_json could not be written
    # judges that failed to grade most of their verdicts; errors cut as failure reasons are
    failing_judges: list[FailingJudge] = field(default_factory=list)
    write_error: str | None = None  # why records were spilled rather than stored (`spilled`)
    refused: int = 0  # tasks the router refused: no agent available (`RoutingRefusal`)
    ungraded: int = 0  # tasks whose answer no grader could judge: counted for no agent
    grader_errors: list[tuple[str, int]] = field(default_factory=list)  # `_grader_errors`
    run_id: str = ""  # on every record of the run (`run_id` columns)
    unstored: int = 0  # records of the run not stored: spilled (`spilled`) or lost
    database_error: str | None = None  # why the database could not be read after the run

    @property
    def records_unstored(self) -> bool:
        """Some records of the run are not in the database (`agency run` exits 3)."""
        return self.unstored > 0

    @property
    def no_agent_answered(self) -> bool:
        """No task got an answer from any agent: a setup problem (server down, model missing)."""
        return self.tasks > 0 and self.unanswered == self.tasks


def build_router(config: AgencyConfig, store: Store) -> Router:
    """A router for the run's team, restored from the pool's aggregates. A new version
    (`parent`: a configured agent's `name@version`, or its `name`) gets its parent's restored
    evidence, scaled by `routing.inherit_prior_weight`, as its prior, whether or not the parent
    is in the team; the grandparent's counts with the weight squared, and so on up the chain."""
    router = Router(config.team(), settings=config.routing)
    aggregates = store.task_aggregates()
    router.warm_start(aggregates)
    by_agent: dict[str, list[ArmAggregate]] = defaultdict(list)
    for row in aggregates:
        by_agent[row.agent].append(row)
    weight = config.routing.inherit_prior_weight
    for spec in config.team():
        for generation, ancestor in enumerate(_ancestors(config, spec), start=1):
            router.add_prior(spec.key, by_agent[ancestor.key], weight**generation)
    return router


def _ancestors(config: AgencyConfig, spec: AgentSpec) -> Iterator[AgentSpec]:
    """`spec`'s parent, its parent's parent, …; ValueError for an unknown parent or a cycle."""
    seen = {spec.key}
    current = spec
    while current.parent is not None:
        try:
            parent = config.agent(current.parent)
        except KeyError as error:
            raise ValueError(f"agents: {current.key}: parent: {error.args[0]}") from None
        if parent.key in seen:  # config validation rejects these; never loop on one
            raise ValueError(f"agents: {spec.key}: its parent chain returns to {parent.key}")
        seen.add(parent.key)
        yield parent
        current = parent


def build_arbiter(
    config: AgencyConfig,
    tasks: Sequence[Task],
    store: SqlStore,
    tracker: Tracker,
    split: TrafficSplit | None = None,
) -> Arbiter:
    """The arbiter for `config`, its router warm-started from the pool's aggregates; `split`
    steers traffic between versions of an agent (a canary rollout)."""
    configure_embedded(config.embedded)
    backends = {spec.key: build_backend(spec, tasks=tasks) for spec in config.team()}
    router = build_router(config, store)
    judge_specs = [config.agent(judge.agent) for judge in config.evaluation.judges]
    # one admission per agent, shared by its tasks' calls and its grading calls
    slots = agent_slots({spec.key: spec for spec in [*config.team(), *judge_specs]}.values())
    judges = []
    for judge, spec in zip(config.evaluation.judges, judge_specs, strict=True):
        backend = backends.get(spec.key) or build_backend(spec, tasks=tasks)
        judges.append(
            Judge(
                judge.name,
                backend,
                judge.criteria,
                judge.max_retries,
                judge.task_types,
                timeout_s=spec.timeout_s,  # the judge's agent's own limit per call
                admission=slots[spec.key],
            )
        )
    database = store.sqlite_file
    evaluator = Evaluator(
        config.evaluation,
        judges,
        databases=[database] if database else [],
        allow_unisolated=config.sandbox.allow_unisolated,
    )
    return Arbiter(
        config,
        backends=backends,
        router=router,
        evaluator=evaluator,
        tracker=tracker,
        slots=slots,
        split=split,
    )


SpillReport = Callable[[list[Path], str | None], None]
"""Told the files a run saved the records it could not write to, and why they were not written."""


@contextmanager
def _spills_reported(tracker: Tracker, report: SpillReport | None) -> Iterator[None]:
    """Tells `report` the tracker's spill files once it has closed, also when the run is stopped
    (its `RunReport`, which has them too, is then never made)."""
    try:
        yield
    finally:
        if report is not None and tracker.spilled:
            report(list(tracker.spilled), tracker.spill_reason)


async def execute_run(
    prepared: PreparedRun,
    on_task_done: Callable[[bool], None] | None = None,
    on_records_spilled: SpillReport | None = None,
    *,
    split: TrafficSplit | None = None,
    on_outcome: Callable[[TaskOutcome], None] | None = None,
    stop_when: Callable[[], bool] | None = None,
) -> RunReport:
    """Run the prepared tasks and summarise them. `split`: a traffic split between versions
    (canary); `on_outcome`: told every task's outcome; `stop_when`: asked before each task is
    started, no further task starts once it says so (those started finish)."""
    config = prepared.config
    started_at = utcnow()
    started = time.perf_counter()
    run_id = new_id()
    store = Store.open(config.storage.url, config.pool)
    try:
        audit = AuditLog.keyed_by_pool_secret(store.engine, config.pool)
        tracker = Tracker(
            store,
            batch_size=config.storage.batch_size,
            flush_interval_s=config.storage.flush_interval_s,
            audit=audit,
            database=config.storage.url,
            run_id=run_id,
        )
        with _spills_reported(tracker, on_records_spilled), tracker:
            arbiter = build_arbiter(config, prepared.tasks, store, tracker, split)

            def told(outcome: TaskOutcome) -> None:
                if on_task_done is not None:
                    on_task_done(outcome.success)
                if on_outcome is not None:
                    on_outcome(outcome)

            tasks: Iterable[Task] = prepared.tasks
            if stop_when is not None:
                tasks = itertools.takewhile(lambda _task: not stop_when(), tasks)
            outcomes = await arbiter.run(
                tasks, concurrency=config.tasks_in_flight(), on_outcome=told
            )
        wall_s = time.perf_counter() - started
        executions = [e for outcome in outcomes for e in outcome.executions]
        evaluations = [e for outcome in outcomes for e in outcome.evaluations]
        stored = _read_back(store, audit, run_id, executions, config.storage.url)
    finally:
        store.close()
    unstored = tracker.spilled_records + tracker.lost_records
    if stored.missing_executions > unstored:  # stored nowhere, spilled nowhere: say so
        unstored = stored.missing_executions
    report = RunReport(
        run_id=run_id,
        tasks=len(outcomes),
        succeeded=sum(outcome.success for outcome in outcomes),
        wall_s=wall_s,
        summary=summarise(outcomes_of(executions, evaluations)),
        summary_json=Path(config.run.summary_json),
        spilled=tracker.spilled,
        write_error=_write_error(tracker, stored),
        unstored=unstored,
        database_error=stored.error,
        failure_reasons=_failure_reasons(outcomes),
        fallbacks=_fallbacks(outcomes),
        unanswered=sum(not outcome.evaluations for outcome in outcomes),
        refused=sum(outcome.refusal is not None for outcome in outcomes),
        ungraded=sum(outcome.grading_error is not None for outcome in outcomes),
        grader_errors=_grader_errors(outcomes),
        audit_head=stored.audit_head,
        failing_judges=[
            judge.model_copy(update={"most_common_error": shorten_reason(judge.most_common_error)})
            for judge in failing_judges(e for outcome in outcomes for e in outcome.evaluations)
        ],
    )
    try:
        write_summary_json(report, config, started_at.isoformat(), prepared.simulated)
    except OSError as error:  # the run is recorded; only its summary file is missing
        report.summary_error = error.strerror or str(error)
    return report


@dataclass
class _ReadBack:
    """What the database held of a run once its tracker closed."""

    missing_executions: int = 0  # executions of the run the database does not hold
    audit_head: str = ""
    error: str | None = None  # why the database could not be read


def _read_back(
    store: SqlStore, audit: AuditLog, run_id: str, executions: Sequence[Execution], url: str
) -> _ReadBack:
    """Count the run's executions the database holds by run id, and read the audit trail's
    head; a database that cannot be read (the connection lost) is said, not raised: the run's
    summary comes from its own outcomes."""
    try:
        stored = sum(row.tasks for row in store.agent_task_summary(run_id=run_id))
        # the summary counts neither cancelled nor ungraded executions (`agent_task_summary`)
        expected = sum(not (e.cancelled or e.ungraded) for e in executions)
        return _ReadBack(max(0, expected - stored), audit.head_hash())
    except (SQLAlchemyError, OSError) as error:
        return _ReadBack(error=database_error_reason(error, url))


def _write_error(tracker: Tracker, stored: _ReadBack) -> str | None:
    """Why records of the run are not stored, one line; None when all of them are."""
    if tracker.spilled or tracker.lost_records:
        return tracker.spill_reason or tracker.last_write_error
    if stored.missing_executions:
        return f"{stored.missing_executions} executions of this run are missing from the database"
    return None


REASON_CHARS = 160  # a failure reason as the run's report shows it, at most


def failing_judge_warning(judge: FailingJudge) -> str:
    """The run summary's line about a judge that failed to grade most of its verdicts."""
    return (
        f"judge {judge.judge!r} failed to grade {judge.failed} of its {judge.verdicts} "
        f"verdicts, so those answers were graded without it; most common error "
        f"({judge.most_common_error_count}×): {judge.most_common_error}"
    )


def shorten_reason(reason: str | None, limit: int = REASON_CHARS) -> str:
    """A failure reason's first line, cut at a word boundary to at most `limit` characters,
    ending with '…' where it was cut (mid-word only when its first word alone is too long)."""
    line = (reason or "unknown").splitlines()[0]
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if not line[limit - 1].isspace():  # the cut falls inside a word: leave that word out
        space = cut.rfind(" ")
        if space > 0:
            cut = cut[:space]
    return f"{cut.rstrip()}…"


def _failure_reasons(outcomes: Sequence[TaskOutcome], shown: int = 3) -> list[tuple[str, int]]:
    """The most common reasons tasks failed, each cut to its first line."""
    reasons: Counter[str] = Counter()
    for outcome in outcomes:
        if outcome.success or outcome.grading_error is not None:  # not the agent's failure
            continue
        reason = outcome.execution.failure_reason if outcome.executions else outcome.error
        reasons[shorten_reason(reason)] += 1
    return reasons.most_common(shown)


def _grader_errors(outcomes: Sequence[TaskOutcome], shown: int = 3) -> list[tuple[str, int]]:
    """The most common reasons a grader could not judge an answer, each cut to its first line."""
    reasons = Counter(
        shorten_reason(outcome.grading_error)
        for outcome in outcomes
        if outcome.grading_error is not None
    )
    return reasons.most_common(shown)


def _fallbacks(outcomes: Sequence[TaskOutcome], shown: int = 3) -> list[tuple[str, int]]:
    """The most common failures after which another agent took the task: an agent that cannot
    be reached at all only shows up here when fallback rescues its tasks. Each reason names the
    agent (the arbiter's `AgentUnavailable` messages do)."""
    reasons: Counter[str] = Counter()
    for outcome in outcomes:
        for attempt in outcome.executions[:-1]:
            if not attempt.success:
                reasons[shorten_reason(attempt.failure_reason)] += 1
    return reasons.most_common(shown)


def write_summary_json(
    report: RunReport, config: AgencyConfig, started_at: str, simulated: bool
) -> None:
    document = {
        "started_at": started_at,
        "wall_s": round(report.wall_s, 3),
        "tasks": report.tasks,
        "succeeded": report.succeeded,
        "refused": report.refused,
        "ungraded": report.ungraded,  # grader errors: in no agent's figures
        "grader_errors": [{"reason": reason, "tasks": n} for reason, n in report.grader_errors],
        "database": shown_url(config.storage.url),
        "agents": [spec.key for spec in config.team()],
        "simulated": simulated,
        "failure_reasons": [{"reason": reason, "tasks": n} for reason, n in report.failure_reasons],
        "fallbacks": [{"reason": reason, "attempts": n} for reason, n in report.fallbacks],
        "failing_judges": [judge.model_dump(mode="json") for judge in report.failing_judges],
        "summary": [row.model_dump(mode="json") for row in report.summary],
        "audit_head": report.audit_head,
        "run_id": report.run_id,
        # records of the run not stored (spilled or lost), and why the database could not be read
        "unstored_records": report.unstored,
        "database_error": report.database_error,
        # records saved for `agency replay` because they could not be written, and why
        "unwritten": {"files": [str(path) for path in report.spilled], "why": report.write_error},
    }
    # Owner-only, as the database: it names the run's failure reasons and judges' errors.
    descriptor = os.open(report.summary_json, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # a file written by an earlier run keeps no wider mode
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(document, indent=2) + "\n")
