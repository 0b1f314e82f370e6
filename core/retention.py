"""Pruning in small batches, for the apps' retention tasks (docs/deployment.md, "Retention").

Each batch is two statements: an indexed, LIMITed select of at most `SHOP_RETENTION_BATCH_SIZE`
primary keys, oldest first (`SELECT id ... WHERE <old> ORDER BY <indexed date> LIMIT n`), then
one statement on those rows only (`DELETE ... WHERE id IN (<those ids>) AND <old>`: the
conditions are checked again on each row as it is changed, so a row that changed in between is
left alone), committed on its own. No lock is held longer than one small statement, and the
workers, the receiver and the pages go on between batches.

- The one-statement form, `WHERE id IN (SELECT id ... LIMIT n)`, lets PostgreSQL read the whole
  table for the outer side of a hash join when it guesses that is cheaper (it does for the
  sessions at a few hundred thousand rows); a list of keys is always found through the key.
- Each batch starts its select where the one before stopped (the date of its last row): the
  index entries of the rows just deleted stay until vacuum, and a select from the start would
  walk over all of them again, batch after batch.
- A run stops once its rows or seconds are spent, and the next run goes on from there, so a
  backlog (the first run after an upgrade) is worked off over a few runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.db.models import Model, QuerySet

M = TypeVar("M", bound=Model)

# One batch: pick the keys of at most `limit` rows, then change them in one statement; how many
# it picked, and how many of those it changed (fewer if some changed in between).
Batch = Callable[[int], tuple[int, int]]


def prune_in_batches(batch: Batch) -> int:
    """Run `batch` until it picks fewer rows than asked (nothing older is left) or the run's
    budget (`SHOP_RETENTION_RUN_ROWS`, `SHOP_RETENTION_RUN_SECONDS`) is spent; how many rows
    it changed. Call it outside any transaction, so that each batch commits on its own."""
    size = settings.SHOP_RETENTION_BATCH_SIZE
    rows_left = settings.SHOP_RETENTION_RUN_ROWS
    deadline = time.monotonic() + settings.SHOP_RETENTION_RUN_SECONDS
    total = 0
    while rows_left > 0:
        limit = min(size, rows_left)
        picked, changed = batch(limit)
        total += changed
        rows_left -= picked
        if picked < limit or time.monotonic() >= deadline:
            break
    return total


def prune_oldest(rows: QuerySet[M], *, by: str, change: Callable[[QuerySet[M]], int]) -> int:
    """Go through `rows` (those to prune, whose conditions an index on `by` serves) oldest
    first by `by`, a batch at a time within the run's budget: `change` gets each batch's rows
    (`rows` narrowed to their keys, so its conditions hold again as they are changed) and says
    how many it changed. How many rows were changed."""
    start: Any = None

    def batch(limit: int) -> tuple[int, int]:
        nonlocal start
        after = rows if start is None else rows.filter(**{f"{by}__gte": start})
        picked = list(after.order_by(by).values_list("pk", by)[:limit])
        if not picked:
            return 0, 0
        start = picked[-1][1]
        return len(picked), change(rows.filter(pk__in=[pk for pk, _ in picked]))

    return prune_in_batches(batch)
