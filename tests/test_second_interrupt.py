"""Ctrl-C pressed again while a stopped run cleans up: the second press says the clean-up is
still running and lets it finish; the third ends the process at once, saying so, without a
traceback. Each test runs a real process and signals it, waiting for what it prints (never for
a fixed time) before the next step."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from agent_agency.cli.options import FORCED, STILL_STOPPING
from scripted_config import ONE_SCRIPTED_AGENT

WAIT_S = 60.0  # how long a step may take at most; each normally takes milliseconds

# A coroutine run by `run_stoppable` whose clean-up after its cancellation lasts until the test
# creates the file named by argv[1]: it alternates blocking waits (as the run's database writes
# block the loop) and awaits (a second cancellation of the task would land there).
STOPPABLE = """
import asyncio
import sys
import time
from pathlib import Path

from agent_agency.cli.options import Terminated, run_stoppable

release = Path(sys.argv[1])


def say(marker: str) -> None:
    print(marker, flush=True)


async def main() -> None:
    try:
        say("ready")
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        say("cleaning")
        while not release.exists():
            time.sleep(0.01)
            await asyncio.sleep(0.01)
        say("cleaned")
        raise


try:
    run_stoppable(main())
except Terminated:
    say("terminated")
    sys.exit(143)
except KeyboardInterrupt:
    say("interrupted")
    sys.exit(130)
"""

# `agency run` with scripted agents whose answers never come, and whose store, once the run has
# begun, closes only when the test creates the file named by argv[1]: the database is closed in
# the run's clean-up, where the second Ctrl-C used to land.
AGENCY_RUN = """
import asyncio
import sys
import time
from pathlib import Path

from agent_agency.agents.scripted import ScriptedBackend
from agent_agency.cli.app import app
from agent_agency.pool.sql_store import SqlStore

release = Path(sys.argv[1])
running = False
real_close = SqlStore.close


async def never_answer(self, messages, tools=None, **params):
    global running
    if not running:
        running = True
        print("ready", flush=True)
    await asyncio.Event().wait()


def slow_close(self):
    if running:
        print("cleaning", flush=True)
        while not release.exists():
            time.sleep(0.01)
    real_close(self)


