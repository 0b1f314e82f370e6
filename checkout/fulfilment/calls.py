"""What staff do with an order, done by the staff actions' task: ship it (which captures a held
payment, in full or for the items shipped), cancel it, refund it, read its payments again. The
checks come first (`checkout.fulfilment.rules`, which the admin uses before it asks); the money
moves through the payments app's calls (which decide with the provider's answer and keep the
payment's ledger); the order keeps its own ledger of who shipped, cancelled or put back what. No
lock is held over a call to the provider: the order is read, the provider called, and the order
written after.

The order page's staff actions are declared here (`KINDS`, registered by `CheckoutConfig.ready`)
with what each does when its task runs (`staff_actions`: `kind_named(...).run`): the work above
with the plan checked when the staff member asked (its payment claimed then) and the action's
idempotency key, so that a re-run of its task asks the provider the same thing again; and what
staff read afterwards (in their language).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from checkout.fulfilment.rules import (
    CANCEL,
    REFRESH,
    REFUND,
    SHIP,
    CancelPlan,
    OrderActionRefused,
    Shipment,
    ShipPlan,
    cancel_plan,
    refund_payment,
    ship_plan,
)
from checkout.mails.rules import queue_order_mails
from checkout.models import Fulfilment, Order, OrderEvent, OrderEventKind, OrderItem, OrderStatus
from checkout.orders.selectors import order_payments
from checkout.records import order_event_record
from checkout.stock.rules import order_restock_unshipped, restock
from checkout.templatetags.shop import mxn
from checkout.words import shipment_message
from core.errors import TryLater
from core.ledger import Actor
from payments.actions.calls import payment_cancel, payment_capture, payment_refund
from payments.actions.rules import release_claimed
from payments.models import Payment, Refund
from payments.provider.errors import PaymentError
from payments.rereading.calls import payment_refresh
from staff_actions.kinds import ActionKind, Outcome
from staff_actions.models import StaffAction


@contextmanager
def _provider_refusals() -> Iterator[None]:
    """A refusal of the payments app (its message is readable) refuses the order's action; a
    provider asking to slow down does not (its task tries again: `staff_actions.calls`)."""
    try:
        yield
    except TryLater:
        raise
    except PaymentError as exc:
        raise OrderActionRefused(exc.message) from exc


def _order(order_id: int) -> Order:
    return Order.objects.prefetch_related("items").get(pk=order_id)


# --- Ship -------------------------------------------------------------------------------------


def order_ship(
    *,
    order_id: int,
    quantities: dict[int, int] | None,
    actor: Actor,
    plan: ShipPlan | None = None,
    idempotency_key: str = "",
) -> Shipment:
    """Ship the order's items (`quantities`: item id -> how many; None: all that is left). A
    held payment is captured for what is shipped (all of it when everything is), and the rest
    of the hold is released (the items not shipped go back to stock); a charged payment only
    records the shipment. `plan`: checked when a staff member asked, its payment claimed."""
    order = _order(order_id)
    claimed = plan is not None
    plan = plan or ship_plan(order, quantities)
    charged = released = Decimal("0.00")
    if plan.capture:
        with _provider_refusals():
            payment_capture(
                payment=plan.payment,
                amount=plan.capture,
                actor=actor,
                idempotency_key=idempotency_key,
                claimed=claimed,
            )
        charged = plan.capture
        released = plan.payment.amount - charged
    return _record_shipment(order, plan.chosen, charged, released, actor)


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
        order_event_record(
            locked, OrderEventKind.SHIPPED, shipment_message(shipped, charged, released), actor
        )
        # A shipment of a charged order moves no payment (no sync follows): its mail is due now.
        queue_order_mails(locked, order_locked=True)
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


def order_cancel(
    *, order_id: int, actor: Actor, plan: CancelPlan | None = None, idempotency_key: str = ""
) -> None:
    """Cancel an order that has not shipped: its held payment is cancelled, or its charged
    payment refunded in full, and its items go back to stock. `plan`: checked when a staff
    member asked, its payment claimed."""
    order = _order(order_id)
    claimed = plan is not None
    plan = plan or cancel_plan(order)
    payment = plan.payment
    with _provider_refusals():
        if payment is not None and plan.how == "cancel":
            payment_cancel(
                payment=payment, actor=actor, idempotency_key=idempotency_key, claimed=claimed
            )
        elif payment is not None and plan.how == "refund":
            payment_refund(
                payment=payment,
                amount=plan.amount,
                reason=_("Order cancelled"),
                actor=actor,
                idempotency_key=idempotency_key,
                claimed=claimed,
            )
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(pk=order.pk)
        locked.fulfilment = Fulfilment.CANCELLED
        if payment is None:  # no money to give back: no payment will move the order
            locked.status = OrderStatus.CANCELLED
        locked.save(update_fields=["fulfilment", "status", "updated_at"])
        order_event_record(locked, OrderEventKind.CANCELLED, "", actor)
        # With no payment to move it, no sync follows.
        queue_order_mails(locked, order_locked=True)
    order_restock_unshipped(locked, actor)


def order_refund(
    *,
    order_id: int,
    amount: Decimal,
    reason: str,
    returned: dict[int, int],
    actor: Actor,
    payment: Payment | None = None,
    idempotency_key: str = "",
) -> Refund:
    """Refund part or all of the order's charged payment, and put the `returned` items (item id
    -> how many; returned by the customer, or not sent) back in stock. `payment`: checked and
    claimed when a staff member asked."""
    order = _order(order_id)
    claimed = payment is not None
    payment = payment or refund_payment(order)
    with _provider_refusals():
        refund = payment_refund(
            payment=payment,
            amount=amount,
            reason=reason,
            actor=actor,
            idempotency_key=idempotency_key,
            claimed=claimed,
        )
    order_event_record(order, OrderEventKind.REFUNDED, f"{mxn(amount)} {reason}".strip(), actor)
    restock(order, {pk: count for pk, count in returned.items() if count > 0}, actor)
    return refund


def order_refresh(*, order_id: int, actor: Actor) -> int:
    """Read the order's payments from the provider again; how many were read."""
    order = _order(order_id)
    read = 0
    with _provider_refusals():
        for payment in order_payments(order):
            if payment.provider_id:
                payment_refresh(payment=payment, actor=actor)
                read += 1
    order_event_record(order, OrderEventKind.REFRESHED, "", actor)
    return read


