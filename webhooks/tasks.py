"""Thin, idempotent tasks: they take a payment id and call one function of `webhooks.calls` or
`webhooks.rules`."""

from __future__ import annotations

from datetime import timedelta

from celery import Task
from django.utils import timezone

from core.task_queue import PROVIDER_READ, shop_task
from webhooks.calls import RetryLater, webhook_give_up, webhook_hold, webhook_process
from webhooks.rules import webhook_relay, webhooks_prune
from webhooks.task_names import PROCESS_TASK


@shop_task(PROCESS_TASK, bind=True, max_retries=None)
def webhook_process_task(self: Task, payment_id: str) -> str:
    """Refetch a payment for the notifications waiting for it. While the provider is
    unreachable: retries by the `PROVIDER_READ` policy (exponential backoff with full jitter,
    bounded), or after the wait it asked for when it said "slow down" (`ShopTask`), the events
    held until then; then the events are marked failed for staff. Safe to run twice or out of
    order (the apply is monotonic). Its retry is written here, not left to Celery's
    autoretry: its figures are read from the settings at each try, and the hold and the
    giving up come between a failure and the next try."""
    task_id = str(self.request.id)
    try:
        return str(webhook_process(payment_id=payment_id, task_id=task_id))
    except RetryLater as exc:
        retries = int(self.request.retries or 0)
        if PROVIDER_READ.exhausted(retries):
            webhook_give_up(payment_id=payment_id, task_id=task_id, error=exc.message)
            return "failed"
        # Sent with the wait it will really have (the provider's, for a 429), then held so.
        retry = self.retry(countdown=PROVIDER_READ.countdown(retries), throw=False)
        until = timezone.now() + timedelta(seconds=float(retry.when))
        webhook_hold(payment_id=payment_id, task_id=task_id, until=until)
        raise retry from exc


@shop_task("webhooks.tasks.webhook_relay_task")
def webhook_relay_task() -> int:
    """Queue again the notifications the broker never got (beat, every minute)."""
    return webhook_relay()


@shop_task("webhooks.tasks.webhooks_prune_task")
def webhooks_prune_task() -> int:
    """Delete the notifications finished over WEBHOOKS_KEEP_DAYS ago (beat, hourly)."""
    return webhooks_prune()
