"""Work on payments done by workers: thin tasks over the reconciliation services and the staff
actions asked in the admin."""

from __future__ import annotations

from celery import shared_task

from payments.confirmation import payment_confirm_create
from payments.errors import PaymentOutcomeUnknown
from payments.models import Payment
from payments.reconciliation import authorizations_watch, payments_reconcile
from payments.staff.runs import staff_action_run, staff_actions_requeue


@shared_task(acks_late=True, ignore_result=True)
def payments_reconcile_task() -> int:
    """Refresh payments that are not final and may have moved without a notification."""
    return payments_reconcile().checked


@shared_task(acks_late=True, ignore_result=True)
def authorizations_watch_task() -> int:
    """Warn staff about authorizations about to expire; refresh the expired ones."""
    report = authorizations_watch()
    return report.warned + report.refreshed


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


@shared_task(acks_late=True, ignore_result=True)
def staff_action_run_task(action_id: int) -> str:
    """Do what a staff member asked in the admin (capture, cancel, ship an order…), once."""
    return staff_action_run(action_id=action_id)


@shared_task(acks_late=True, ignore_result=True)
def staff_actions_requeue_task() -> int:
    """Queue again the staff actions whose task was lost."""
    return staff_actions_requeue().queued
