"""Enrolment windows and what an operator does to an account's second factor (`manage.py
staff_second_factor`): open a window (new staff, a lost phone, the rollout), reset a lost
device, and list the accounts that need them. Each is recorded in the sign-in ledger with who
did it and why."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from staff_signin.devices import devices_remove, has_second_factor, recovery_codes_left
from staff_signin.ledger import sign_in_record
from staff_signin.models import EnrolmentWindow, SignInEventKind

# At two recovery codes or fewer, staff are asked to make new ones.
RECOVERY_CODES_LOW = 2


def open_window(user: Any) -> EnrolmentWindow | None:
    """The account's open enrolment window, if any."""
    return (
        EnrolmentWindow.objects.filter(user=user, used_at=None, closes_at__gt=timezone.now())
        .order_by("-closes_at")
        .first()
    )


def window_use(*, user: Any) -> None:
    """The account enrolled: its open windows close."""
    EnrolmentWindow.objects.filter(user=user, used_at=None).update(used_at=timezone.now())


def _who_why(by: str, reason: str) -> str:
    return f"{by}: {reason}"


def window_open(*, user: Any, by: str, reason: str, hours: float | None = None) -> EnrolmentWindow:
    """Let the account enrol a second factor for `hours` (STAFF_ENROLMENT_WINDOW_HOURS)."""
    hours = settings.STAFF_ENROLMENT_WINDOW_HOURS if hours is None else hours
    now = timezone.now()
    with transaction.atomic():
        window = EnrolmentWindow.objects.create(
            user=user, opened_at=now, closes_at=now + timedelta(hours=hours), opened_by=by,
            reason=reason,
        )  # fmt: skip
        sign_in_record(
            kind=SignInEventKind.WINDOW_OPENED,
            user=user,
            message=f"{_who_why(by, reason)} (→ {window.closes_at:%Y-%m-%d %H:%M} UTC)",
        )
    return window


def staff_accounts() -> Any:
    return get_user_model().objects.filter(is_active=True, is_staff=True).order_by("username")


def window_open_all(*, by: str, reason: str, days: float) -> list[Any]:
    """The rollout: a window of `days` for every active staff account without a second factor
    yet. The accounts it was opened for."""
    opened = [user for user in staff_accounts() if not has_second_factor(user)]
    for user in opened:
        window_open(user=user, by=by, reason=reason, hours=days * 24)
    return opened


def second_factor_reset(*, user: Any, by: str, reason: str) -> int:
    """Remove the account's devices (a lost phone); how many. Its sessions lose the admin at
    their next request; it enrols again in a window an operator opens."""
    with transaction.atomic():
        removed = devices_remove(user=user)
        sign_in_record(kind=SignInEventKind.RESET, user=user, message=_who_why(by, reason))
    return removed


@dataclass(frozen=True)
class AccountStatus:
    username: str
    enrolled: bool
    recovery_codes: int
    window_closes: Any


def accounts_status(usernames: list[str] | None = None) -> list[AccountStatus]:
    """Every active staff account (or those named): enrolled or not, recovery codes left, an
    open window's end."""
    accounts = staff_accounts()
    if usernames:
        accounts = accounts.filter(username__in=usernames)
    rows = []
    for user in accounts:
        window = open_window(user)
        rows.append(
            AccountStatus(
                username=user.get_username(),
                enrolled=has_second_factor(user),
                recovery_codes=recovery_codes_left(user),
                window_closes=window.closes_at if window else None,
            )
        )
    return rows
