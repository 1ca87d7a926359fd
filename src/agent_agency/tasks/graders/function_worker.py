"""The process `python-function` graders run in: `python -m
agent_agency.tasks.graders.function_worker`, started by `tasks.graders.function`.

It says "ready", then reads one JSON request per line (`function`, `prompt`, `completion`,
`arguments`) and answers each with one JSON line: `{"score": s, "reason": r}`, or `{"error": e}`
when the function raised or returned no valid score. Replies go out on the descriptor standard
output had at start; the functions' own prints go to standard error, and their standard input is
empty, so nothing they do can garble the exchange. It ends at the end of its input, or as soon
as the process that started it is gone.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import IO, Any

from agent_agency.tasks.graders.function import READY, resolve_function
from agent_agency.tasks.graders.registry import score_and_reason

PARENT_POLL_S = 0.5


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    reference = request["function"]
    try:
        function = resolve_function(reference)
    except ValueError as error:
        return {"error": f"{reference}: {error}"}
    try:
        value = function(request["prompt"], request["completion"], **request["arguments"])
    except BaseException as error:  # SystemExit and KeyboardInterrupt too: one call's failure
        return {"error": f"{reference} raised {type(error).__name__}: {error}"}
    try:
        score, reason = score_and_reason(value)
    except ValueError as error:
        return {"error": f"{reference} {error}"}
    return {"score": score, "reason": reason}


def _end_with_parent(parent: int) -> None:
    """Exit once the parent is gone (this process is then adopted): a function still running
    would otherwise outlive the run."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _exchange() -> tuple[IO[str], IO[str]]:
    """The request and reply streams, with standard input and output taken from the functions."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115  # for the process's lifetime
    sys.stdout = sys.stderr
    return requests, replies


def main() -> None:
    requests, replies = _exchange()
    threading.Thread(target=_end_with_parent, args=(os.getppid(),), daemon=True).start()
    replies.write(READY + "\n")
    replies.flush()
    for line in requests:
        replies.write(json.dumps(_answer(json.loads(line))) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
