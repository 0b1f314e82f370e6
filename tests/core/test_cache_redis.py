"""The counters every process shares (`core.cache_redis.WindowCounter`): one count per window of
the clock, added to in one round trip on the cache's Redis and kept a while after its last
addition, read back by any process; through the cache where it is not Redis."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache

from core.cache_redis import WindowCounter, cache_redis
from tests.helpers.cache import clear_cache

COUNTER = WindowCounter("tests:window-counter", seconds=60, keep=5)


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    clear_cache()
    yield
    clear_cache()


def test_each_window_has_its_own_count_shared_through_redis() -> None:
    """Added to twice in one window and once in the next, each window keeps its own count, read
    back through the cache; the key expires `keep` seconds after its last addition."""
    now = 60 * 16_000.0  # the start of a minute
    window = COUNTER.window(now)
    assert COUNTER.window(now + 59.9) == window and COUNTER.window(now + 60) == window + 1

    assert COUNTER.add(window=window) == 1
    assert COUNTER.add(3, window=window) == 4
    assert COUNTER.add(window=window + 1) == 1

    assert (COUNTER.count(window), COUNTER.count(window + 1), COUNTER.count(window + 2)) == (
        4,
        1,
        0,
    )
    assert cache.get(COUNTER.key(window)) == 4
    redis = cache_redis()
    assert redis is not None
    assert 0 < redis.ttl(cache.make_key(COUNTER.key(window))) <= 5


def test_without_redis_the_cache_keeps_the_count(settings: Any) -> None:
    """The demo's cache (not Redis): the same counts, through the cache's own add and incr."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    from django.core.cache import caches

    local = caches["default"]
    assert cache_redis() is None
    window = COUNTER.window()
    assert (COUNTER.add(window=window), COUNTER.add(2, window=window)) == (1, 3)
    assert COUNTER.count(window) == 3 == local.get(COUNTER.key(window))
