"""Putting checkout's own tasks on the Celery queue, by name, once the caller's transaction
commits, as webhooks/queue.py does: the services never import `checkout.tasks` (which imports
them), so the modules form no loop."""

from __future__ import annotations

from celery import current_app
from django.db import transaction

MAIL_SEND_TASK = "checkout.tasks.order_mail_send_task"
RELEASE_DUPLICATES_TASK = "checkout.tasks.order_release_duplicates_task"
ORDERS_LIST_MAIL_TASK = "checkout.tasks.orders_list_mail_task"


def queue_on_commit(task: str, *args: object) -> None:
    """Queue `task` with `args` once the current transaction commits (at once outside one). A
    broker that is down is logged, not raised into the commit: each of these tasks has a sweep
    or a retry that queues it again."""
    transaction.on_commit(lambda: current_app.send_task(task, args=args), robust=True)
