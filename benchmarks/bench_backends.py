"""Embedded model backend: load time, generation and prompt-processing speed, shared use.

Run: python benchmarks/bench_backends.py  (needs the `local` extra). Writes the
"Embedded model backend" section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.local import (
    LocalBackend,
    embedded_model_path,
    model_instances,
)
from agent_agency.agents.settings import EmbeddedModelSettings
from agent_agency.records import Message

from results import write_section

RUNS = 5
GENERATE_TOKENS = 64


async def _generation(backend: LocalBackend) -> list[float]:
    rates = []
    for run in range(RUNS):
        prompt = f"Write a short story about a robot number {run}."
        completion = await backend.complete(
            [Message(role="user", content=prompt)], max_tokens=GENERATE_TOKENS
        )
        rates.append(completion.output_tokens / (completion.latency_ms / 1000.0))
    return rates


async def _prompt_processing(backend: LocalBackend) -> tuple[list[float], int]:
    rates = []
    tokens = 0
    for run in range(RUNS):
        text = f"Document {run}: " + "The quick brown fox jumps over the lazy dog. " * 30
        completion = await backend.complete([Message(role="user", content=text)], max_tokens=1)
        tokens = completion.input_tokens
        rates.append(tokens / (completion.latency_ms / 1000.0))
    return rates, tokens


async def _shared(agents: list[LocalBackend]) -> tuple[int, float]:
    started = time.perf_counter()
    completions = await asyncio.gather(
        *[
            agent.complete([Message(role="user", content=f"Name {i + 3} colours.")])
            for i, agent in enumerate(agents)
            for _ in range(2)
        ]
    )
    return sum(c.output_tokens for c in completions), time.perf_counter() - started


def main() -> None:
    path = embedded_model_path()
    started = time.perf_counter()
    model_instances(path)
    load_s = time.perf_counter() - started
    backend = LocalBackend(AgentSpec(name="bench", max_tokens=GENERATE_TOKENS))
    generation = asyncio.run(_generation(backend))
    prompt, prompt_tokens = asyncio.run(_prompt_processing(backend))
    agents = [LocalBackend(AgentSpec(name=f"agent{i}", max_tokens=32)) for i in range(3)]
    shared_tokens, shared_s = asyncio.run(_shared(agents))
    generation_rate = f"{statistics.median(generation):.1f} tokens/s"
    shared = f"{shared_tokens} tokens in {shared_s:.2f} s ({shared_tokens / shared_s:.1f} tokens/s)"
    instances, threads = EmbeddedModelSettings().sizing()
    body = f"""
SmolLM2-135M-Instruct Q4_1 (`{path.name}`, {path.stat().st_size / 1e6:.0f} MB) through
llama-cpp-python, n_ctx 2048, {instances} instance(s) of {threads} thread(s), greedy decoding;
median of {RUNS}
runs each. Loaded without llama.cpp's CPU extra buffer types (AMX/repacked weights), which
segfault on batched prompts in this build. 1-minute load average when it finished:
{os.getloadavg()[0]:.1f} (2 cores; above ~1 other processes were competing).

| metric | value |
| --- | --- |
| model load (first use in the process) | {load_s:.2f} s |
| generation, single stream, {GENERATE_TOKENS} tokens max, end to end | {generation_rate} |
| prompt processing ({prompt_tokens}-token prompt) | {statistics.median(prompt):.1f} tokens/s |
| 3 agents × 2 concurrent calls sharing one model (serialized) | {shared} |
"""
    write_section("Embedded model backend", body)
    print(body)


if __name__ == "__main__":
    main()
