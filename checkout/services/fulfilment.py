"""What staff do with an order: ship it (which captures a held payment, in full or for the items
shipped), cancel it, refund it, read its payments again. The money moves through the payments
app's services (which decide with the provider's answer and keep the payment's ledger); the
order keeps its own ledger of who shipped, cancelled or put back what. No lock is held over a
call to the provider: the order is read, the provider called, and the order written after.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from checkout.ledger import shipment_message
from checkout.models import Fulfilment, Order, OrderEventKind, OrderItem, OrderStatus
from checkout.selectors import order_payments
from checkout.services.mail import queue_order_mails
from checkout.services.orders import CheckoutError
from checkout.services.stock import order_restock_unshipped, record, restock
from checkout.templatetags.shop import mxn
from payments import calls
from payments.errors import PaymentError
from payments.models import IN_FLIGHT, Payment, PaymentStatus, Refund

Actor = Any  # the staff user, kept in the ledgers


class OrderActionRefused(CheckoutError):
    """The order's state (or its payment's, as the provider answered) does not allow it."""


@dataclass(frozen=True)
class Shipment:
    charged: Decimal  # captured by this shipment (0 when the payment was already charged)
    released: Decimal  # of the hold, given back to the card
    complete: bool  # nothing is left to ship


@contextmanager
def _provider_refusals() -> Iterator[None]:
    """A refusal of the payments app (its message is readable) refuses the order's action."""
    try:
        yield
    except PaymentError as exc:
        raise OrderActionRefused(exc.message) from exc


def _order(order_id: int) -> Order:
    return Order.objects.prefetch_related("items").get(pk=order_id)


def _charge(order: Order) -> Payment | None:
    """The order's payment that holds or took the money (its latest), if any."""
    held = [
        p
        for p in order_payments(order)
        if p.status in (PaymentStatus.AUTHORIZED, PaymentStatus.APPROVED)
    ]
    return held[-1] if held else None


# --- Ship -------------------------------------------------------------------------------------


def shipping_amount(order: Order, quantities: dict[int, int]) -> Decimal:
    """What the items shipped cost (the amount a held payment is captured for)."""
    prices = {item.pk: item.unit_price for item in order.items.all()}
    return sum((prices[pk] * count for pk, count in quantities.items()), Decimal("0.00"))


def _check_quantities(order: Order, quantities: dict[int, int] | None) -> dict[int, int]:
    """The items to ship (all that is left when None), each within what is left to ship."""
    items = {item.pk: item for item in order.items.all()}
    if quantities is None:
        quantities = {pk: item.left_to_ship for pk, item in items.items()}
    chosen = {pk: count for pk, count in quantities.items() if count > 0}
    for pk, count in chosen.items():
        if pk not in items or count > items[pk].left_to_ship:
            raise OrderActionRefused(_("Choose at most what is left to ship of each item."))
    if not chosen:
        raise OrderActionRefused(_("Nothing is left to ship in this order."))
    return chosen


def order_ship(*, order_id: int, quantities: dict[int, int] | None, actor: Actor) -> Shipment:
    """Ship the order's items (`quantities`: item id -> how many; None: all that is left). A
    held payment is captured for what is shipped (all of it when everything is), and the rest
    of the hold is released (the items not shipped go back to stock); a charged payment only
    records the shipment."""
    order = _order(order_id)
    if order.fulfilment in (Fulfilment.SHIPPED, Fulfilment.CANCELLED):
        raise OrderActionRefused(_("This order is already shipped or cancelled."))
    chosen = _check_quantities(order, quantities)
    payment = _charge(order)
    if payment is None:
        raise OrderActionRefused(_("This order has no payment held or charged: it cannot ship."))
    charged = released = Decimal("0.00")
    if payment.status == PaymentStatus.AUTHORIZED:
        charged = shipping_amount(order, chosen)
        with _provider_refusals():
            calls.payment_capture(payment=payment, amount=charged, actor=actor)
        released = payment.amount - charged
    return _record_shipment(order, chosen, charged, released, actor)


