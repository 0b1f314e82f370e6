"""The order page's staff actions, declared (`KINDS`, registered by `CheckoutConfig.ready`), and
what each does when its task runs (`staff_actions`): the work of
`checkout.fulfilment.calls` with the plan checked when the staff member asked and the
action's idempotency key, and what staff read afterwards (in their language)."""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from checkout.fulfilment.calls import order_cancel, order_refresh, order_refund, order_ship
from checkout.fulfilment.rules import (
    CANCEL,
    REFRESH,
    REFUND,
    SHIP,
    CancelPlan,
    OrderActionRefused,
    Shipment,
    ShipPlan,
)
from checkout.models import Order, OrderEvent, OrderEventKind
from checkout.templatetags.shop import mxn
from payments.actions.rules import release_claimed
from staff_actions.kinds import ActionKind, Outcome
from staff_actions.models import StaffAction


def shipment_message(order: Order, shipment: Shipment) -> str:
    if shipment.charged:
        return _(
            "%(reference)s shipped: %(charged)s charged, %(released)s of the hold released."
        ) % {
            "reference": order.reference,
            "charged": mxn(shipment.charged),
            "released": mxn(shipment.released),
        }
    return _("%(reference)s shipped.") % {"reference": order.reference}


def _order(action: StaffAction) -> Order:
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
    order = _order(action)
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
    said = shipment_message(order, shipment)
    return Outcome(said, log=said)


def cancel_run(action: StaffAction) -> Outcome:
    order = _order(action)
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
    order = _order(action)
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
    order = _order(action)
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
