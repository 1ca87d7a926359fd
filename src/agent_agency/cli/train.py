"""`agency train`: make a new version of an agent from the pool, and register it."""

from __future__ import annotations

import signal
from pathlib import Path
from signal import SIGINT, SIGTERM
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    Terminated,
    console,
    err_console,
    fail,
    load_settings,
    one_of,
    open_store,
    run_stoppable,
    sigterm_raises,
)
from agent_agency.cli.versions import registry_of, split_tasks
from agent_agency.records import Split, new_id

if TYPE_CHECKING:
    from agent_agency.config import AgencyConfig
    from agent_agency.training.phase_runs import PhaseRun
    from agent_agency.version_training import LoraPhase, LoraRunSettings, Stage

PHASES = ("prompt", "sft", "grpo")
CURRICULA = ("complexity", "success-rate")
DEVICES = ("auto", "cpu", "cuda")
PHASE_NAMES = {"sft": "SFT", "grpo": "GRPO"}


def train(
    phase: Annotated[str, typer.Option(metavar="|".join(PHASES), help="the trainer to run")],
    agent: Annotated[
        str, typer.Option("--agent", metavar="NAME", help="the agent (name or name@N) to improve")
    ],
    candidates: Annotated[
        int, typer.Option(min=1, metavar="K", help="prompt: variants tried beside the parent")
    ] = 4,
    minibatch: Annotated[
        int, typer.Option(min=1, metavar="N", help="prompt: train tasks each variant answers")
    ] = 8,
    demonstrations: Annotated[
        int, typer.Option(min=1, metavar="D", help="prompt: pool answers shown per variant")
    ] = 3,
    steps: Annotated[
        int | None, typer.Option(min=1, metavar="N", help="sft/grpo: optimizer steps (30)")
    ] = None,
    learning_rate: Annotated[
        float | None,
        typer.Option("--learning-rate", metavar="LR", help="sft/grpo (SFT 2e-4, GRPO 5e-5)"),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(min=1, metavar="B", help="sft/grpo: rows (GRPO: completions) per step (4)"),
    ] = None,
    curriculum: Annotated[
        bool,
        typer.Option("--curriculum", help="sft/grpo: easiest rows first (see --curriculum-by)"),
    ] = False,
    curriculum_by: Annotated[
        str,
        typer.Option(
            "--curriculum-by",
            metavar="|".join(CURRICULA),
            help="sft/grpo: the curriculum's order: task complexity or measured success rate",
        ),
    ] = "complexity",
    device: Annotated[
        str, typer.Option(metavar="|".join(DEVICES), help="sft/grpo: where to train")
    ] = "auto",
    restart: Annotated[
        bool, typer.Option("--restart", help="sft/grpo: start anew, not the unfinished run")
    ] = False,
    seed: Annotated[int, typer.Option(metavar="S", help="seed of every draw")] = 0,
    suite: Annotated[
        list[Path] | None,
        typer.Option(
            "--suite",
            metavar="FILE",
            help="a JSONL task file: prompt trains on its tasks, grpo uses its graders "
            "(repeatable)",
        ),
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Train a new version NAME@N+1 of an agent from the pool; it is registered as a candidate.

    `--phase prompt` searches for a better system prompt and few-shot demonstrations, scored by
    the task graders on train-split tasks only (docs/versions.md). `--phase sft` (the pool's
    successful answers) and `--phase grpo` (the task graders as rewards) train a LoRA adapter
    of the agent's local model (docs/training.md), or train further the one a version already
    carries (say `--phase grpo --agent NAME@N` after an SFT version), still one adapter over the
    same base; a stopped run resumes when the same command runs again.
    """
    phase = one_of("--phase", phase, PHASES)
    settings = load_settings(config, db)
    if phase != "prompt":
        from pydantic import ValidationError

        from agent_agency.records import error_reason
        from agent_agency.version_training import LoraRunSettings

        try:
            run_settings = LoraRunSettings(
                steps=steps,
                learning_rate=learning_rate,
                batch_size=batch_size,
                seed=seed,
                curriculum=one_of("--curriculum-by", curriculum_by, CURRICULA)
                if curriculum
                else None,
                device=one_of("--device", device, DEVICES),
                restart=restart,
            )
        except ValidationError as error:
            first = error.errors()[0]
            raise fail(
                f"--{str(first['loc'][0]).replace('_', '-')}: {error_reason(first)}"
            ) from None
        _train_lora(settings, phase, agent, run_settings, suite or [])  # type: ignore[arg-type]
        return
    _train_prompt(settings, agent, candidates, minibatch, demonstrations, seed, suite or [])


def _train_prompt(
    settings: AgencyConfig,
    agent: str,
    candidates: int,
    minibatch: int,
    demonstrations: int,
    seed: int,
    suite: list[Path],
) -> None:
    from agent_agency.agents.base import BackendError
    from agent_agency.agents.registry import check_backend_setup
    from agent_agency.deploy.registry import Lineage, UnknownVersion, resolve
    from agent_agency.pool.engine import shown_url
    from agent_agency.training.prompt_optimization import (
        PromptSearchSettings,
        ThinPool,
        optimize_prompt,
    )

    search = PromptSearchSettings(
        candidates=candidates, minibatch=minibatch, demonstrations=demonstrations, seed=seed
    )
    tasks = split_tasks(settings, suite, Split.TRAIN)
    with open_store(settings, create=False) as store:
        registry = registry_of(store, settings)
        try:
            parent = resolve(settings, registry, agent)
            registry.get(parent.key)  # a trained version needs a stored parent
        except UnknownVersion as error:
            raise fail(f"--agent: {error}") from None
        try:
            check_backend_setup(parent)
        except (BackendError, ValueError) as error:
            raise fail(error) from None
        if not tasks:
            raise fail("no train-split tasks in the chosen suites to score candidates on")
        total = (search.candidates + 1) * min(search.minibatch, len(tasks))
        console.print(
            f"Prompt optimization of [bold]{parent.key}[/bold]: {search.candidates} variants "
            f"and the parent × {min(search.minibatch, len(tasks))} train tasks, "
            f"pool {shown_url(settings.storage.url)}"
        )
        if parent.backend == "scripted":
            console.print("[yellow]SIMULATION: a scripted agent answers, not a model.[/yellow]")
        try:
            with (
                sigterm_raises(),
                _progress() as progress,
            ):
                bar = progress.add_task("task runs", total=total)
                result = run_stoppable(
                    optimize_prompt(
                        parent,
                        store,
                        tasks,
                        settings,
                        search,
                        on_task_done=lambda _score: progress.advance(bar),
                        databases=[store.sqlite_file] if store.sqlite_file else [],
                    )
                )
        except ThinPool as error:
            raise fail(error) from None
        except (BackendError, ValueError) as error:
            raise fail(error) from None
        except KeyboardInterrupt as stop:
            console.print("[yellow]stopped[/yellow]: no version was registered")
            terminated = isinstance(stop, Terminated)
            raise typer.Exit(128 + (signal.SIGTERM if terminated else signal.SIGINT)) from None
        version = registry.register(
            result.spec,
            parent=parent.key,
            lineage=Lineage(
                phase="prompt",
                run_id=new_id(),
                data_points=result.data_points,
                config=result.config(),
                metrics=result.metrics(),
            ),
        )
    table = Table(title=f"Candidates on {len(result.minibatch)} train tasks")
    for column in ("candidate", "quality", "success", "tokens"):
        table.add_column(column, overflow="fold")
    for row in [result.baseline, *result.results]:
        figures = row.figures()
        label = "parent" if row is result.baseline else figures["label"]
        if row is result.best:
            label = f"[bold]{label} (chosen)[/bold]"
        table.add_row(
            label,
            f"{figures['mean_quality']:.2f}",
            f"{figures['success_rate']:.0%}",
            f"{figures['mean_tokens']:.0f}",
        )
    console.print(table)
    console.print(
        f"Registered [bold]{version.key}[/bold] (candidate, parent {parent.key}) in "
        f"{result.wall_s:.1f} s; {len(result.data_points)} demonstrations from the pool. "
        f"Run it with `agency run --agent {version.key}`; compare it with its parent on "
        f"held-out tasks with `agency validate {version.key}`.",
        highlight=False,
    )


def _train_lora(
    settings: AgencyConfig,
    phase: LoraPhase,
    agent: str,
    run_settings: LoraRunSettings,
    suite: list[Path],
) -> None:
    """`--phase sft|grpo`: train_version with a progress bar; every failure exits 2."""
    from agent_agency.deploy.registry import UnknownVersion
    from agent_agency.training.extra import TrainExtraMissing
    from agent_agency.training.outcome import TrainingProgress
    from agent_agency.training.run_dir import CheckpointMismatch
    from agent_agency.version_training import (
        NotTrainable,
        TrainingStopped,
        train_version,
    )

    name = PHASE_NAMES[phase]
    requirement = settings.training.prerequisite(phase)
    console.print(
        f"training profile: {settings.training.profile} ({name} needs {requirement.points:,} "
        f"points{' that succeeded' if requirement.successes_only else ''}"
        f"{f' of quality ≥ {requirement.min_quality:g}' if requirement.min_quality else ''}"
        f" of the train split)",
        highlight=False,
    )
    suite_files = [Path(path) for path in suite]
    with open_store(settings, create=False, writes=True) as store:
        registry = registry_of(store, settings)
        with _StopRequests() as stopping, _progress() as progress:
            bar = progress.add_task("steps", total=None)

            def stage(step: Stage, run: PhaseRun) -> None:
                _say_stage(step, run, name)

            def advance(update: TrainingProgress) -> None:
                figures = [
                    f"{label} {value:.4g}"
                    for label, value in (("loss", update.loss), ("reward", update.reward))
                    if value is not None
                ]
                progress.update(
                    bar,
                    completed=update.step,
                    total=update.max_steps,
                    description=f"{name} steps {' '.join(figures)}".strip(),
                )

            try:
                version = train_version(
                    settings,
                    store,
                    registry,
                    agent,
                    phase,
                    run_settings,
                    suite_files=suite_files,
                    progress=advance,
                    stop=stopping.requested,
                    on_stage=stage,
                )
            except TrainingStopped as stopped:
                progress.stop()
                console.print(f"[yellow]{name} stopped[/yellow]: {stopped}", highlight=False)
                raise typer.Exit(128 + stopping.signal_number()) from None
            except KeyboardInterrupt as stop:
                progress.stop()
                console.print(
                    f"[yellow]{name} stopped at once[/yellow]: running the same command again "
                    "resumes from the last checkpoint",
                    highlight=False,
                )
                terminated = isinstance(stop, Terminated)
                raise typer.Exit(128 + (signal.SIGTERM if terminated else signal.SIGINT)) from None
            except (UnknownVersion, NotTrainable) as error:
                raise fail(f"--agent: {error}") from None
            except TrainExtraMissing as error:
                raise fail(f"--phase {phase}: {error}") from None
            except CheckpointMismatch as error:
                raise fail(
                    f"{error} (the unfinished run of this command: rerun it with the options it "
                    "started with to resume, or pass --restart to start a new run; its files stay)"
                ) from None
            except ValueError as error:  # ExportError (the pool falls short) included
                raise fail(error) from None
    metrics = version.lineage.metrics
    console.print(
        f"Registered [bold]{version.key}[/bold] (candidate, parent {version.parent}, adapter "
        f"{version.spec.adapter}): {metrics['steps']} steps on {metrics['rows']} rows of batch "
        f"{version.lineage.config['batch_id']}, {_last(metrics, 'loss_curve', 'loss')}"
        f"{_last(metrics, 'reward_curve', ', reward')} in {metrics['train_wall_s']:.1f} s of "
        f"training ({metrics['phase_wall_s']:.1f} s this session). Run it with `agency run "
        f"--agent {version.key}`; compare it with its parent on held-out tasks with "
        f"`agency validate {version.key}`.",
        highlight=False,
    )


def _last(metrics: dict[str, object], curve: str, label: str) -> str:
    points = metrics.get(curve)
    if not isinstance(points, list) or not points:
        return ""
    return f"{label} {points[0][1]:.4g} → {points[-1][1]:.4g}"


def _say_stage(stage: Stage, run: PhaseRun, name: str) -> None:
    if stage == "export":
        what = "resuming run" if run.resumed else "new run"
        parent = run.record().get("parent")
        console.print(f"{name} of {parent}: {what} {run.path}", highlight=False)
    elif stage == "train":
        batch = run.record().get("batch", {})
        console.print(
            f"batch {batch.get('id')}: {len(batch.get('point_ids', [])):,} points of the train "
            "split (anonymized); loading the base model",
            highlight=False,
        )
    elif stage == "convert":
        console.print("converting the adapter for llama.cpp", highlight=False)


class _StopRequests:
    """Ctrl-C or SIGTERM once: finish the step, save a checkpoint and stop; twice: at once."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopRequests:
        self._previous = {s: signal.signal(s, self.handle) for s in (SIGINT, SIGTERM)}
        return self

    def __exit__(self, *_: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def requested(self) -> bool:
        return bool(self.signals)

    def signal_number(self) -> int:
        return self.signals[0] if self.signals else int(signal.SIGINT)

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.signals:
            raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        self.signals.append(signum)
        err_console.print(
            "[yellow]stopping[/yellow] after this step, with a checkpoint to resume from; "
            "Ctrl-C again stops at once (losing the steps since the last checkpoint)"
        )


def _progress() -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
