"""The names the staff actions' tasks are queued by (`core.task_queue`): kept from when they were
payments' own, since the running release queues by them."""

from __future__ import annotations

RUN_TASK = "payments.tasks.staff_action_run_task"
REQUEUE_TASK = "payments.tasks.staff_actions_requeue_task"
