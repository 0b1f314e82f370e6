"""The benchmarks' tasks: a no-op (the storm's baseline) and the tutorial receiver's task."""

from django.core.cache import cache

from core.task_queue import shop_task
from payments.rereading.calls import payment_sync
from webhooks.models import WebhookEvent

NOOP_COUNTER = "bench:noop-done"
NOOP_TASK = "bench.tasks.noop_task"
TUTORIAL_TASK = "bench.tasks.tutorial_process_task"


@shop_task(NOOP_TASK)
def noop_task(index: int) -> None:
    cache.incr(NOOP_COUNTER)  # the storm counts the tasks run


@shop_task(TUTORIAL_TASK)
def tutorial_process_task(event_id: int) -> None:
    """What a tutorial's task does: read the payment of the event and apply it."""
    event = WebhookEvent.objects.get(pk=event_id)
    payment_sync(provider_id=event.provider_payment_id)
    WebhookEvent.objects.filter(pk=event_id).update(state="processed")
