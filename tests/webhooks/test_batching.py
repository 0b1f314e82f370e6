"""Floods of notifications are batched: above the batching rate the receiver queues no task per
notification, new payments wait in a pending list in Redis, and one dispatcher queues their
processing once the flood is over (or has been held for the maximum). In calm traffic each new
payment's task is queued at once.

Real Redis and broker; no worker (the worker's side is in test_worker.py). The clock the
receiver counts arrivals by is the test's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from io import StringIO
from types import SimpleNamespace
from typing import Any

import pytest
from celery import Celery
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

import webhooks.queue
from tests.webhooks.support import take_queued, take_queued_with_eta
from webhooks.models import WebhookEvent
from webhooks.queue import DISPATCH_TASK, PROCESS_TASK, dispatch_pending, enqueue_processing
from webhooks.queue import is_marked as marked
from webhooks.tasks import webhook_dispatch_task, webhook_relay_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_broker")]

TOKEN = "whk-batching-4Tq9pZr2sV7wX1yB3cD5fG8hJ0kL"
CaptureOnCommit = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


class Clock:
    """The time the queue module reads, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def time(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(webhooks.queue, "time", SimpleNamespace(time=clock.time))
    return clock


@pytest.fixture(autouse=True)
def batching(settings: Any) -> Any:
    """A token, and batching above 2 notifications a second: more than 6 in 3 seconds."""
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    settings.WEBHOOKS_BATCH_ABOVE_PER_SECOND = 2
    settings.WEBHOOKS_BATCH_MAX_HOLD = 30
    return settings


@pytest.fixture
def deliver(
    client: Client, django_capture_on_commit_callbacks: CaptureOnCommit
) -> Callable[[str], None]:
    """POST a valid notification for the payment, its on-commit work run as in production."""
    path = reverse("webhooks:payments", kwargs={"token": TOKEN})

    def post(payment_id: str) -> None:
        body = {"id": payment_id, "origin": "payments-api", "event_type": "UPDATE"}
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(path, json.dumps(body), content_type="application/json")
        assert response.status_code == 200, response.content

    return post


def processing(payment_ids: list[str]) -> list[tuple[str, list[str]]]:
    """The processing tasks of these payments, in order, as `take_queued` reads them."""
    return [(PROCESS_TASK, [payment_id]) for payment_id in payment_ids]


def payments(count: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(count)]


@pytest.fixture
def flood(
    clock: Clock, deliver: Callable[[str], None], celery_app: Celery
) -> Iterator[tuple[list[str], list[str]]]:
    """Ten notifications in one second: six new payments queued at once, then two more
    payments (each twice) past the batching rate. Yields (queued at once, batched)."""
    at_once, batched = payments(6), payments(2)
    for payment_id in at_once + batched + batched:
        deliver(payment_id)
    yield at_once, batched


def test_in_calm_traffic_each_new_payment_queues_its_task_at_once(
    clock: Clock, deliver: Callable[[str], None], celery_app: Celery
) -> None:
    """Six notifications for six payments in a second (the batching rate is over six in three
    seconds) queue six processing tasks, and nothing waits in a pending list."""
    ids = payments(6)
    for payment_id in ids:
        deliver(payment_id)

    assert take_queued(celery_app) == processing(ids)
    assert dispatch_pending() == webhooks.queue.Dispatch(held=False, queued=0)
    assert all(marked(payment_id) for payment_id in ids)


def test_a_flood_batches_new_payments_behind_one_dispatcher(
    flood: tuple[list[str], list[str]], celery_app: Celery
) -> None:
    """Past the rate, notifications are stored but queue no processing task: the first new
    payment queues the one dispatcher, the others (and repeats) only wait, marked."""
    at_once, batched = flood

    assert WebhookEvent.objects.count() == 10
    assert take_queued(celery_app) == [
        *processing(at_once),
        (DISPATCH_TASK, []),
    ]
    assert all(marked(payment_id) for payment_id in batched)


def test_the_dispatcher_holds_while_the_flood_lasts_then_queues_each_payment_once(
    flood: tuple[list[str], list[str]], clock: Clock, celery_app: Celery
) -> None:
    """While the flood lasts the dispatcher holds the list; three quiet seconds later it queues
    one processing task per batched payment, and the list is empty."""
    _, batched = flood
    take_queued(celery_app)

    assert dispatch_pending() == webhooks.queue.Dispatch(held=True)
    assert take_queued(celery_app) == []

    clock.advance(3)
    assert dispatch_pending() == webhooks.queue.Dispatch(held=False, queued=2)
    assert take_queued(celery_app) == processing(batched)
    assert dispatch_pending() == webhooks.queue.Dispatch(held=False, queued=0)


def test_the_end_of_a_flood_is_noticed_two_seconds_after_its_last_notification(
    flood: tuple[list[str], list[str]],
    clock: Clock,
    deliver: Callable[[str], None],
    celery_app: Celery,
) -> None:
    """The flood's end is judged on this second and the one before: one second after the
    flood the list is still held, two seconds after it is queued, although the receiver's
    three-second window still counts the flood."""
    _, batched = flood
    take_queued(celery_app)

    clock.advance(1)
    assert dispatch_pending() == webhooks.queue.Dispatch(held=True)
    clock.advance(0.5)
    deliver(batched[0])  # a trickle under the batching rate does not hold the list
    clock.advance(0.5)
    assert dispatch_pending() == webhooks.queue.Dispatch(held=False, queued=2)
    assert take_queued(celery_app) == processing(batched)


def test_a_flood_that_goes_on_is_held_no_longer_than_the_maximum(
    flood: tuple[list[str], list[str]],
    clock: Clock,
    deliver: Callable[[str], None],
    celery_app: Celery,
    batching: Any,
) -> None:
    """A flood that never ends does not hold the pending payments for ever: after the maximum
    hold they are queued although notifications keep pouring in."""
    _, batched = flood
    take_queued(celery_app)
    for _ in range(batching.WEBHOOKS_BATCH_MAX_HOLD - 1):
        clock.advance(1)
        for _ in range(3):
            deliver(batched[0])  # the payment is already on its way: nothing more queued
        assert dispatch_pending().held

    clock.advance(1)
    for _ in range(3):
        deliver(batched[0])
    assert dispatch_pending() == webhooks.queue.Dispatch(held=False, queued=2)
    assert take_queued(celery_app) == processing(batched)


def test_the_dispatcher_task_looks_again_shortly_while_held(
    flood: tuple[list[str], list[str]], clock: Clock, celery_app: Celery
) -> None:
    """The dispatcher task, finding the flood on, queues itself again with a countdown (and
    nothing else); run once the flood is over, it queues the batched payments."""
    _, batched = flood
    take_queued(celery_app)

    assert webhook_dispatch_task() == "held"
    [(name, args, eta)] = take_queued_with_eta(celery_app)
    assert (name, args) == (DISPATCH_TASK, [])
    assert eta is not None

    clock.advance(3)
    assert webhook_dispatch_task() == "queued 2"
    assert take_queued(celery_app) == processing(batched)


def test_a_pending_list_whose_dispatcher_was_lost_is_emptied_by_the_relay(
    flood: tuple[list[str], list[str]], clock: Clock, celery_app: Celery
) -> None:
    """If the dispatcher task is lost (a worker died with it, or it could not be queued), the
    relay's next run queues the batched payments once the flood is over."""
    _, batched = flood
    take_queued(celery_app)  # the dispatcher is lost

    clock.advance(3)
    webhook_relay_task()

    assert take_queued(celery_app) == processing(batched)


def test_a_notification_after_the_payments_task_started_is_batched_again_in_a_flood(
    flood: tuple[list[str], list[str]],
    clock: Clock,
    deliver: Callable[[str], None],
    celery_app: Celery,
) -> None:
    """A payment whose task has started (its marker gone) and gets a new notification in a
    flood is pending again: nothing is lost, the dispatcher will queue it."""
    at_once, _ = flood
    take_queued(celery_app)
    webhooks.queue.unmark_queued(at_once[0])  # its task has started

    deliver(at_once[0])

    assert marked(at_once[0])
    assert take_queued(celery_app) == []  # the dispatcher queued by the flood is still on its way
    clock.advance(3)
    assert dispatch_pending().queued == 3


def test_without_redis_each_new_payment_queues_its_task_once(
    settings: Any, celery_app: Celery
) -> None:
    """The demo runs without Redis (file cache, embedded broker): the marker lives in Django's
    cache, and a new payment's task is queued at once, a second notification adds none."""
    settings.REDIS_URL = None
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    payment_id = str(uuid.uuid4())

    assert enqueue_processing(payment_id)
    assert enqueue_processing(payment_id)

    assert take_queued(celery_app) == [(PROCESS_TASK, [payment_id])]
    assert marked(payment_id)
    assert dispatch_pending() == webhooks.queue.Dispatch(held=False, queued=0)


def test_the_relay_command_queues_what_a_finished_flood_left_pending(
    flood: tuple[list[str], list[str]], clock: Clock, celery_app: Celery
) -> None:
    """`webhooks_relay` says the flood holds the list while it lasts, and queues the pending
    payments once it is over."""
    _, batched = flood
    take_queued(celery_app)
    out = StringIO()

    call_command("webhooks_relay", stdout=out)
    assert "A flood is on" in out.getvalue()
    assert take_queued(celery_app) == []

    clock.advance(3)
    call_command("webhooks_relay", stdout=out)
    assert "2 pending payment(s) queued." in out.getvalue()
    assert take_queued(celery_app) == processing(batched)


def test_a_pending_list_left_without_dispatcher_calls_one_at_the_next_flood(
    flood: tuple[list[str], list[str]],
    clock: Clock,
    deliver: Callable[[str], None],
    celery_app: Celery,
    batching: Any,
) -> None:
    """A pending list older than the longest hold has lost its dispatcher: the next payment
    batched in a flood calls another one (without waiting for the relay)."""
    take_queued(celery_app)  # the dispatcher is lost
    clock.advance(batching.WEBHOOKS_BATCH_MAX_HOLD + 6)
    later = payments(7)

    for payment_id in later:
        deliver(payment_id)

    assert take_queued(celery_app) == [
        *processing(later[:6]),
        (DISPATCH_TASK, []),
    ]
    assert dispatch_pending().queued == 3
