"""Webhook notifications: an outbox written in the payment's own transaction. The background
worker of sandbox.provider.webhook_delivery sends them at least once, with retries.

Chaos modes (set through /_sandbox/webhooks/chaos) act when a notification is queued:
`duplicate` queues it twice, `delay` holds it `delay_ms`, `drop` records it as dropped,
`reorder` holds every notification queued within `delay_ms` and then sends them newest first.
"""

from __future__ import annotations

import threading
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from sandbox.provider.models import DeliveryStatus, Payment, SandboxState, WebhookDelivery

ORIGIN = "payments-api"
# Set when a notification may be due: wakes the delivery worker before its next poll.
worker_wake = threading.Event()


def _take_chaos(state: SandboxState) -> str:
    """The chaos mode that applies to the next notification, spending one of its `times`."""
    mode = state.chaos_mode
    if not mode or mode == "none":
        return ""
    if state.chaos_remaining is not None:
        state.chaos_remaining -= 1
        if state.chaos_remaining <= 0:
            state.chaos_mode = ""
            state.chaos_remaining = None
    return mode


def webhook_enqueue(*, payment: Payment, event_type: str) -> None:
    """Queue `{id, origin, event_type}` for the payment's `webhook_url` (inside its transaction)."""
    if not payment.webhook_url:
        return
    now = timezone.now()
    # The state row is locked only while chaos is on, so payments do not queue behind it.
    state = SandboxState.load()
    if state.chaos_mode:
        state = SandboxState.objects.select_for_update().get(pk=state.pk)
    mode = _take_chaos(state)
    delivery = WebhookDelivery(
        payment_id=payment.id,
        url=payment.webhook_url,
        event_type=event_type,
        payload={"id": str(payment.id), "origin": ORIGIN, "event_type": event_type},
        next_attempt_at=now,
    )
    copies = 1
    if mode == "duplicate":
        copies = 2
    elif mode == "drop":
        delivery.status = DeliveryStatus.DROPPED
        delivery.last_error = "dropped by webhook chaos"
    elif mode == "delay":
        delivery.next_attempt_at = now + timedelta(milliseconds=state.chaos_delay_ms)
    elif mode == "reorder":
        if state.chaos_release_at is None or state.chaos_release_at <= now:
            state.chaos_release_at = now + timedelta(milliseconds=state.chaos_delay_ms)
        delivery.next_attempt_at = state.chaos_release_at
        delivery.reorder = True
    if mode:
        state.save()
    for _ in range(copies):
        delivery.pk = None
        delivery.save()
    transaction.on_commit(worker_wake.set)
