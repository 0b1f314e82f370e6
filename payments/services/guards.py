"""What a staff action on a payment needs of it, checked before anything is queued or sent (and
again by a call made with no earlier claim): its status, and an amount within what it allows."""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext as _

from payments.errors import PaymentNotAllowed
from payments.models import Payment
from payments.services.records import check_amount


def _status(payment: Payment) -> str:
    return str(payment.get_status_display()).lower()


def check_capture(payment: Payment, amount: Decimal | None = None) -> Decimal:
    """An authorization, captured for at most its amount (all of it when None)."""
    if not payment.can_capture():
        raise PaymentNotAllowed(
            _("Only an authorized payment can be captured; this one is %(status)s.")
            % {"status": _status(payment)}
        )
    return check_amount(payment.amount if amount is None else amount, maximum=payment.amount)


def check_cancel(payment: Payment) -> None:
    """An authorization (nothing charged yet)."""
    if not payment.can_cancel():
        raise PaymentNotAllowed(
            _("Only an authorized payment can be cancelled; this one is %(status)s.")
            % {"status": _status(payment)}
        )


def check_refund(payment: Payment, amount: Decimal | None = None) -> Decimal:
    """A charge with money left to refund, refunded for at most what is left (all when None)."""
    if not payment.can_refund():
        raise PaymentNotAllowed(
            _(
                "Only a charged payment with money left to refund can be refunded; this one is "
                "%(status)s."
            )
            % {"status": _status(payment)}
        )
    left = payment.refundable_amount
    return check_amount(left if amount is None else amount, maximum=left)
