import json
import re
from collections import Counter
from pathlib import Path

import pytest

from agent_agency.records import GraderSpec, Task
from agent_agency.tasks.suites import (
    TaskFileError,
    builtin_suite_names,
    load_builtin,
    load_suite_file,
    load_suite_files,
    parse_task_line,
    select_tasks,
)

GOOD = {
    "id": "a-1",
    "type": "arithmetic",
    "prompt": "2 + 2?",
    "grader": {"kind": "exact-number", "reference": {"answer": 4}},
}

EXPECTED_TYPES = {
    "text-transformation": ("text", 40),
    "code-generation": ("code", 164),
    "arithmetic": ("math", 60),
    "extraction": ("extraction", 40),
    "classification": ("classification", 60),
    "tool-use": ("tools", 40),
    "code-editing": ("code", 30),
}


def write_lines(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_valid_file_skips_blank_lines(tmp_path: Path) -> None:
    second = dict(GOOD, id="a-2")
    path = write_lines(tmp_path, json.dumps(GOOD), "", json.dumps(second))
    tasks = load_suite_file(path)
    assert [task.id for task in tasks] == ["a-1", "a-2"]
    assert tasks[0].grader == GraderSpec(kind="exact-number", reference={"answer": 4})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "a-2", "type": ', r"tasks.jsonl:2: malformed JSON"),
        ("[1, 2]", r"tasks.jsonl:2: expected a JSON object, got an array"),
        (
            json.dumps({k: v for k, v in GOOD.items() if k != "prompt"}),
            r":2: prompt: Field required",
        ),
        (json.dumps(dict(GOOD, id="b", complexity=3)), r":2: complexity: Input should be"),
        (json.dumps(dict(GOOD, id="b", colour="red")), r":2: colour: unknown field"),
        (json.dumps(dict(GOOD, id="b", split="test")), r":2: split: Input should be"),
        (
            json.dumps(dict(GOOD, id="b", grader={"kind": "exact-number", "reference": {}})),
            r":2: grader.reference.answer: Field required",
        ),
        (
            json.dumps(dict(GOOD, id="b", grader={"kind": "magic"})),
            r":2: grader.kind: unknown grader kind 'magic'",
        ),
        (
            json.dumps(
                dict(GOOD, id="b", grader={"kind": "exact-number", "reference": {"answer": True}})
            ),
            r":2: grader.reference.answer: must be a number, got a boolean \(grader kind",
        ),
        (json.dumps(GOOD), r":2: id: duplicate task id 'a-1' \(first defined on line 1\)"),
        (json.dumps(dict(GOOD, id="")), r":2: id: must not be empty or blank$"),
        (json.dumps(dict(GOOD, id="b", type=" ")), r":2: type: must not be empty or blank$"),
        (json.dumps(dict(GOOD, id="b", prompt="\n\t")), r":2: prompt: must not be empty or blank$"),
        (
            json.dumps(dict(GOOD, id="b", features={"prompt_chars": 3})),
            r":2: features.prompt_chars: 'prompt_chars' is a reserved name",
        ),
        (
            json.dumps(
                dict(
                    GOOD,
                    id="b",
                    grader={"kind": "label", "reference": {"labels": ["a", "c"], "answer": "b"}},
                )
            ),
            r":2: grader.reference.answer: 'b' is none of the labels \['a', 'c'\]",
        ),
        (
            json.dumps(
                dict(
                    GOOD,
                    id="b",
                    grader={"kind": "tool-answer", "reference": {"answer": 3, "tool": "calc"}},
                )
            ),
            r":2: grader.reference.tool: 'calc' is not a tool the task offers \(tools: none\)",
        ),
        (  # a reference without its tool is said to lack it, not to name a tool not offered
            json.dumps(
                dict(GOOD, id="b", grader={"kind": "tool-answer", "reference": {"answer": 3}})
            ),
            r":2: grader.reference.tool: Field required \(grader kind 'tool-answer'\)$",
        ),
        (  # a task that parsed has each of its problems said at once
            json.dumps(
                dict(
                    GOOD,
                    id="b",
                    grader={"kind": "tool-answer", "reference": {"answer": 3, "tool": "calc"}},
                    features={"prompt_chars": 3},
                )
            ),
            r":2: features.prompt_chars: 'prompt_chars' is a reserved name .*; "
            r"grader.reference.tool: 'calc' is not a tool the task offers",
        ),
    ],
)
def test_load_errors_name_file_line_field(tmp_path: Path, line: str, message: str) -> None:
    path = write_lines(tmp_path, json.dumps(GOOD), line)
    with pytest.raises(TaskFileError, match=message) as caught:
        load_suite_file(path)
    assert str(caught.value).startswith(str(path))


def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b'\n{"id": "caf\xe9"}\n')
    with pytest.raises(TaskFileError) as caught:
        load_suite_file(path)
    assert str(caught.value) == (
        f"{path}:2: not UTF-8 text (invalid continuation byte at byte 12 of the line)"
    )


