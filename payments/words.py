"""What people read of payments, in one place: the readable messages for the provider's refusals
and declines (shown to shoppers and staff) and the one place where the provider's errors become
the shop's (`provider_errors`); the payments' ledger as staff read it (the sentences the shop
writes into an entry, read back in the staff member's language); and what staff read once an
action on a payment is done, or of one not done (its answer lost, the provider throttling or
unreachable)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal

from django.utils.translation import gettext, gettext_lazy, gettext_noop, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from core.money import pesos
from core.sentences import Sentence, read_first
from payments.models import PaymentEvent
from payments.provider.errors import (
    CLIENT_SENTENCES,
    NotFound,
    OutcomeUnknown,
    PaymentRefused,
    ProviderApiError,
    ProviderDown,
    ProviderThrottled,
    ProviderUnavailable,
    Throttled,
)
from payments.statuses import DETAILS, UNKNOWN_STATUS, status_label

# --- Messages -----------------------------------------------------------------------------
# Readable messages for provider refusals and declines (shown to shoppers and staff), and the
# one place where the provider's errors become the shop's (`provider_errors`).


REFUSALS = {
    "CL2200": _("The card details are not valid. Please check them and try again."),
    "CL2201": _("The card details expired before the payment. Please enter your card again."),
    "CL2202": _("These card details were already used. Please enter your card again."),
    "CL2203": _("This amount cannot be paid with this card."),
    "CL2205": _("The amount is above what was authorized."),
    "CL2206": _("The payment changed at the provider in the meantime; nothing was done."),
    "CL2207": _("The amount is above what is left to refund."),
    "CL2210": _("This card has no interest-free installments."),
    "CL2211": _("This currency is not accepted."),
    "CL2290": _("This card is not accepted. Please use another card."),
    "CL1501": _("The shop could not authenticate with the payment provider."),
    "AI1899": _("The payment provider had a problem; we could not confirm the result yet."),
}
DECLINES = {
    "RE-DEC01": _("Your bank declined the payment. Please try another card."),
    "RE-FUN01": _("The card has insufficient funds. Please try another card."),
    "RE-3DS01": _("The bank's verification (3-D Secure) did not succeed. Please try again."),
    "RE-BIN01": _("This card needs a bank verification that could not be done. Try another card."),
}
DEFAULT_REFUSAL = _("The payment provider refused the request.")
DEFAULT_DECLINE = _("The payment was declined. Please try another card.")


def refusal_message(error: ProviderApiError) -> str:
    return str(REFUSALS.get(error.error_code, DEFAULT_REFUSAL))


# The status_code of an attempt whose create never reached the provider (so nothing was charged).
NOT_REACHED = "UNREACHABLE"
NOT_REACHED_MESSAGE = _(
    "The payment service is not reachable right now; nothing was charged. Please try again in a "
    "moment."
)
DEFAULT_FAILURE = _("The payment could not be made. You can try again.")


def failure_message(code: str) -> str:
    """What the shopper reads of an attempt that failed before becoming a payment, by the
    code kept on it (the provider's refusal, or NOT_REACHED)."""
    if code == NOT_REACHED:
        return str(NOT_REACHED_MESSAGE)
    return str(REFUSALS.get(code, DEFAULT_FAILURE))


def decline_message(code: str) -> str:
    return str(DECLINES.get(code.strip().upper(), DEFAULT_DECLINE))


# Kept in the ledger and in notifications' errors as well as shown: plain text.
UNREACHABLE = "The payment service is not reachable right now."
UNCONFIRMED = "The payment service did not confirm it; check the payment before trying again."
THROTTLED = gettext_lazy(
    "The payment service asked the shop to slow down; it is asked again in a moment."
)


def shop_throttled(error: Throttled, message: str = "") -> ProviderThrottled:
    """The provider's 429 as the shop's error, the one translation of it (reads and staff
    actions alike): nothing changed, and the same request goes again after the wait the
    provider asked for; `message` says what is sent again (a read, unless said)."""
    return ProviderThrottled(message or str(THROTTLED), retry_after=error.retry_after)


@contextmanager
def provider_errors(*, not_found: str = "", unreachable: str = "") -> Iterator[None]:
    """Raise the provider's errors as the shop's: a write whose answer was lost as
    `ProviderDown` saying it is not confirmed (never that nothing happened); no answer as
    `ProviderDown`; anything else as `PaymentRefused` with a readable message (`not_found`
    for a 404 when given)."""
    try:
        yield
    except Throttled as exc:
        raise shop_throttled(exc) from exc
    except OutcomeUnknown as exc:
        raise ProviderDown(UNCONFIRMED) from exc
    except ProviderUnavailable as exc:
        raise ProviderDown(unreachable or UNREACHABLE) from exc
    except NotFound as exc:
        raise PaymentRefused(not_found or refusal_message(exc)) from exc
    except ProviderApiError as exc:
        raise PaymentRefused(refusal_message(exc)) from exc


# --- Staff actions not done ---------------------------------------------------------------

# What staff read of a capture, cancellation or refund whose answer was lost (it may have been
# done: the payment is read again), that the provider asked to slow down (it is sent again), or
# that could not reach the provider at all (then it was not done).
ACTION_NOT_CONFIRMED = {
    "capture": gettext_lazy(
        "The payment service did not confirm the capture. The payment was refreshed; check its "
        "status before trying again."
    ),
    "cancellation": gettext_lazy(
        "The payment service did not confirm the cancellation. The payment was refreshed; "
        "check its status before trying again."
    ),
    "refund": gettext_lazy(
        "The payment service did not confirm the refund. The payment was refreshed; check its "
        "status before trying again."
    ),
}
ACTION_THROTTLED = {
    "capture": gettext_lazy(
        "The payment service asked the shop to slow down; the capture is sent again in a moment."
    ),
    "cancellation": gettext_lazy(
        "The payment service asked the shop to slow down; the cancellation is sent again in a "
        "moment."
    ),
    "refund": gettext_lazy(
        "The payment service asked the shop to slow down; the refund is sent again in a moment."
    ),
}
ACTION_NOT_SENT = {
    "capture": gettext_lazy("The payment service is not reachable; the capture was not made."),
    "cancellation": gettext_lazy(
        "The payment service is not reachable; the cancellation was not made."
    ),
    "refund": gettext_lazy("The payment service is not reachable; the refund was not made."),
}


# --- Ledger -------------------------------------------------------------------------------
# The payments' ledger (PaymentEvent) as staff read it: what the shop writes into an entry's
# message, and every text of an entry in the staff member's language.
#
# Entries are kept as they were written (English sentences of the shop, the provider's status
# detail code and message, the provider's own error messages): they are financial records. They
# are read at display time: the shop's sentences translated, statuses and status details as the
# shop's labels, money as $1,290.00 where it was written so, and the provider's free text left
# as the provider said it, labelled as the provider's.


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


# --- Staff actions done ---------------------------------------------------------------------

# What staff read once a payment's action is done (the admin's LogEntry keeps the English verb).
DONE = {
    "captured": gettext_lazy("captured"),
    "cancelled": gettext_lazy("cancelled"),
    "refreshed": gettext_lazy("refreshed"),
    "cancelled the authorization": gettext_lazy("authorization cancelled"),
    "closed as not created": gettext_lazy("closed as not created"),
    "refreshed from the provider": gettext_lazy("refreshed from the provider"),
}


def done_message(reference: str, verb: str, amount: Decimal | None = None) -> str:
    """`ORD-…: captured $250.00.`, in the active language."""
    if amount is not None:
        done = {
            "captured": gettext("captured %(amount)s"),
            "refunded": gettext("refunded %(amount)s"),
        }
        text = done[verb] % {"amount": pesos(amount)}
    else:
        text = str(DONE.get(verb, verb))
    return gettext("%(reference)s: %(done)s.") % {"reference": reference, "done": text}
