"""The names payments' tasks are queued by (`core.task_queue`), the markers that say one is on
its way for a payment, and sending one that way. A task keeps its name when its code moves: the
running release queues by it."""

from __future__ import annotations

from django.db import transaction

from core.task_queue import send_once

SEND_CREATE_TASK = "payments.tasks.payment_send_create_task"
REFRESH_TASK = "payments.tasks.payment_refresh_task"
CHECK_TASK = "payments.tasks.payments_check_task"
METHODS_REFRESH_TASK = "payments.tasks.payment_methods_refresh_task"

# How long a marker says a task is on its way: long enough for a create's retries (up to 10
# minutes apart); a refresh runs at once.
MARKER_TTL = {SEND_CREATE_TASK: 900, REFRESH_TASK: 60}


def marker(task: str, payment_id: int) -> str:
    """The cache key that says `task` for the payment is on its way."""
    return f"payments:queued:{task.rsplit('.', 1)[-1]}:{payment_id}"


def send_for_payment(task: str, payment_id: int) -> bool:
    """Send `task` for the payment unless one is on its way (`core.task_queue.send_once`, with
    the payment's marker); False, logged, if the cache or the broker cannot be reached."""
    return send_once(
        task,
        marker(task, payment_id),
        (payment_id,),
        ttl=MARKER_TTL[task],
        what=f"{task} for payment {payment_id}",
    )


def send_for_payment_on_commit(task: str, payment_id: int) -> None:
    """`send_for_payment` once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: send_for_payment(task, payment_id), robust=True)
