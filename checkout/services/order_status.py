"""What an order's status is, given its payments: pure rules, no query and no write (the
services that sync, show and expire orders apply them)."""

from __future__ import annotations

from checkout.models import PAYABLE_STATUSES, Order, OrderStatus
from payments.models import IN_FLIGHT, Payment, PaymentStatus


def derive_order_status(payments_of_order: list[Payment]) -> str:
    """What the order's payments say about it, best outcome first (idempotent, so duplicate
    or late notifications can only land in the same place)."""
    by_status: dict[str, list[Payment]] = {}
    for payment in payments_of_order:
        by_status.setdefault(payment.status, []).append(payment)
    if approved := by_status.get(PaymentStatus.APPROVED):
        if any(p.refunded_amount > 0 for p in approved):
            return OrderStatus.PARTIALLY_REFUNDED
        return OrderStatus.PAID
    cancelled = by_status.get(PaymentStatus.CANCELLED, [])
    if PaymentStatus.REFUNDED in by_status or any(p.captured_amount > 0 for p in cancelled):
        return OrderStatus.REFUNDED
    if PaymentStatus.AUTHORIZED in by_status:
        return OrderStatus.AUTHORIZED
    if any(p.cancelled_before_capture for p in cancelled):
        return OrderStatus.CANCELLED
    if not payments_of_order:
        return OrderStatus.AWAITING_PAYMENT
    latest = payments_of_order[-1]
    if latest.status in IN_FLIGHT:
        return OrderStatus.AWAITING_PAYMENT
    if latest.status == PaymentStatus.PENDING:
        return OrderStatus.AWAITING_AUTHENTICATION
    return OrderStatus.PAYMENT_FAILED


PAID_STATUSES = (OrderStatus.PAID, OrderStatus.AUTHORIZED)

# Orders the shop closed before they were paid (expired, or cancelled: by staff, or by their
# payment's hold being cancelled): their items went back to stock. A payment that goes through
# after that takes them back if they are all still there, else it is given back.
CLOSED_STATUSES = (OrderStatus.EXPIRED, OrderStatus.CANCELLED)


def status_given(order: Order, attempts: list[Payment]) -> str:
    """What the payments say of the order, except that an order the shop closed itself
    (cancelled by staff before any payment went through) does not become payable again."""
    new = derive_order_status(attempts)
    if order.status == OrderStatus.CANCELLED and new in PAYABLE_STATUSES:
        return OrderStatus.CANCELLED
    return new


def charges_held(attempts: list[Payment]) -> list[Payment]:
    """The attempts holding or having taken the shopper's money, the one to keep first."""
    held = [p for p in attempts if p.status in (PaymentStatus.APPROVED, PaymentStatus.AUTHORIZED)]

    def first_to_pay(payment: Payment) -> tuple[bool, str]:
        # The provider's approval time, else when it was held.
        when = payment.approved_at or payment.authorized_at or payment.created_at
        return payment.status != PaymentStatus.APPROVED, when.isoformat()

    return sorted(held, key=first_to_pay)
