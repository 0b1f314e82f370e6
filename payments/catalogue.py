"""The provider's payment methods catalogue, as the payment page shows it for an order's total:
each method with its amount bounds and whether it can pay this total (and why not)."""

from __future__ import annotations

import logging
from contextlib import suppress
from dataclasses import dataclass
from decimal import Decimal

from django.core.cache import cache
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from payments.client import get_client
from payments.errors import ProviderApiError
from payments.pesos import pesos
from payments.types import PaymentMethodEntry

logger = logging.getLogger(__name__)
CATALOGUE_CACHE_KEY = "payments:payment-methods:MX"
CATALOGUE_TTL = 300

# The shopper-facing names of the provider's methods whose catalogue name is not a brand (the
# provider names them in Spanish), by method id; any other method shows the provider's name.
METHOD_NAMES: dict[str, Promise] = {
    "cashpay": gettext_lazy("Cash payment"),
}


def method_display_name(method_id: str, provider_name: str) -> str:
    """A method's name in the shopper's language: the shop's own for a method it knows,
    else the provider's."""
    known = METHOD_NAMES.get(method_id)
    return str(known) if known is not None else provider_name


@dataclass(frozen=True)
class MethodOption:
    id: str
    name: str
    logo: str
    minimum: Decimal | None
    maximum: Decimal | None
    available: bool
    reason: str
    installment_pattern: str = ""


def _cached_catalogue() -> list[PaymentMethodEntry] | None:
    try:
        return cache.get(CATALOGUE_CACHE_KEY)
    except Exception as exc:  # the cache (Redis) is unreachable
        logger.warning("payment methods cache unavailable: %s", exc)
        return None


def _catalogue() -> list[PaymentMethodEntry]:
    """The provider's catalogue (cached); without the cache (Redis down), read from the
    provider each time; empty while the provider cannot be reached."""
    entries = _cached_catalogue()
    if entries is None:
        try:
            entries = get_client().list_payment_methods("MX")
        except ProviderApiError:
            logger.warning("payment methods catalogue unavailable", exc_info=True)
            return []
        with suppress(Exception):  # no cache: the next page reads the provider again
            cache.set(CATALOGUE_CACHE_KEY, entries, CATALOGUE_TTL)
    return entries


def installments_allowed(*, bin_: str, total: Decimal) -> bool:
    """Whether a card of this BIN (its first six digits) may pay this total in interest-free
    installments: an active card method takes the card, accepts the total, and its
    `installment_pattern` matches the BIN."""
    return any(
        entry.is_card
        and entry.is_active
        and entry.accepts(total)
        and entry.installments_for_bin(bin_)
        for entry in _catalogue()
    )


def payment_methods_for(*, total: Decimal) -> list[MethodOption]:
    """The provider's catalogue as the payment page shows it for this total."""
    options = []
    for entry in _catalogue():
        bounds = entry.accepted_amount
        if not entry.is_card:
            reason = _("Pay in cash at a store: not available for online card checkout.")
        elif not entry.is_active:
            reason = _("Not available right now.")
        elif not entry.accepts(total):
            reason = (
                _("Accepts amounts from %(min)s to %(max)s.")
                % {"min": pesos(bounds[0]), "max": pesos(bounds[1])}
                if bounds
                else ""
            )
        else:
            reason = ""
        options.append(
            MethodOption(
                id=entry.id,
                name=method_display_name(entry.id, entry.name),
                logo=entry.logo,
                minimum=bounds[0] if bounds else None,
                maximum=bounds[1] if bounds else None,
                available=not reason,
                reason=reason,
                installment_pattern=entry.installment_pattern if not reason else "",
            )
        )
    return options
