"""Putting notifications on the Celery queue: cheaply, and never at the cost of the answer.

Bursts coalesce here: while a processing task for a payment is queued and has not started, a
marker in Redis says so, and later notifications for that payment add no new task; the queued
task claims their rows when it starts. The task removes the marker before it claims, so a
notification that arrives after a refetch began always queues another one.

If Redis is down, nothing is raised: the row stays `received` and the relay queues it later.
"""

from __future__ import annotations

import logging
from contextlib import suppress

from celery import current_app
from django.core.cache import cache

logger = logging.getLogger(__name__)

PROCESS_TASK = "webhooks.tasks.webhook_process_task"
QUEUED_MARKER_TTL = 600  # seconds; a lost task is replaced by the relay after this


def _marker(payment_id: str) -> str:
    return f"webhooks:queued:{payment_id}"


def enqueue_processing(payment_id: str) -> bool:
    """Make sure a processing task for the payment is queued. False if the broker is down."""
    try:
        if not cache.add(_marker(payment_id), 1, timeout=QUEUED_MARKER_TTL):
            return True  # a task queued earlier and not started yet will take this one too
    except Exception as exc:  # Redis down: try the broker anyway, then leave it to the relay
        logger.debug("queued-marker for payment %s not set: %s", payment_id, exc)
    try:
        with current_app.producer_or_acquire() as producer:
            # A broker that is down fails here at once: left to itself, kombu would keep
            # reconnecting for seconds on every publish while the provider waits for the answer.
            producer.connection.ensure_connection(max_retries=0)
            current_app.send_task(PROCESS_TASK, args=(payment_id,), retry=False, producer=producer)
    except Exception as exc:
        logger.warning("webhook for payment %s not queued (%s); the relay will", payment_id, exc)
        unmark_queued(payment_id)
        return False
    return True


def unmark_queued(payment_id: str) -> None:
    """Say that no task for the payment waits in the queue any more (best effort)."""
    with suppress(Exception):
        cache.delete(_marker(payment_id))
