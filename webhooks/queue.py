"""Putting a payment's processing on the Celery queue, once per burst of notifications.

Coalescing: while a processing task for a payment is on its way and has not started, a marker
in the cache (one key per payment: `cache.add`, which is Redis' SET NX EX, and so needs no
multi-key operation and works on Redis Cluster) says so, and later notifications for that
payment add no task; the task claims their rows when it starts. The task removes the marker
before it claims, so a notification that arrives after a refetch began always queues another.

The task is queued with a countdown of `WEBHOOKS_COALESCE_SECONDS` (1 s by default): a burst of
notifications for one payment (INSERT then UPDATEs, the provider's duplicates) is read once, and
no notification is held longer than that before a worker may take it.

Nothing here is raised to the receiver: if the cache or the broker is down, the row stays
`received` and the relay queues it later (`webhooks.services.webhook_relay`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from contextlib import suppress

from celery import current_app
from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

PROCESS_TASK = "webhooks.tasks.webhook_process_task"


def _marker(payment_id: str) -> str:
    return f"webhooks:queued:{payment_id}"


def _marker_ttl() -> int:
    """A marker whose task was lost stops suppressing new tasks when the relay takes over."""
    return settings.WEBHOOKS_RELAY_AFTER


def is_marked(payment_id: str) -> bool:
    """Whether a processing task for the payment is on its way (for tests and the admin)."""
    return bool(cache.get(_marker(payment_id)))


def enqueue_processing(payment_id: str) -> bool:
    """Make sure the payment's notifications will be processed: queue its task unless one is
    already on its way. False (logged) if the cache or the broker is down: the relay will."""
    try:
        if not cache.add(_marker(payment_id), 1, timeout=_marker_ttl()):
            return True  # coalesced into the task on its way
    except Exception as exc:
        logger.warning("webhook for payment %s not queued (%s); the relay will", payment_id, exc)
        return False
    if _publish([payment_id], countdown=settings.WEBHOOKS_COALESCE_SECONDS):
        return True
    unmark_queued(payment_id)
    return False


def queue_now(payment_ids: Iterable[str]) -> int:
    """Queue a processing task for each payment at once, whatever is on its way (the relay,
    staff's retry): a task that finds nothing left to claim costs one query."""
    ids = list(dict.fromkeys(payment_ids))
    for payment_id in ids:
        with suppress(Exception):
            cache.set(_marker(payment_id), 1, timeout=_marker_ttl())
    sent = _publish(ids)
    for payment_id in ids[sent:]:
        unmark_queued(payment_id)
    return sent


def unmark_queued(payment_id: str) -> None:
    """Say that no task for the payment is on its way any more (best effort)."""
    with suppress(Exception):
        cache.delete(_marker(payment_id))


def _publish(payment_ids: list[str], countdown: float = 0) -> int:
    """Send a processing task for each payment over one producer; how many were sent."""
    sent = 0
    if not payment_ids:
        return sent
    try:
        with current_app.producer_or_acquire() as producer:
            # A broker that is down fails here at once: left to itself, kombu would keep
            # reconnecting for seconds on every publish while the provider waits for the answer.
            producer.connection.ensure_connection(max_retries=0)
            for payment_id in payment_ids:
                current_app.send_task(
                    PROCESS_TASK,
                    args=(payment_id,),
                    countdown=countdown or None,
                    retry=False,
                    producer=producer,
                )
                sent += 1
    except Exception as exc:
        logger.warning("%d webhook task(s) not queued: %s", len(payment_ids) - sent, exc)
    return sent
