"""The name a payment's notifications are processed by (`core.task_queue`), and the marker that
says a processing task for the payment is on its way (one key per payment)."""

from __future__ import annotations

PROCESS_TASK = "webhooks.tasks.webhook_process_task"


def marker(payment_id: str) -> str:
    return f"webhooks:queued:{payment_id}"
