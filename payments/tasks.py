"""Payments' tasks: every call to the provider is made here, never in a web request. Thin:
each takes an id and calls a service of `payments.calls`, the reconciliation, or the staff
actions asked in the admin."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from payments import queue
from payments.calls.catalogue import payment_methods_refresh, provider_check
from payments.calls.create import payment_send_create
from payments.calls.refresh import payment_refresh
from payments.errors import PaymentError, PaymentOutcomeUnknown
from payments.models import Payment
from payments.read_schedule import schedule_unscheduled
from payments.reconciliation import authorizations_watch, payments_check, payments_reconcile
from payments.selectors import payments_waiting_to_send
from payments.staff.runs import staff_action_run, staff_actions_requeue


@shared_task(acks_late=True, ignore_result=True)
def payments_schedule_task() -> int:
    """Give the payments written without a read schedule theirs, a few batches a run (beat);
    how many."""
    return schedule_unscheduled()


@shared_task(acks_late=True, ignore_result=True)
def payments_reconcile_task() -> int:
    """Hand the payments whose scheduled read is due to check tasks, within the read budget;
    how many."""
    return payments_reconcile().queued


@shared_task(acks_late=True, ignore_result=True)
def payments_check_task(payment_ids: list[int]) -> int:
    """Read the payments the reconciliation handed out; how many were read."""
    return payments_check(payment_ids).checked


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


class _SendCreate(Task):
    """The create task's marker (payments.queue) lasts while the task waits for its next try,
    and goes once the attempt is settled, or given up on after the last retry (then the sweep
    queues it again)."""

    def after_return(self, status: str, retval: Any, task_id: str, args: Any, *rest: Any) -> None:
        if status == "RETRY":
            queue.mark(queue.SEND_CREATE_TASK, int(args[0]))
        else:
            queue.unmark(queue.SEND_CREATE_TASK, int(args[0]))


def _send_create(payment_id: int) -> str:
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None:
        return "gone"
    return payment_send_create(payment=payment).status


RETRY_UNCONFIRMED = {
    "acks_late": True,
    "ignore_result": True,
    "autoretry_for": (PaymentOutcomeUnknown,),
    "retry_backoff": 5,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": 20,
    "base": _SendCreate,
}


@shared_task(**RETRY_UNCONFIRMED)
def payment_send_create_task(payment_id: int) -> str:
    """Send a stored attempt's create, and again with its key until the provider says what
    happened (then the reconciliation schedule takes over)."""
    return _send_create(payment_id)


@shared_task(name="payments.tasks.payment_confirm_create_task", **RETRY_UNCONFIRMED)
def payment_confirm_create_task(payment_id: int) -> str:
    """The create task's earlier name, for its messages still queued."""
    return _send_create(payment_id)


@shared_task(acks_late=True, ignore_result=True)
def payments_send_waiting_task() -> int:
    """The create task's safety net: queue again the attempts whose create is waiting to be
    sent and has no task on its way (the broker was down when they were stored, or the task
    was lost); how many were queued."""
    queued = 0
    for payment_id in payments_waiting_to_send():
        if not queue.is_queued(queue.SEND_CREATE_TASK, payment_id):
            queued += queue.publish(queue.SEND_CREATE_TASK, payment_id)
    return queued


@shared_task(acks_late=True, ignore_result=True)
def payment_refresh_task(payment_id: int) -> str:
    """Read a payment again (the status page asks while a 3-D Secure challenge is pending):
    its notification may not have come yet."""
    try:
        payment = Payment.objects.filter(pk=payment_id).first()
        if payment is None or not payment.provider_id:
            return "nothing to read"
        try:
            return payment_refresh(payment=payment).status
        except PaymentError as exc:  # the reconciliation reads it later
            return f"not read: {exc.message}"
    finally:
        queue.unmark(queue.REFRESH_TASK, payment_id)


@shared_task(acks_late=True, ignore_result=True)
def staff_action_run_task(action_id: int) -> str:
    """Do what a staff member asked in the admin (capture, cancel, ship an order…), once."""
    return staff_action_run(action_id=action_id)


@shared_task(acks_late=True, ignore_result=True)
def staff_actions_requeue_task() -> int:
    """Queue again the staff actions whose task was lost."""
    return staff_actions_requeue().queued
