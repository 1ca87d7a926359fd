"""What the pool's statistics group data points by (`pool.queries.get_system_statistics`,
`agency pool stats --by`)."""

from __future__ import annotations

from typing import Literal, get_args

AggregateBy = Literal["agent", "task_type", "complexity", "day"]
AGGREGATES: tuple[AggregateBy, ...] = get_args(AggregateBy)
