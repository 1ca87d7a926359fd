"""Hand-written small Python functions, their unit tests, and bugs planted in them.

Each bug is a (pattern, correct snippet, buggy snippet) replacement applied to the correct code;
the snippet must occur exactly once, so a bug always changes exactly the intended spot.
"""

from __future__ import annotations

from dataclasses import dataclass

OFF_BY_ONE = "off-by-one"
WRONG_OPERATOR = "wrong-operator"
WRONG_COMPARISON = "wrong-comparison"
MISSING_EDGE_CASE = "missing-edge-case"


@dataclass(frozen=True)
class Bug:
    pattern: str
    correct: str
    buggy: str


@dataclass(frozen=True)
class BuggyFunction:
    entry_point: str
    code: str
    test: str
    bugs: tuple[Bug, ...]

    def with_bug(self, bug: Bug) -> str:
        occurrences = self.code.count(bug.correct)
        if occurrences != 1:
            raise ValueError(
                f"bug {bug.pattern!r} in {self.entry_point}: snippet {bug.correct!r} occurs "
                f"{occurrences} times, expected exactly once"
            )
        return self.code.replace(bug.correct, bug.buggy)


FUNCTIONS: tuple[BuggyFunction, ...] = (
    BuggyFunction(
        entry_point="count_vowels",
        code='''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) text contains."""
    count = 0
    for char in text.lower():
        if char in "aeiou":
            count += 1
    return count
''',
        test="""def check(candidate):
    assert candidate("") == 0
    assert candidate("hello") == 2
    assert candidate("AEIOU") == 5
    assert candidate("xyz") == 0
    assert candidate("apple") == 2
    assert candidate("Programming") == 3
""",
        bugs=(
            Bug(OFF_BY_ONE, "for char in text.lower():", "for char in text.lower()[1:]:"),
            Bug(WRONG_OPERATOR, "count += 1", "count -= 1"),
            Bug(WRONG_COMPARISON, 'if char in "aeiou":', 'if char not in "aeiou":'),
            Bug(MISSING_EDGE_CASE, "for char in text.lower():", "for char in text:"),
        ),
    ),
    BuggyFunction(
        entry_point="find_max",
        code='''def find_max(values: list[int]) -> int | None:
    """Return the largest value, or None for an empty list."""
    if not values:
        return None
    best = values[0]
    for value in values[1:]:
        if value > best:
            best = value
    return best
''',
        test="""def check(candidate):
    assert candidate([]) is None
    assert candidate([7]) == 7
    assert candidate([3, 9, 2]) == 9
    assert candidate([1, 2, 3, 10]) == 10
    assert candidate([-5, -2, -9]) == -2
""",
        bugs=(
            Bug(OFF_BY_ONE, "for value in values[1:]:", "for value in values[1:-1]:"),
            Bug(WRONG_COMPARISON, "if value > best:", "if value < best:"),
            Bug(MISSING_EDGE_CASE, "    if not values:\n        return None\n", ""),
            Bug(MISSING_EDGE_CASE, "best = values[0]", "best = 0"),
        ),
    ),
    BuggyFunction(
        entry_point="binary_search",
        code='''def binary_search(items: list[int], target: int) -> int:
    """Return the index of target in the ascending list items, or -1 if it is absent."""
    low, high = 0, len(items) - 1
    while low <= high:
        middle = (low + high) // 2
        if items[middle] == target:
            return middle
        if items[middle] < target:
            low = middle + 1
        else:
            high = middle - 1
    return -1
''',
        test="""def check(candidate):
    assert candidate([], 3) == -1
    assert candidate([5], 5) == 0
    assert candidate([1, 3, 5, 7, 9], 9) == 4
    assert candidate([1, 3, 5, 7, 9], 1) == 0
    assert candidate([1, 3, 5, 7, 9], 7) == 3
    assert candidate([1, 3, 5, 7, 9], 4) == -1
""",
        bugs=(
            Bug(OFF_BY_ONE, "len(items) - 1", "len(items) - 2"),
            Bug(WRONG_OPERATOR, "(low + high) // 2", "(low + high) / 2"),
            Bug(WRONG_COMPARISON, "if items[middle] < target:", "if items[middle] > target:"),
            Bug(WRONG_COMPARISON, "while low <= high:", "while low < high:"),
        ),
    ),
    BuggyFunction(
        entry_point="is_leap_year",
        code='''def is_leap_year(year: int) -> bool:
    """Return True if year is a leap year in the Gregorian calendar."""
    if year % 400 == 0:
        return True
    if year % 100 == 0:
        return False
    return year % 4 == 0
''',
        test="""def check(candidate):
    assert candidate(2024) is True
    assert candidate(2023) is False
    assert candidate(1900) is False
    assert candidate(2000) is True
    assert candidate(2100) is False
    assert candidate(1996) is True
""",
        bugs=(
            Bug(MISSING_EDGE_CASE, "    if year % 400 == 0:\n        return True\n", ""),
            Bug(MISSING_EDGE_CASE, "    if year % 100 == 0:\n        return False\n", ""),
            Bug(WRONG_OPERATOR, "return year % 4 == 0", "return year // 4 == 0"),
            Bug(WRONG_COMPARISON, "return year % 4 == 0", "return year % 4 != 0"),
        ),
    ),
    BuggyFunction(
        entry_point="factorial",
        code='''def factorial(n: int) -> int:
    """Return n! for n >= 0; raise ValueError for a negative n."""
    if n < 0:
        raise ValueError("n must be non-negative")
    result = 1
    for i in range(2, n + 1):
        result *= i
    return result
''',
        test="""def check(candidate):
    assert candidate(0) == 1
    assert candidate(1) == 1
    assert candidate(5) == 120
    assert candidate(6) == 720
    try:
        candidate(-1)
    except ValueError:
        pass
    else:
        assert False, "factorial(-1) must raise ValueError"
""",
        bugs=(
            Bug(OFF_BY_ONE, "range(2, n + 1)", "range(2, n)"),
            Bug(WRONG_OPERATOR, "result *= i", "result += i"),
            Bug(WRONG_COMPARISON, "if n < 0:", "if n <= 0:"),
            Bug(
                MISSING_EDGE_CASE,
                '    if n < 0:\n        raise ValueError("n must be non-negative")\n',
                "",
            ),
        ),
    ),
    BuggyFunction(
        entry_point="fizzbuzz",
        code='''def fizzbuzz(n: int) -> list[str]:
    """Return the FizzBuzz sequence for 1..n inclusive."""
    result = []
    for i in range(1, n + 1):
        if i % 15 == 0:
            result.append("FizzBuzz")
        elif i % 3 == 0:
            result.append("Fizz")
        elif i % 5 == 0:
            result.append("Buzz")
        else:
            result.append(str(i))
    return result
''',
        test="""def check(candidate):
    assert candidate(0) == []
    assert candidate(1) == ["1"]
    assert candidate(5) == ["1", "2", "Fizz", "4", "Buzz"]
    assert candidate(15)[-1] == "FizzBuzz"
    assert len(candidate(30)) == 30
""",
        bugs=(
            Bug(OFF_BY_ONE, "range(1, n + 1)", "range(1, n)"),
            Bug(OFF_BY_ONE, "range(1, n + 1)", "range(0, n + 1)"),
            Bug(WRONG_OPERATOR, "elif i % 3 == 0:", "elif i // 3 == 0:"),
            Bug(
                MISSING_EDGE_CASE,
                '        if i % 15 == 0:\n            result.append("FizzBuzz")\n'
                "        elif i % 3 == 0:",
                "        if i % 3 == 0:",
            ),
        ),
    ),
    BuggyFunction(
        entry_point="count_in_range",
        code='''def count_in_range(values: list[int], low: int, high: int) -> int:
    """Count the values v with low <= v <= high."""
    count = 0
    for value in values:
        if low <= value <= high:
            count += 1
    return count
''',
        test="""def check(candidate):
    assert candidate([], 0, 10) == 0
    assert candidate([1, 5, 10], 1, 10) == 3
    assert candidate([0, 11, 5], 1, 10) == 1
    assert candidate([2, 3, 4, 8], 3, 8) == 3
    assert candidate([4, 4, 4], 4, 4) == 3
""",
        bugs=(
            Bug(OFF_BY_ONE, "if low <= value <= high:", "if low <= value < high:"),
            Bug(WRONG_COMPARISON, "if low <= value <= high:", "if low < value <= high:"),
            Bug(WRONG_OPERATOR, "count += 1", "count += value"),
            Bug(OFF_BY_ONE, "for value in values:", "for value in values[:-1]:"),
        ),
    ),
    BuggyFunction(
        entry_point="merge_sorted",
        code='''def merge_sorted(a: list[int], b: list[int]) -> list[int]:
    """Merge two ascending lists into one ascending list."""
    result = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            result.append(a[i])
            i += 1
        else:
            result.append(b[j])
            j += 1
    result.extend(a[i:])
    result.extend(b[j:])
    return result
''',
        test="""def check(candidate):
    assert candidate([], []) == []
    assert candidate([1, 4, 9], []) == [1, 4, 9]
    assert candidate([], [2, 3]) == [2, 3]
    assert candidate([1, 3, 5], [2, 4, 6]) == [1, 2, 3, 4, 5, 6]
    assert candidate([1, 2, 7], [3]) == [1, 2, 3, 7]
""",
        bugs=(
            Bug(MISSING_EDGE_CASE, "    result.extend(b[j:])\n", ""),
            Bug(WRONG_COMPARISON, "if a[i] <= b[j]:", "if a[i] >= b[j]:"),
            Bug(OFF_BY_ONE, "while i < len(a) and", "while i < len(a) - 1 and"),
            Bug(OFF_BY_ONE, "result.extend(a[i:])", "result.extend(a[i + 1 :])"),
        ),
    ),
)
