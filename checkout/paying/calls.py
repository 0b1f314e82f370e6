"""An order is paid once: a second charge that went through is given back (by the provider: a
task's work, which no web request imports; the order's sync queues it)."""

from __future__ import annotations

import logging

from checkout.models import Order, OrderEventKind, OrderStatus
from checkout.orders.rules import CLOSED_STATUSES, charges_held
from checkout.orders.selectors import order_payments
from checkout.records import order_event_record
from checkout.words import RETURNED_AFTER_CANCELLATION, RETURNED_AFTER_EXPIRY
from payments.actions.calls import payment_cancel, payment_refund
from payments.provider.errors import PaymentError, PaymentInProgress, ProviderDown
from payments.statuses import PaymentStatus

logger = logging.getLogger(__name__)


class ReleasePending(Exception):
    """A second charge of an order is still held: its release is to be tried again."""


def order_release_duplicates(*, reference: str) -> int:
    """An order is paid once. If two attempts both went through (e.g. a 3-D Secure challenge
    finished in another tab after a second card paid), the extra ones are given back: refunded
    in full, or their authorization cancelled. An order the shop closed before its payment came
    (it expired, or was cancelled; its items sold meanwhile) keeps none, and its ledger says
    so. Returns how many were released; raises `ReleasePending` when one could not be released
    yet (to be tried again)."""
    order = Order.objects.filter(reference=reference).first()
    if order is None:
        return 0
    closed = order.status in CLOSED_STATUSES
    expired = order.status == OrderStatus.EXPIRED
    if not closed:
        reason = f"duplicate payment of order {reference}"
    elif expired:
        reason = f"order {reference} had expired, its items sold"
    else:
        reason = f"order {reference} was cancelled, its items sold"
    released, pending = 0, 0
    for extra in charges_held(order_payments(order))[0 if closed else 1 :]:
        try:
            if extra.status == PaymentStatus.APPROVED:
                payment_refund(payment=extra, reason=reason)
            else:
                payment_cancel(payment=extra)
        except (PaymentInProgress, ProviderDown) as exc:
            # Another action on it is running, or the provider did not answer (or confirm):
            # the task runs again later and finds it released, or releases it then.
            logger.info("order %s: duplicate payment %s: %s", reference, extra.pk, exc.message)
            pending += 1
            continue
        except PaymentError as exc:
            logger.error(
                "order %s: duplicate payment %s not released: %s", reference, extra.pk, exc.message
            )
            continue
        logger.warning("order %s: duplicate payment %s released", reference, extra.pk)
        if closed:
            given_back = RETURNED_AFTER_EXPIRY if expired else RETURNED_AFTER_CANCELLATION
            order_event_record(order, OrderEventKind.RETURNED, given_back(), None)
        released += 1
    if pending:
        raise ReleasePending(f"{pending} duplicate payment(s) of order {reference} still held")
    return released
