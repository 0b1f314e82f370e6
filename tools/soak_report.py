"""What a soak run (`make soak`, tools/soak.py) exercised, and whether it passes: the orders it
tried and what became of them, the payments, the staff's actions and the extra notifications,
the processes and the shop's agreement with the provider. Pure: no demo, no Django, no HTTP.

A run that was refused most of its orders, or whose orders never reached a payment, or that did
not try each kind of payment, says nothing of the demo under load: it fails like a broken one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

# At most this share of the orders tried may be refused (any error status) or go unanswered.
MAX_REFUSED_SHARE = 0.02
# At most this share of the orders placed may end with no payment at the provider.
MAX_UNPAID_SHARE = 0.02
# What each run must have done at least once to say anything of it.
LEAST_EXERCISED: Mapping[str, int] = MappingProxyType(
    {
        "approved payments": 1,
        "declined payments": 1,
        "3-D Secure challenges passed": 1,
        "3-D Secure challenges failed": 1,
        "refunds": 1,
        "extra notifications": 1,
    }
)


@dataclass
class Run:
    """What a soak run did and found."""

    minutes: float = 0.0  # of traffic
    seconds: float = 0.0  # in all: the demo's start, the traffic, the settling
    # Shopper walks started; orders placed; placements answered with an error status (by status
    # code) or not answered at all (a request error).
    orders_tried: int = 0
    orders_created: int = 0
    orders_refused: Counter[int] = field(default_factory=Counter)
    orders_unanswered: int = 0
    # Payment attempts answered with an error status (by status code).
    attempts_refused: Counter[int] = field(default_factory=Counter)
    # What the payment page told the shopper: approved, authorized, declined, "challenge
    # passed" / "challenge failed" / "challenge undecided" (3-D Secure), or another result.
    payments: Counter[str] = field(default_factory=Counter)
    # Once settled: payments the provider holds, and orders placed that have none there.
    provider_payments: int = 0
    orders_unpaid: int = 0
    # The shop's ledger once settled: captures, cancels and refunds made; refunds staff asked for.
    captures: int = 0
    cancels: int = 0
    refunds: int = 0
    refunds_asked: int = 0
    notifications: int = 0
    notifications_refused: Counter[int] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    # Process -> checks it was found dead at; how many times bin/keep-running started one again.
    dead: dict[str, int] = field(default_factory=dict)
    restarts: int = 0
    # Where the shop differs from the provider (tools/verdict.py), by kind: a few examples each.
    wrong: dict[str, list[str]] = field(default_factory=dict)

    @property
    def challenges(self) -> int:
        return sum(n for outcome, n in self.payments.items() if outcome.startswith("challenge"))

    def exercised(self) -> dict[str, int]:
        """The counts LEAST_EXERCISED names."""
        return {
            "approved payments": self.payments["approved"],
            "declined payments": self.payments["declined"],
            "3-D Secure challenges passed": self.payments["challenge passed"],
            "3-D Secure challenges failed": self.payments["challenge failed"],
            "refunds": self.refunds,
            "extra notifications": self.notifications,
        }


@dataclass(frozen=True)
class Thresholds:
    max_refused_share: float = MAX_REFUSED_SHARE
    max_unpaid_share: float = MAX_UNPAID_SHARE
    least_exercised: Mapping[str, int] = field(default_factory=lambda: LEAST_EXERCISED)


def _by_status(counts: Counter[int]) -> str:
    return ", ".join(f"{status}: {n}" for status, n in sorted(counts.items())) or "none"


def _refused(counts: Counter[int]) -> str:
    total = sum(counts.values())
    return f"{total} refused" + (f" ({_by_status(counts)})" if total else "")


def judge(run: Run, thresholds: Thresholds | None = None) -> list[str]:
    """Why the run fails, one sentence each; an empty list when it passes."""
    thresholds = thresholds or Thresholds()
    failures = []
    not_taken = sum(run.orders_refused.values()) + run.orders_unanswered
    if run.orders_tried == 0:
        failures.append("no order was tried")
    elif not_taken > thresholds.max_refused_share * run.orders_tried:
        failures.append(
            f"{not_taken} of {run.orders_tried} orders were refused or unanswered "
            f"({not_taken / run.orders_tried:.1%}, at most {thresholds.max_refused_share:.1%} "
            f"allowed): by status {_by_status(run.orders_refused)}, "
            f"{run.orders_unanswered} unanswered"
        )
    if run.provider_payments == 0:
        failures.append("no order reached a payment at the provider")
    if run.orders_unpaid > thresholds.max_unpaid_share * run.orders_created:
        failures.append(
            f"{run.orders_unpaid} of {run.orders_created} orders placed never reached a payment "
            f"at the provider (at most {thresholds.max_unpaid_share:.1%} allowed); payment "
            f"attempts refused by status: {_by_status(run.attempts_refused)}"
        )
    refused_notifications = sum(run.notifications_refused.values())
    sent = run.notifications + refused_notifications
    if refused_notifications > thresholds.max_refused_share * sent:
        failures.append(
            f"{refused_notifications} of {sent} extra notifications were refused "
            f"({_by_status(run.notifications_refused)})"
        )
    done = run.exercised()
    failures += [
        f"too little exercised: {done[name]} {name}, at least {least} wanted"
        for name, least in thresholds.least_exercised.items()
        if done[name] < least
    ]
    if dead := {name: n for name, n in run.dead.items() if n}:
        failures.append(f"processes found dead: {dead}")
    if run.restarts:
        failures.append(f"processes started again: {run.restarts}")
    if run.wrong:
        failures.append(
            "the shop differs from the provider: "
            + ", ".join(f"{len(found)} {kind}" for kind, found in run.wrong.items())
        )
    return failures


def summary(run: Run, failures: list[str]) -> str:
    """What the run exercised and its verdict, for the terminal."""
    p = run.payments
    others = {k: n for k, n in p.items() if k not in _NAMED_OUTCOMES}
    lines = [
        f"soak of {run.minutes:g} minute{'s' * (run.minutes != 1)} of traffic, "
        f"{run.seconds / 60:.1f} minutes in all",
        f"  orders: {run.orders_tried} tried, {run.orders_created} created, "
        f"{_refused(run.orders_refused)}, {run.orders_unanswered} unanswered; "
        f"{run.orders_unpaid} never reached a payment",
        f"  payments: {run.provider_payments} at the provider; {p['approved']} approved, "
        f"{p['authorized']} authorized, {p['declined']} declined, {run.challenges} challenged "
        f"({p['challenge passed']} passed, {p['challenge failed']} failed, "
        f"{p['challenge undecided']} undecided)"
        + (f", other results: {dict(sorted(others.items()))}" if others else "")
        + f"; payment attempts {_refused(run.attempts_refused)}",
        f"  staff: {run.captures} captures, {run.cancels} cancels, {run.refunds} refunds "
        f"({run.refunds_asked} asked in the admin)",
        f"  notifications: {run.notifications} sent extra, {_refused(run.notifications_refused)}",
        f"  processes: dead at a check {({k: n for k, n in run.dead.items() if n}) or 0}, "
        f"started again {run.restarts}",
        "  shop vs provider: "
        + (
            "; ".join(f"{len(found)} {kind} {found[:3]}" for kind, found in run.wrong.items())
            or "every payment and order right"
        ),
        f"  request errors: {len(run.errors)}",
        *(f"    {error}" for error in run.errors[:10]),
        "result: " + ("FAIL" if failures else "PASS"),
        *(f"  - {failure}" for failure in failures),
    ]
    return "\n".join(lines)


_NAMED_OUTCOMES = frozenset(
    {
        "approved",
        "authorized",
        "declined",
        "challenge passed",
        "challenge failed",
        "challenge undecided",
    }
)