ScriptedBackend.complete = never_answer
SqlStore.close = slow_close
app(args=["run", "--tasks", "2", "--concurrency", "1"], prog_name="agency")
"""


class Process:
    """A Python script running in its own session, its stdout and stderr read line by line."""

    def __init__(self, script: str, release: Path, cwd: Path) -> None:
        path = cwd / "script.py"
        path.write_text(textwrap.dedent(script), encoding="utf-8")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("AGENCY_CONFIG", None)
        self.release = release
        self.popen = subprocess.Popen(
            [sys.executable, str(path), str(release)],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # signals come from the test only, not the terminal's
        )
        self.lines: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._queues: dict[str, queue.Queue[str | None]] = {}
        assert self.popen.stdout is not None and self.popen.stderr is not None
        for name, stream in (("stdout", self.popen.stdout), ("stderr", self.popen.stderr)):
            self._queues[name] = lines = queue.Queue()
            threading.Thread(target=_read_lines, args=(stream, lines), daemon=True).start()

    def wait_for(self, text: str, stream: str = "stdout") -> None:
        """Until a line of `stream` contains `text`; fails when the stream ends first."""
        while True:
            try:
                line = self._queues[stream].get(timeout=WAIT_S)
            except queue.Empty:
                pytest.fail(f"no {text!r} on {stream} in {WAIT_S} s: {self.lines}")
            if line is None:
                self._queues[stream].put(None)  # the stream stays ended for `finish`
                self.finish()
                pytest.fail(f"{stream} ended without {text!r}: {self.lines}")
            self.lines[stream].append(line)
            if text in line:
                return

    def signal(self, signum: signal.Signals) -> None:
        self.popen.send_signal(signum)

    def finish(self) -> int:
        """The exit status, once the process has ended; every line it wrote is then read."""
        status = self.popen.wait(timeout=WAIT_S)
        self._drain()
        return status

    def text(self, stream: str) -> str:
        return "".join(self.lines[stream])

    def _drain(self) -> None:
        for name, lines in self._queues.items():
            while (line := lines.get(timeout=WAIT_S)) is not None:
                self.lines[name].append(line)
            lines.put(None)  # the stream stays ended for a later drain

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()


def _read_lines(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[type[Process]]:
    started: list[Process] = []

    class Started(Process):
        def __init__(self, script: str, release: Path, cwd: Path) -> None:
            super().__init__(script, release, cwd)
            started.append(self)

    yield Started
    for process in started:
        process.kill()


def _asked_to_stop_twice(start: type[Process], tmp_path: Path, first: signal.Signals) -> Process:
    """`STOPPABLE` stopped by `first`, then by Ctrl-C while it cleans up, once it says it still
    stops."""
    process = start(STOPPABLE, tmp_path / "release", tmp_path)
    process.wait_for("ready")
    process.signal(first)
    process.wait_for("cleaning")
    process.signal(signal.SIGINT)
    process.wait_for(STILL_STOPPING, "stderr")
    return process


STOPS = [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]


@pytest.mark.parametrize(("first", "status", "outcome"), STOPS)
def test_ctrl_c_during_the_clean_up_says_it_is_still_stopping_and_lets_it_finish(
    tmp_path: Path, start: type[Process], first: signal.Signals, status: int, outcome: str
) -> None:
    process = _asked_to_stop_twice(start, tmp_path, first)
    process.release.touch()
    assert process.finish() == status, process.lines
    stdout = process.text("stdout")
    # the clean-up ran to its end, and the stop is reported as the first request's
    assert "cleaned\n" in stdout and f"{outcome}\n" in stdout, process.lines
    assert process.text("stderr") == f"{STILL_STOPPING}\n"


@pytest.mark.parametrize(("first", "status", "outcome"), STOPS)
def test_a_third_request_ending_with_ctrl_c_stops_at_once_without_a_traceback(
    tmp_path: Path, start: type[Process], first: signal.Signals, status: int, outcome: str
) -> None:
    process = _asked_to_stop_twice(start, tmp_path, first)
    process.signal(signal.SIGINT)
    process.wait_for(FORCED, "stderr")
    assert process.finish() == 130, process.lines
    assert "cleaned" not in process.text("stdout"), process.lines
    assert process.text("stderr") == f"{STILL_STOPPING}\n{FORCED}\n"


def test_more_sigterms_during_the_clean_up_do_not_force_it(
    tmp_path: Path, start: type[Process]
) -> None:
    process = start(STOPPABLE, tmp_path / "release", tmp_path)
    process.wait_for("ready")
    process.signal(signal.SIGTERM)
    process.wait_for("cleaning")
    for _ in range(2):
        process.signal(signal.SIGTERM)
        process.wait_for(STILL_STOPPING, "stderr")
    process.release.touch()
    assert process.finish() == 143, process.lines
    assert "cleaned\nterminated\n" in process.text("stdout"), process.lines
    assert "Traceback" not in process.text("stderr")


def test_agency_run_pressed_twice_records_what_it_ran_and_exits_130(
    tmp_path: Path, start: type[Process]
) -> None:
    (tmp_path / "agency.yaml").write_text(ONE_SCRIPTED_AGENT, encoding="utf-8")
    process = start(AGENCY_RUN, tmp_path / "release", tmp_path)
    process.wait_for("ready")
    process.signal(signal.SIGINT)
    process.wait_for("cleaning")
    process.signal(signal.SIGINT)
    process.wait_for(STILL_STOPPING, "stderr")
    process.release.touch()
    assert process.finish() == 130, process.lines
    stdout = " ".join(process.text("stdout").split())
    assert "interrupted by Ctrl-C after 0 of 2 tasks (0 succeeded)" in stdout, process.lines
    assert "Traceback" not in process.text("stderr"), process.lines
