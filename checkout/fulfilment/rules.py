"""What an order allows staff to do, checked before anything is asked of the provider: what is
left to ship and what it costs, which payment holds or took the money, whether the order may
ship, be cancelled or refunded; and what each order action asks, once its form is valid. No call
to the provider here: the admin checks with these, and `checkout.fulfilment.calls` (run by the
staff actions' task) does the work."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext as _

from checkout.models import Fulfilment, Order
from checkout.orders.selectors import order_payments
from core.errors import Refusal
from payments.actions.rules import claim
from payments.models import Payment, PaymentIntent
from payments.statuses import IN_FLIGHT, PaymentStatus
from staff_actions.rules import Asked


class OrderActionRefused(Refusal):
    """The order's state (or its payment's, as the provider answered) does not allow it."""


@dataclass(frozen=True)
class Shipment:
    charged: Decimal  # captured by this shipment (0 when the payment was already charged)
    released: Decimal  # of the hold, given back to the card
    complete: bool  # nothing is left to ship


# The order actions' kinds (`checkout.fulfilment.calls` runs them).
SHIP = "checkout.ship"
CANCEL = "checkout.cancel"
REFUND = "checkout.refund"
REFRESH = "checkout.refresh"


@dataclass(frozen=True)
class ShipPlan:
    """What a shipment does: the items (item id -> how many), the payment that pays for it,
    and what is captured of it (0 when it is charged already)."""

    chosen: dict[int, int]
    payment: Payment
    capture: Decimal


@dataclass(frozen=True)
class CancelPlan:
    """What cancelling does with the money: cancel the hold, refund the charge, or nothing."""

    payment: Payment | None
    how: str  # "cancel", "refund" or "" (no money to give back)
    amount: Decimal


def order_charge(order: Order) -> Payment | None:
    """The order's payment that holds or took the money (its latest), if any."""
    held = [
        p
        for p in order_payments(order)
        if p.status in (PaymentStatus.AUTHORIZED, PaymentStatus.APPROVED)
    ]
    return held[-1] if held else None


def shipping_amount(order: Order, quantities: dict[int, int]) -> Decimal:
    """What the items shipped cost (the amount a held payment is captured for)."""
    prices = {item.pk: item.unit_price for item in order.items.all()}
    return sum((prices[pk] * count for pk, count in quantities.items()), Decimal("0.00"))


def check_quantities(order: Order, quantities: dict[int, int] | None) -> dict[int, int]:
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


def ship_plan(order: Order, quantities: dict[int, int] | None) -> ShipPlan:
    """Check that the order may ship these items (None: all that is left) and say what the
    shipment charges: a held payment is captured for what is shipped."""
    if order.fulfilment in (Fulfilment.SHIPPED, Fulfilment.CANCELLED):
        raise OrderActionRefused(_("This order is already shipped or cancelled."))
    chosen = check_quantities(order, quantities)
    payment = order_charge(order)
    if payment is None:
        raise OrderActionRefused(_("This order has no payment held or charged: it cannot ship."))
    capture = Decimal("0.00")
    if payment.status == PaymentStatus.AUTHORIZED:
        capture = shipping_amount(order, chosen)
    return ShipPlan(chosen=chosen, payment=payment, capture=capture)


def cancel_plan(order: Order) -> CancelPlan:
    """Check that the order may be cancelled (not shipped, no payment being confirmed) and say
    what becomes of its money."""
    if order.fulfilment != Fulfilment.UNFULFILLED:
        raise OrderActionRefused(
            _("Only an order that has not shipped can be cancelled; refund it instead.")
        )
    if any(p.status in (*IN_FLIGHT, PaymentStatus.PENDING) for p in order_payments(order)):
        raise OrderActionRefused(
            _("A payment of this order is still being confirmed; try again in a few minutes.")
        )
    payment = order_charge(order)
    if payment is not None and payment.status == PaymentStatus.AUTHORIZED:
        return CancelPlan(payment=payment, how="cancel", amount=payment.amount)
    if payment is not None and payment.refundable_amount > 0:
        return CancelPlan(payment=payment, how="refund", amount=payment.refundable_amount)
    return CancelPlan(payment=None, how="", amount=Decimal("0.00"))


def refund_payment(order: Order) -> Payment:
    """The charged payment an order's refund gives money back from."""
    payment = order_charge(order)
    if payment is None or not payment.can_refund():
        raise OrderActionRefused(_("This order has no charged payment left to refund."))
    return payment


def possible_actions(order: Order) -> dict[str, bool]:
    """Which actions the order allows as it stands (the provider may still refuse one)."""
    payments = order_payments(order)
    held = any(p.status == PaymentStatus.AUTHORIZED for p in payments)
    charged = any(p.can_refund() for p in payments)
    open_ = order.fulfilment in (Fulfilment.UNFULFILLED, Fulfilment.PARTIALLY_SHIPPED)
    return {
        "ship": open_ and (held or charged) and any(i.left_to_ship for i in order.items.all()),
        "cancel": order.fulfilment == Fulfilment.UNFULFILLED,
        "refund": charged,
        "refresh": any(p.provider_id for p in payments),
    }


# --- What each order action asks, once its form is valid ------------------------------------


def ship_asked(order: Order, quantities: dict[int, int] | None) -> Asked:
    """The shipment checked; a held payment is claimed for its capture."""
    plan = ship_plan(order, quantities)
    return Asked(
        params={
            "quantities": {str(pk): count for pk, count in plan.chosen.items()},
            "capture": str(plan.capture),
        },
        payment=plan.payment,
        claim=claim(plan.payment, PaymentIntent.CAPTURE, PaymentStatus.AUTHORIZED)
        if plan.capture and plan.payment is not None
        else None,
    )


def cancel_asked(order: Order) -> Asked:
    """The cancellation checked; the payment claimed for its cancellation or refund."""
    plan = cancel_plan(order)
    claimed = {
        "cancel": (PaymentIntent.CANCEL, PaymentStatus.AUTHORIZED),
        "refund": (PaymentIntent.REFUND, PaymentStatus.APPROVED),
    }.get(plan.how)
    return Asked(
        params={"how": plan.how, "amount": str(plan.amount)},
        payment=plan.payment,
        claim=claim(plan.payment, *claimed) if claimed and plan.payment is not None else None,
    )


def refund_asked(order: Order, data: dict[str, Any], returned: dict[int, int]) -> Asked:
    """The refund checked (the form bounds its amount); the charged payment claimed."""
    payment = refund_payment(order)
    return Asked(
        params={
            "amount": str(data["amount"]),
            "reason": data["reason"],
            "returned": {str(pk): count for pk, count in returned.items()},
        },
        payment=payment,
        claim=claim(payment, PaymentIntent.REFUND, PaymentStatus.APPROVED),
    )
