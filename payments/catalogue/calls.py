"""Reading the provider's payment methods catalogue: stored for the pages to read
(`payments.catalogue.rules`), and the provider's health stamped for `/healthz/deps`
(`payments.health`). Both run in Celery tasks only."""

from __future__ import annotations

import logging
import time

from payments.catalogue.rules import catalogue_store
from payments.health import provider_check_record
from payments.provider.client import get_client
from payments.provider.errors import ProviderApiError
from payments.provider.types import PaymentMethodEntry

logger = logging.getLogger(__name__)


def _list_payment_methods() -> list[PaymentMethodEntry] | None:
    """The catalogue for Mexico, or None when the provider did not give it; either way the
    outcome is stamped."""
    started = time.monotonic()
    try:
        entries = get_client().list_payment_methods("MX")
    except ProviderApiError as exc:
        provider_check_record(
            ok=False, ms=(time.monotonic() - started) * 1000, error=type(exc).__name__
        )
        logger.warning("payment methods catalogue unavailable", exc_info=True)
        return None
    provider_check_record(ok=True, ms=(time.monotonic() - started) * 1000)
    return entries


def payment_methods_refresh() -> list[PaymentMethodEntry] | None:
    """Fetch the catalogue and replace the stored copy with it; the entries, or None while the
    provider cannot give them (the stored copy is kept)."""
    entries = _list_payment_methods()
    if entries is not None:
        catalogue_store(entries)
    return entries


def provider_check() -> bool:
    """Make one cheap call to the provider (its catalogue) and stamp how it went: whether it
    answered, and accepted the shop's credentials."""
    return _list_payment_methods() is not None
