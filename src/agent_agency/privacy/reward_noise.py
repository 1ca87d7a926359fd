"""Laplace noise on rewards through OpenDP, with the ε each noisy release spends."""

from __future__ import annotations

from typing import Any

from agent_agency.privacy.settings import AnonymizationPolicy


class RewardNoise:
    """Adds Laplace(scale) noise to a reward in [0, 1] and clamps the result back to [0, 1]."""

    def __init__(self, policy: AnonymizationPolicy) -> None:
        # Imported here, not with the module: the pool's store imports this module, and only a
        # noisy export needs OpenDP (its native library takes ~11 ms to load). The modules
        # themselves, not `opendp.prelude`: the prelude also imports scikit-learn's extras when
        # scikit-learn is installed (1.4 s, more than the rest of the CLI's imports).
        from opendp.domains import atom_domain
        from opendp.measurements import make_laplace
        from opendp.metrics import absolute_distance
        from opendp.mod import enable_features

        enable_features("contrib")
        self._measurement: Any = make_laplace(
            atom_domain(T=float, nan=False),
            absolute_distance(T=float),
            scale=policy.noise_scale,
        )
        # ε of one release at the reward's sensitivity; k releases compose to k·ε (pure DP).
        self.epsilon_per_value = float(self._measurement.map(policy.reward_sensitivity))  # type: ignore[no-untyped-call]

    def epsilon_for(self, values: int) -> float:
        return self.epsilon_per_value * values

    def noisy(self, value: float) -> float:
        return min(1.0, max(0.0, float(self._measurement(float(value)))))
