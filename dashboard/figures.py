"""The owner's dashboard on the admin's home page: what was sold, what waits to be shipped, the
money held on cards and until when, and what needs attention. Only reads, a fixed number of
queries whatever the tables' size, each an indexed range or an aggregate over an index.

Where the money figures come from (the truth for money):

- **Charged** is what the provider captured (`Payment.captured_amount`, copied from its
  snapshot), dated by the payments' ledger: the entry that recorded the payment becoming
  `approved` (captured, whether at once or by a capture of a hold). A payment is approved
  once (its status only moves forward), so each charge is counted once, on the day the shop
  recorded it, in the shop's time zone. Anomalies (a status the shop refused) are not charges.
  Nothing is subtracted: a charge later refunded still counts as charged.
- **Refunded** is the shop's record of each refund the provider made (`Refund`: the provider's
  id and amount, written when the provider answered), dated when it was made. A charge voided
  the same day counts as charged and as refunded.
- **Held** is the amount of each payment still `authorized` (not captured, not cancelled),
  with its authorization's expiry as the shop computed it (`authorized_at` +
  `AUTHORIZATION_VALIDITY`, 30 days: payments.snapshots).

"Today" and "this week" are in the shop's time zone (settings.TIME_ZONE); the week starts on
Monday; "the last 30 days" are today and the 29 days before it.

Each part is read only for a staff member who may view its model: sales and held money with
`payments.view_payment` (refunds also with `payments.view_refund`), orders with
`checkout.view_order`, notifications with `webhooks.view_webhookevent`, the customers' mails
with `checkout.view_order` and `checkout.view_ordermail`.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from decimal import Decimal
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from checkout.admission.rules import admission_figures, pace_kind, page_p95
from checkout.mails.selectors import unsent_for
from checkout.models import TO_SHIP, Order, OrderMail
from core.cache_redis import cache_is_redis
from payments.models import (
    AUTHORIZATION_VALIDITY,
    CHARGE_ENTRY,
    EXPIRY_WARNING_DAYS,
    Payment,
    PaymentEvent,
    Refund,
)
from payments.statuses import PaymentStatus
from webhooks.models import GIVEN_UP, LEFT_FOR_STAFF, WebhookEvent, WebhookState

DAYS = 30  # of the sales' figures and chart: today and the 29 days before
PAST_DAYS_KEPT = 3600  # seconds the past days' charges are kept in the cache
EXPIRIES_SHOWN = 5  # the nearest expiries of the money held


@dataclass(frozen=True)
class Figure:
    """An amount and how many movements made it."""

    amount: Decimal = Decimal("0.00")
    count: int = 0

    def __add__(self, other: Figure) -> Figure:
        return Figure(self.amount + other.amount, self.count + other.count)


@dataclass(frozen=True)
class Period:
    """Sales of a period: charged and refunded (refunded is None when not to be shown)."""

    since: date
    charged: Figure
    refunded: Figure | None


@dataclass(frozen=True)
class Day:
    day: date
    charged: Figure


@dataclass(frozen=True)
class Sales:
    today: Period
    week: Period
    month: Period  # the last 30 days
    days: list[Day]  # the last 30 days, oldest first, every day (none missing)


@dataclass(frozen=True)
class Expiry:
    payment_id: int
    reference: str
    amount: Decimal
    expires_at: datetime
    days_left: int  # negative once expired (the provider cancels it; a refresh tells)

    @property
    def soon(self) -> bool:
        """Within the days staff are warned before an expiry."""
        return self.days_left < EXPIRY_WARNING_DAYS


@dataclass(frozen=True)
class Held:
    total: Figure
    nearest: list[Expiry]
    validity_days: int = AUTHORIZATION_VALIDITY.days


@dataclass(frozen=True)
class Attention:
    unknown: int | None = None  # attempts whose outcome is unknown
    notifications_given_up: int | None = None
    notifications_failed: int | None = None
    mails_unsent: int | None = None  # orders with a mail not sent in time

    @property
    def any_shown(self) -> bool:
        return any(
            value is not None
            for value in (
                self.unknown,
                self.notifications_given_up,
                self.notifications_failed,
                self.mails_unsent,
            )
        )


@dataclass(frozen=True)
class Admission:
    """The sale day's queue now: the pace new shoppers are let in at, who sets it, how many
    wait, and the pages' p95 the pace follows (seconds; None: too few pages)."""

    pace: float
    set_by: str
    waiting: int
    page_p95: float | None


def admission_now() -> Admission | None:
    """The queue's figures (None: no Redis, or it cannot be read)."""
    if not cache_is_redis():
        return None
    try:
        pace, waiting = admission_figures()
        return Admission(pace, pace_kind(), waiting, page_p95())
    except Exception:  # the cache's server is down: the rest of the page still shows
        return None


@dataclass(frozen=True)
class Dashboard:
    today: date
    week_start: date
    sales: Sales | None = None
    to_ship: int | None = None
    held: Held | None = None
    attention: Attention = field(default_factory=Attention)
    admission: Admission | None = None

    @property
    def shown(self) -> bool:
        parts = (self.sales, self.to_ship, self.held, self.admission)
        return any(part is not None for part in parts) or self.attention.any_shown


def shop_zone() -> tzinfo:
    return timezone.get_default_timezone()


def start_of(day: date, zone: tzinfo) -> datetime:
    """Midnight starting `day` in `zone` (aware)."""
    return datetime.combine(day, time.min).replace(tzinfo=zone)


def week_start_of(day: date) -> date:
    """The Monday of `day`'s week."""
    return day - timedelta(days=day.weekday())


def _per_day(rows: Iterable[dict[str, Any]]) -> dict[date, Figure]:
    return {row["day"]: Figure(row["amount"] or Decimal("0.00"), row["count"]) for row in rows}


