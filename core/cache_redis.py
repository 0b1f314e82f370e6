"""The cache's own Redis, for counters that every process shares (the provider write pace and
read budget, the sale day's queue) with plain commands in one round trip: django-redis's client,
under the cache's key prefix (`cache.make_key`). None when the cache is not django-redis (the
demo's file cache)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache


def cache_is_redis() -> bool:
    """Whether the cache is django-redis (so `cache_redis` has a client)."""
    return "django_redis" in str(settings.CACHES["default"]["BACKEND"])


def cache_redis() -> Any | None:
    """django-redis's client of the default cache; None without one."""
    if not cache_is_redis():
        return None
    from django_redis import get_redis_connection

    return get_redis_connection("default")


@dataclass(frozen=True)
class WindowCounter:
    """A count every process shares, one for each window of `seconds` of the clock (the
    provider's write pace: a second; its read budget: a minute), under `<name>:<window>`, kept
    `keep` seconds after it was last added to. In the cache's Redis, INCRBY and EXPIRE in one
    round trip; through the cache otherwise (the demo's file cache). Its methods raise when the
    cache cannot be reached: each caller decides what to do without the count."""

    name: str
    seconds: int
    keep: int

    def window(self, now: float | None = None) -> int:
        """The window `now` (else this instant) falls in."""
        return int((time.time() if now is None else now) // self.seconds)

    def key(self, window: int) -> str:
        return f"{self.name}:{window}"

    def add(self, amount: int = 1, *, window: int | None = None) -> int:
        """Add `amount` to the count of `window` (else the current one); its new count."""
        key = self.key(self.window() if window is None else window)
        redis = cache_redis()
        if redis is not None:
            pipe = redis.pipeline(transaction=False)
            pipe.incrby(cache.make_key(key), amount)
            pipe.expire(cache.make_key(key), self.keep)
            return int(pipe.execute()[0])
        cache.add(key, 0, timeout=self.keep)
        return int(cache.incr(key, amount))

    def count(self, window: int | None = None) -> int:
        """The count of `window` (else the current one)."""
        return int(cache.get(self.key(self.window() if window is None else window)) or 0)
