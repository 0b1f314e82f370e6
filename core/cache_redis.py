"""The cache's own Redis, for counters that every process shares (the provider write pace, the
sale day's queue) with plain commands in one round trip: django-redis's client, under the cache's
key prefix (`cache.make_key`). None when the cache is not django-redis (the demo's file cache)."""

from __future__ import annotations

from typing import Any

from django.conf import settings


def cache_redis_kept() -> bool:
    """Whether the cache is django-redis (so `cache_redis` has a client)."""
    return "django_redis" in str(settings.CACHES["default"]["BACKEND"])


def cache_redis() -> Any | None:
    """django-redis's client of the default cache; None without one."""
    if not cache_redis_kept():
        return None
    from django_redis import get_redis_connection

    return get_redis_connection("default")