def test_an_id_may_occur_once_across_task_files_and_the_builtins_beside_them(
    tmp_path: Path,
) -> None:
    first = write_lines(tmp_path, json.dumps(GOOD))
    second = tmp_path / "more.jsonl"
    second.write_text(json.dumps(dict(GOOD, id="a-2")) + "\n" + json.dumps(GOOD) + "\n")
    with pytest.raises(TaskFileError) as caught:
        load_suite_files([first, second])
    assert str(caught.value) == (
        f"{second}:2: id: duplicate task id 'a-1' (first defined in {first} on line 1)"
    )
    with pytest.raises(TaskFileError) as caught:
        load_suite_files([first, second, first])
    assert str(caught.value).splitlines()[-1] == (
        f"{first}: task file given twice; give each file once"
    )
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    with pytest.raises(TaskFileError, match="loop.jsonl: cannot read task file: Too many levels"):
        load_suite_files([tmp_path / "loop.jsonl"])
    (tmp_path / "link.jsonl").symlink_to(first)
    for again in (tmp_path / "link.jsonl", tmp_path / ".." / tmp_path.name / first.name):
        with pytest.raises(TaskFileError) as caught:
            load_suite_files([first, again])
        assert str(caught.value) == (
            f"{again}: task file given twice (as {first} before); give each file once"
        )
    builtin = load_builtin(["arithmetic"], split="all")
    clash = write_lines(tmp_path, json.dumps(dict(GOOD, id=builtin[0].id)))
    with pytest.raises(
        TaskFileError,
        match=rf"already a {builtin[0].split.value} task of the built-in suite 'arithmetic' run",
    ):
        load_suite_files([clash], alongside=builtin)


def test_the_readme_s_duplicate_id_examples_are_the_errors_given(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[2] / "src/agent_agency/tasks/README.md").read_text()
    text = " ".join(readme.split())
    documented = re.findall(r"`(b\.jsonl:\d: id: duplicate task id [^`]*)`", text)
    (tmp_path / "a.jsonl").write_text(json.dumps(GOOD) + "\n")
    (tmp_path / "b.jsonl").write_text(
        json.dumps(GOOD) + "\n" + json.dumps(dict(GOOD, id="arithmetic-001")) + "\n"
    )
    builtin = load_builtin(["arithmetic"], split="all")
    with pytest.raises(TaskFileError) as caught:
        load_suite_files([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], alongside=builtin)
    assert documented == str(caught.value).replace(f"{tmp_path}/", "").splitlines()


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_a_file_without_tasks_is_named(tmp_path: Path, text: str) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text(text, encoding="utf-8")
    with pytest.raises(TaskFileError) as caught:
        load_suite_files([write_lines(tmp_path, json.dumps(GOOD)), empty])
    assert str(caught.value) == (
        f"{empty}: holds no tasks; a task file has one JSON object per line"
    )


def test_missing_file_is_a_task_file_error(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="cannot read task file"):
        load_suite_file(tmp_path / "absent.jsonl")


def test_builtin_suites_have_required_types_sizes_and_requirements() -> None:
    names = builtin_suite_names()
    assert set(names) == {
        "arithmetic", "classification", "code-editing", "extraction", "humaneval",
        "text-transformation", "tool-use",
    }  # fmt: skip
    tasks = load_builtin(split="all")
    counts = Counter(task.type for task in tasks)
    for task_type, (requirement, minimum) in EXPECTED_TYPES.items():
        assert counts[task_type] >= minimum, task_type
        typed = [task for task in tasks if task.type == task_type]
        assert all(task.requirements == [requirement] for task in typed)
    assert counts["code-generation"] == 164
    assert len({task.id for task in tasks}) == len(tasks)
    assert all(task.tools and task.tools[0].name == "calculator" for task in tasks
               if task.type == "tool-use")  # fmt: skip


def test_splits_are_about_three_to_one_per_suite_and_partition() -> None:
    for name in builtin_suite_names():
        everything = load_builtin([name], split="all")
        train = load_builtin([name], split="train")
        heldout = load_builtin([name], split="heldout")
        assert {t.id for t in train} | {t.id for t in heldout} == {t.id for t in everything}
        assert not {t.id for t in train} & {t.id for t in heldout}
        assert abs(len(heldout) / len(everything) - 0.25) < 0.02, name
    assert [t.id for t in load_builtin(["humaneval"], split="heldout")] == [
        t.id for t in load_builtin(["humaneval"], split="heldout")
    ]


def test_load_builtin_rejects_unknown_suite_and_split() -> None:
    with pytest.raises(
        ValueError, match=r"suites: unknown suite 'nope'; built-in suites: arithmetic, "
    ):
        load_builtin(["nope"])
    with pytest.raises(ValueError, match="split: must be"):
        load_builtin(split="test")  # type: ignore[arg-type]


def _tasks(counts: dict[str, int]) -> list[Task]:
    grader = GraderSpec(kind="exact-number", reference={"answer": 1})
    return [
        Task(id=f"{kind}-{i}", type=kind, prompt="p", grader=grader)
        for kind, count in counts.items()
        for i in range(count)
    ]


