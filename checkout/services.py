"""Business rules of the storefront: orders from carts, paying them, and what an order's
status is given its payments (the only way an order moves)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.debug import sensitive_variables

from checkout.cart import Cart
from checkout.models import Order, OrderItem, OrderStatus, Product
from payments import services as payments
from payments.errors import (
    PaymentAttemptBlocked,
    PaymentError,
    PaymentInProgress,
    PaymentOutcomeUnknown,
)
from payments.messages import decline_message
from payments.models import Payment, PaymentStatus

logger = logging.getLogger(__name__)


class CheckoutError(Exception):
    """A checkout problem with a message for the shopper."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- Orders ---------------------------------------------------------------------------------


def order_create_from_cart(*, cart: Cart, customer: dict[str, str], language: str) -> Order:
    """Freeze the cart into an order: prices at order time, stock reserved, in one transaction."""
    lines = cart.lines()
    if not lines:
        raise CheckoutError(_("Your cart is empty."))
    with transaction.atomic():
        products = Product.objects.select_for_update().in_bulk([line.product.pk for line in lines])
        problems = []
        for line in lines:
            product = products[line.product.pk]
            if not product.active:
                problems.append(_("%(name)s is no longer sold.") % {"name": product.display_name})
            elif product.stock < line.quantity:
                problems.append(
                    ngettext(
                        "Only %(count)s of %(name)s left.",
                        "Only %(count)s of %(name)s left.",
                        product.stock,
                    )
                    % {"count": product.stock, "name": product.display_name}
                )
        if problems:
            raise CheckoutError(" ".join(problems))
        order = Order.objects.create(
            total=sum(
                (products[line.product.pk].price * line.quantity for line in lines), Decimal("0.00")
            ),
            language=language,
            **customer,
        )
        for line in lines:
            product = products[line.product.pk]
            OrderItem.objects.create(
                order=order,
                product=product,
                name=product.name,
                unit_price=product.price,
                quantity=line.quantity,
            )
            product.stock -= line.quantity
            product.save(update_fields=["stock"])
    return order


def order_payments(order: Order) -> list[Payment]:
    return list(Payment.objects.filter(external_reference=order.reference).order_by("created_at"))


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
    if latest.status in (PaymentStatus.CREATING, PaymentStatus.UNKNOWN):
        return OrderStatus.AWAITING_PAYMENT
    if latest.status == PaymentStatus.PENDING:
        return OrderStatus.AWAITING_AUTHENTICATION
    return OrderStatus.PAYMENT_FAILED


PAID_STATUSES = (OrderStatus.PAID, OrderStatus.AUTHORIZED)


def order_sync_status(*, reference: str) -> Order | None:
    """Move the order to what its payments say; release stock once if it is cancelled."""
    with transaction.atomic():
        order = Order.objects.select_for_update().filter(reference=reference).first()
        if order is None:
            return None
        attempts = order_payments(order)
        if len(_charges(attempts)) > 1:
            transaction.on_commit(lambda: order_release_duplicates(reference=reference))
        new = derive_order_status(attempts)
        if new != order.status:
            logger.info("order %s: %s -> %s", order.reference, order.status, new)
            order.status = new
            order.save(update_fields=["status", "updated_at"])
            if new == OrderStatus.CANCELLED:
                for item in order.items.all():
                    Product.objects.filter(pk=item.product_id).update(
                        stock=F("stock") + item.quantity
                    )
        # Also after a mail server failure: the next update of the order tries again.
        if order.status in PAID_STATUSES and order.confirmation_sent_at is None:
            transaction.on_commit(lambda: order_send_confirmation(order_id=order.pk))
    return order


def _charges(attempts: list[Payment]) -> list[Payment]:
    """The attempts holding or having taken the shopper's money, the one to keep first."""
    held = [p for p in attempts if p.status in (PaymentStatus.APPROVED, PaymentStatus.AUTHORIZED)]

    def first_to_pay(payment: Payment) -> tuple[bool, str]:
        # The provider's approval time, else when it was held.
        when = payment.approved_at or payment.authorized_at or payment.created_at
        return payment.status != PaymentStatus.APPROVED, when.isoformat()

    return sorted(held, key=first_to_pay)


def order_release_duplicates(*, reference: str) -> int:
    """An order is paid once. If two attempts both went through (e.g. a 3-D Secure challenge
    finished in another tab after a second card paid), the extra ones are given back: refunded
    in full, or their authorization cancelled. Returns how many were released."""
    order = Order.objects.filter(reference=reference).first()
    if order is None:
        return 0
    released = 0
    for extra in _charges(order_payments(order))[1:]:
        try:
            if extra.status == PaymentStatus.APPROVED:
                payments.payment_refund(
                    payment=extra, reason=f"duplicate payment of order {reference}"
                )
            else:
                payments.payment_cancel(payment=extra)
        except PaymentInProgress:
            # Another sync of the same order is releasing it right now: that one logs the outcome.
            logger.info("order %s: duplicate payment %s is being released", reference, extra.pk)
            continue
        except PaymentError as exc:
            logger.error(
                "order %s: duplicate payment %s not released: %s", reference, extra.pk, exc.message
            )
            continue
        logger.warning("order %s: duplicate payment %s released", reference, extra.pk)
        released += 1
    return released


