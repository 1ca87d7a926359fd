from pathlib import Path

from tools.generate_suites import SUITES_DIR, generate_suites, suite_jsonl, write_suites

from agent_agency.tasks.bug_bank import FUNCTIONS


def test_shipped_files_are_exactly_what_the_generator_produces() -> None:
    for name, tasks in generate_suites().items():
        shipped = (SUITES_DIR / f"{name}.jsonl").read_text(encoding="utf-8")
        assert shipped == suite_jsonl(tasks), f"{name}.jsonl is stale: regenerate it"


def test_generation_is_deterministic_and_seed_dependent(tmp_path: Path) -> None:
    first = write_suites(tmp_path / "one", seed=5)
    second = write_suites(tmp_path / "two", seed=5)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    other = generate_suites(seed=6)
    assert suite_jsonl(other["arithmetic"]) != first[1].read_text(encoding="utf-8")


def test_every_planted_bug_changes_the_code() -> None:
    for function in FUNCTIONS:
        assert len(function.bugs) == 4
        for bug in function.bugs:
            assert function.with_bug(bug) != function.code


def test_code_editing_covers_all_bug_patterns() -> None:
    patterns = {bug.pattern for function in FUNCTIONS for bug in function.bugs}
    assert patterns == {"off-by-one", "wrong-operator", "wrong-comparison", "missing-edge-case"}
