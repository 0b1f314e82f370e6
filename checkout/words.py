"""What people read of orders, in one place: the sentences the shop writes into an order's ledger
(OrderEvent), read back in the staff member's language, and how an order's installment plan
reads for staff and shoppers (`6 × $300.00`)."""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from checkout.templatetags.shop import mxn
from core.money import pesos
from core.sentences import Sentence, read_first
from payments.models import Payment
from payments.statuses import PaymentStatus

# --- Ledger -------------------------------------------------------------------------------
# The order's ledger (OrderEvent) as staff read it: the sentences the shop writes into an
# entry's message, and the message in the staff member's language (core.sentences).
#
# Entries are kept as they were written: the shop's sentences in English (shipments recorded
# before this module wrote their charge in the language of the staff member who shipped, and
# are recognised in either language); items (`2 × Taza`), amounts ($1,290.00) and a refund's
# reason, as staff typed it, are shown as they are.


# After a shipment's items, " · " and what it charged to a held payment.
CHARGED = Sentence(gettext_noop("charged %(charged)s, released %(released)s"))
PAID_AFTER_EXPIRY = Sentence(gettext_noop("paid after it expired; items still in stock"))
PAID_AFTER_CANCELLATION = Sentence(
    gettext_noop("paid after it was cancelled; items still in stock")
)
# A payment that went through after the order closed, its items gone: refunded or released.
RETURNED_AFTER_EXPIRY = Sentence(gettext_noop("paid after it expired; items no longer in stock"))
RETURNED_AFTER_CANCELLATION = Sentence(
    gettext_noop("paid after it was cancelled; items no longer in stock")
)
NOT_PAID_IN_TIME = Sentence(gettext_noop("not paid within %(minutes)s minutes"))
SENTENCES = [
    CHARGED,
    PAID_AFTER_EXPIRY,
    PAID_AFTER_CANCELLATION,
    RETURNED_AFTER_EXPIRY,
    RETURNED_AFTER_CANCELLATION,
    NOT_PAID_IN_TIME,
]
SEPARATOR = " · "


def shipment_message(items: list[str], charged: Decimal, released: Decimal) -> str:
    """A shipment as it is recorded: its items, and what it charged when it charged."""
    message = ", ".join(items)
    if charged:
        message += SEPARATOR + CHARGED(charged=pesos(charged), released=pesos(released))
    return message


def message_text(message: str) -> str:
    """What an entry's message says, in the active language."""
    whole = read_first(SENTENCES, message)
    if whole is not None:
        return whole
    head, separator, tail = message.rpartition(SEPARATOR)
    charge = read_first([CHARGED], tail) if separator else None
    return message if charge is None else f"{head}{separator}{charge}"


# --- Installment plans --------------------------------------------------------------------
# How an order's installment plan reads, for staff and shoppers (`6 × $300.00,
# interest-free`): from its payments alone, with no look at the provider's catalogue.


# The statuses of a payment whose plan the order shows.
PLAN_STATUSES = (PaymentStatus.AUTHORIZED, PaymentStatus.APPROVED, PaymentStatus.REFUNDED)


def plan_text(months: int, monthly: Decimal | None) -> str:
    """How staff and shoppers read a plan: `6 × $300.00`."""
    return f"{months} × {mxn(monthly)}"


def order_installments(payments: list[Payment]) -> str:
    """The plan of the order's charge when it is paid in installments (`plan_text`), else ''."""
    paying = [p for p in payments if p.installments > 1 and p.status in PLAN_STATUSES]
    if not paying:
        return ""
    return interest_free_text(paying[-1].installments, paying[-1].installment_amount)


def interest_free_text(months: int, monthly: Decimal | None) -> str:
    """The plan of a charge paid in installments: `6 × $300.00, interest-free`."""
    return _("%(plan)s, interest-free") % {"plan": plan_text(months, monthly)}
