"""The shop's cache, emptied between tests."""

from __future__ import annotations


def clear_cache() -> None:
    """Forget the shop's own cache keys (rate limits, markers, the catalogue): with Redis, only
    the keys under the cache's prefix, never the rest of its database."""
    from django.core.cache import cache

    delete_pattern = getattr(cache, "delete_pattern", None)
    if delete_pattern is None:  # the demo's file cache holds nothing but ours
        cache.clear()
    else:
        delete_pattern("*")
