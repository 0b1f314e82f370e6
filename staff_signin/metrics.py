"""The sign-in's Prometheus counters: every step recorded in the sign-in ledger, by kind."""

from __future__ import annotations

from prometheus_client import Counter

from staff_signin.models import SignInEventKind

SIGN_IN_EVENTS = Counter(
    "shop_staff_signin_events_total",
    "Staff sign-in steps and second-factor changes, by kind (code_refused: a wrong or "
    "too early code; rate_limited: the 429 page).",
    ["kind"],
)


def sign_in_counted(kind: str) -> None:
    SIGN_IN_EVENTS.labels(kind if kind in SignInEventKind.values else "other").inc()
