"""Per-agent circuit breakers: stop routing to an agent that keeps failing, probe it after a pause.

States: CLOSED (routable) → OPEN after `failure_threshold` consecutive failed calls → HALF_OPEN once
`cooldown_s` has passed, where exactly one probe call may run → CLOSED if the probe succeeds, OPEN
again (for a fresh cool-down) if it fails. A probe that never reports back (cancelled task) frees
the probe slot after another cool-down, so an agent is never shut out forever.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from agent_agency.arbiter.settings import BreakerSettings


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass
class _Breaker:
    consecutive_failures: int = 0
    opened_at: float | None = None
    probe_started_at: float | None = None


class CircuitBreakers:
    """The breakers of all agents, keyed by agent key; agents start CLOSED."""

    def __init__(self, settings: BreakerSettings, clock: Callable[[], float]) -> None:
        self._settings = settings
        self._clock = clock
        self._breakers: dict[str, _Breaker] = {}
        self._tripped: dict[str, None] = {}  # agents not CLOSED, in the order they tripped

    def state(self, agent: str) -> BreakerState:
        breaker = self._breakers.get(agent)
        if breaker is None or breaker.opened_at is None:
            return BreakerState.CLOSED
        if self._clock() - breaker.opened_at < self._settings.cooldown_s:
            return BreakerState.OPEN
        return BreakerState.HALF_OPEN

    def tripped(self) -> list[str]:
        """Agents whose breaker is not closed (usually none, so routing checks only these)."""
        return list(self._tripped)

    def allows(self, agent: str) -> bool:
        """Whether a call may go to `agent` now: closed, or half-open with the probe slot free."""
        state = self.state(agent)
        if state is BreakerState.CLOSED:
            return True
        if state is BreakerState.OPEN:
            return False
        probe = self._breakers[agent].probe_started_at
        return probe is None or self._clock() - probe >= self._settings.cooldown_s

    def on_dispatch(self, agent: str) -> None:
        """Record that a call went to `agent`; in half-open this takes the single probe slot."""
        if self.state(agent) is BreakerState.HALF_OPEN:
            self._breakers[agent].probe_started_at = self._clock()

    def record(self, agent: str, *, ok: bool) -> None:
        """Feed the outcome of one call (an error or a timeout is `ok=False`)."""
        breaker = self._breakers.setdefault(agent, _Breaker())
        if ok:
            breaker.consecutive_failures = 0
            breaker.opened_at = None
            breaker.probe_started_at = None
            self._tripped.pop(agent, None)
            return
        breaker.consecutive_failures += 1
        was_probing = breaker.opened_at is not None
        if was_probing or breaker.consecutive_failures >= self._settings.failure_threshold:
            breaker.opened_at = self._clock()
            breaker.probe_started_at = None
            self._tripped[agent] = None

    def describe(self, agent: str) -> str:
        breaker = self._breakers.get(agent)
        failures = breaker.consecutive_failures if breaker else 0
        return f"breaker {self.state(agent).value} ({failures} consecutive failures)"
