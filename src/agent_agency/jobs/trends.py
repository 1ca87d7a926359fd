"""Trend analysis: is a metric improving, stable or degrading, and on what evidence.

A period is compared with the stretch before it (its baseline). The difference of the two means
gets a 95% interval and a two-sided p-value from Welch's test with the normal approximation
(unequal variances, each mean's standard error from its own sample): success as 0/1 per
answer, quality as each answer's score, latency in milliseconds. The verdict reads the
interval: it lies wholly on the better side of 0 → improving, wholly on the worse side →
degrading, else stable. With fewer than `MIN_SAMPLES` answers on either side there is no
verdict (`insufficient-data`): the normal approximation would not hold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

Trend = Literal["improving", "stable", "degrading", "insufficient-data"]
MIN_SAMPLES = 5
Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
TEST = "Welch two-sample test of the means (normal approximation), two-sided"


@dataclass(frozen=True)
class Moments:
    """Count, mean and sample variance (n − 1 in the denominator) of some values."""

    n: int
    mean: float
    variance: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Moments:
        n = len(values)
        if n == 0:
            return cls(0, 0.0, 0.0)
        mean = math.fsum(values) / n
        if n == 1:
            return cls(1, mean, 0.0)
        variance = math.fsum((value - mean) ** 2 for value in values) / (n - 1)
        return cls(n, mean, variance)


class TrendEvidence(BaseModel):
    """One metric's verdict and what it rests on."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    trend: Trend
    higher_is_better: bool
    n_current: int
    n_baseline: int
    current: float | None
    baseline: float | None
    difference: float | None  # current − baseline
    ci95: tuple[float, float] | None
    p_value: float | None
    test: str = TEST

    def sentence(self) -> str:
        """The evidence in words, for tables and reports."""
        if self.difference is None or self.ci95 is None or self.p_value is None:
            return (
                f"{self.metric}: {self.trend} (n={self.n_current} this period, "
                f"{self.n_baseline} before; {MIN_SAMPLES} each needed)"
            )
        low, high = self.ci95
        return (
            f"{self.metric}: {self.trend}, {self.baseline:.3g} → {self.current:.3g} "
            f"(Δ {self.difference:+.3g}, 95% CI [{low:+.3g}, {high:+.3g}], p={self.p_value:.3g}, "
            f"n={self.n_current} vs {self.n_baseline})"
        )


def compare(
    metric: str,
    current: Sequence[float],
    baseline: Sequence[float],
    *,
    higher_is_better: bool = True,
    min_samples: int = MIN_SAMPLES,
) -> TrendEvidence:
    """The trend of `metric` from its `baseline` values to its `current` ones."""
    now, before = Moments.of(current), Moments.of(baseline)
    if now.n < min_samples or before.n < min_samples:
        return TrendEvidence(
            metric=metric,
            trend="insufficient-data",
            higher_is_better=higher_is_better,
            n_current=now.n,
            n_baseline=before.n,
            current=now.mean if now.n else None,
            baseline=before.mean if before.n else None,
            difference=None,
            ci95=None,
            p_value=None,
        )
    difference = now.mean - before.mean
    standard_error = math.sqrt(now.variance / now.n + before.variance / before.n)
    low, high = difference - Z95 * standard_error, difference + Z95 * standard_error
    if standard_error > 0:
        p_value = math.erfc(abs(difference) / standard_error / math.sqrt(2))
    else:  # no spread on either side: any difference is certain, none is no change
        p_value = 0.0 if difference != 0 else 1.0
    return TrendEvidence(
        metric=metric,
        trend=_verdict(low, high, higher_is_better),
        higher_is_better=higher_is_better,
        n_current=now.n,
        n_baseline=before.n,
        current=now.mean,
        baseline=before.mean,
        difference=difference,
        ci95=(low, high),
        p_value=p_value,
    )


def _verdict(low: float, high: float, higher_is_better: bool) -> Trend:
    if low > 0:
        return "improving" if higher_is_better else "degrading"
    if high < 0:
        return "degrading" if higher_is_better else "improving"
    return "stable"
