"""Putting payments' provider calls on the Celery queue, by name, once the caller's transaction
commits: a web request records what is wanted and a task makes the call.

A broker that is down fails the publish at once (no reconnecting for seconds inside a request)
and is only logged: every call queued here has a sweep that queues it again
(`payments.tasks.payments_send_waiting_task` for creates, the reconciliation for the rest).

At most one call per payment and kind is on its way: a marker in the cache (`cache.add`, Redis'
SET NX EX) says so until the task removes it, or until it expires (its task was lost).
"""

from __future__ import annotations

import logging
from contextlib import suppress

from celery import current_app
from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)

SEND_CREATE_TASK = "payments.tasks.payment_send_create_task"
REFRESH_TASK = "payments.tasks.payment_refresh_task"
# Long enough for a create's retries (up to 10 minutes apart) to keep their marker.
MARKER_TTL = {SEND_CREATE_TASK: 900, REFRESH_TASK: 60}


def _marker(task: str, payment_id: int) -> str:
    return f"payments:queued:{task.rsplit('.', 1)[-1]}:{payment_id}"


def is_queued(task: str, payment_id: int) -> bool:
    """Whether `task` for the payment is on its way (False if the cache cannot say)."""
    try:
        return bool(cache.get(_marker(task, payment_id)))
    except Exception:
        return False


def mark(task: str, payment_id: int) -> None:
    """Say, for another `MARKER_TTL`, that `task` for the payment is on its way (best effort)."""
    with suppress(Exception):
        cache.set(_marker(task, payment_id), 1, timeout=MARKER_TTL[task])


def unmark(task: str, payment_id: int) -> None:
    """Say that no `task` for the payment is on its way any more (best effort)."""
    with suppress(Exception):
        cache.delete(_marker(task, payment_id))


def publish(task: str, payment_id: int, *, countdown: float = 0) -> bool:
    """Send `task` for the payment now, unless one is already on its way; False (logged) if
    the cache or the broker cannot be reached."""
    try:
        if not cache.add(_marker(task, payment_id), 1, timeout=MARKER_TTL[task]):
            return True
    except Exception as exc:
        logger.warning("%s for payment %s not queued: %s", task, payment_id, exc)
        return False
    try:
        send_at_once(task, (payment_id,), countdown=countdown)
    except Exception as exc:
        logger.warning("%s for payment %s not queued: %s", task, payment_id, exc)
        unmark(task, payment_id)
        return False
    return True


def send_at_once(
    task: str, args: tuple[object, ...] = (), *, countdown: float = 0, queue: str | None = None
) -> None:
    """Send `task` by name now (to `queue`, else where the settings route it); a broker that
    is down raises at once (kombu would otherwise keep reconnecting for seconds while a page
    waits)."""
    options: dict[str, object] = {"queue": queue} if queue else {}
    with current_app.producer_or_acquire() as producer:
        producer.connection.ensure_connection(max_retries=0)
        current_app.send_task(
            task,
            args=args,
            countdown=countdown or None,
            retry=False,
            producer=producer,
            **options,
        )


def publish_on_commit(task: str, payment_id: int, *, countdown: float = 0) -> None:
    """`publish` once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: publish(task, payment_id, countdown=countdown), robust=True)
