"""Thin, idempotent tasks: they take a payment id and call a service."""

from __future__ import annotations

from datetime import timedelta

from celery import Task, shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.utils import timezone

from webhooks.processing import RetryLater, webhook_give_up, webhook_hold, webhook_process
from webhooks.retention import webhooks_prune
from webhooks.services import webhook_relay


@shared_task(bind=True, acks_late=True, ignore_result=True, max_retries=None)
def webhook_process_task(self: Task, payment_id: str) -> str:
    """Refetch a payment for the notifications waiting for it. While the provider is
    unreachable: retries with exponential backoff and full jitter, bounded; then the events are
    marked failed for staff. Safe to run twice or out of order (the apply is monotonic)."""
    task_id = str(self.request.id)
    try:
        return str(webhook_process(payment_id=payment_id, task_id=task_id))
    except RetryLater as exc:
        retries = int(self.request.retries or 0)
        if retries >= settings.WEBHOOKS_MAX_RETRIES:
            webhook_give_up(payment_id=payment_id, task_id=task_id, error=exc.message)
            return "failed"
        countdown = get_exponential_backoff_interval(
            factor=settings.WEBHOOKS_RETRY_BACKOFF,
            retries=retries,
            maximum=settings.WEBHOOKS_RETRY_BACKOFF_MAX,
            full_jitter=True,
        )
        countdown = max(countdown, 1)
        until = timezone.now() + timedelta(seconds=countdown)
        webhook_hold(payment_id=payment_id, task_id=task_id, until=until)
        raise self.retry(countdown=countdown) from exc


@shared_task(acks_late=True, ignore_result=True)
def webhook_relay_task() -> int:
    """Queue again the notifications the broker never got (beat, every minute)."""
    return webhook_relay()


@shared_task(ignore_result=True)
def webhooks_prune_task() -> int:
    """Delete the notifications finished over WEBHOOKS_KEEP_DAYS ago (beat, hourly)."""
    return webhooks_prune()
