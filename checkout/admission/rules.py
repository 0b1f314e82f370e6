"""The sale day's admission: past the shop's capacity, new shoppers are let in at the pace the
shop serves, first come first in; the others wait their turn on a page that says where they
stand and lets them in by itself. The shoppers let in keep the shop's pace instead of every
shopper slowing down.

The pace sizes itself (`checkout.admission.pace`): every process counts how long the pages it
served took, and once a second the pace rises while the pages stay fast and someone waits, and
falls when they slow, between SHOP_ADMISSION_MIN_PER_SECOND and SHOP_ADMISSION_MAX_PER_SECOND.
A number in SHOP_ADMISSION_PER_SECOND fixes it instead (0: no queue).

A shopper's turn is a signed cookie (`shop_turn`; no session is written for it): first a ticket
(its number in the queue), then, once let in, a stay of SHOP_ADMISSION_STAY_MINUTES during which
it is never held back (a cart, an order, a payment in the middle of a stay are never
interrupted). Pages of an order already placed (paying, its status) are never held back at all.

Kept in Redis with plain commands (no script): `tickets`, the last ticket given (INCR), and
`next`, the last ticket let in, which the first request of each second moves on by the pace
(SET NX on that second's key decides which request does it), never more than one second's pace
past the last ticket given: a quiet hour banks no rush. With no queue, a new shopper's ticket is
within `next` at once. Redis away, or no pace set: everyone is let in (the shop never closes for
its queue).

The pace can be changed while the shop runs, for every process at once (`manage.py admission`):
an operator opens the doors wider, or closes them, without a release.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.core.cache import cache

from checkout.admission import pace as admission_pace
from core.cache_redis import cache_is_redis, cache_redis

logger = logging.getLogger(__name__)

COOKIE = "shop_turn"
SALT = "checkout.admission"
TICKETS, NEXT, MOVED, PACE, GIVEN = (
    cache.make_key(f"admission:{name}")
    for name in ("tickets", "next", "moved", "pace", "given")  # given: tickets, when moved
)


@dataclass(frozen=True)
class Turn:
    """Where a browser stands: `position` None when it may shop now (`cookie`: its stay), else
    its place in the queue (1: next; `cookie`: its ticket) and `wait`, the seconds its turn is
    about to take at the pace now."""

    cookie: str
    position: int | None
    wait: int = 0


def pace() -> float:
    """New shoppers let in a second: the operator's pace if one is set, else the setting's if
    it names one, else the pace the shop found for itself."""
    if not cache_is_redis():
        return 0.0
    fixed = settings.SHOP_ADMISSION_PER_SECOND
    try:
        chosen, found = cache_redis().mget(PACE, admission_pace.FOUND)
    except Exception:
        return float(fixed if fixed is not None else settings.SHOP_ADMISSION_MIN_PER_SECOND)
    if chosen is not None:
        return float(chosen)
    return float(fixed) if fixed is not None else admission_pace.found_or_ceiling(found)


def pace_kind() -> str:
    """Who sets the pace now: "operator" (`manage.py admission`), "setting" (a number in
    SHOP_ADMISSION_PER_SECOND), "measured" (the shop itself)."""
    if cache_is_redis() and cache_redis().get(PACE) is not None:
        return "operator"
    return "setting" if settings.SHOP_ADMISSION_PER_SECOND is not None else "measured"


def pace_set(per_second: float | None) -> None:
    """The pace for every process from now on (None: back to the setting's, or the measured
    one)."""
    if per_second is None:
        cache_redis().delete(PACE)
    else:
        cache_redis().set(PACE, repr(float(per_second)))


def turn_for(cookie: str | None) -> Turn:
    """Whether the browser with this turn cookie may shop now, or its place in the queue."""
    held = _read(cookie)
    now = time.time()
    if held.get("until", 0) > now:
        return Turn(cookie or "", None)  # within its stay
    per_second = pace()
    if per_second <= 0:
        return Turn(_stay(now), None)
    try:
        let_in = _let_in(now, per_second)  # before this ticket: a second's pace past the others
        ticket = held.get("ticket") or int(cache_redis().incr(TICKETS))
    except Exception as exc:  # Redis away: let everyone in
        logger.warning("admission not kept (%s): let in", exc)
        return Turn(_stay(now), None)
    if ticket <= let_in:
        return Turn(_stay(now), None)
    place = ticket - let_in
    return Turn(
        signing.dumps({"ticket": ticket}, salt=SALT, compress=False),
        place,
        math.ceil(place / per_second),
    )


def refresh_after(wait: int) -> int:
    """Seconds before a waiting page asks again, for a shopper whose turn comes in about `wait`
    seconds: SHOP_ADMISSION_REFRESH_SECONDS near its turn, half the wait further back (each ask
    halves what is left: a few asks for a long wait, none late by more than the shortest), at
    most SHOP_ADMISSION_REFRESH_MAX_SECONDS."""
    shortest = settings.SHOP_ADMISSION_REFRESH_SECONDS
    return max(shortest, min(settings.SHOP_ADMISSION_REFRESH_MAX_SECONDS, wait // 2))


def _let_in(now: float, per_second: float) -> int:
    """The last ticket let in, moved on by the pace for the seconds since it last moved (two at
    most), by the first request of each second, and never more than a second's pace past the
    last ticket given."""
    redis, second = cache_redis(), int(now)
    if redis.set(cache.make_key(f"admission:second:{second}"), 1, nx=True, ex=5):
        values = redis.mget(TICKETS, NEXT, MOVED, GIVEN)
        given, let_in, moved, given_then = (int(value or 0) for value in values)
        seconds = min(2, second - moved) if moved else 1
        if pace_kind() == "measured":  # once a second, by the request that moves the queue
            came = (given - given_then) / max(1, second - moved) if moved else 0.0
            per_second = admission_pace.adapt(
                redis, second, waiting=given - let_in, came=max(0.0, came)
            )
        step = max(1, round(per_second * seconds))
        redis.mset(
            {NEXT: min(let_in + step, given + max(1, round(per_second))), MOVED: second,
             GIVEN: given}
        )  # fmt: skip
    return int(redis.get(NEXT) or 0)


def _stay(now: float) -> str:
    until = now + settings.SHOP_ADMISSION_STAY_MINUTES * 60
    return signing.dumps({"until": until}, salt=SALT, compress=False)


def _read(cookie: str | None) -> dict[str, float]:
    if not cookie or len(cookie) > 200:
        return {}
    try:
        value = signing.loads(cookie, salt=SALT)
    except signing.BadSignature:
        return {}
    return value if isinstance(value, dict) else {}


def admission_figures() -> tuple[float, int]:
    """(the pace, shoppers waiting now: tickets given and not let in yet); (0, 0) without
    Redis."""
    if not cache_is_redis():
        return 0.0, 0
    given, let_in = (int(value or 0) for value in cache_redis().mget(TICKETS, NEXT))
    return pace(), max(0, given - let_in)


def page_p95() -> float | None:
    """The served pages' p95 over the last seconds, in seconds (None: none served, or no
    Redis)."""
    if not cache_is_redis():
        return None
    return admission_pace.recent_p95(cache_redis(), int(time.time()))
