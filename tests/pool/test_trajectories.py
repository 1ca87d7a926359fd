"""A data point keeps the whole trajectory of a real arbiter run: every attempt, every message in
the order the model saw it, tool calls and results, feedback, token counts, and the evaluator's
per-turn rewards aligned to the model calls; and all of it survives the pool."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from pool_records import make_point, one_attempt

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.arbiter.arbiter import Arbiter, TaskOutcome
from agent_agency.arbiter.router import Router
from agent_agency.caws.evaluator import Evaluator
from agent_agency.config import parse_config
from agent_agency.data_point import Attempt, DataPoint, TrajectoryTurn
from agent_agency.pool.assemble import build_data_point
from agent_agency.pool.point_fields import free_text_fields
from agent_agency.pool.store import Store
from agent_agency.pool.validation import structural_reasons
from agent_agency.records import Completion, Message, ToolSpec, TurnData
from agent_agency.tasks import load_builtin
from agent_agency.tracking.tracker import Tracker


class RecordingBackend(ScriptedBackend):
    """The scripted backend, remembering what each call was sent and what it answered."""

    def __init__(self, spec: AgentSpec, tasks: Sequence[Any]) -> None:
        super().__init__(spec, tasks)
        self.calls: list[tuple[list[Message], Completion]] = []

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec] | None = None, **params: Any
    ) -> Completion:
        completion = await super().complete(messages, tools, **params)
        self.calls.append(([message.model_copy(deep=True) for message in messages], completion))
        return completion


def _run_tool_tasks(tracker: Tracker | None = None) -> tuple[list[TaskOutcome], RecordingBackend]:
    """Tool-use tasks run by one scripted agent that answers right half the time: some tasks
    pass at once, others fail, get feedback and are tried again, each attempt calling the
    calculator first."""
    config = parse_config(
        {
            "agents": [
                {
                    "name": "half",
                    "backend": "scripted",
                    "skills": {"*": 0.5},
                    "tools_enabled": True,
                    "capabilities": ["tools"],
                }
            ],
            "routing": {"seed": 1},
        }
    )
    tasks = load_builtin(["tool-use"], split="train")[:12]
    [spec] = config.team()
    backend = RecordingBackend(spec, tasks)
    arbiter = Arbiter(
        config,
        backends={spec.key: backend},
        router=Router(config.team(), settings=config.routing),
        evaluator=Evaluator(config.evaluation),
        tracker=tracker,
    )
    # one task at a time, so the backend's calls are in the tasks' order
    return asyncio.run(arbiter.run(tasks, concurrency=1)), backend


def _retried(outcomes: list[TaskOutcome]) -> TaskOutcome:
    retried = [o for o in outcomes if o.data_point and len(o.data_point.trajectory) == 2]
    assert retried, "no task was tried twice: pick other tasks or another seed"
    return retried[0]


def test_every_model_call_is_a_turn_whose_input_is_its_conversation_so_far() -> None:
    outcomes, backend = _run_tool_tasks()
    calls = iter(backend.calls)
    for outcome in outcomes:
        point = outcome.data_point
        assert point is not None
        assert [a.number for a in point.trajectory] == [1, 2][: len(point.trajectory)]
        for index, attempt in enumerate(point.trajectory):
            conversation = point.conversation(index)
            for turn in attempt.turns:
                sent, completion = next(calls)
                assert conversation[: turn.response] == sent  # every message, in order
                response = conversation[turn.response]
                assert (response.role, response.content) == ("assistant", completion.text)
                assert response.tool_calls == completion.tool_calls
                assert (turn.input_tokens, turn.output_tokens) == (
                    completion.input_tokens,
                    completion.output_tokens,
                )
            last = attempt.turns[-1].response
            tool_results = [m for m in conversation[:last] if m.role == "tool"]
            assert all(m.tool_call_id for m in tool_results)
        execution = point.execution
        turns = [turn for attempt in point.trajectory for turn in attempt.turns]
        assert sum(t.input_tokens for t in turns) == execution.input_tokens
        assert sum(t.output_tokens for t in turns) == execution.output_tokens
    assert next(calls, None) is None  # no model call left out


def test_a_retry_keeps_both_attempts_tool_turns_and_the_feedback_given() -> None:
    outcomes, _ = _run_tool_tasks()
    outcome = _retried(outcomes)
    point = outcome.data_point
    assert point is not None
    first, second = outcome.execution.iterations
    assert first.outcome == "retry" and first.feedback
    assert [a.outcome for a in point.trajectory] == ["retry", second.outcome]
    assert point.trajectory[0].feedback == first.feedback
    one, two = point.conversation(0), point.conversation(1)
    # the first attempt: its prompt, the calculator call, its result, then the answer
    assert [m.role for m in one] == [m.role for m in first.messages] + ["assistant", "tool"] * len(
        first.tool_uses
    ) + ["assistant"]
    assert [m.content for m in one if m.role == "tool"] == [u.result for u in first.tool_uses]
    # the retry was sent the first prompt, the first answer and the feedback: stored once
    assert two[: len(second.messages)] == second.messages
    assert second.messages[-1] == Message(role="user", content=first.feedback)
    assert point.trajectory[1].shared == len(first.messages)
    assert point.trajectory[1].messages[0] == Message(role="assistant", content=first.output)
    assert any(m.role == "tool" for m in two[len(second.messages) :])


def test_turn_rewards_are_the_evaluations_turn_data_aligned_to_the_calls() -> None:
    outcomes, _ = _run_tool_tasks()
    for outcome in outcomes:
        point = outcome.data_point
        assert point is not None
        graded = {e.iteration: e for e in outcome.evaluations}
        for attempt, iteration in zip(point.trajectory, outcome.execution.iterations, strict=True):
            evaluation = graded[iteration.number]
            rewards = [reward for turn in attempt.turns for reward in turn.rewards]
            assert rewards == evaluation.turn_data
            for turn, model_turn in zip(attempt.turns, iteration.turns, strict=True):
                called = [call.name for call in model_turn.response.tool_calls]
                ran = len(model_turn.tool_results)
                assert [r.tool_called for r in turn.rewards[:ran]] == called[:ran]
            answer = attempt.turns[-1].rewards[-1]
            assert answer.tool_called == "" and answer.turn_reward == evaluation.overall_score
    final = point.trajectory[-1].turns
    assert point.rl_labels.turn_rewards == [r.turn_reward for t in final for r in t.rewards]


def test_trajectories_survive_tracking_anonymization_and_storage(db_url: str) -> None:
    with Store.open(db_url) as store:
        tracker = Tracker(store, flush_interval_s=0.05)
        with tracker:
            outcomes, _ = _run_tool_tasks(tracker)
        stored = {point.id: point for batch in store.iter_batches(size=5) for point in batch.points}
    made = {o.data_point.id: o.data_point for o in outcomes if o.data_point is not None}
    assert stored.keys() == made.keys()
    for point_id, point in made.items():
        kept = stored[point_id]
        assert kept.anonymization_policy is not None
        # the built-in tasks hold no PII: anonymization leaves every message as it was
        assert kept.trajectory == point.trajectory
        assert (kept.task.task_id, kept.task.suite, kept.task.split) == (
            point.task.task_id,
            "tool-use",
            point.task.split,
        )


def test_every_message_tool_argument_result_and_feedback_is_free_text() -> None:
    outcomes, _ = _run_tool_tasks()
    point = _retried(outcomes).data_point
    assert point is not None
    texts = dict(free_text_fields(point))
    for index, attempt in enumerate(point.trajectory):
        for at, message in enumerate(attempt.messages):
            assert texts[f"trajectory.{index}.messages.{at}.content"] == message.content
            for number, call in enumerate(message.tool_calls):
                where = f"trajectory.{index}.messages.{at}.tool_calls.{number}.arguments"
                assert [texts[path] for path in texts if path.startswith(where)] == [
                    value for value in call.arguments.values() if isinstance(value, str)
                ]
    assert texts["trajectory.0.feedback"] == point.trajectory[0].feedback


def test_pii_in_a_tool_call_its_result_or_the_feedback_is_anonymized(store: Store) -> None:
    point = make_point("p")
    call = {"id": "c1", "name": "lookup", "arguments": {"who": "mail jane.doe@example.com"}}
    point.trajectory = [
        Attempt(
            number=1,
            messages=[
                Message(role="user", content="Who is the customer?"),
                Message.model_validate({"role": "assistant", "tool_calls": [call]}),
                Message(role="tool", tool_call_id="c1", content="call +1 (415) 555-2671"),
                Message(role="assistant", content="42"),
            ],
            turns=[TrajectoryTurn(response=1), TrajectoryTurn(response=3)],
            outcome="retry",
            feedback="ask jane.doe@example.com instead",
        ),
    ]
    assert store.ingest([point]).accepted == 1
    [kept] = [p for batch in store.iter_batches() for p in batch.points]
    [attempt] = kept.trajectory
    assert attempt.messages[1].tool_calls[0].arguments == {"who": "mail [EMAIL]"}
    assert attempt.messages[2].content == "call [PHONE]"
    assert attempt.feedback == "ask [EMAIL] instead"


@pytest.mark.parametrize(
    ("trajectory", "reason"),
    [
        (
            [Attempt(number=2), Attempt(number=1)],
            "consistency: trajectory.1.number: 1 does not follow attempt 2",
        ),
        (
            [Attempt(number=1, shared=1, messages=[Message(role="user", content="q")])],
            "consistency: trajectory.0.shared: 1 messages, but the attempt before has 0",
        ),
        (
            [
                Attempt(
                    number=1, messages=[Message(role="user")], turns=[TrajectoryTurn(response=0)]
                )
            ],
            "consistency: trajectory.0.turns.0.response: message 0 is no assistant message",
        ),
        (
            [
                Attempt(
                    number=1,
                    messages=[Message(role="assistant")],
                    turns=[TrajectoryTurn(response=1)],
                )
            ],
            "consistency: trajectory.0.turns.0.response: 1 is not one of the attempt's own "
            "messages (from 0 to 0) after the turn before's",
        ),
    ],
)
def test_a_trajectory_that_cannot_be_read_back_is_rejected(
    trajectory: list[Attempt], reason: str
) -> None:
    point = make_point("p")
    point.trajectory = trajectory
    assert structural_reasons(point) == [reason]


def test_turn_rewards_must_match_the_tool_calls_that_ran() -> None:
    outcomes, _ = _run_tool_tasks()
    outcome = outcomes[0]
    evaluation = outcome.evaluations[-1]
    evaluation.turn_data = [*evaluation.turn_data, TurnData(turn_number=9)]
    with pytest.raises(ValueError, match=r"evaluation\.turn_data: \d+ turns for iteration"):
        build_data_point(
            outcome.task, outcome.decisions[-1], outcome.execution, outcome.evaluations
        )


def test_a_point_without_recorded_model_calls_keeps_its_messages() -> None:
    point = make_point("p")
    point.trajectory = one_attempt(Message(role="user", content="q"), Message(role="assistant"))
    assert structural_reasons(point) == []
    assert DataPoint.model_validate_json(point.model_dump_json()) == point
