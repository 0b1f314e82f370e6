"""The sandbox's own rate limit, as a real provider has on a sale day: a token bucket per API key
(the Authorization credential as sent) and per endpoint family. Off unless configured.

Where each part lives:

- The configuration is in `SandboxState.rate_limits` (JSON), so every process and thread of the
  sandbox sees it; None means it was never set and `SANDBOX_RATE_LIMIT_PER_SECOND` applies. Each
  process keeps it in memory for at most `CONFIG_TTL` seconds (one query a second, not one a
  request); the process that changes it through `/_sandbox/rate_limits` applies it at once.
- The buckets and the counters of `seen` live in process memory behind one `threading.Lock`:
  `runsandbox` serves every request from one waitress process (threads), so that process sees the
  whole traffic. Every configuration carries a `generation`; a process that loads a new one starts
  with full buckets and zero counters.

A refused request is answered 429 before any view runs (nothing is created, no idempotency key
is stored, no fault is consumed); an idempotent replay counts like any other request.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from rest_framework import serializers

from sandbox.provider.errors import RATE_LIMITED, ApiError, error_response
from sandbox.provider.models import SandboxState
from sandbox.provider.serializers import StrictDictField, StrictObjectSerializer

FAMILIES = (
    "card_tokens",
    "payments.create",
    "payments.read",
    "payments.update",
    "refunds",
    "payment_methods",
    "subscriptions",
)
# How long a process trusts the configuration it read, in seconds.
CONFIG_TTL = 1.0
# Beyond this many buckets, the full ones (nothing to remember) are forgotten.
MAX_BUCKETS = 10_000
MAX_RATE = 1_000_000.0


def family_of(method: str, path: str) -> str | None:
    """The endpoint family a request counts against, or None when it is never limited (control
    paths, pages, assets, probes, unknown paths)."""
    head, _, rest = path.strip("/").partition("/")
    if head == "card_tokens" and method == "POST":
        return "card_tokens"
    if head == "payment_methods" and method in ("GET", "HEAD"):
        return "payment_methods"
    if head == "refunds":
        return "refunds"
    if head == "subscriptions":
        return "subscriptions"
    if head != "payments":
        return None
    if method in ("GET", "HEAD"):
        return "payments.read"
    if method == "POST" and not rest:
        return "payments.create"
    if method == "PATCH" and rest:
        return "payments.update"
    return None


@dataclass(frozen=True)
class Limits:
    """One configuration: a rate for every family, each family's own rate winning over it."""

    generation: str
    per_second: float | None = None
    burst: float | None = None
    families: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, generation: str = "settings") -> Limits:
        rate = float(getattr(settings, "SANDBOX_RATE_LIMIT_PER_SECOND", 0.0) or 0.0)
        return cls(generation, per_second=rate or None)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Limits:
        return cls(
            generation=str(data.get("generation", "")),
            per_second=data.get("per_second"),
            burst=data.get("burst"),
            families={name: float(rate) for name, rate in data.get("families", {}).items()},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "per_second": self.per_second,
            "burst": self.burst,
            "families": self.families,
        }

    def rate(self, family: str) -> float:
        """Requests per second allowed to one key in `family`; 0 is no limit."""
        own = self.families.get(family)
        return own if own is not None else (self.per_second or 0.0)

    def capacity(self, family: str) -> float:
        """The bucket's size: `burst`, else one second's worth (at least one request)."""
        return self.burst if self.burst is not None else max(self.rate(family), 1.0)

    @property
    def on(self) -> bool:
        return any(self.rate(family) > 0 for family in FAMILIES)


@dataclass
class Bucket:
    tokens: float
    stamp: float


@dataclass
class Seen:
    accepted: int = 0
    refused: int = 0
    busiest_second: int = 0
    second: int = 0
    in_second: int = 0

    def count_accepted(self, second: int) -> None:
        self.in_second = self.in_second + 1 if second == self.second else 1
        self.second = second
        self.accepted += 1
        self.busiest_second = max(self.busiest_second, self.in_second)

    def to_json(self) -> dict[str, int]:
        return {
            "accepted": self.accepted,
            "refused": self.refused,
            "busiest_second": self.busiest_second,
        }


