"""The admission's pace, found by the shop itself: what its pages take decides how many new
shoppers a second it lets in (the way Envoy's adaptive concurrency and Netflix's
concurrency-limits size a limit from the latency they measure).

Every web process counts the pages it served in the last second by how long they took, the
wait for a thread in front of them included (gunicorn's worker notes it:
`config/gunicorn_worker.py`; without it, once every thread is busy, what shoppers wait grows
while the pages' own time does not), in a histogram of a few buckets, kept in the process and
added to Redis once a second (one round trip a second a process, not one a page). Once a
second, the request that moves the queue (`checkout.admission.rules._let_in`) reads the last
seconds' histograms of every process and moves the pace:

- the pages slow: their p95 above SHOP_ADMISSION_PAGE_P95_MS, or, once above half of it, above
  three times (and 50 ms over) the p95 the same pages take when the shop is at ease (the lowest
  p95 of the last five minutes, remeasured as they pass: a web process's own timing hides the
  requests waiting for a thread, but not their slowing each other down): the pace falls by a
  tenth while shoppers wait (what comes in then follows the pace: cutting to it would spiral
  down), else to nine tenths of what came in over the last second, and the pages recover;
- at or under it, while shoppers wait: the pace rises by a tenth (at least half a shopper a
  second), so that a bigger machine finds its own pace;
- nobody waiting: it stays (a quiet hour banks no credit);
- after a move, it holds until the pages measured are all of the new pace (WINDOW seconds):
  pages answer a move seconds late, and a pace moved again before would overshoot;

always between SHOP_ADMISSION_MIN_PER_SECOND and SHOP_ADMISSION_MAX_PER_SECOND. Before the
shop has measured anything the pace is the ceiling: nobody waits until the pages slow. Kept in
Redis with plain commands, like the queue; Redis away, the queue lets everyone in anyway.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache

from core.cache_redis import cache_is_redis, cache_redis

logger = logging.getLogger(__name__)

FOUND = cache.make_key("admission:found")  # the pace the shop found (a float, as text)
MOVED = cache.make_key("admission:found-moved")  # the second it last moved
BUCKETS_MS = (25, 50, 75, 100, 150, 200, 250, 300, 400, 500, 750, 1000, 2000)
WINDOW = 3  # seconds of pages each decision reads (the second under way left out)
FEWEST = 10  # pages a window needs before its p95 says anything
RISE, FALL, SMALLEST_RISE = 1.10, 0.9, 0.5
KEPT = 30  # seconds a second's histogram is kept
# Slow, against the p95 at ease: GRADIENT times it and MARGIN seconds more; that p95 is the
# lowest of the last FLOOR_MINUTES minutes'. Under HEADROOM of the target, pages are never slow:
# a shop whose pages take 20 ms at ease serves them at 80 ms as well as at 20 (measured on two
# cores: with the pace cut at three times ease, 32 shoppers paid 0.62 x what 8 did, their pages
# at p95 0.14 s).
GRADIENT, MARGIN, HEADROOM, FLOOR_MINUTES = 3.0, 0.05, 0.5, 5


def _bucket(seconds: float) -> str:
    milliseconds = seconds * 1000
    return str(next((bound for bound in BUCKETS_MS if milliseconds <= bound), "inf"))


def _key(second: int) -> str:
    return cache.make_key(f"admission:pages:{second}")


class _Served:
    """This process's pages of the second under way, by bucket, until the next second's first
    page adds them to Redis."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.second = 0
        self.counts: dict[str, int] = {}

    def count(self, seconds: float, now: float) -> tuple[int, dict[str, int]] | None:
        """Count one page; the second just ended and its counts, when this page began a new
        one."""
        second, ended = int(now), None
        with self.lock:
            if second != self.second:
                if self.counts:
                    ended = (self.second, self.counts)
                self.second, self.counts = second, {}
            bucket = _bucket(seconds)
            self.counts[bucket] = self.counts.get(bucket, 0) + 1
        return ended


_served = _Served()


def page_served(seconds: float, now: float | None = None) -> None:
    """Count a page this process served in `seconds`; once a second, add the counts of the
    second before to Redis (one round trip). Redis away: the counts are dropped."""
    ended = _served.count(seconds, time.time() if now is None else now)
    if ended is None or not cache_is_redis():
        return
    second, counts = ended
    try:
        pipe = cache_redis().pipeline(transaction=False)
        for bucket, n in counts.items():
            pipe.hincrby(_key(second), bucket, n)
        pipe.expire(_key(second), KEPT)
        pipe.execute()
    except Exception as exc:  # the queue lets everyone in while Redis is away
        logger.debug("admission: pages not counted (%s)", exc)


