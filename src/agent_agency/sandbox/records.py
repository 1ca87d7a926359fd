"""What a sandboxed run takes (`FunctionTests`) and gives back (`SandboxResult`), the records the
child writes into the verdict file as the parent reads them, and what the parent saw of a run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_agency.sandbox.child.protocol import Fault
from agent_agency.sandbox.policy import MIN_FILE_SIZE_BYTES

# The child's records, written within the file size limit of any policy.
_VERDICT_LIMIT_BYTES = MIN_FILE_SIZE_BYTES


class FunctionTests(BaseModel):
    """Unit tests of one function the code defines. The sandbox's supervisor runs them in its own
    process, which the code cannot reach; they call the function through a pipe."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entry_point: str = Field(pattern=r"^[A-Za-z_]\w*$", description="the function under test")
    test: str = Field(min_length=1, description="Python defining check(candidate)")
    setup: str = Field(
        default="",
        description="trusted code run in the tests' namespace first (helpers the tests call)",
    )


class SandboxResult(BaseModel):
    """What happened when the code ran; `reason` explains any failure in one line."""

    model_config = ConfigDict(extra="forbid")

    ok: bool = Field(
        description="with tests: the supervisor saw every test pass; without: the code's "
        "process exited with status 0"
    )
    exit_code: int | None = Field(
        description="exit status of the code's process when it ended by itself (negative: "
        "the signal that killed it); None when it was stopped or still serving the tests"
    )
    stdout: str
    stderr: str
    timed_out: bool
    reason: str
    duration_ms: float = Field(ge=0)
    failed_test: str | None = Field(
        default=None, description="the line of the tests that was running when they failed"
    )
    isolation_notes: list[str] = Field(
        default_factory=list, description="isolation steps that could not be applied, and why"
    )
    isolation_applied: list[str] = Field(
        default_factory=list, description="isolation steps applied before the code ran"
    )


# What failed, as the supervisor saw it (`agent_agency.sandbox.child.supervisor`).
Problem = Literal[
    "assertion",
    "tests-raised",
    "tests-broken",
    "function-raised",
    "function-aborted",
    "function-died",
    "foreign-result",
    "unsendable-result",
    "unsendable-argument",
    "load-raised",
    "load-died",
    "no-entry-point",
    "invalid-reply",
    "supervisor-failed",
]


class Usage(BaseModel):
    """What the supervisor measured of the code's process (the kernel's figures, not the code's):
    None where it could not."""

    model_config = ConfigDict(extra="forbid")

    cpu_s: float | None  # CPU time, once it ended
    peak_mb: float | None  # peak resident memory
    disk_full: bool | None  # whether the work directory's tmpfs is full (None: no tmpfs)


class Verdict(BaseModel):
    """The supervisor's record of a run."""

    model_config = ConfigDict(extra="forbid")

    nonce: str
    usage: Usage
    passed: bool | None  # None: the code ran as a script, without tests
    problem: Problem | None
    error: Fault | None
    exit_code: int | None
    failed_test: str | None


class Isolation(BaseModel):
    """The child's record of the isolation steps it applied and those it could not."""

    model_config = ConfigDict(extra="forbid")

    notes: list[str]
    applied: list[str]


def read_records(handle: IO[bytes], nonce: str) -> tuple[Isolation | None, Verdict | None]:
    """From the verdict file, written only by the child before the code runs and by the
    supervisor: the isolation record (None when the child did not reach the code) and the
    supervisor's verdict, the last record carrying this run's nonce (None when it gave none)."""
    handle.seek(0)
    isolation = verdict = None
    for line in handle.read(_VERDICT_LIMIT_BYTES).splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if isolation is None and "isolation" in record:
            isolation = Isolation.model_validate(record["isolation"])
        elif record.get("nonce") == nonce:
            verdict = Verdict.model_validate(record)
    return isolation, verdict


# Why the parent ended a run before the child did.
Stop = Literal["timed out", "cancelled"]


@dataclass(frozen=True)
class Run:
    """What the parent saw of one run of the child."""

    stop: Stop | None
    budget_s: float  # the wall-clock time the run had
    returncode: int  # the child's
    verdict: Verdict | None
    stdout: str
    stderr: str
    reached_code: bool  # whether the child wrote the isolation record, and the code could run
    notes: list[str]
    applied: list[str]
    duration_ms: float
    oom: str | None  # the reason to give when the OOM killer ended a process of the run
    cpu_limit_s: int
