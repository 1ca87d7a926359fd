"""Spans for one task's trace, with OpenTelemetry GenAI semantic-convention attribute names.

A trace has a root `task` span; beneath it a `prompt` span per model call, a `tool` span per
tool call and a `reward` span per evaluation. Attribute names follow the OpenTelemetry GenAI
conventions (`gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens`, …), so
the spans can be handed to an OpenTelemetry exporter unchanged.
"""

from __future__ import annotations

from datetime import datetime

from agent_agency.agent_spec import AgentSpec
from agent_agency.records import Completion, Evaluation, Span, SpanKind, Task, ToolUse


def task_span(trace_id: str, task: Task, started: datetime) -> Span:
    return Span(
        trace_id=trace_id,
        kind=SpanKind.TASK,
        name=f"task {task.type}",
        start=started,
        attributes={"agency.task.id": task.id, "agency.task.type": task.type},
    )


def model_call_span(
    root: Span, spec: AgentSpec, completion: Completion, started: datetime, ended: datetime
) -> Span:
    return Span(
        trace_id=root.trace_id,
        parent_id=root.id,
        kind=SpanKind.PROMPT,
        name=f"chat {spec.model}",
        start=started,
        end=ended,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.system": spec.backend,
            "gen_ai.agent.name": spec.key,
            "gen_ai.request.model": spec.model,
            "gen_ai.request.temperature": spec.temperature,
            "gen_ai.request.top_p": spec.top_p,
            "gen_ai.request.max_tokens": spec.max_tokens,
            "gen_ai.response.model": completion.model,
            "gen_ai.response.finish_reasons": [completion.finish_reason or "stop"],
            "gen_ai.usage.input_tokens": completion.input_tokens,
            "gen_ai.usage.output_tokens": completion.output_tokens,
        },
    )


def tool_span(root: Span, use: ToolUse, started: datetime, ended: datetime) -> Span:
    return Span(
        trace_id=root.trace_id,
        parent_id=root.id,
        kind=SpanKind.TOOL,
        name=f"execute_tool {use.call.name}",
        start=started,
        end=ended,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": use.call.name,
            "gen_ai.tool.call.id": use.call.id,
            "agency.tool.error": use.error,
        },
    )


def reward_span(root: Span, evaluation: Evaluation, started: datetime, ended: datetime) -> Span:
    return Span(
        trace_id=root.trace_id,
        parent_id=root.id,
        kind=SpanKind.REWARD,
        name=f"evaluate iteration {evaluation.iteration}",
        start=started,
        end=ended,
        attributes={
            "agency.evaluation.id": evaluation.id,
            "agency.reward": evaluation.overall_score,
            "agency.passed_all_mandatory": evaluation.passed_all_mandatory,
            "agency.caws_compliant": evaluation.caws_compliant,
        },
    )
