"""An order holds its items for SHOP_RESERVATION_MINUTES. One not paid or authorized by then
expires: its items go back to stock, at once when a page reads the stock (so the shop never
shows as sold out what only expired orders hold) and by beat (`reservations_expire_task`) for
the rest. A payment confirmed after its order expired (or was cancelled) is handled by the order's
sync (`checkout.orders.rules`): the items are taken back if they are still there, else the
payment is given back."""

from __future__ import annotations

import logging
from contextlib import suppress
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from checkout.mails.rules import queue_order_mails
from checkout.mails.selectors import late_payments
from checkout.models import PAYABLE_STATUSES, Fulfilment, Order, OrderEventKind, OrderStatus
from checkout.orders.rules import CLOSED_STATUSES, derive_order_status
from checkout.orders.selectors import order_payments
from checkout.records import order_event_record
from checkout.stock.rules import order_restock_unshipped
from checkout.words import NOT_PAID_IN_TIME
from payments.statuses import PaymentStatus

logger = logging.getLogger(__name__)

# The soonest a reservation of an unpaid order can end (Unix time), as last looked at; absent
# once it has come, or never looked at.
SOONEST_END = "checkout:reservations:soonest-end"


def reservation_over(order: Order) -> bool:
    return (
        order.status in PAYABLE_STATUSES
        and order.reserved_until is not None
        and order.reserved_until <= timezone.now()
    )


def _due(limit: int | None) -> list[int]:
    due = (
        Order.objects.filter(status__in=PAYABLE_STATUSES, reserved_until__lte=timezone.now())
        .order_by("reserved_until")
        .values_list("pk", flat=True)
    )
    return list(due[:limit] if limit else due)


def order_expire(*, order_id: int) -> bool:
    """Expire the order if its reservation is over and its payments have not paid or held it
    (idempotent; an order another transaction is expiring or paying is left to it)."""
    with transaction.atomic():
        order = (
            Order.objects.select_for_update(skip_locked=True)
            .filter(pk=order_id, status__in=PAYABLE_STATUSES, reserved_until__lte=timezone.now())
            .first()
        )
        if order is None:
            return False
        attempts = order_payments(order)
        if derive_order_status(attempts) not in PAYABLE_STATUSES:
            return False  # paid or held a moment ago: its sync (queued) moves it
        order.status = OrderStatus.EXPIRED
        order.fulfilment = Fulfilment.CANCELLED
        order.save(update_fields=["status", "fulfilment", "updated_at"])
        order_restock_unshipped(order)
        minutes = settings.SHOP_RESERVATION_MINUTES
        order_event_record(order, OrderEventKind.EXPIRED, NOT_PAID_IN_TIME(minutes=minutes), None)
        queue_order_mails(order, attempts=attempts, order_locked=True)
    logger.info("order %s expired; its items are back in stock", order.reference)
    return True


def reservations_expire(*, limit: int | None = None) -> int:
    """Expire the orders whose reservation is over (the `limit` longest over; all of them when
    None); how many expired. Cheap when none is due, so every page that shows stock calls it
    first: until the soonest end of a reservation (kept in the cache by the last look) nothing
    is read at all; past it, one read of a partial index, and the next soonest end noted."""
    now = timezone.now()
    if _none_ended_yet(now):
        return 0
    expired = sum(order_expire(order_id=order_id) for order_id in _due(limit))
    _note_soonest_end(now)
    return expired


def _none_ended_yet(now: datetime) -> bool:
    try:
        soonest = cache.get(SOONEST_END)
    except Exception:  # no cache: look in the database
        return False
    return soonest is not None and now.timestamp() < float(soonest)


def _note_soonest_end(now: datetime) -> None:
    """Note the soonest a reservation can end from now on: that of the unpaid orders holding
    items now, or, for an order placed from now on, SHOP_RESERVATION_MINUTES after now (a
    reservation never ends sooner than it did when placed, and one placed later ends later),
    kept until then."""
    held = Order.objects.filter(status__in=PAYABLE_STATUSES, reserved_until__isnull=False)
    soonest = held.aggregate(soonest=Min("reserved_until"))["soonest"]
    placed_from_now = now + timedelta(minutes=settings.SHOP_RESERVATION_MINUTES)
    end = min(soonest, placed_from_now) if soonest is not None else placed_from_now
    seconds = (end - now).total_seconds()
    if seconds <= 0:
        return  # a reservation is over already (its order being paid meanwhile): look again
    with suppress(Exception):
        cache.set(SOONEST_END, end.timestamp(), timeout=max(1, int(seconds)))


def order_expire_if_over(order: Order) -> Order:
    """The order as the shopper should see it now: expired (and saved so) if its reservation
    is over and it is still unpaid."""
    if reservation_over(order) and order_expire(order_id=order.pk):
        order.refresh_from_db()
    return order


def late_payment(order: Order) -> str:
    """For an order the shop closed (expired, or cancelled) whose payment went through after
    that, its items gone: "returning" while that payment is still held (its release is
    queued), "returned" once it was refunded or its hold cancelled; else ""."""
    if order.status not in CLOSED_STATUSES:
        return ""
    late = late_payments(order)
    if any(p.status in (PaymentStatus.APPROVED, PaymentStatus.AUTHORIZED) for p in late):
        return "returning"
    return "returned" if late else ""
