"""What a browser's session holds of a staff sign-in: the account whose password was accepted
(waiting for its code, for a few minutes), and when the session was verified with a code (it
gives the admin for one shift, STAFF_SESSION_HOURS). Nothing else: no code, no secret. Written
through Django's session framework, whatever its backend."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest

PENDING_KEY = "staff_signin_pending"
VERIFIED_AT_KEY = "staff_signin_verified_at"
# How long an accepted password waits for its code.
PENDING_SECONDS = 10 * 60


@dataclass(frozen=True)
class Pending:
    """An account whose password was accepted in this browser, and by which backend."""

    user: Any
    backend: str


def pending_set(request: HttpRequest, user: Any) -> None:
    request.session[PENDING_KEY] = {
        "user": user.pk,
        "backend": getattr(user, "backend", settings.AUTHENTICATION_BACKENDS[0]),
        "at": time.time(),
    }


def pending_get(request: HttpRequest) -> Pending | None:
    """The account waiting for its code in this browser, while its password is fresh and the
    account still active staff."""
    data = request.session.get(PENDING_KEY)
    if not isinstance(data, dict) or time.time() - float(data.get("at", 0)) > PENDING_SECONDS:
        return None
    user = get_user_model().objects.filter(pk=data.get("user"), is_active=True, is_staff=True)
    found = user.first()
    return Pending(found, str(data.get("backend"))) if found is not None else None


def pending_clear(request: HttpRequest) -> None:
    request.session.pop(PENDING_KEY, None)


def shift_seconds() -> int:
    return int(settings.STAFF_SESSION_HOURS * 3600)


def verified_mark(request: HttpRequest) -> None:
    """The session was just verified with a code: it lasts one shift from now (the session's
    own expiry too, so that the browser's cookie and the stored session end with it)."""
    request.session[VERIFIED_AT_KEY] = time.time()
    request.session.set_expiry(shift_seconds())


def within_shift(request: HttpRequest) -> bool:
    """Whether the session was verified less than a shift ago."""
    verified_at = request.session.get(VERIFIED_AT_KEY)
    if not isinstance(verified_at, int | float):
        return False
    return time.time() - verified_at < shift_seconds()
