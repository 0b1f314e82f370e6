"""The names payments' tasks are queued by (`core.task_queue`), and the markers that say one is
on its way. A task keeps its name when its code moves: the running release queues by it."""

from __future__ import annotations

SEND_CREATE_TASK = "payments.tasks.payment_send_create_task"
REFRESH_TASK = "payments.tasks.payment_refresh_task"
CHECK_TASK = "payments.tasks.payments_check_task"
METHODS_REFRESH_TASK = "payments.tasks.payment_methods_refresh_task"
STAFF_ACTION_RUN_TASK = "payments.tasks.staff_action_run_task"

# How long a marker says a task is on its way: long enough for a create's retries (up to 10
# minutes apart); a refresh runs at once.
MARKER_TTL = {SEND_CREATE_TASK: 900, REFRESH_TASK: 60}


def marker(task: str, payment_id: int) -> str:
    """The cache key that says `task` for the payment is on its way."""
    return f"payments:queued:{task.rsplit('.', 1)[-1]}:{payment_id}"
