"""The provider read budget: how many payment reads a minute the shop allows itself in all
(`PAYMENTS_PROVIDER_READS_PER_MINUTE`), so that what it reads in the background stays well under
the provider's rate limit however long the shop's history grows.

Every read of a payment is counted, in the cache, per minute. The reads a notification, a staff
member or a shopper's page ask for are never held back (they are what the shop is doing now); the
schedule (the reconciliation of `payments.read_schedule`, the expired authorizations) takes only
what they left of this minute, and waits for the next minute otherwise. With the cache away the
count is unknown: the schedule then allows itself half the budget, so that together with the
reads it cannot see it stays under it.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)


def _key(minute: int) -> str:
    return f"payments:provider-reads:{minute}"


def _minute() -> int:
    return int(time.time() // 60)


def spend(reads: int = 1) -> None:
    """Count `reads` reads of the provider made now (best effort)."""
    key = _key(_minute())
    try:
        cache.add(key, 0, timeout=180)
        cache.incr(key, reads)
    except Exception as exc:  # the cache is away: the schedule plays safe (reads_left)
        logger.debug("provider reads not counted: %s", exc)


def spent_this_minute() -> int | None:
    """The reads counted this minute; None if the cache cannot say."""
    try:
        return int(cache.get(_key(_minute())) or 0)
    except Exception:
        return None


def reads_left() -> int:
    """How many reads the schedule may make now, within this minute's budget."""
    budget = settings.PAYMENTS_PROVIDER_READS_PER_MINUTE
    spent = spent_this_minute()
    if spent is None:
        return budget // 2
    return max(budget - spent, 0)


def budget_table() -> tuple[list[str], list[str]]:
    """What the budget keeps at 500, 5,000 and 50,000 approved payments a day (the rows to
    print, and the misses): payments.read_capacity."""
    from payments.read_capacity import budget_table as table

    return table()
