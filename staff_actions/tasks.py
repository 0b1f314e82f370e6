"""The staff actions' tasks (their names kept from when they were payments' own: the running
release queues by them)."""

from __future__ import annotations

from core.errors import TryLater
from core.task_queue import PROVIDER_THROTTLED, shop_task
from staff_actions.calls import staff_action_run
from staff_actions.rules import staff_actions_requeue
from staff_actions.task_names import REQUEUE_TASK, RUN_TASK


@shop_task(RUN_TASK, retry=PROVIDER_THROTTLED.on(TryLater))
def staff_action_run_task(action_id: int) -> str:
    """Do what a staff member asked in the admin (capture, cancel, ship an order…), once; again
    after the wait the provider asked for when it said "slow down"."""
    return staff_action_run(action_id=action_id)


@shop_task(REQUEUE_TASK)
def staff_actions_requeue_task() -> int:
    """Queue again the staff actions whose task was lost."""
    return staff_actions_requeue().queued
