"""The provider's health as the shop last saw it: a stamp that the provider check task (and
the catalogue refresh) write after each call, and that `/healthz/deps` reads, so that a probe
never calls the provider itself."""

from __future__ import annotations

import time
from typing import TypedDict

from django.core.cache import cache

PROVIDER_CHECK_KEY = "payments:provider-check"
# Kept well beyond the checks' interval, so that a stopped schedule shows as an old stamp (its
# age) rather than as none.
PROVIDER_CHECK_TTL = 24 * 3600


class ProviderCheck(TypedDict, total=False):
    ok: bool
    ms: float  # how long the provider took to answer
    checked_at: float  # when (seconds since the epoch)
    error: str  # the class of the exception that failed the call


def provider_check_record(*, ok: bool, ms: float, error: str = "") -> None:
    """Store the outcome of a call to the provider (replacing the previous one)."""
    stamp: ProviderCheck = {"ok": ok, "ms": round(ms, 1), "checked_at": time.time()}
    if error:
        stamp["error"] = error
    cache.set(PROVIDER_CHECK_KEY, stamp, PROVIDER_CHECK_TTL)


def provider_check_read() -> ProviderCheck | None:
    """The last stored outcome, or None when no check has been stored (raises if the cache
    cannot be read)."""
    stamp: ProviderCheck | None = cache.get(PROVIDER_CHECK_KEY)
    return stamp
