"""Reads of orders: their payments, and what other apps ask for (through settings, never by
importing checkout)."""

from __future__ import annotations

from checkout.models import Order
from payments.models import Payment


def order_reference_exists(reference: str) -> bool:
    """Whether `reference` names one of the shop's orders (PAYMENTS_REFERENCE_OWNER_FUNCTION):
    a provider payment for it that the shop never heard of is then adopted."""
    return bool(reference) and Order.objects.filter(reference=reference).exists()


def order_payments(order: Order) -> list[Payment]:
    """The order's payment attempts, oldest first."""
    return list(Payment.objects.filter(external_reference=order.reference).order_by("created_at"))
