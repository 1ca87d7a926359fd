"""What the parent hands the child and what the child writes back, as JSON.

The parent builds a `Payload` and hands it over as an unnamed file, by descriptor (in argv, /proc
would show it to the code); the tests and the run's nonce come as a `Secret` in another such file,
which only the supervisor reads. Into the verdict file the child writes one `IsolationRecord`,
before the code runs, and the supervisor one `Verdict`. The parent reads both with
`agent_agency.sandbox.records.read_records`. The child imports this module for the type checker
only.
"""

from __future__ import annotations

from typing import TypedDict


class CgroupConfig(TypedDict):
    """The run's memory cgroup: its `cgroup.procs` file to join, or None with why there is none."""

    procs: str | None
    mb: int
    unavailable: str


class Config(TypedDict):
    work: str  # the work directory, the code's cwd
    entry_point: str | None  # the function under test; None: the code runs as a script
    code_uid: int
    supervisor_uid: int
    cpu_s: int
    memory_bytes: int
    fsize_bytes: int
    disk_mb: int  # the size of the work directory's tmpfs
    nofile: int
    nproc: int
    memory_cgroup: CgroupConfig
    # directory covered by an empty tmpfs -> the paths beneath it to bind back, outermost first
    masks: dict[str, list[str]]
    hidden_files: list[str]  # each covered by `empty_file`
    empty_file: str
    notes: list[str]  # isolation notes the parent found before the start
    parent_pid: int
    secret_fd: int
    verdict_fd: int


class Payload(TypedDict):
    config: Config
    files: dict[str, str]  # relative path -> text, `main.py` the code


class Secret(TypedDict):
    nonce: str
    test: str  # empty without tests
    setup: str


class IsolationSteps(TypedDict):
    notes: list[str]  # steps that could not be applied, and why
    applied: list[str]


class IsolationRecord(TypedDict):
    isolation: IsolationSteps


class Usage(TypedDict):
    """What the supervisor measured of the code's process; None where it could not."""

    cpu_s: float | None  # CPU time, once it ended
    peak_mb: float | None  # peak resident memory
    disk_full: bool | None  # whether the work directory's tmpfs is full (None: no tmpfs)


# (type name, errno, message) of an exception, as the process that caught it described it.
Fault = tuple[str, int | None, str]


class Outcome(TypedDict):
    passed: bool | None  # None: the code ran as a script, without tests
    problem: str | None  # what failed, one of `agent_agency.sandbox.records.Problem`
    error: Fault | None
    exit_code: int | None  # of the code's process, where it ended by itself
    failed_test: str | None  # the line of the tests running when they failed


class Verdict(Outcome):
    usage: Usage
    nonce: str