class Limiter:
    """The buckets and counters of this process, and its cached configuration."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._limits = Limits("unset")
        self._loaded_at = -math.inf
        self._installs = 0
        self._buckets: dict[tuple[str, str], Bucket] = {}
        self._seen = {family: Seen() for family in FAMILIES}

    def current(self) -> Limits:
        """The configuration, read again from the database when older than `CONFIG_TTL`."""
        if time.monotonic() - self._loaded_at < CONFIG_TTL:
            return self._limits
        installs = self._installs
        limits = stored_limits()
        with self._lock:
            # A configuration installed meanwhile by this process is newer than what was read.
            if installs == self._installs and limits.generation != self._limits.generation:
                self._install(limits)
            self._loaded_at = time.monotonic()
            return self._limits

    def install(self, limits: Limits) -> None:
        """Apply `limits` now: full buckets, zero counters."""
        with self._lock:
            self._install(limits)
            self._loaded_at = time.monotonic()

    def _install(self, limits: Limits) -> None:
        self._limits = limits
        self._installs += 1
        self._buckets.clear()
        self._seen = {family: Seen() for family in FAMILIES}

    def admit(self, limits: Limits, family: str, key: str) -> float | None:
        """None when the request may go on, else the seconds until `key` has a token again."""
        rate = limits.rate(family)
        with self._lock:
            seen = self._seen[family]
            if rate > 0:
                wait = self._take(family, key, rate, limits.capacity(family))
                if wait is not None:
                    seen.refused += 1
                    return wait
            seen.count_accepted(int(time.time()))
            return None

    def _take(self, family: str, key: str, rate: float, capacity: float) -> float | None:
        now = time.monotonic()
        bucket = self._buckets.get((family, key))
        if bucket is None:
            if len(self._buckets) >= MAX_BUCKETS:
                self._forget_full(now, rate, capacity)
            bucket = self._buckets[(family, key)] = Bucket(capacity, now)
        else:
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.stamp) * rate)
            bucket.stamp = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return None
        return (1 - bucket.tokens) / rate

    def _forget_full(self, now: float, rate: float, capacity: float) -> None:
        full = [
            key
            for key, bucket in self._buckets.items()
            if bucket.tokens + (now - bucket.stamp) * rate >= capacity
        ]
        for key in full:
            del self._buckets[key]

    def seen_json(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {family: seen.to_json() for family, seen in self._seen.items()}


LIMITER = Limiter()


def stored_limits() -> Limits:
    """The configuration in the database, or the environment's when none was ever set."""
    data = SandboxState.objects.filter(pk=1).values_list("rate_limits", flat=True).first()
    return Limits.from_json(data) if data else Limits.from_settings()


def rate_limits_save(limits: Limits) -> Limits:
    """Store `limits` for every process, and apply them in this one at once."""
    with transaction.atomic():
        state = SandboxState.objects.select_for_update().get_or_create(pk=1)[0]
        state.rate_limits = limits.to_json()
        state.save(update_fields=["rate_limits"])
    LIMITER.install(limits)
    return limits


def rate_limits_set(
    *, per_second: float | None, burst: float | None, families: dict[str, float]
) -> Limits:
    """Replace the whole configuration (counters start again)."""
    limits = Limits(uuid.uuid4().hex, per_second or None, burst, dict(families))
    return rate_limits_save(limits)


def rate_limits_off() -> Limits:
    return rate_limits_save(Limits(uuid.uuid4().hex))


def rate_limits_restore() -> Limits:
    """Back to the sandbox's starting configuration (the environment's; off by default)."""
    return rate_limits_save(Limits.from_settings(uuid.uuid4().hex))


def rate_limits_json() -> dict[str, Any]:
    """What `GET /_sandbox/rate_limits` answers."""
    limits = LIMITER.current()
    limited = [family for family in FAMILIES if limits.rate(family) > 0]
    return {
        "per_second": limits.per_second or None,
        "burst": limits.burst,
        "families": {family: limits.rate(family) for family in limited},
        "bursts": {family: limits.capacity(family) for family in limited},
        "seen": LIMITER.seen_json(),
    }


def rate_limit_refusal(request: HttpRequest) -> HttpResponse | None:
    """The 429 answer when the request is over its key's limit, else None."""
    family = family_of(request.method or "", request.path)
    if family is None:
        return None
    limits = LIMITER.current()
    if not limits.on:
        return None
    key = request.META.get("HTTP_AUTHORIZATION", "").strip()
    wait = LIMITER.admit(limits, family, key)
    if wait is None:
        return None
    retry_after = max(1, math.ceil(wait))
    detail = (
        f"rate limit of {limits.rate(family):g} requests per second for {family} exceeded;"
        f" retry after {retry_after} s"
    )
    response = error_response(ApiError(429, RATE_LIMITED, "Too many requests", [detail]))
    response["Retry-After"] = str(retry_after)
    return response


class RateField(serializers.FloatField):
    """A JSON number (never a string or a boolean), zero or more."""

    default_error_messages = {"invalid": "must be a number."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 0.0)
        kwargs.setdefault("max_value", MAX_RATE)
        super().__init__(**kwargs)
        self.error_messages["min_value"] = f"must be at least {kwargs['min_value']:g}."

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float | Decimal):
            self.fail("invalid")
        return super().to_internal_value(data)


class RateLimitsSerializer(StrictObjectSerializer):
    """`POST /_sandbox/rate_limits`: requests per second (0 or null: no limit) for every family
    and/or per family, and the bucket size (at least one request)."""

    per_second = RateField(required=False, allow_null=True, default=None)
    burst = RateField(required=False, allow_null=True, default=None, min_value=1.0)
    families = StrictDictField(child=RateField(), required=False, default=dict)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and (unknown := sorted(set(data) - set(self.fields))):
            raise serializers.ValidationError({name: ["is not a known field."] for name in unknown})
        return super().to_internal_value(data)

    def validate_families(self, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(FAMILIES))
        if unknown:
            raise serializers.ValidationError(
                f"unknown family {', '.join(unknown)}; one of {', '.join(FAMILIES)}."
            )
        return value
