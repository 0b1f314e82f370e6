"""Readable messages for provider refusals and declines (shown to shoppers and staff), and the
one place where the provider's errors become the shop's (`provider_errors`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.utils.translation import gettext_lazy as _

from payments.errors import (
    NotFound,
    OutcomeUnknown,
    PaymentRefused,
    ProviderApiError,
    ProviderDown,
    ProviderUnavailable,
)

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


@contextmanager
def provider_errors(*, not_found: str = "", unreachable: str = "") -> Iterator[None]:
    """Raise the provider's errors as the shop's: a write whose answer was lost as
    `ProviderDown` saying it is not confirmed (never that nothing happened); no answer as
    `ProviderDown`; anything else as `PaymentRefused` with a readable message (`not_found`
    for a 404 when given)."""
    try:
        yield
    except OutcomeUnknown as exc:
        raise ProviderDown(UNCONFIRMED) from exc
    except ProviderUnavailable as exc:
        raise ProviderDown(unreachable or UNREACHABLE) from exc
    except NotFound as exc:
        raise PaymentRefused(not_found or refusal_message(exc)) from exc
    except ProviderApiError as exc:
        raise PaymentRefused(refusal_message(exc)) from exc