def order_send_confirmation(*, order_id: int) -> bool:
    """Email the order confirmation exactly once (compare-and-set on confirmation_sent_at)."""
    claimed = Order.objects.filter(pk=order_id, confirmation_sent_at__isnull=True).update(
        confirmation_sent_at=timezone.now()
    )
    if not claimed:
        return False
    order = Order.objects.get(pk=order_id)
    with translation.override(order.language):
        held = order.status == OrderStatus.AUTHORIZED
        subject = _("Your order %(reference)s") % {"reference": order.reference}
        body = _("Hello %(name)s, thank you for your order %(reference)s for $%(total)s MXN.") % {
            "name": order.first_name,
            "reference": order.reference,
            "total": order.total,
        }
        body += "\n\n" + (
            _("The amount is held on your card and will be charged when we ship.")
            if held
            else _("Your payment was received.")
        )
        try:
            send_mail(subject, body, None, [order.email])
        except Exception:  # the mail server's failure must not fail the payment's path
            logger.exception(
                "order %s: confirmation not sent; retried at its next update", order.reference
            )
            Order.objects.filter(pk=order_id).update(confirmation_sent_at=None)
            return False
    return True


# --- Paying ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PaymentOutcome:
    """What the payment page needs to know after an attempt or a check."""

    result: str  # approved | authorized | pending | rejected | failed | unknown
    order_status: str
    message: str
    payment_id: str = ""
    three_ds_url: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "result": self.result,
            "order_status": self.order_status,
            "message": self.message,
            "payment_id": self.payment_id,
            "three_ds_url": self.three_ds_url,
        }


def outcome_of(order: Order, payment: Payment | None) -> PaymentOutcome:
    order.refresh_from_db()
    if payment is None:
        return PaymentOutcome("unknown", order.status, "")
    messages = {
        PaymentStatus.APPROVED: _("Payment approved. Thank you!"),
        PaymentStatus.AUTHORIZED: _(
            "The amount is held on your card; it will be charged when we ship your order."
        ),
        PaymentStatus.PENDING: _("Your bank needs to verify this payment."),
        PaymentStatus.REJECTED: decline_message(payment.status_code),
        PaymentStatus.CANCELLED: _("The payment was not completed. You can try again."),
        PaymentStatus.FAILED: _("The payment could not be made. You can try again."),
        PaymentStatus.UNKNOWN: _("We are confirming your payment with the bank."),
        PaymentStatus.CREATING: _("We are confirming your payment with the bank."),
    }
    result = {
        PaymentStatus.CREATING: "unknown",
        PaymentStatus.UNKNOWN: "unknown",
        PaymentStatus.CANCELLED: "failed",
        PaymentStatus.REFUNDED: "approved",
    }.get(payment.status, payment.status)
    return PaymentOutcome(
        result,
        order.status,
        str(messages.get(payment.status, "")),
        payment.provider_id or "",
        payment.three_ds_url,
    )


def _customer(order: Order) -> dict[str, Any]:
    """The order's customer as the provider takes it."""
    address = ("street", "number", "colony", "city", "state", "postal_code", "country")
    return {
        "first_name": order.first_name,
        "last_name": order.last_name,
        "email": order.email,
        "phone": order.phone,
        "address": {field: getattr(order, field) for field in address},
    }


@sensitive_variables("card_token", "prevention_data")
def order_pay(
    *,
    order: Order,
    card_token: str,
    attempt_id: str,
    prevention_data: dict[str, str],
    return_url: str,
) -> PaymentOutcome:
    """Create the payment of one attempt (the same attempt never pays twice)."""
    attempt_key = f"{order.reference}-{attempt_id}"
    earlier = Payment.objects.filter(idempotency_key=attempt_key).first()
    if earlier is not None:  # a retry of this very attempt (e.g. its answer was lost): replay
        return outcome_of(order, earlier)
    if not order.is_payable:
        raise CheckoutError(_("This order is already paid or closed."))
    try:
        payment = payments.payment_create(
            external_reference=order.reference,
            attempt_key=attempt_key,
            amount=order.total,
            currency=order.currency,
            description=_("Order %(reference)s at %(shop)s")
            % {"reference": order.reference, "shop": settings.SHOP_NAME},
            card_token=card_token,
            capture_method=settings.PAYMENTS_CAPTURE_METHOD,
            customer=_customer(order),
            prevention_data=prevention_data,
            return_url=return_url,
        )
    except PaymentError as exc:
        # An attempt whose answer never came (this one, or the earlier one blocking it) is
        # still being confirmed: the page keeps checking. Anything else failed outright.
        unknown = isinstance(exc, PaymentOutcomeUnknown | PaymentAttemptBlocked)
        synced = order_sync_status(reference=order.reference) or order
        return PaymentOutcome("unknown" if unknown else "failed", synced.status, exc.message)
    order_sync_status(reference=order.reference)
    return outcome_of(order, payment)


def order_check_payment(
    *, order: Order, payment_id: str = "", refresh: bool = True
) -> PaymentOutcome:
    """The latest attempt (or the given one), refreshed from the provider if still pending (and
    `refresh`): a 3-D Secure message from the browser is a hint, the provider's answer is the
    proof. Without `refresh`, what the shop holds (which notifications keep up to date)."""
    attempts = order_payments(order)
    payment = next((p for p in attempts if payment_id and p.provider_id == payment_id), None)
    if payment is None and not payment_id:
        payment = attempts[-1] if attempts else None
    if refresh and payment is not None and payment.status == PaymentStatus.PENDING:
        try:
            payment = payments.payment_refresh(payment=payment)
        except PaymentError as exc:
            logger.info("refresh of %s failed: %s", payment.pk, exc)
        order_sync_status(reference=order.reference)
    return outcome_of(order, payment)
