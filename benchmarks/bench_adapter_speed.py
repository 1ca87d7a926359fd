"""A trained version's serving speed: the embedded model alone against the same model with a
LoRA adapter trained by `train_sft` and converted by `convert_lora_to_gguf`, served as the local
backend does by default (merged into the base's weights, `merged_adapter`) and applied beside the
base at every token (`embedded.merge_adapters: false`).

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
from agent_agency.agents.local import (
    LocalBackend,
    configure_embedded,
    default_threads,
    embedded_model_path,
)
from agent_agency.agents.merged_adapter import merged_model_file, merged_path
from agent_agency.agents.settings import EmbeddedModelSettings
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
        merged_before = merged_path(embedded_model_path(), adapter).is_file()
        started = time.perf_counter()
        merged_file = merged_model_file(embedded_model_path(), adapter)
        merge_s = time.perf_counter() - started
        merged_mb = merged_file.stat().st_size / 1e6
        # merged: what the backend serves for an adapter version by default; applied: the
        # adapter beside the base at every token (merge_adapters: false)
        configure_embedded(EmbeddedModelSettings(merge_adapters=False))
        backends = {
            "base": LocalBackend(spec),
            "adapter merged": LocalBackend(spec, model_path=merged_file),
            "adapter applied": LocalBackend(
                spec.model_copy(update={"version": "2"}), adapter_path=adapter
            ),
        }
        load_s = {}
        for name, backend in backends.items():
            started = time.perf_counter()
            asyncio.run(_rate(backend))  # loads the model
            load_s[name] = time.perf_counter() - started
        rates: dict[str, list[float]] = {name: [] for name in backends}
        for _ in range(RUNS):  # interleaved, so that load from other processes hits all alike
            for name, backend in backends.items():
                rates[name].append(asyncio.run(_rate(backend)))
        described = _describe(adapter)
        if not merged_before:  # a merged file made before stays for its version
            merged_file.unlink()
    merged = "merged before" if merged_before else f"merging took {merge_s:.1f} s"
    median = {name: statistics.median(runs) for name, runs in rates.items()}
    rows = "\n".join(
        f"| {name} | {median[name]:.1f} | {median[name] / median['base']:.2f} | "
        f"{load_s[name]:.2f} | {', '.join(f'{r:.0f}' for r in runs)} |"
        for name, runs in rates.items()
    )
    body = f"""
SmolLM2-135M-Instruct Q4_1 through the embedded backend (llama-cpp-python, {default_threads()}
thread(s), greedy, up to {GENERATE_TOKENS} tokens): alone; with a LoRA adapter GGUF
({described}) merged into the base's weights, as the backend serves a trained version by
default (adapted tensors written as F16; {merged}, {merged_mb:.0f} MB beside the
adapter, once per version); and with the adapter passed to llama.cpp
as `lora_path`, applied beside the base at every token (`embedded.merge_adapters: false`).
Median of {RUNS} interleaved runs each. {trained} 1-minute load average when it finished:
{os.getloadavg()[0]:.1f} (2 cores).

| model | tokens/s (median) | × base | load + first call, s | runs |
| --- | --- | --- | --- | --- |
{rows}

"""
    write_section("Trained adapter speed", body)
    print(body)


if __name__ == "__main__":
    main()
