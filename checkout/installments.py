"""Interest-free monthly installments ("meses sin intereses"): which plans an order may be paid
in, and the check the server makes again before a payment asks for one (the browser is not
trusted). Whether the card has them is the catalogue's `installment_pattern` for its BIN; the
provider has the last word (CL2210)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from checkout.templatetags.shop import mxn
from checkout.words import order_installments, plan_text
from payments.catalogue.rules import installments_allowed

__all__ = [
    "InstallmentsRefused",
    "Plan",
    "check_installments",
    "monthly_amount",
    "order_installments",
    "plan_text",
    "plans_for",
]

CENT = Decimal("0.01")


class InstallmentsRefused(Exception):
    """An installment plan this order or card cannot have, with a message for the shopper."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Plan:
    months: int
    monthly: Decimal

    @property
    def label(self) -> str:
        return ngettext(
            "%(months)d interest-free monthly payment of %(amount)s",
            "%(months)d interest-free monthly payments of %(amount)s",
            self.months,
        ) % {"months": self.months, "amount": mxn(self.monthly)}


def monthly_amount(total: Decimal, months: int) -> Decimal:
    """Each monthly payment: the total divided by the months, rounded to cents (as the
    provider's `installment_amount`)."""
    return (total / months).quantize(CENT, rounding=ROUND_HALF_UP)


def plans_for(total: Decimal) -> list[Plan]:
    """The plans an order of this total may be paid in (none below the minimum total)."""
    if total < settings.SHOP_INSTALLMENTS_MIN_TOTAL:
        return []
    return [
        Plan(months, monthly_amount(total, months)) for months in settings.SHOP_INSTALLMENTS_PLANS
    ]


def check_installments(*, total: Decimal, installments: int, card_bin: str) -> None:
    """Refuse (InstallmentsRefused) a plan that is not offered for this total, or a card whose
    BIN has no installments, or while the shop holds no catalogue to tell; paying in full (1) is
    always allowed."""
    if installments == 1:
        return
    if installments not in settings.SHOP_INSTALLMENTS_PLANS:
        raise InstallmentsRefused(
            _("Choose to pay in full or in %(plans)s interest-free monthly payments.")
            % {"plans": ", ".join(str(p) for p in settings.SHOP_INSTALLMENTS_PLANS)}
        )
    if total < settings.SHOP_INSTALLMENTS_MIN_TOTAL:
        raise InstallmentsRefused(
            _("Interest-free monthly payments are for orders of %(minimum)s or more.")
            % {"minimum": mxn(settings.SHOP_INSTALLMENTS_MIN_TOTAL)}
        )
    allowed = installments_allowed(bin_=card_bin, total=total) if card_bin else False
    if allowed is None:
        raise InstallmentsRefused(
            _(
                "Interest-free monthly payments cannot be checked right now. Pay in full, or "
                "try again in a minute."
            )
        )
    if not allowed:
        raise InstallmentsRefused(_("This card has no interest-free installments."))
