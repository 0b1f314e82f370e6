"""Authorizations near or past their expiry, the calls (from their task only): staff are warned
(the payment's ledger, the log, the managers' mail) about an authorization expiring within
EXPIRY_WARNING_DAYS, and an expired one is read again from the provider, which has released
its hold by then (within the read budget)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.mail import mail_managers
from django.db import transaction
from django.utils import timezone

from core.money import pesos
from payments.models import EXPIRY_WARNING_DAYS, Payment, PaymentEventKind
from payments.provider.errors import PaymentError, ProviderDown
from payments.records import record_event
from payments.rereading.calls import payment_refresh
from payments.rereading.rules import reads_left
from payments.rereading.selectors import authorizations_expired, authorizations_to_warn
from payments.words import EXPIRY_WARNING

logger = logging.getLogger(__name__)


@dataclass
class WatchReport:
    warned: int = 0
    refreshed: int = 0


def authorizations_watch(*, now: datetime | None = None) -> WatchReport:
    """Warn staff (ledger, log, managers' mail) about authorizations 27 days old, and refresh
    those past 30 days: the provider has released the hold by then."""
    now = now or timezone.now()
    report = WatchReport()
    warned: list[Payment] = []
    for payment in authorizations_to_warn(now=now):
        with transaction.atomic():
            claimed = Payment.objects.filter(pk=payment.pk, expiry_warned_at__isnull=True).update(
                expiry_warned_at=now
            )
            if not claimed:
                continue
            record_event(
                payment,
                PaymentEventKind.EXPIRY_WARNING,
                old=payment.status,
                new=payment.status,
                message=_expiry_message(payment, now),
            )
        warned.append(payment)
    report.warned = len(warned)
    if warned:
        lines = [
            f"{p.external_reference}: {pesos(p.amount)} · {_expiry_message(p, now)}" for p in warned
        ]
        logger.warning("authorizations expiring soon: %s", "; ".join(lines))
        mail_managers(
            f"{len(warned)} authorization(s) expire within {EXPIRY_WARNING_DAYS} days",
            "Capture or cancel them in the admin before they expire:\n\n" + "\n".join(lines),
            fail_silently=True,
        )
    for payment in authorizations_expired(now=now, limit=reads_left()):
        try:
            payment_refresh(payment=payment)
        except ProviderDown:
            break
        except PaymentError as exc:
            logger.warning("expired authorization %s not refreshed: %s", payment.pk, exc.message)
            continue
        report.refreshed += 1
    return report


def _expiry_message(payment: Payment, now: datetime) -> str:
    expires = payment.authorization_expires_at or now + timedelta(days=EXPIRY_WARNING_DAYS)
    hours = max(int((expires - now).total_seconds() // 3600), 0)
    return EXPIRY_WARNING(
        when=f"{timezone.localtime(expires):%Y-%m-%d %H:%M}", days=hours // 24, hours=hours % 24
    )
