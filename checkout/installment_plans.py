"""How an order's installment plan reads, for staff and shoppers (`6 × $300.00,
interest-free`): from its payments alone, with no look at the provider's catalogue."""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext as _

from checkout.templatetags.shop import mxn
from payments.models import Payment, PaymentStatus

CHARGED = (PaymentStatus.AUTHORIZED, PaymentStatus.APPROVED, PaymentStatus.REFUNDED)


def plan_text(months: int, monthly: Decimal | None) -> str:
    """How staff and shoppers read a plan: `6 × $300.00`."""
    return f"{months} × {mxn(monthly)}"


def order_installments(payments: list[Payment]) -> str:
    """The plan of the order's charge when it is paid in installments (`plan_text`), else ''."""
    paying = [p for p in payments if p.installments > 1 and p.status in CHARGED]
    if not paying:
        return ""
    return interest_free_text(paying[-1].installments, paying[-1].installment_amount)


def interest_free_text(months: int, monthly: Decimal | None) -> str:
    """The plan of a charge paid in installments: `6 × $300.00, interest-free`."""
    return _("%(plan)s, interest-free") % {"plan": plan_text(months, monthly)}
