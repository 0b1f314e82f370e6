"""The order's ledger (OrderEvent) as staff read it: the sentences the shop writes into an
entry's message, and the message in the staff member's language (core.sentences).

Entries are kept as they were written: the shop's sentences in English (shipments recorded
before this module wrote their charge in the language of the staff member who shipped, and
are recognised in either language); items (`2 × Taza`), amounts ($1,290.00) and a refund's
reason, as staff typed it, are shown as they are.
"""

from __future__ import annotations

from decimal import Decimal

from django.utils.translation import gettext_noop

from core.money import pesos
from core.sentences import Sentence, read_first

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
