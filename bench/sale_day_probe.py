"""What the shop says of itself over a sale-day level's window: the admission pace it chose
(`checkout.admission.pace`, read from Redis every second, as the queue reads it) and the
database transactions its processes made (PostgreSQL's `pg_stat_database` for this run's shop
database: a statement outside a transaction is one, a transaction of several statements one).
The query counts of one order, step by step, are `tests/checkout/test_query_budgets.py`'s."""

from __future__ import annotations

import os
import threading
from statistics import mean
from typing import Any

from bench import runtime

EVERY = 1.0  # seconds between two readings of the pace


def transactions(database: str) -> int:
    """The transactions committed and rolled back in `database` so far (PostgreSQL's
    statistics, which each server process adds at least every second while busy)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            [database],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def pace_now() -> float | None:
    """The pace in force (new shoppers a second), as the queue reads it: an operator's, the
    setting's, or the one the shop found (0: no queue); None when it could not be read."""
    from checkout.admission.rules import pace

    try:
        return pace()
    except Exception:  # a reading missed is a reading missed
        return None


class Probe:
    """The pace and the transactions between `begin()` and `end()`."""

    def __init__(self, database: str | None = None) -> None:
        self.database = database or runtime.database_name(os.environ["DATABASE_URL"])
        self.paces: list[float] = []
        self.first = 0
        self.stop, self.thread = threading.Event(), threading.Thread(target=self._run, daemon=True)

    def begin(self) -> None:
        self.first = transactions(self.database)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(EVERY):
            pace = pace_now()
            if pace is not None:
                self.paces.append(pace)

    def end(self) -> dict[str, Any]:
        self.stop.set()
        self.thread.join()
        spent = transactions(self.database) - self.first
        paces = self.paces or [0.0]
        return {
            "transactions": spent,
            "pace_mean": mean(paces),
            "pace_min": min(paces),
            "pace_max": max(paces),
        }
