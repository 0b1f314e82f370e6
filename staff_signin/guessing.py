"""The code page's limits on guessing: refused codes counted per account and per client address
in the cache (Redis in production), within a window ("5/15m"); at the limit, the next try gets
the 429 page. A success clears the account's count. While the cache cannot be reached, these
limits are off and django-otp's growing delay per device (in the database) still holds."""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

_RATE = re.compile(r"^(\d+)/(\d*)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """ "5/15m" → (5, 900): how many, within how many seconds."""
    match = _RATE.match(rate.strip())
    if match is None:
        raise ValueError(f"not a rate: {rate!r} (e.g. 5/15m)")
    count, multiplier, unit = match.groups()
    return int(count), int(multiplier or 1) * _UNIT_SECONDS[unit]


def _limits(*, user_id: int, address: str) -> list[tuple[str, str]]:
    return [
        (f"staff-signin:code:user:{user_id}", settings.STAFF_SIGNIN_CODES_PER_USER),
        (f"staff-signin:code:address:{address}", settings.STAFF_SIGNIN_CODES_PER_ADDRESS),
    ]


def over_limit(*, user_id: int, address: str) -> bool:
    """Whether the account or the address has used up its refused codes for now."""
    try:
        for key, rate in _limits(user_id=user_id, address=address):
            limit, _ = parse_rate(rate)
            if int(cache.get(key, 0)) >= limit:
                return True
    except Exception as exc:  # the cache is away: the devices' own delay still holds
        logger.warning("code guessing limits not read: %s", exc)
    return False


def count_refused(*, user_id: int, address: str) -> None:
    """One more refused code for the account and for the address."""
    try:
        for key, rate in _limits(user_id=user_id, address=address):
            _, seconds = parse_rate(rate)
            cache.add(key, 0, timeout=seconds)
            cache.incr(key)
    except Exception as exc:
        logger.warning("a refused code not counted: %s", exc)


def clear_account(*, user_id: int) -> None:
    try:
        cache.delete(f"staff-signin:code:user:{user_id}")
    except Exception as exc:
        logger.warning("the account's refused codes not cleared: %s", exc)
