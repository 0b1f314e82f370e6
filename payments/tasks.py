"""Scheduled work on payments: thin tasks over the reconciliation services."""

from __future__ import annotations

from celery import shared_task

from payments.calls.catalogue import payment_methods_refresh, provider_check
from payments.confirmation import payment_confirm_create
from payments.errors import PaymentOutcomeUnknown
from payments.models import Payment
from payments.reconciliation import authorizations_watch, payments_reconcile


@shared_task(acks_late=True, ignore_result=True)
def payments_reconcile_task() -> int:
    """Refresh payments that are not final and may have moved without a notification."""
    return payments_reconcile().checked


@shared_task(acks_late=True, ignore_result=True)
def authorizations_watch_task() -> int:
    """Warn staff about authorizations about to expire; refresh the expired ones."""
    report = authorizations_watch()
    return report.warned + report.refreshed


@shared_task(acks_late=True, ignore_result=True)
def payment_methods_refresh_task() -> int:
    """Replace the stored payment methods catalogue with the provider's (beat, every few
    minutes; once when a worker starts; once when a page finds none). How many methods."""
    entries = payment_methods_refresh()
    return len(entries) if entries is not None else 0


@shared_task(acks_late=True, ignore_result=True)
def provider_check_task() -> bool:
    """Call the provider and stamp how it answered, for `/healthz/deps` (beat, every minute)."""
    return provider_check()


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=(PaymentOutcomeUnknown,),
    retry_backoff=5,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=20,
)
def payment_confirm_create_task(payment_id: int) -> str:
    """Send an unknown attempt's create again with its key until the provider says what
    happened (then the reconciliation schedule takes over)."""
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None:
        return "gone"
    return payment_confirm_create(payment=payment).status
