"""Reads of orders: their payments, and what other apps ask for (through settings, never by
importing checkout)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TypeVar

from django.db.models import F, Model, OuterRef, QuerySet, Subquery, Sum

from checkout.models import Order, OrderEvent
from checkout.words import PLAN_STATUSES, message_text
from payments.models import Payment, PaymentEvent
from payments.words import entry_details

M = TypeVar("M", bound=Model)


def order_reference_exists(reference: str) -> bool:
    """Whether `reference` names one of the shop's orders (PAYMENTS_REFERENCE_OWNER_FUNCTION):
    a provider payment for it that the shop never heard of is then adopted."""
    return bool(reference) and Order.objects.filter(reference=reference).exists()


def with_charged(orders: QuerySet[Order]) -> QuerySet[Order]:
    """The orders with `charged_amount`: what their payments captured, net of refunds."""
    net = (
        Payment.objects.filter(external_reference=OuterRef("reference"))
        .values("external_reference")
        .annotate(net=Sum(F("captured_amount") - F("refunded_amount")))
        .values("net")
    )
    return orders.annotate(charged_amount=Subquery(net))


def with_installment_plan(rows: QuerySet[M], reference: str = "reference") -> QuerySet[M]:
    """The orders (or the rows whose order's reference is at `reference`) with `plan_months`
    and `plan_monthly`: the plan of the order's latest charge paid in installments, as
    `order_installments` reads it (null when paid in full); one indexed look-up per row, within
    the rows' own query."""
    latest = Payment.objects.filter(
        external_reference=OuterRef(reference), installments__gt=1, status__in=PLAN_STATUSES
    ).order_by("-created_at", "-pk")
    return rows.annotate(
        plan_months=Subquery(latest.values("installments")[:1]),
        plan_monthly=Subquery(latest.values("installment_amount")[:1]),
    )


def order_payments(order: Order) -> list[Payment]:
    """The order's payment attempts, oldest first."""
    return list(Payment.objects.filter(external_reference=order.reference).order_by("created_at"))


def payments_of_orders(references: list[str]) -> dict[str, list[Payment]]:
    """The payment attempts of the orders with these references, oldest first, by reference
    (one query)."""
    found: dict[str, list[Payment]] = {reference: [] for reference in references}
    for payment in Payment.objects.filter(external_reference__in=references).order_by("created_at"):
        found[payment.external_reference].append(payment)
    return found


@dataclass(frozen=True)
class LedgerLine:
    when: datetime
    what: str
    detail: str
    amount: Decimal | None
    who: str
    payment: Payment | None


def order_ledger(order: Order, payments: list[Payment]) -> list[LedgerLine]:
    """Everything that happened to the order and its payments, oldest first: the payments'
    ledgers and the order's own (shipments, cancellation, items back in stock), in the staff
    member's language."""
    lines = [
        LedgerLine(
            event.created_at,
            event.get_kind_display(),
            entry_details(event),
            event.amount,
            event.actor.get_username() if event.actor else "",
            event.payment,
        )
        for event in PaymentEvent.objects.filter(payment__in=payments).select_related(
            "actor", "payment"
        )
    ]
    lines += [
        LedgerLine(
            event.created_at,
            event.get_kind_display(),
            message_text(event.message),
            None,
            event.actor.get_username() if event.actor else "",
            None,
        )
        for event in OrderEvent.objects.filter(order=order).select_related("actor")
    ]
    return sorted(lines, key=lambda line: line.when)
