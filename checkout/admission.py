"""The sale day's admission: at most SHOP_ADMISSION_LIMIT shoppers shop at once (home, product,
cart, order form); the others wait their turn on a page that says so and lets them in, first
come first in, as soon as a place frees. Past the shop's capacity, the shoppers let in keep
their pace instead of every shopper slowing down.

A place is held by a browser's turn cookie (`shop_turn`, a random token; no session is written
for it), from its first page until its order is placed (then it pays, which is never held
back) or until it has been silent for SHOP_ADMISSION_IDLE_SECONDS. Waiting browsers ask again
every SHOP_ADMISSION_REFRESH_SECONDS; one silent for three times that has left the queue.

Kept in Redis (three sorted sets, plain commands, no script): `in` (token -> last seen),
`queue` (token -> when it came) and `seen` (token -> last asked). One round trip for a browser
already in; a few for one coming in or waiting. Two browsers let in at the same instant may
overfill the limit by one or two: a limit of shoppers at once, not of money, so close is good
enough. Redis away, or the limit 0: everyone is let in (the shop never closes for it).
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

COOKIE = "shop_turn"
IN, QUEUE, SEEN = (cache.make_key(f"admission:{name}") for name in ("in", "queue", "seen"))


@dataclass(frozen=True)
class Turn:
    """A browser's turn: `position` None when it may shop now, else its place in the queue
    (1: next); `token`: its cookie's value (new when it had none)."""

    token: str
    position: int | None


def _redis():  # type: ignore[no-untyped-def]
    from django_redis import get_redis_connection

    return get_redis_connection("default")


def admission_on() -> bool:
    return bool(settings.SHOP_ADMISSION_LIMIT) and "django_redis" in str(
        settings.CACHES["default"]["BACKEND"]
    )


def new_token() -> str:
    return secrets.token_urlsafe(16)


def turn_for(token: str | None) -> Turn:
    """Whether the browser holding `token` may shop now, or its place in the queue."""
    token = token if token and len(token) <= 64 else new_token()
    if not admission_on():
        return Turn(token, None)
    try:
        return Turn(token, _position(token, time.time()))
    except Exception as exc:  # Redis away: let everyone in
        logger.warning("admission not kept (%s): let in", exc)
        return Turn(token, None)


def _position(token: str, now: float) -> int | None:
    redis, limit = _redis(), settings.SHOP_ADMISSION_LIMIT
    if redis.zadd(IN, {token: now}, xx=True, ch=True):
        return None  # in already: its place kept
    pipe = redis.pipeline(transaction=False)
    pipe.zremrangebyscore(IN, "-inf", now - settings.SHOP_ADMISSION_IDLE_SECONDS)
    pipe.zcard(IN)
    pipe.zrangebyscore(SEEN, "-inf", now - 3 * settings.SHOP_ADMISSION_REFRESH_SECONDS)
    pipe.zadd(QUEUE, {token: now}, nx=True)
    pipe.zadd(SEEN, {token: now})
    _, inside, gone, *_ = pipe.execute()
    if gone:
        redis.pipeline(transaction=False).zrem(QUEUE, *gone).zrem(SEEN, *gone).execute()
    ahead = redis.zrank(QUEUE, token) or 0
    free = limit - inside
    if ahead >= free:
        return ahead - max(free, 0) + 1
    pipe = redis.pipeline(transaction=False)
    pipe.zadd(IN, {token: now})
    pipe.zrem(QUEUE, token)
    pipe.zrem(SEEN, token)
    pipe.execute()
    return None


def turn_done(token: str | None) -> None:
    """The browser placed its order: its place goes to the next in the queue."""
    if not token or not admission_on():
        return
    try:
        _redis().zrem(IN, token)
    except Exception as exc:
        logger.warning("admission place not given back (%s): it frees when idle", exc)


def admission_figures() -> tuple[int, int]:
    """(shoppers let in, shoppers waiting) now; (0, 0) when admission is off."""
    if not admission_on():
        return 0, 0
    redis, now = _redis(), time.time()
    pipe = redis.pipeline(transaction=False)
    pipe.zcount(IN, now - settings.SHOP_ADMISSION_IDLE_SECONDS, "+inf")
    pipe.zcount(SEEN, now - 3 * settings.SHOP_ADMISSION_REFRESH_SECONDS, "+inf")
    inside, waiting = pipe.execute()
    return int(inside), int(waiting)
