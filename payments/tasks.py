"""Payments' own tasks, thin: each calls a feature's `calls` (attempts, rereading, catalogue),
which reach the provider (never in a web request), or its rules (the sweeps of the schedules).
Other apps' tasks reach payments' calls too: the staff actions' (`staff_actions.tasks`, their
names kept as `payments.tasks.*`), the notifications' (`webhooks.tasks`) and checkout's."""

from __future__ import annotations

from typing import Any

from core.task_queue import PROVIDER_UNCONFIRMED, ShopTask, is_marked, mark, shop_task, unmark
from payments.attempts.calls import payment_send_create
from payments.catalogue.calls import payment_methods_refresh, provider_check
from payments.models import Payment
from payments.provider.errors import PaymentError, PaymentOutcomeUnknown
from payments.rereading.calls import payment_refresh, payments_check, payments_reconcile
from payments.rereading.expiry_calls import authorizations_watch
from payments.rereading.rules import schedule_unscheduled
from payments.rereading.selectors import payments_waiting_to_send
from payments.task_names import (
    MARKER_TTL,
    REFRESH_TASK,
    SEND_CREATE_TASK,
    marker,
    send_for_payment,
)


@shop_task("payments.tasks.payments_schedule_task")
def payments_schedule_task() -> int:
    """Give the payments written without a read schedule theirs, a few batches a run (beat);
    how many."""
    return schedule_unscheduled()


@shop_task("payments.tasks.payments_reconcile_task")
def payments_reconcile_task() -> int:
    """Hand the payments whose scheduled read is due to check tasks, within the read budget;
    how many."""
    return payments_reconcile().queued


@shop_task("payments.tasks.payments_check_task")
def payments_check_task(payment_ids: list[int]) -> int:
    """Read the payments the reconciliation handed out; how many were read."""
    return payments_check(payment_ids).checked


@shop_task("payments.tasks.authorizations_watch_task")
def authorizations_watch_task() -> int:
    """Warn staff about authorizations about to expire; refresh the expired ones."""
    report = authorizations_watch()
    return report.warned + report.refreshed


@shop_task("payments.tasks.payment_methods_refresh_task")
def payment_methods_refresh_task() -> int:
    """Replace the stored payment methods catalogue with the provider's (beat, every few
    minutes; once when a worker starts; once when a page finds none). How many methods."""
    entries = payment_methods_refresh()
    return len(entries) if entries is not None else 0


@shop_task("payments.tasks.provider_check_task")
def provider_check_task() -> bool:
    """Call the provider and stamp how it answered, for `/healthz/deps` (beat, every minute)."""
    return provider_check()


class _SendCreate(ShopTask):
    """The create task's marker (payments.queue) lasts while the task waits for its next try,
    and goes once the attempt is settled, or given up on after the last retry (then the sweep
    queues it again)."""

    def after_return(self, status: str, retval: Any, task_id: str, args: Any, *rest: Any) -> None:
        key = marker(SEND_CREATE_TASK, int(args[0]))
        if status == "RETRY":
            mark(key, MARKER_TTL[SEND_CREATE_TASK])
        else:
            unmark(key)


def _send_create(payment_id: int) -> str:
    # The service reads the payment as it is now (an instance naming it is enough).
    try:
        return payment_send_create(payment=Payment(pk=payment_id)).status
    except Payment.DoesNotExist:
        return "gone"


RETRY_UNCONFIRMED = PROVIDER_UNCONFIRMED.on(PaymentOutcomeUnknown)


@shop_task(SEND_CREATE_TASK, retry=RETRY_UNCONFIRMED, base=_SendCreate)
def payment_send_create_task(payment_id: int) -> str:
    """Send a stored attempt's create, and again with its key until the provider says what
    happened (then the reconciliation schedule takes over)."""
    return _send_create(payment_id)


# The create task's earlier name: the release of 25 November (CHANGELOG.md) queues creates by it
# and nothing else, and `make release-check` runs that release beside this tree. Remove it (with
# its route in config/settings/queues.py and its line in tests/test_task_names.py) once the
# previous release in CHANGELOG.md is one that queues `payment_send_create_task`: from the
# release after the first one that ships this code.
@shop_task("payments.tasks.payment_confirm_create_task", retry=RETRY_UNCONFIRMED, base=_SendCreate)
def payment_confirm_create_task(payment_id: int) -> str:
    """The create task's earlier name, for the messages the release before still queues."""
    return _send_create(payment_id)


@shop_task("payments.tasks.payments_send_waiting_task")
def payments_send_waiting_task() -> int:
    """The create task's safety net: queue again the attempts whose create is waiting to be
    sent and has no task on its way (the broker was down when they were stored, or the task
    was lost); how many were queued."""
    queued = 0
    for payment_id in payments_waiting_to_send():
        if not is_marked(marker(SEND_CREATE_TASK, payment_id)):
            queued += send_for_payment(SEND_CREATE_TASK, payment_id)
    return queued


@shop_task("payments.tasks.payment_refresh_task")
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
        unmark(marker(REFRESH_TASK, payment_id))
