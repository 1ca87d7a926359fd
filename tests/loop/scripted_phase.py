"""A SIMULATED training phase for loop tests: the 'trained' version is its parent with the
scripted skill the test asks for, so whether it is better or worse is known in advance."""

from __future__ import annotations

from agent_agency.deploy.registry import Lineage
from agent_agency.loop.trainers import TRAINERS, PhaseTrainer, Readiness, Trained, TrainRequest

PHASE = "scripted-skill"


def install(skill: float) -> None:
    """Register the phase: each cycle's candidate answers right with probability `skill`."""

    def check(request: TrainRequest) -> Readiness:
        return Readiness(True, "a scripted phase needs nothing", {})

    async def train(request: TrainRequest) -> Trained:
        request.on_task_done and request.on_task_done()
        spec = request.parent.model_copy(update={"skills": {"*": skill}})
        return Trained(
            spec=spec,
            lineage=Lineage(phase=PHASE, run_id=request.run_id, metrics={"skill": skill}),
            summary=f"scripted: skill {skill}",
        )

    TRAINERS[PHASE] = PhaseTrainer(check, train)