def _window(redis: Any, second: int) -> dict[str, int]:
    """The pages of the WINDOW seconds before `second`, by bucket, every process's."""
    pipe = redis.pipeline(transaction=False)
    for earlier in range(second - WINDOW, second):
        pipe.hgetall(_key(earlier))
    counts: dict[str, int] = {}
    for found in pipe.execute():
        for bucket, n in found.items():
            name = bucket.decode() if isinstance(bucket, bytes) else str(bucket)
            counts[name] = counts.get(name, 0) + int(n)
    return counts


def p95_of(counts: dict[str, int]) -> float | None:
    """The p95 of a window's pages, in seconds (the upper bound of its bucket); None under
    FEWEST pages."""
    total = sum(counts.values())
    if total < FEWEST:
        return None
    seen = 0
    for bound in (*BUCKETS_MS, "inf"):
        seen += counts.get(str(bound), 0)
        if seen >= 0.95 * total:
            return float("inf") if bound == "inf" else int(bound) / 1000
    return float("inf")


def recent_p95(redis: Any, second: int) -> float | None:
    """The p95 of the pages served over the last WINDOW seconds (None: too few)."""
    return p95_of(_window(redis, second))


def found_or_ceiling(found: bytes | str | None) -> float:
    """The pace the shop found, or the ceiling before it found one."""
    ceiling = float(settings.SHOP_ADMISSION_MAX_PER_SECOND)
    return float(found) if found is not None else ceiling


def _floor_key(minute: int) -> str:
    return cache.make_key(f"admission:at-ease:{minute}")


def at_ease(redis: Any, second: int, p95: float | None) -> float | None:
    """The pages' p95 when the shop is at ease: the lowest of the last FLOOR_MINUTES minutes'
    windows, this one's `p95` counted (None: none measured yet)."""
    minute = second // 60
    if p95 is not None:
        now_key = _floor_key(minute)
        lowest = redis.get(now_key)
        if lowest is None or p95 < float(lowest):
            redis.set(now_key, repr(p95), ex=FLOOR_MINUTES * 60 + 60)
    found = redis.mget([_floor_key(m) for m in range(minute - FLOOR_MINUTES + 1, minute + 1)])
    known = [float(value) for value in found if value is not None]
    return min(known) if known else None


def slow(p95: float | None, ease: float | None) -> bool:
    """Whether pages whose p95 is `p95` are slow: past SHOP_ADMISSION_PAGE_P95_MS, or past
    GRADIENT times (and MARGIN over) the p95 at ease once past HEADROOM of the target."""
    if p95 is None:
        return False
    target = settings.SHOP_ADMISSION_PAGE_P95_MS / 1000
    if p95 > target:
        return True
    return ease is not None and p95 > max(GRADIENT * ease, ease + MARGIN, HEADROOM * target)


def next_pace(
    current: float, p95: float | None, waiting: int, came: float, ease: float | None = None
) -> float:
    """The pace after a second in which the pages' p95 was `p95` (None: too few pages; `ease`:
    their p95 at ease), `waiting` shoppers were queued and `came` new shoppers a second asked
    to come in."""
    low = float(settings.SHOP_ADMISSION_MIN_PER_SECOND)
    high = float(settings.SHOP_ADMISSION_MAX_PER_SECOND)
    if slow(p95, ease):
        # While shoppers wait, the pace is what let them in: a tenth less. Otherwise it let in
        # all that came, however high it is (the ceiling, at first): nine tenths of that.
        binding = waiting > 0 or came <= 0
        wanted = (current if binding else min(current, came)) * FALL
    elif waiting > 0:
        wanted = max(current * RISE, current + SMALLEST_RISE)
    else:
        wanted = current
    return round(min(high, max(low, wanted)), 2)


def adapt(redis: Any, second: int, *, waiting: int, came: float) -> float:
    """Move the pace the shop found by what its pages took over the last seconds (`waiting`
    shoppers queued, `came` new ones a second lately); the new pace. After a move it holds
    until its window holds only seconds served at the new pace (WINDOW seconds after it): what
    the pages take answers a move a few seconds late, and moving on each second before the
    answer came in would overshoot both ways."""
    found, moved = redis.mget(FOUND, MOVED)
    current = found_or_ceiling(found)
    p95 = p95_of(_window(redis, second))
    ease = at_ease(redis, second, p95)
    if moved is not None and second - int(moved) <= WINDOW:
        return current
    chosen = next_pace(current, p95, waiting, came, ease)
    if chosen != current:
        redis.mset({FOUND: repr(chosen), MOVED: second})
    return chosen
