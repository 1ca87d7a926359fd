"""Grading functions a user would write, named from task files as 'user_graders:<name>' (this
directory is on the test run's path, as a user's package would be installed)."""

from __future__ import annotations

import os
import sys
import time


def contains(prompt: str, completion: str, *, expected: str) -> tuple[float, str]:
    if expected.lower() in completion.lower():
        return 1.0, f"mentions {expected!r}"
    return 0.0, f"Mention {expected!r}"


def word_share(prompt: str, completion: str, words: list[str]) -> float:
    found = [word for word in words if word in completion.split()]
    return len(found) / len(words)


def chatty(prompt: str, completion: str) -> float:
    print("debugging output on standard output")  # must not garble the worker's replies
    return 1.0


def broken(prompt: str, completion: str) -> float:
    raise ZeroDivisionError("division by zero in the user's grader")


def not_a_number(prompt: str, completion: str) -> float:
    return float("nan")


def too_high(prompt: str, completion: str) -> float:
    return 1.5


def text(prompt: str, completion: str) -> str:
    return "good"


def sleeper(prompt: str, completion: str, *, seconds: float) -> float:
    time.sleep(seconds)
    return 1.0


def leaver(prompt: str, completion: str) -> float:
    sys.exit(3)


def crasher(prompt: str, completion: str) -> float:
    os._exit(7)


def process_id(prompt: str, completion: str) -> tuple[float, str]:
    return 1.0, str(os.getpid())


NOT_CALLABLE = 42
