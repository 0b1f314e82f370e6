"""The shop's own pace of writes to the provider: at most PAYMENTS_PROVIDER_WRITES_PER_SECOND
creates, captures, cancellations and refunds a second, counted together by every worker process
through Redis, so that a sale day stays under the provider's rate limit instead of earning its
429s.

Each second of the clock has a counter in Redis (`core.cache_redis.WindowCounter`: INCR and
EXPIRE in one round trip; no script): a write takes the next number of the current second, and
one numbered past the limit waits for the next second (plus a few milliseconds of jitter, so
that the waiting writes do not all start at its first instant) and tries again. Any window of
one second therefore holds at most twice the limit, and a whole second exactly the limit. A
write that found no room within WAIT_MAX seconds is not sent: `Throttled` (the task sends it
later, like a provider's 429).

Redis away: writes go unpaced (the provider's own 429s are still handled) rather than stopping.
"""

from __future__ import annotations

import logging
import random
import time

from django.conf import settings

from core.cache_redis import WindowCounter
from payments.metrics import provider_write_paced
from payments.provider.errors import Throttled

logger = logging.getLogger(__name__)

WAIT_MAX = 2.0  # seconds a write waits for room before its task is asked to try later
# The writes taken in each second of the clock.
WRITES = WindowCounter("payments:provider-writes", seconds=1, keep=5)


def write_slot_wait() -> None:
    """Return once a write may be sent within the shared pace (at once when there is room, or
    when no limit is set); raise `Throttled` when none came within WAIT_MAX seconds."""
    limit = settings.PAYMENTS_PROVIDER_WRITES_PER_SECOND
    if not limit:
        return
    started = time.monotonic()
    while True:
        now = time.time()
        taken = _take(int(now))
        if taken is None or taken <= limit:
            waited = time.monotonic() - started
            if waited:
                provider_write_paced(waited)
            return
        wait = 1 - (now % 1) + random.uniform(0, 0.05)
        if time.monotonic() - started + wait > WAIT_MAX:
            provider_write_paced(time.monotonic() - started, sent=False)
            raise Throttled(
                f"the shop's pace of {limit} writes a second is taken; sent later",
                retry_after=1.0,
            )
        time.sleep(wait)


def _take(second: int) -> int | None:
    """The number this write takes in `second` (None: the count could not be kept)."""
    try:
        return WRITES.add(window=second)
    except Exception as exc:
        logger.warning("provider write pace not kept (%s): sent unpaced", exc)
        return None
