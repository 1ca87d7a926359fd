from __future__ import annotations

from agent_agency.arbiter.breaker import BreakerState, CircuitBreakers
from agent_agency.arbiter.settings import BreakerSettings


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_threshold_consecutive_failures_only() -> None:
    clock = FakeClock()
    breakers = CircuitBreakers(BreakerSettings(failure_threshold=3, cooldown_s=10), clock)
    breakers.record("a@1", ok=False)
    breakers.record("a@1", ok=False)
    breakers.record("a@1", ok=True)  # a success resets the streak
    breakers.record("a@1", ok=False)
    breakers.record("a@1", ok=False)
    assert breakers.state("a@1") is BreakerState.CLOSED
    breakers.record("a@1", ok=False)
    assert breakers.state("a@1") is BreakerState.OPEN
    assert not breakers.allows("a@1")
    assert breakers.tripped() == ["a@1"]


def test_half_open_lets_one_probe_then_closes_on_success() -> None:
    clock = FakeClock()
    breakers = CircuitBreakers(BreakerSettings(failure_threshold=1, cooldown_s=10), clock)
    breakers.record("a@1", ok=False)
    clock.now += 9.9
    assert breakers.state("a@1") is BreakerState.OPEN
    clock.now += 0.1
    assert breakers.state("a@1") is BreakerState.HALF_OPEN
    assert breakers.allows("a@1")
    breakers.on_dispatch("a@1")
    assert not breakers.allows("a@1"), "only one probe at a time"
    breakers.record("a@1", ok=True)
    assert breakers.state("a@1") is BreakerState.CLOSED
    assert breakers.tripped() == []


def test_failed_probe_reopens_for_a_fresh_cooldown() -> None:
    clock = FakeClock()
    breakers = CircuitBreakers(BreakerSettings(failure_threshold=2, cooldown_s=5), clock)
    breakers.record("a@1", ok=False)
    breakers.record("a@1", ok=False)
    clock.now += 5
    breakers.on_dispatch("a@1")
    breakers.record("a@1", ok=False)  # one failure while probing is enough to reopen
    assert breakers.state("a@1") is BreakerState.OPEN
    clock.now += 4.9
    assert not breakers.allows("a@1")
    clock.now += 0.1
    assert breakers.allows("a@1")


def test_lost_probe_frees_the_slot_after_another_cooldown() -> None:
    clock = FakeClock()
    breakers = CircuitBreakers(BreakerSettings(failure_threshold=1, cooldown_s=5), clock)
    breakers.record("a@1", ok=False)
    clock.now += 5
    breakers.on_dispatch("a@1")
    clock.now += 4
    assert not breakers.allows("a@1")
    clock.now += 1
    assert breakers.allows("a@1")
    assert "half_open" in breakers.describe("a@1")


def test_tripped_lists_exactly_the_agents_not_closed() -> None:
    clock = FakeClock()
    breakers = CircuitBreakers(BreakerSettings(failure_threshold=1, cooldown_s=10), clock)
    for agent in ("a@1", "b@1", "c@1"):
        breakers.record(agent, ok=True)
    assert breakers.tripped() == []
    breakers.record("c@1", ok=False)
    breakers.record("a@1", ok=False)
    clock.now += 10.0  # half-open still counts as tripped
    breakers.record("b@1", ok=False)
    assert breakers.tripped() == ["c@1", "a@1", "b@1"]
    breakers.record("c@1", ok=False)  # a failed probe re-opens: still listed once
    breakers.record("a@1", ok=True)
    assert breakers.tripped() == ["c@1", "b@1"]
    assert [breakers.state(k) for k in breakers.tripped()] == [BreakerState.OPEN] * 2
