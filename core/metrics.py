"""What every app's metrics share: the gauges each app reads from its database when /metrics is
scraped (`db_gauge_values`), and how a count and the age of its oldest row are given per state."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

# Per gauge name, its samples: (labels, value). Every app's `db_gauge_values` answers one.
GaugeValues = dict[str, list[tuple[dict[str, str], Decimal | float | int]]]


def age_seconds(now: datetime, oldest: datetime | None) -> float:
    """How old `oldest` is at `now` (0 when there is none, never below 0)."""
    return max((now - oldest).total_seconds(), 0.0) if oldest else 0.0


def counts_by_state(
    rows: Iterable[dict[str, Any]], *, label: str, states: Iterable[str], now: datetime,
    count: str, oldest: str,
) -> GaugeValues:  # fmt: skip
    """From rows of (`label`, count, oldest), per state of `states`: gauge `count` and the age
    of its oldest row, gauge `oldest` (0 and 0 for a state without rows)."""
    found = {row[label]: row for row in rows}
    values: GaugeValues = {count: [], oldest: []}
    for state in states:
        row, labels = found.get(state), {label: str(state)}
        values[count].append((labels, row["count"] if row else 0))
        values[oldest].append((labels, age_seconds(now, row["oldest"] if row else None)))
    return values
