"""The provider's payment methods catalogue, as the payment page shows it for an order's total:
each method with its amount bounds and whether it can pay this total (and why not).

Pages read only the shop's stored copy (the cache): the catalogue is fetched from the provider
by a Celery task (`payments.catalogue.calls.payment_methods_refresh`, by beat every few minutes
and once when a worker starts), which replaces the copy. A page that finds no copy queues one
refresh (at most one on its way, by a marker in the cache) and renders without the catalogue,
as while the provider is down. While Redis is away, a process shows the copy it read last.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from dataclasses import dataclass
from decimal import Decimal

from django.core.cache import cache
from django.db import transaction
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.money import pesos
from core.task_queue import send_now
from payments.provider.types import PaymentMethodEntry
from payments.task_names import METHODS_REFRESH_TASK

logger = logging.getLogger(__name__)
CATALOGUE_CACHE_KEY = "payments:payment-methods:MX"
# The refresh replaces the copy every few minutes; it is kept for a day so that a provider
# outage (or a stopped beat) leaves the pages the last catalogue the provider gave.
CATALOGUE_TTL = 24 * 3600
REFRESH_MARKER_KEY = "payments:payment-methods:refresh-queued"
# While this marker lives, pages that find no copy queue no other refresh: the one on its way
# will store it (or, the provider being down, the next after the marker expires will try).
REFRESH_MARKER_TTL = 60

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


class _LastRead:
    """The copy this process read last: what its pages show while the cache cannot be read."""

    entries: list[PaymentMethodEntry] | None = None


def stored_catalogue() -> list[PaymentMethodEntry] | None:
    """The stored copy of the catalogue; None when there is none (then one refresh is queued).
    While the cache (Redis) cannot be read, the copy this process read last (None if it read
    none). Never calls the provider."""
    try:
        entries: list[PaymentMethodEntry] | None = cache.get(CATALOGUE_CACHE_KEY)
    except Exception as exc:  # the cache (Redis) is unreachable: a refresh could not store it
        logger.warning("payment methods cache unavailable: %s", exc)
        return _LastRead.entries
    if entries is None:
        payment_methods_refresh_request()
    else:
        _LastRead.entries = entries
    return entries


def catalogue_store(entries: list[PaymentMethodEntry]) -> None:
    """Replace the stored copy with the provider's latest answer (by the refresh task)."""
    cache.set(CATALOGUE_CACHE_KEY, entries, CATALOGUE_TTL)
    with suppress(Exception):
        cache.delete(REFRESH_MARKER_KEY)


def payment_methods_refresh_request() -> bool:
    """Queue a refresh of the stored catalogue, once its caller's transaction commits, unless
    one is already on its way; whether one was queued. Never raises: without the cache or the
    broker, beat's refresh stores it later."""
    try:
        if not cache.add(REFRESH_MARKER_KEY, 1, timeout=REFRESH_MARKER_TTL):
            return False
    except Exception as exc:
        logger.warning("payment methods refresh not queued: %s", exc)
        return False
    transaction.on_commit(_send_refresh)
    return True


def _send_refresh() -> None:
    try:
        send_now(METHODS_REFRESH_TASK)
    except Exception as exc:
        logger.warning("payment methods refresh not queued: %s", exc)
        with suppress(Exception):  # the next page tries again
            cache.delete(REFRESH_MARKER_KEY)


def _catalogue() -> list[PaymentMethodEntry]:
    """The stored catalogue, or nothing while there is none."""
    return stored_catalogue() or []


def installments_allowed(*, bin_: str, total: Decimal) -> bool | None:
    """Whether a card of this BIN (its first six digits) may pay this total in interest-free
    installments: an active card method takes the card, accepts the total, and its
    `installment_pattern` matches the BIN. None while no catalogue is stored (one refresh is
    queued): the shop cannot tell."""
    entries = stored_catalogue()
    if entries is None:
        return None
    return any(
        entry.is_card
        and entry.is_active
        and entry.accepts(total)
        and entry.installments_for_bin(bin_)
        for entry in entries
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