# --- The order page's staff actions: what each does when its task runs ---------------------


def _shipped_said(order: Order, shipment: Shipment) -> str:
    if shipment.charged:
        return _(
            "%(reference)s shipped: %(charged)s charged, %(released)s of the hold released."
        ) % {
            "reference": order.reference,
            "charged": mxn(shipment.charged),
            "released": mxn(shipment.released),
        }
    return _("%(reference)s shipped.") % {"reference": order.reference}


def _action_order(action: StaffAction) -> Order:
    return Order.objects.prefetch_related("items").get(pk=action.target_id)


def _recorded(order: Order, kind: str, action: StaffAction) -> bool:
    """A run before this one did the order's part already (its worker died after)."""
    return (
        action.runs > 1
        and OrderEvent.objects.filter(
            order=order, kind=kind, created_at__gte=action.created_at
        ).exists()
    )


def _refused(order: Order, error: OrderActionRefused) -> Outcome:
    return Outcome(f"{order.reference}: {error.message}", ok=False)


def ship_run(action: StaffAction) -> Outcome:
    order = _action_order(action)
    assert action.payment is not None, action
    capture = Decimal(str(action.params["capture"]))
    plan = ShipPlan(
        chosen={int(pk): int(count) for pk, count in action.params["quantities"].items()},
        payment=action.payment,
        capture=capture,
    )
    if _recorded(order, OrderEventKind.SHIPPED, action):
        released = action.payment.amount - capture if capture else Decimal("0.00")
        shipment = Shipment(charged=capture, released=released, complete=True)
    else:
        try:
            shipment = order_ship(
                order_id=order.pk,
                quantities=None,
                actor=action.actor,
                plan=plan,
                idempotency_key=action.idempotency_key,
            )
        except OrderActionRefused as exc:
            return _refused(order, exc)
    said = _shipped_said(order, shipment)
    return Outcome(said, log=said)


def cancel_run(action: StaffAction) -> Outcome:
    order = _action_order(action)
    plan = CancelPlan(
        payment=action.payment,
        how=str(action.params.get("how", "")),
        amount=Decimal(str(action.params.get("amount", "0"))),
    )
    if not _recorded(order, OrderEventKind.CANCELLED, action):
        try:
            order_cancel(
                order_id=order.pk,
                actor=action.actor,
                plan=plan,
                idempotency_key=action.idempotency_key,
            )
        except OrderActionRefused as exc:
            return _refused(order, exc)
    said = _("%(reference)s cancelled; its items are back in stock.") % {
        "reference": order.reference
    }
    return Outcome(said, log=said)


def refund_run(action: StaffAction) -> Outcome:
    order = _action_order(action)
    amount = Decimal(str(action.params["amount"]))
    if not _recorded(order, OrderEventKind.REFUNDED, action):
        try:
            order_refund(
                order_id=order.pk,
                amount=amount,
                reason=str(action.params.get("reason", "")),
                returned={int(pk): int(n) for pk, n in action.params.get("returned", {}).items()},
                actor=action.actor,
                payment=action.payment,
                idempotency_key=action.idempotency_key,
            )
        except OrderActionRefused as exc:
            return _refused(order, exc)
    said = _("%(reference)s: %(amount)s refunded.") % {
        "reference": order.reference,
        "amount": mxn(amount),
    }
    return Outcome(said, log=said)


def refresh_run(action: StaffAction) -> Outcome:
    order = _action_order(action)
    try:
        count = order_refresh(order_id=order.pk, actor=action.actor)
    except OrderActionRefused as exc:
        return _refused(order, exc)
    said = _("%(reference)s: %(count)d payments read from the provider.") % {
        "reference": order.reference,
        "count": count,
    }
    return Outcome(said, log=said)


KINDS = (
    ActionKind(SHIP, gettext_lazy("shipment"), ship_run, release=release_claimed),
    ActionKind(CANCEL, gettext_lazy("order cancellation"), cancel_run, release=release_claimed),
    ActionKind(REFUND, gettext_lazy("refund"), refund_run, release=release_claimed),
    ActionKind(REFRESH, gettext_lazy("refresh"), refresh_run, reads=True, release=release_claimed),
)
