"""Whether the shop holds what the provider holds: every payment equal, no attempt unresolved,
no notification left behind, no order charged twice, every paid order marked so. Used by the
fault test (tests/test_convergence.py) and the soak (`make soak`), with Django set up on the
shop's database and the provider's payments as its control endpoint lists them."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from checkout.models import Order, OrderStatus
from payments.models import Payment
from payments.provider.types import ProviderPayment
from payments.statuses import IN_FLIGHT, local_status
from webhooks.models import WebhookEvent, WebhookState


@dataclass
class Verdict:
    mismatches: list[str] = field(default_factory=list)
    unsettled_events: dict[str, int] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    double_charges: list[str] = field(default_factory=list)
    wrong_orders: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (
            self.mismatches
            or self.unsettled_events
            or self.unresolved
            or self.double_charges
            or self.wrong_orders
        )


def _money(value: Any) -> Decimal:
    return Decimal(str(value or 0))


def _holds_money(payment: dict[str, Any]) -> bool:
    if payment["status"] == "authorized":
        return True
    left = _money(payment.get("captured_amount")) - _money(payment.get("amount_refunded"))
    return payment["status"] == "approved" and left > 0


def verdict(remote_payments: list[dict[str, Any]]) -> Verdict:
    """Compare the shop's records with `remote_payments` (every payment at the provider)."""
    found = Verdict()
    remote = {p["id"]: p for p in remote_payments}
    for payment in Payment.objects.exclude(provider_id=None):
        theirs = remote.get(payment.provider_id or "")
        if theirs is None:
            found.mismatches.append(f"{payment.provider_id}: not at the provider")
            continue
        snapshot = ProviderPayment.from_json(theirs)
        mine = (payment.status, payment.captured_amount, payment.refunded_amount)
        expected = (local_status(snapshot), snapshot.captured_amount, snapshot.amount_refunded)
        if mine != expected:
            found.mismatches.append(f"{payment.provider_id}: {mine} here, {expected} there")
    known = set(Payment.objects.exclude(provider_id=None).values_list("provider_id", flat=True))
    found.mismatches += [f"{pid}: at the provider, not here" for pid in set(remote) - known]
    for state in (WebhookState.RECEIVED, WebhookState.PROCESSING, WebhookState.FAILED):
        if count := WebhookEvent.objects.filter(state=state).count():
            found.unsettled_events[state] = count
    found.unresolved = [str(p) for p in Payment.objects.filter(status__in=IN_FLIGHT)]
    by_order: dict[str, list[dict[str, Any]]] = {}
    for payment in remote.values():
        by_order.setdefault(payment.get("external_reference") or "", []).append(payment)
    for reference, payments in by_order.items():
        charged = [p for p in payments if _holds_money(p)]
        if len(charged) > 1:
            found.double_charges.append(f"{reference}: {[p['id'] for p in charged]}")
        order = Order.objects.filter(reference=reference).first()
        if len(charged) == 1 and order is not None and order.status != _status(charged[0]):
            found.wrong_orders.append(f"{reference}: {order.status}")
    return found


def _status(charged: dict[str, Any]) -> str:
    """The order status of the one payment holding its money."""
    if charged["status"] == "authorized":
        return OrderStatus.AUTHORIZED
    refunded = _money(charged.get("amount_refunded")) > 0
    return OrderStatus.PARTIALLY_REFUNDED if refunded else OrderStatus.PAID
