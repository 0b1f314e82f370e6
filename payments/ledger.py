"""The payments' ledger (PaymentEvent) as staff read it: what the shop writes into an entry's
message, and every text of an entry in the staff member's language.

Entries are kept as they were written (English sentences of the shop, the provider's status
detail code and message, the provider's own error messages): they are financial records. They
are read at display time: the shop's sentences translated, statuses and status details as the
shop's labels, money as $1,290.00 where it was written so, and the provider's free text left
as the provider said it, labelled as the provider's.
"""

from __future__ import annotations

import re

from django.utils.translation import gettext, gettext_noop, pgettext_lazy

from payments.errors import CLIENT_SENTENCES
from payments.models import PaymentEvent, status_label
from payments.sentences import Sentence, read_first
from payments.statuses import DETAILS, UNKNOWN_STATUS

# What the shop writes into an entry's message (services, reconciliation).
CLOSED_NOT_CREATED = Sentence(gettext_noop("Closed by staff: the provider has no such payment."))
ILLEGAL_MOVE = Sentence(
    gettext_noop("the provider reports '%(new)s' for a payment that is '%(old)s'"),
    new=status_label,
    old=status_label,
)
EXPIRY_WARNING = Sentence(
    gettext_noop("authorization expires %(when)s (in %(days)s d %(hours)s h): capture or cancel it")
)
REFUND_UNREAD = Sentence(
    gettext_noop("refund %(refund)s; refresh failed: %(error)s"),
    refund=lambda refund: None if " " in refund else refund,
    error=lambda text: message_text(text),
)
REFUND = Sentence(
    gettext_noop("refund %(refund)s"),
    refund=lambda refund: None if " " in refund else refund,  # the provider's id of the refund
)
# A staff action the provider did not take: "<action>: <what the provider or client said>".
ACTIONS = {
    "capture": pgettext_lazy("a staff action on a payment", "capture"),
    "cancellation": pgettext_lazy("a staff action on a payment", "cancellation"),
    "refund": pgettext_lazy("a staff action on a payment", "refund"),
}
ACTION_FAILED = Sentence(
    "%(action)s: %(error)s",  # no words of its own: nothing to translate
    action=lambda action: str(ACTIONS[action]) if action in ACTIONS else None,
    error=lambda text: message_text(text),
)
SENTENCES = [
    CLOSED_NOT_CREATED,
    ILLEGAL_MOVE,
    UNKNOWN_STATUS,
    EXPIRY_WARNING,
    REFUND_UNREAD,
    REFUND,
    *CLIENT_SENTENCES,
    ACTION_FAILED,  # last: any "word: text" could look like it
]
# A status detail as `apply_snapshot` writes it: "<code> <the provider's message>".
DETAIL = re.compile(r"(?P<code>[A-Z]{2}-[A-Z0-9]{5})(?: (?P<message>.*))?", re.S)


def provider_said(text: str) -> str:
    """The provider's own words, as it said them, labelled as the provider's."""
    return gettext("the provider said: “%(text)s”") % {"text": text}


def detail_text(code: str, message: str = "") -> str:
    """A status detail: the shop's label with its code, or (a code the shop does not know) the
    code with the provider's words."""
    code = code.strip().upper()
    if code in DETAILS:
        return f"{DETAILS[code]} ({code})"
    return " · ".join(filter(None, [code, message and provider_said(message)]))


def status_change(old: str, new: str) -> str:
    """`Authorized → Approved` (labels), `Approved` for a first status, '' for no change."""
    if not new or new == old:
        return ""
    if not old:
        return status_label(new)
    return f"{status_label(old)} → {status_label(new)}"


def message_text(message: str) -> str:
    """What an entry's message says, in the active language."""
    if not message:
        return ""
    read = read_first(SENTENCES, message)
    if read is not None:
        return read
    detail = DETAIL.fullmatch(message)
    if detail:
        return detail_text(detail["code"], detail["message"] or "")
    return provider_said(message)


def entry_details(event: PaymentEvent) -> str:
    """An entry's status change and message, as one text in the active language."""
    change = status_change(event.old_status, event.new_status)
    return " · ".join(filter(None, [change, message_text(event.message)]))
