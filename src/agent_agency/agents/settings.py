"""The `embedded` section of `agency.yaml`: how local models are served."""

from __future__ import annotations

import os

from pydantic import Field

from agent_agency.sections import Section


class EmbeddedModelSettings(Section):
    """How the embedded model (and any local .gguf) is served."""

    instances: int = Field(
        default=0,
        ge=0,
        description="model instances per model file, each serving one call at a time; 0: one "
        "per core",
    )
    threads: int = Field(
        default=0,
        ge=0,
        description="threads of each instance; 0: the cores shared out among the instances "
        "(at least 1)",
    )
    merge_adapters: bool = Field(
        default=True,
        description="serve a version's LoRA adapter merged into its base model's weights (a "
        "GGUF written once beside the adapter, about the base's size): the base's speed; false: "
        "llama.cpp applies the adapter beside the base at every token (no extra file, slower)",
    )

    def sizing(self) -> tuple[int, int]:
        """(instances, threads per instance) with the automatic values resolved."""
        cores = os.cpu_count() or 1
        instances = self.instances or cores
        threads = self.threads or max(1, cores // instances)
        return instances, threads
