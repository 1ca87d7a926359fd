"""The loop's journal: the stages it has finished, in the pool's `loop_journal` table.

A stage's row is written when it has finished, in one transaction, with what it produced (the
next stages read it from there): a loop stopped anywhere (Ctrl-C, kill -9, power loss) finds its
finished stages here and goes on with the first one missing. Cycle 0 holds the loop's `start`
row (its options) and, once every cycle is done, its `end` row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, insert, select
from sqlalchemy.exc import IntegrityError

from agent_agency.pool.schema import loop_journal
from agent_agency.records import JsonObject, to_utc, utcnow

START, END = "start", "end"


class JournalEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    loop_id: str
    cycle: int
    stage: str
    finished_at: datetime
    payload: JsonObject


class Journal:
    """The finished stages of every loop of one pool."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def finish(self, loop_id: str, cycle: int, stage: str, payload: JsonObject) -> JournalEntry:
        """Record `stage` of `cycle` as finished with `payload`. Finishing a stage twice keeps
        the first record (a resumed loop never redoes a finished stage)."""
        entry = JournalEntry(
            loop_id=loop_id, cycle=cycle, stage=stage, finished_at=utcnow(), payload=payload
        )
        try:
            with self.engine.begin() as connection:
                connection.execute(
                    insert(loop_journal).values(
                        {**entry.model_dump(), "payload": entry.model_dump(mode="json")["payload"]}
                    )
                )
        except IntegrityError:
            found = self.entry(loop_id, cycle, stage)
            if found is None:
                raise
            return found
        return entry

    def entries(self, loop_id: str) -> list[JournalEntry]:
        """The loop's finished stages, in the order they finished."""
        query = (
            select(loop_journal)
            .where(loop_journal.c.loop_id == loop_id)
            .order_by(loop_journal.c.finished_at, loop_journal.c.cycle)
        )
        with self.engine.connect() as connection:
            return [_entry(row) for row in connection.execute(query).mappings()]

    def entry(self, loop_id: str, cycle: int, stage: str) -> JournalEntry | None:
        query = select(loop_journal).where(
            loop_journal.c.loop_id == loop_id,
            loop_journal.c.cycle == cycle,
            loop_journal.c.stage == stage,
        )
        with self.engine.connect() as connection:
            row = connection.execute(query).mappings().first()
        return None if row is None else _entry(row)

    def unfinished_loop(self) -> JournalEntry | None:
        """The start row of the newest loop that has no end row; None when every loop ended."""
        with self.engine.connect() as connection:
            starts = list(
                connection.execute(
                    select(loop_journal)
                    .where(loop_journal.c.stage == START)
                    .order_by(loop_journal.c.finished_at.desc())
                ).mappings()
            )
            ended = set(
                connection.scalars(
                    select(loop_journal.c.loop_id).where(loop_journal.c.stage == END)
                )
            )
        for row in starts:
            if row["loop_id"] not in ended:
                return _entry(row)
        return None

    def loops(self) -> list[str]:
        """Every loop's id, oldest first."""
        query = (
            select(loop_journal.c.loop_id)
            .where(loop_journal.c.stage == START)
            .order_by(loop_journal.c.finished_at)
        )
        with self.engine.connect() as connection:
            return list(connection.scalars(query))


def _entry(row: Any) -> JournalEntry:
    return JournalEntry(
        loop_id=row["loop_id"],
        cycle=row["cycle"],
        stage=row["stage"],
        finished_at=to_utc(row["finished_at"]),
        payload=row["payload"],
    )