def _sum(per_day: dict[date, Figure], since: date) -> Figure:
    total = Figure()
    for day, figure in per_day.items():
        if day >= since:
            total += figure
    return total


def _charges(since: datetime, until: datetime, zone: tzinfo) -> dict[date, Figure]:
    return _per_day(
        PaymentEvent.objects.filter(CHARGE_ENTRY, created_at__gte=since, created_at__lt=until)
        .annotate(day=TruncDate("created_at", tzinfo=zone))
        .values("day")
        .annotate(amount=Sum("payment__captured_amount"), count=Count("pk"))
        .order_by("day")
    )


def _past_charges(since: datetime, until: datetime, zone: tzinfo) -> dict[date, Figure]:
    """The charges of the days before today: a sum over every charge of those days (100,000 a
    month for a shop of a million orders a year: a second), so kept in the cache under the
    last charge entry written before today's (the primary key read backwards over today's
    entries); an entry dated before today that comes later changes the key."""
    latest = (
        PaymentEvent.objects.filter(CHARGE_ENTRY, created_at__lt=until)
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
    )
    key = f"dashboard:charges:{since.isoformat()}:{until.isoformat()}:{zone}:{latest}"
    try:
        kept = cache.get(key)
    except Exception:  # no cache: summed each time
        kept = None
    if kept is None:
        kept = _charges(since, until, zone)
        with suppress(Exception):
            cache.set(key, kept, timeout=PAST_DAYS_KEPT)
    return kept


def sales(*, today: date, zone: tzinfo, with_refunds: bool) -> Sales:
    """Charged (and refunded) per day over the last 30 days, and today's, this week's and the
    30 days' totals: one query per ledger, each a range on its creation time."""
    first = today - timedelta(days=DAYS - 1)
    since, until = start_of(first, zone), start_of(today + timedelta(days=1), zone)
    midnight = start_of(today, zone)
    charges = {**_past_charges(since, midnight, zone), **_charges(midnight, until, zone)}
    refunds: dict[date, Figure] | None = None
    if with_refunds:
        refunds = _per_day(
            Refund.objects.filter(created_at__gte=since, created_at__lt=until)
            .annotate(day=TruncDate("created_at", tzinfo=zone))
            .values("day")
            .annotate(amount=Sum("amount"), count=Count("pk"))
            .order_by("day")
        )

    def period(start: date) -> Period:
        refunded = None if refunds is None else _sum(refunds, start)
        return Period(since=start, charged=_sum(charges, start), refunded=refunded)

    days = [first + timedelta(days=n) for n in range(DAYS)]
    return Sales(
        today=period(today),
        week=period(week_start_of(today)),
        month=period(first),
        days=[Day(day=day, charged=charges.get(day, Figure())) for day in days],
    )


def orders_to_ship() -> int:
    """Orders paid or held with items still to send (a count over a partial index)."""
    return Order.objects.filter(TO_SHIP).count()


def money_held(*, now: datetime) -> Held:
    """The amount of the authorizations not captured yet, and the nearest to expire."""
    authorized = Payment.objects.filter(status=PaymentStatus.AUTHORIZED)
    total = authorized.aggregate(amount=Sum("amount"), count=Count("pk"))
    nearest = (
        authorized.filter(authorization_expires_at__isnull=False)
        .order_by("authorization_expires_at", "pk")
        .values("pk", "external_reference", "amount", "authorization_expires_at")[:EXPIRIES_SHOWN]
    )
    return Held(
        total=Figure(total["amount"] or Decimal("0.00"), total["count"]),
        nearest=[
            Expiry(
                payment_id=row["pk"],
                reference=row["external_reference"],
                amount=row["amount"],
                expires_at=row["authorization_expires_at"],
                days_left=(row["authorization_expires_at"] - now).days,
            )
            for row in nearest
        ],
    )


def notifications_failed() -> tuple[int, int]:
    """(given up on, left for staff): one aggregate over the failed notifications."""
    counts = WebhookEvent.objects.filter(state=WebhookState.FAILED).aggregate(
        given_up=Count("pk", filter=GIVEN_UP), left=Count("pk", filter=LEFT_FOR_STAFF)
    )
    return counts["given_up"], counts["left"]


def orders_with_mails_unsent(*, now: datetime) -> int:
    """How many orders have a mail not sent in time (over the unsent mails' partial index)."""
    return OrderMail.objects.filter(unsent_for(now=now)).values("order_id").distinct().count()


def owner_dashboard(*, user: Any, now: datetime | None = None) -> Dashboard:
    """The dashboard as `user` may see it: the parts of the models they may not view are left
    out (None), and not read."""
    now = now or timezone.now()
    zone = shop_zone()
    today = timezone.localtime(now, zone).date()
    may = user.has_perm
    payments = may("payments.view_payment")
    orders = may("checkout.view_order")
    given_up = failed = None
    if may("webhooks.view_webhookevent"):
        given_up, failed = notifications_failed()
    attention = Attention(
        unknown=(
            Payment.objects.filter(status=PaymentStatus.UNKNOWN).count() if payments else None
        ),
        notifications_given_up=given_up,
        notifications_failed=failed,
        mails_unsent=(
            orders_with_mails_unsent(now=now) if orders and may("checkout.view_ordermail") else None
        ),
    )
    return Dashboard(
        today=today,
        week_start=week_start_of(today),
        sales=(
            sales(today=today, zone=zone, with_refunds=may("payments.view_refund"))
            if payments
            else None
        ),
        to_ship=orders_to_ship() if orders else None,
        held=money_held(now=now) if payments else None,
        attention=attention,
        admission=admission_now() if orders else None,
    )