def test_select_tasks_balances_types_and_is_deterministic() -> None:
    pool = _tasks({"a": 50, "b": 10, "c": 3})
    picked = select_tasks(pool, 12, seed=7)
    counts = Counter(task.type for task in picked)
    assert counts["c"] == 3 and abs(counts["a"] - counts["b"]) <= 1
    assert len(picked) == 12 and len({t.id for t in picked}) == 12
    assert [t.id for t in select_tasks(pool, 12, seed=7)] == [t.id for t in picked]
    assert [t.id for t in select_tasks(pool, 12, seed=8)] != [t.id for t in picked]
    first_three = Counter(task.type for task in picked[:3])
    assert first_three == {"a": 1, "b": 1, "c": 1}


def test_select_tasks_limits() -> None:
    pool = _tasks({"a": 2, "b": 1})
    assert len(select_tasks(pool, 10, seed=0)) == 3
    assert select_tasks(pool, 0, seed=0) == []
    with pytest.raises(ValueError, match="n: must be >= 0"):
        select_tasks(pool, -1, seed=0)


def test_select_builtin_is_balanced() -> None:
    picked = select_tasks(load_builtin(), 70, seed=1)
    assert set(Counter(task.type for task in picked).values()) == {10}


def test_readme_example_line_is_a_valid_task() -> None:
    readme = (Path(__file__).parents[2] / "src/agent_agency/tasks/README.md").read_text()
    line = next(text for text in readme.splitlines() if text.startswith('{"id"'))
    assert parse_task_line(line, source="README.md", line=1).id == "arithmetic-001"


EDIT = {
    "id": "e-1",
    "type": "code-editing",
    "prompt": "Fix add.",
    "grader": {
        "kind": "python-tests",
        "reference": {"entry_point": "add", "test": "def check(c):\n    assert c(1, 2) == 3\n"},
    },
    "metadata": {"original_code": "def add(a, b):\n    return a - b\n"},
}


@pytest.mark.parametrize(
    ("original", "message"),
    [
        (
            "def add(:\n  pass\n",
            r"metadata.original_code: not valid Python: invalid syntax \(line 1",
        ),
        (123, "metadata.original_code: must be a string of Python code, got int"),
        (" \n", "metadata.original_code: must not be empty or blank"),
        (None, r"metadata.original_code: required for code-editing tasks"),
    ],
)
def test_a_code_edit_needs_original_code_that_parses(
    tmp_path: Path, original: object, message: str
) -> None:
    metadata = {} if original is None else {"original_code": original}
    path = write_lines(
        tmp_path, json.dumps(EDIT), json.dumps(dict(EDIT, id="e-2", metadata=metadata))
    )
    with pytest.raises(TaskFileError, match=f"^{re.escape(str(path))}:2: {message}"):
        load_suite_file(path)
    assert [task.id for task in load_suite_file(write_lines(tmp_path, json.dumps(EDIT)))] == ["e-1"]


def test_every_problem_of_a_task_file_is_reported_at_once(tmp_path: Path) -> None:
    lines = [
        json.dumps(GOOD),
        json.dumps(dict(GOOD, id="b", colour="red")),
        json.dumps(GOOD),
        "{not json",
        json.dumps(dict(GOOD, id="c")),
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TaskFileError) as error:
        load_suite_file(path)
    assert str(error.value).splitlines() == [
        f"{path}:2: colour: unknown field",
        f"{path}:3: id: duplicate task id 'a-1' (first defined on line 1)",
        f"{path}:4: malformed JSON: Expecting property name enclosed in double quotes (column 2)",
    ]


def test_a_task_file_s_problems_are_listed_up_to_a_bound(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("[]\n" * 25)
    with pytest.raises(TaskFileError) as error:
        load_suite_file(path)
    reported = str(error.value).splitlines()
    assert len(reported) == 21 and reported[-1] == "… and 5 more"
    assert reported[0] == f"{path}:1: expected a JSON object, got an array"


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        (
            "prompt",
            "2 +\x00 2?",
            "contains a NUL character (U+0000), which PostgreSQL cannot store",
        ),
        ("prompt", "2 + 2 \ud800?", "contains a lone surrogate (U+D800)"),
        ("metadata", {"notes": ["ok", "bad\x00"]}, "contains a NUL character"),
        ("id", "a\x00", "contains a NUL character"),
    ],
)
def test_text_no_database_can_store_is_refused_naming_its_field(
    tmp_path: Path, field: str, value: object, reason: str
) -> None:
    """A NUL in a prompt once made every record of its task unstorable on PostgreSQL; a lone
    surrogate was a traceback inside the arbiter. A task file holding either is refused."""
    where = {"metadata": "metadata.notes.1"}.get(field, field)
    path = write_lines(tmp_path, json.dumps(dict(GOOD, **{field: value})))  # JSON escapes both
    with pytest.raises(TaskFileError) as caught:
        load_suite_file(path)
    assert f"{path}:1: {where}: {reason}" in str(caught.value)