def _record_shipment(
    order: Order, chosen: dict[int, int], charged: Decimal, released: Decimal, actor: Actor
) -> Shipment:
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(pk=order.pk)
        shipped = []
        for item in OrderItem.objects.select_for_update().filter(order=locked, pk__in=chosen):
            item.quantity_shipped += chosen[item.pk]
            item.save(update_fields=["quantity_shipped"])
            shipped.append(f"{chosen[item.pk]} × {item.name}")
        record(locked, OrderEventKind.SHIPPED, shipment_message(shipped, charged, released), actor)
        # A shipment of a charged order moves no payment (no sync follows): its mail is due now.
        queue_order_mails(locked)
    if released:  # the hold is gone: what was not shipped will not be
        order_restock_unshipped(locked, actor)
    items = list(locked.items.all())
    complete = all(item.left_to_ship == 0 for item in items)
    everything = all(item.quantity_shipped == item.quantity for item in items)
    Order.objects.filter(pk=locked.pk).update(
        fulfilment=Fulfilment.SHIPPED if everything else Fulfilment.PARTIALLY_SHIPPED
    )
    return Shipment(charged=charged, released=released, complete=complete)


# --- Cancel, refund, refresh ------------------------------------------------------------------


def order_cancel(*, order_id: int, actor: Actor) -> None:
    """Cancel an order that has not shipped: its held payment is cancelled, or its charged
    payment refunded in full, and its items go back to stock."""
    order = _order(order_id)
    if order.fulfilment != Fulfilment.UNFULFILLED:
        raise OrderActionRefused(
            _("Only an order that has not shipped can be cancelled; refund it instead.")
        )
    if any(p.status in (*IN_FLIGHT, PaymentStatus.PENDING) for p in order_payments(order)):
        raise OrderActionRefused(
            _("A payment of this order is still being confirmed; try again in a few minutes.")
        )
    payment = _charge(order)
    with _provider_refusals():
        if payment is not None and payment.status == PaymentStatus.AUTHORIZED:
            calls.payment_cancel(payment=payment, actor=actor)
        elif payment is not None and payment.refundable_amount > 0:
            calls.payment_refund(
                payment=payment,
                amount=payment.refundable_amount,
                reason=_("Order cancelled"),
                actor=actor,
            )
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(pk=order.pk)
        locked.fulfilment = Fulfilment.CANCELLED
        if payment is None:  # no money to give back: no payment will move the order
            locked.status = OrderStatus.CANCELLED
        locked.save(update_fields=["fulfilment", "status", "updated_at"])
        record(locked, OrderEventKind.CANCELLED, "", actor)
        queue_order_mails(locked)  # with no payment to move it, no sync follows
    order_restock_unshipped(locked, actor)


def order_refund(
    *,
    order_id: int,
    amount: Decimal,
    reason: str,
    returned: dict[int, int],
    actor: Actor,
) -> Refund:
    """Refund part or all of the order's charged payment, and put the `returned` items (item id
    -> how many; returned by the customer, or not sent) back in stock."""
    order = _order(order_id)
    payment = _charge(order)
    if payment is None or not payment.can_refund():
        raise OrderActionRefused(_("This order has no charged payment left to refund."))
    with _provider_refusals():
        refund = calls.payment_refund(payment=payment, amount=amount, reason=reason, actor=actor)
    record(order, OrderEventKind.REFUNDED, f"{mxn(amount)} {reason}".strip(), actor)
    restock(order, {pk: count for pk, count in returned.items() if count > 0}, actor)
    return refund


def order_refresh(*, order_id: int, actor: Actor) -> int:
    """Read the order's payments from the provider again; how many were read."""
    order = _order(order_id)
    read = 0
    with _provider_refusals():
        for payment in order_payments(order):
            if payment.provider_id:
                calls.payment_refresh(payment=payment, actor=actor)
                read += 1
    record(order, OrderEventKind.REFRESHED, "", actor)
    return read
