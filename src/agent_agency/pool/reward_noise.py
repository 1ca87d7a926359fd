"""Laplace noise on rewards through OpenDP, with the ε each noisy release spends."""

from __future__ import annotations

from typing import Any

import opendp.prelude as dp

from agent_agency.config import AnonymizationPolicy

dp.enable_features("contrib")


class RewardNoise:
    """Adds Laplace(scale) noise to a reward in [0, 1] and clamps the result back to [0, 1]."""

    def __init__(self, policy: AnonymizationPolicy) -> None:
        self._measurement: Any = dp.m.make_laplace(
            dp.atom_domain(T=float, nan=False),
            dp.absolute_distance(T=float),
            scale=policy.noise_scale,
        )
        # ε of one release at the reward's sensitivity; k releases compose to k·ε (pure DP).
        self.epsilon_per_value = float(self._measurement.map(policy.reward_sensitivity))  # type: ignore[no-untyped-call]

    def epsilon_for(self, values: int) -> float:
        return self.epsilon_per_value * values

    def noisy(self, value: float) -> float:
        return min(1.0, max(0.0, float(self._measurement(float(value)))))
