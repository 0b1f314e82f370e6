"""The payment page: paying an order (one attempt at a time) and checking its payment, from the
shop's own records. An attempt is stored and its create queued (a task sends it); the page asks
for the outcome until it is known. A payment waiting for its 3-D Secure challenge is read again
by a task (one at a time), should its notification be late."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_variables

from checkout.models import Order
from checkout.orders.rules import CheckoutError, derive_order_status, order_as_paid_now
from checkout.orders.selectors import order_payments
from checkout.reservations.rules import order_expire, reservation_over
from payments.attempts.rules import payment_attempt_store
from payments.models import Payment
from payments.provider.errors import PaymentAttemptBlocked, PaymentError, PaymentInProgress
from payments.statuses import PaymentStatus
from payments.task_names import REFRESH_TASK, send_for_payment
from payments.words import decline_message, failure_message

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PaymentOutcome:
    """What the payment page needs to know after an attempt or a check."""

    result: str  # processing | approved | authorized | pending | rejected | failed | unknown
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


def outcome_of(
    order: Order, payment: Payment | None, attempts: list[Payment] | None = None
) -> PaymentOutcome:
    # What the order's payments (`attempts`, read here if not given) say of it, as its sync
    # (queued on their change) writes it.
    order_status = derive_order_status(order_payments(order) if attempts is None else attempts)
    if payment is None:
        return PaymentOutcome("unknown", order_status, "")
    messages = {
        PaymentStatus.APPROVED: _("Payment approved. Thank you!"),
        PaymentStatus.AUTHORIZED: _(
            "The amount is held on your card; it will be charged when we ship your order."
        ),
        PaymentStatus.PENDING: _("Your bank needs to verify this payment."),
        PaymentStatus.REJECTED: decline_message(payment.status_code),
        PaymentStatus.CANCELLED: _("The payment was not completed. You can try again."),
        PaymentStatus.FAILED: failure_message(payment.status_code),
        PaymentStatus.UNKNOWN: _("We are confirming your payment with the bank."),
        PaymentStatus.CREATING: _("Processing your payment…"),
    }
    result = {
        PaymentStatus.CREATING: "processing",
        PaymentStatus.UNKNOWN: "unknown",
        PaymentStatus.CANCELLED: "failed",
        PaymentStatus.REFUNDED: "approved",
    }.get(payment.status, payment.status)
    return PaymentOutcome(
        result,
        order_status,
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
    installments: int = 1,
) -> PaymentOutcome:
    """Store one attempt to pay the order (the same attempt never pays twice), in full or in
    `installments` interest-free monthly payments (checked by `checkout.installments`), and
    queue its create: the outcome is `processing` until a task has the provider's answer."""
    attempt_key = f"{order.reference}-{attempt_id}"
    attempts = order_payments(order)  # the key names the order: its attempts hold it if made
    earlier = next((p for p in attempts if p.idempotency_key == attempt_key), None)
    if earlier is not None:  # a retry of this very attempt (a double click, a lost answer)
        return outcome_of(order, earlier, attempts)
    if reservation_over(order) and order_expire(order_id=order.pk):
        raise CheckoutError(
            _(
                "The time to pay this order is over and its items went back to the shop. "
                "Please place the order again."
            )
        )
    if not order_as_paid_now(order, attempts).is_payable:
        raise CheckoutError(_("This order is already paid or closed."))
    try:
        payment = payment_attempt_store(
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
            installments=installments,
        )
    except PaymentError as exc:
        # An earlier attempt still on its way blocks this one: the page follows it. Anything
        # else (an amount or a plan the provider does not take) failed outright.
        following = isinstance(exc, PaymentAttemptBlocked | PaymentInProgress)
        order_status = derive_order_status(attempts)
        return PaymentOutcome("unknown" if following else "failed", order_status, exc.message)
    # The attempts as read, and this one: any other would have been refused above.
    return outcome_of(order, payment, [*(p for p in attempts if p.pk != payment.pk), payment])


def order_check_payment(
    *,
    order: Order,
    payment_id: str = "",
    refresh: bool = True,
    attempts: list[Payment] | None = None,
) -> PaymentOutcome:
    """Where the latest attempt (or the given one) stands, from the shop's records (the order's
    `attempts`, read here if not given). A payment waiting for its 3-D Secure challenge is read
    again by a task if `refresh` (at most one on its way per payment): a message from the
    browser is a hint, the provider's answer is the proof, and its notification may be late."""
    attempts = order_payments(order) if attempts is None else attempts
    payment = next((p for p in attempts if payment_id and p.provider_id == payment_id), None)
    if payment is None and not payment_id:
        payment = attempts[-1] if attempts else None
    pending = payment is not None and payment.status == PaymentStatus.PENDING
    if refresh and pending and payment is not None and payment.provider_id:
        send_for_payment(REFRESH_TASK, payment.pk)
    return outcome_of(order, payment, attempts)


def order_pending_challenge(
    order: Order,
    *,
    may_read: Callable[[], bool] = lambda: True,
    attempts: list[Payment] | None = None,
) -> PaymentOutcome | None:
    """The 3-D Secure challenge of the order's latest attempt (of `attempts`, read here if not
    given), if it is still pending as the shop last heard (a read of it is queued, if
    `may_read()` allows it): the payment page opens it again after a reload."""
    attempts = order_payments(order) if attempts is None else attempts
    if not attempts or attempts[-1].status != PaymentStatus.PENDING:
        return None
    if not attempts[-1].three_ds_url:
        return None
    outcome = order_check_payment(
        order=order,
        payment_id=attempts[-1].provider_id or "",
        refresh=may_read(),
        attempts=attempts,
    )
    return outcome if outcome.result == "pending" and outcome.three_ds_url else None
