"""`manage.py staff_second_factor open|reset|status`: an operator's hand on the staff's second
factor. Each change is recorded in the sign-in ledger with who did it (--by, else the operating
system's user) and why (--reason). No secret or code is ever printed."""

from __future__ import annotations

import getpass
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from staff_signin.windows import (
    RECOVERY_CODES_LOW,
    accounts_status,
    second_factor_reset,
    window_open,
    window_open_all,
)


def _operator() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment
        return "operator"


class Command(BaseCommand):
    help = (
        "Open an enrolment window for a staff account (open USER; open --all --days 7 for "
        "every account without a second factor), reset a lost device (reset USER), or list "
        "the accounts without a second factor or low on recovery codes (status [USER])."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("action", choices=["open", "reset", "status"])
        parser.add_argument("username", nargs="?", help="the staff account's username")
        parser.add_argument(
            "--all", action="store_true", help="open: every active staff account without one"
        )
        parser.add_argument(
            "--days", type=float, help="open: how long the window stays open, in days"
        )
        parser.add_argument("--hours", type=float, help="open: how long, in hours")
        parser.add_argument("--by", default="", help="who does it (default: the system's user)")
        parser.add_argument("--reason", default="", help="why, for the sign-in ledger")

    def handle(self, *args: Any, **options: Any) -> None:
        action, username = options["action"], options["username"]
        if action == "status":
            self._status(username)
            return
        by = options["by"].strip() or _operator()
        reason = options["reason"].strip() or "no reason given"
        if action == "open" and options["all"]:
            if username:
                raise CommandError("Give either a username or --all, not both.")
            self._open_all(by, reason, options["days"], options["hours"])
            return
        user = self._account(username)
        if action == "open":
            hours = self._hours(options["days"], options["hours"])
            window = window_open(user=user, by=by, reason=reason, hours=hours)
            self.stdout.write(
                f"{user.get_username()} may enrol a second factor until "
                f"{timezone.localtime(window.closes_at):%Y-%m-%d %H:%M} (signing in to the "
                "admin with their password takes them there)."
            )
        else:
            removed = second_factor_reset(user=user, by=by, reason=reason)
            self.stdout.write(
                f"{user.get_username()}: {removed} device(s) removed; their sessions lose the "
                "admin at their next request. To let them enrol again: "
                f"manage.py staff_second_factor open {user.get_username()}"
            )

    def _hours(self, days: float | None, hours: float | None) -> float:
        if days is not None and hours is not None:
            raise CommandError("Give --days or --hours, not both.")
        value = days * 24 if days is not None else hours
        value = settings.STAFF_ENROLMENT_WINDOW_HOURS if value is None else value
        if not 0 < value <= 31 * 24:
            raise CommandError("A window stays open for more than 0 hours and at most 31 days.")
        return value

    def _open_all(self, by: str, reason: str, days: float | None, hours: float | None) -> None:
        span = self._hours(days, hours)
        opened = window_open_all(by=by, reason=reason, days=span / 24)
        names = ", ".join(user.get_username() for user in opened) or "none"
        self.stdout.write(
            f"Enrolment windows opened for {len(opened)} staff account(s) without a second "
            f"factor, for {span / 24:g} day(s): {names}. After that, accounts that have not "
            "enrolled are refused the admin."
        )

    def _account(self, username: str | None) -> Any:
        if not username:
            raise CommandError("Name the staff account (or use open --all).")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No account is named {username!r}.")
        if not (user.is_staff and user.is_active):
            raise CommandError(f"{username!r} is not an active staff account.")
        return user

    def _status(self, username: str | None) -> None:
        rows = accounts_status([username] if username else None)
        if username and not rows:
            raise CommandError(f"No active staff account is named {username!r}.")
        if not username:
            rows = [r for r in rows if not r.enrolled or r.recovery_codes <= RECOVERY_CODES_LOW]
            if not rows:
                self.stdout.write("Every staff account has a second factor and recovery codes.")
                return
        for row in rows:
            state = "second factor: yes" if row.enrolled else "second factor: NO"
            window = (
                f"enrolment open until {timezone.localtime(row.window_closes):%Y-%m-%d %H:%M}"
                if row.window_closes
                else "no enrolment window"
            )
            self.stdout.write(
                f"{row.username}\t{state}\trecovery codes left: {row.recovery_codes}\t{window}"
            )
