"""A trained version's serving speed: the embedded model alone against the same model with a
LoRA adapter trained by `train_sft` and converted by `convert_lora_to_gguf`.

Run: python benchmarks/bench_adapter_speed.py [--adapter FILE.gguf] [--train-steps N]
(needs the `local` and `train` extras). Without --adapter it first trains a small LoRA
(r=8 on q/k/v/o, the trainers' default) for a few steps; the speed does not depend on what the
adapter learned, only on its shape. Writes the "Trained adapter speed" section of
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from agent_agency.agent_spec import AgentSpec
from agent_agency.agents.local import LocalBackend, default_threads, embedded_model_path
from agent_agency.records import Message
from agent_agency.training import (
    SFTTrainingConfig,
    TrainingProgress,
    convert_lora_to_gguf,
    train_sft,
)

from results import write_section

RUNS = 5
GENERATE_TOKENS = 128
PROMPT = "Write a long story about a robot who learns to paint, with many details."


def _train_adapter(directory: Path, steps: int) -> tuple[Path, float, float]:
    """An adapter of the trainers' default shape, its training wall time and mean step time."""
    rows = [
        {
            "messages": [
                {"role": "user", "content": f"Name {n} colours."},
                {"role": "assistant", "content": ", ".join(["red", "green", "blue"] * n)},
            ]
        }
        for n in range(1, 5)
    ]
    config = SFTTrainingConfig(output_dir=directory / "run", max_steps=steps, save_steps=steps)
    step_ends: dict[int, float] = {}  # step -> when it was first reported

    def note(update: TrainingProgress) -> None:
        step_ends.setdefault(update.step, time.perf_counter())

    result = train_sft(config, rows, progress=note)
    first, last = min(step_ends), max(step_ends)
    step_s = (step_ends[last] - step_ends[first]) / max(1, last - first)
    adapter = convert_lora_to_gguf(result.adapter_dir, embedded_model_path(), directory / "a.gguf")
    return adapter, result.wall_time_s, step_s


def _describe(adapter: Path) -> str:
    from gguf import GGUFReader

    tensors = GGUFReader(adapter).tensors
    ranks = {int(t.shape[1]) for t in tensors if t.name.endswith(".lora_a")}
    kinds = sorted({t.name.split(".")[2] for t in tensors})
    types = sorted({t.tensor_type.name.lower() for t in tensors})
    size_mb = adapter.stat().st_size / 1e6
    return (
        f"{size_mb:.1f} MB, rank {'/'.join(map(str, sorted(ranks)))} on "
        f"{', '.join(kinds)} of {len(tensors) // 2 // len(kinds)} layers, {'/'.join(types)}"
    )


async def _rate(backend: LocalBackend) -> float:
    completion = await backend.complete(
        [Message(role="user", content=PROMPT)], max_tokens=GENERATE_TOKENS
    )
    return completion.output_tokens / (completion.latency_ms / 1000.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", type=Path, help="a LoRA adapter GGUF (else one is trained)")
    parser.add_argument("--train-steps", type=int, default=5)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        trained = ""
        adapter = arguments.adapter
        if adapter is None:
            adapter, wall_s, step_s = _train_adapter(Path(scratch), arguments.train_steps)
            trained = (
                f"The adapter was trained here: {arguments.train_steps} SFT steps, "
                f"{wall_s:.0f} s in all (model load included), ~{step_s:.1f} s per step."
            )
        spec = AgentSpec(name="bench", max_tokens=GENERATE_TOKENS)
        base = LocalBackend(spec)
        adapted = LocalBackend(spec.model_copy(update={"version": "2"}), adapter_path=adapter)
        started = time.perf_counter()
        asyncio.run(_rate(adapted))  # loads the model with the adapter
        adapted_load_s = time.perf_counter() - started
        asyncio.run(_rate(base))
        rates: dict[str, list[float]] = {"base": [], "adapter": []}
        for _ in range(RUNS):  # interleaved, so that load from other processes hits both alike
            rates["base"].append(asyncio.run(_rate(base)))
            rates["adapter"].append(asyncio.run(_rate(adapted)))
        described = _describe(adapter)
    base_rate, adapter_rate = (statistics.median(rates[name]) for name in ("base", "adapter"))
    body = f"""
SmolLM2-135M-Instruct Q4_1 through the embedded backend (llama-cpp-python, {default_threads()}
thread(s), greedy, up to {GENERATE_TOKENS} tokens), alone and with a LoRA adapter GGUF
({described}) passed as `lora_path`; median of {RUNS} interleaved
runs each. {trained} 1-minute load average when it finished: {os.getloadavg()[0]:.1f} (2 cores).

| model | tokens/s (median) | runs |
| --- | --- | --- |
| base | {base_rate:.1f} | {", ".join(f"{r:.0f}" for r in rates["base"])} |
| base + adapter | {adapter_rate:.1f} | {", ".join(f"{r:.0f}" for r in rates["adapter"])} |

Adapter / base: {adapter_rate / base_rate:.2f}. Loading the model with the adapter took
{adapted_load_s:.2f} s (first call included; llama-cpp-python turns mmap off with an adapter).
"""
    write_section("Trained adapter speed", body)
    print(body)


if __name__ == "__main__":
    main()
