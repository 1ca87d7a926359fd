"""Timestamps in the pool are UTC; SQLite hands them back naive, so they are re-labelled here."""

from __future__ import annotations

from datetime import UTC, datetime


def to_utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC datetime (a naive one is taken to be UTC already)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
