"""The receiver's group commit (`WEBHOOKS_GROUP_COMMIT`, on in production): notifications that
arrive at once are stored by the process's writer thread in one INSERT, each answered only once
its row is committed, and their processing is queued after the commit. A database that fails
answers 503 (the provider sends the notification again) and never loses the writer.

The writer holds its own connection, so these tests commit for real (transactional tests).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery
from django.db import OperationalError
from django.test import Client
from django.urls import reverse

import webhooks.queue
import webhooks.writer
from tests.webhooks.support import take_queued
from webhooks.models import WebhookEvent, WebhookState
from webhooks.notifications import Notification
from webhooks.queue import DISPATCH_TASK, PROCESS_TASK, dispatch_pending, enqueue_many, is_marked
from webhooks.writer import insert_events, writer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_broker")]

TOKEN = "whk-writer-8Hq3pLx9sT2vW7zY1bC4dF6gJ0kM"


@pytest.fixture(autouse=True)
def group_commit(settings: Any) -> Iterator[Any]:
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    settings.WEBHOOKS_GROUP_COMMIT = True
    yield settings
    writer.stop()  # its connection closed, so the test database can be flushed and dropped


def post(payment_id: str, client: Client | None = None) -> Any:
    body = {"id": payment_id, "origin": "payments-api", "event_type": "UPDATE"}
    return (client or Client()).post(
        reverse("webhooks:payments", kwargs={"token": TOKEN}),
        json.dumps(body),
        content_type="application/json",
    )


def wait_for(condition: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_insert_events_stores_the_rows_in_one_statement_and_returns_their_ids_in_order() -> None:
    """Rows for several notifications (repeats included) come back with their ids in the order
    given, stored as received, with their sender's address."""
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    rows = [
        (Notification(first, "INSERT"), "203.0.113.7"),
        (Notification(second, "UPDATE"), None),
        (Notification(first, "UPDATE"), "2001:db8::1"),
    ]

    ids = insert_events(rows)

    stored = {event.pk: event for event in WebhookEvent.objects.all()}
    assert sorted(ids) == sorted(stored) and len(set(ids)) == 3
    assert [
        (stored[pk].provider_payment_id, stored[pk].event_type, stored[pk].remote_addr)
        for pk in ids
    ] == [
        (first, "INSERT", "203.0.113.7"),
        (second, "UPDATE", None),
        (first, "UPDATE", "2001:db8::1"),
    ]
    assert {event.state for event in stored.values()} == {WebhookState.RECEIVED}


def test_notifications_arriving_at_once_are_each_answered_with_their_own_committed_row(
    celery_app: Celery,
) -> None:
    """Twenty notifications for ten payments, posted at the same instant from twenty threads:
    each is answered 200 with the id of a committed row holding its payment, and one processing
    task is queued per payment."""
    payments = [str(uuid.uuid4()) for _ in range(10)]
    sending = payments * 2
    barrier = threading.Barrier(len(sending))
    answers: dict[int, tuple[str, int, dict[str, Any]]] = {}

    def send(index: int) -> None:
        client = Client()
        barrier.wait(timeout=10)
        response = post(sending[index], client)
        answers[index] = (sending[index], response.status_code, response.json())

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(sending))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert {status for _, status, _ in answers.values()} == {200}
    ids = [body["event"] for _, _, body in answers.values()]
    assert len(set(ids)) == 20
    stored = dict(WebhookEvent.objects.values_list("pk", "provider_payment_id"))
    assert {body["event"]: payment for payment, _, body in answers.values()} == stored
    wait_for(lambda: all(is_marked(payment) for payment in payments))
    seen: list[tuple[str, list[Any]]] = []

    def all_queued() -> bool:  # queued by the writer after it answered
        seen.extend(take_queued(celery_app))
        return len(seen) >= len(payments)

    wait_for(all_queued)
    assert sorted(seen) == sorted((PROCESS_TASK, [payment]) for payment in payments)


def test_a_stale_connection_is_replaced_and_the_notification_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The writer's connection failing once (PostgreSQL restarted, say) costs nothing: the batch
    is written again on a new connection and answered 200."""
    calls: list[int] = []
    real = webhooks.writer.insert_events

    def failing_once(rows: Any) -> list[int]:
        calls.append(len(rows))
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real(rows)

    monkeypatch.setattr(webhooks.writer, "insert_events", failing_once)

    response = post(str(uuid.uuid4()))

    assert response.status_code == 200, response.content
    assert len(calls) == 2
    assert WebhookEvent.objects.filter(pk=response.json()["event"]).exists()


def test_a_database_that_fails_is_answered_503_and_the_writer_lives_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """While the database refuses the rows, the notification is answered 503 with a readable
    JSON error and a Retry-After (the provider sends it again), nothing is stored, and once the
    database is back the next notification is stored as usual."""
    real = webhooks.writer.insert_events

    def down(rows: Any) -> list[int]:
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(webhooks.writer, "insert_events", down)
    refused = post(str(uuid.uuid4()))

    assert refused.status_code == 503
    assert refused["Retry-After"] == "5"
    assert refused.json()["error"] == "unavailable"
    assert refused.json()["message"]
    assert not WebhookEvent.objects.exists()
    assert any("not stored" in record.getMessage() for record in caplog.records)

    monkeypatch.setattr(webhooks.writer, "insert_events", real)
    stored = post(str(uuid.uuid4()))
    assert stored.status_code == 200, stored.content
    assert WebhookEvent.objects.count() == 1


def test_a_database_too_slow_is_answered_503_after_the_store_timeout(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """A request waits at most WEBHOOKS_STORE_TIMEOUT for its row, then answers 503; the row
    written late is kept (a notification is a hint: a copy sent again is harmless)."""
    settings.WEBHOOKS_STORE_TIMEOUT = 1
    real = webhooks.writer.insert_events

    def slow(rows: Any) -> list[int]:
        time.sleep(1.5)
        return real(rows)

    monkeypatch.setattr(webhooks.writer, "insert_events", slow)

    response = post(str(uuid.uuid4()))

    assert response.status_code == 503
    wait_for(lambda: WebhookEvent.objects.count() == 1)


def test_in_a_flood_a_batch_queues_one_dispatcher_and_the_rest_wait_pending(
    settings: Any, celery_app: Celery
) -> None:
    """Past the batching rate (here 3 in 3 seconds), a batch's payments beyond the first three go
    to the pending list behind one dispatcher; dispatched, every payment has its one task."""
    settings.WEBHOOKS_BATCH_ABOVE_PER_SECOND = 1
    payments = [str(uuid.uuid4()) for _ in range(10)]
    barrier = threading.Barrier(len(payments))
    statuses: list[int] = []

    def send(payment_id: str) -> None:
        client = Client()
        barrier.wait(timeout=10)
        statuses.append(post(payment_id, client).status_code)

    threads = [threading.Thread(target=send, args=(p,)) for p in payments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert statuses == [200] * 10
    wait_for(lambda: all(is_marked(payment) for payment in payments))

    seen: list[tuple[str, list[Any]]] = []

    def dispatcher_queued() -> bool:
        seen.extend(take_queued(celery_app))
        return (DISPATCH_TASK, []) in seen

    wait_for(dispatcher_queued)
    direct = [args[0] for name, args in seen if name == PROCESS_TASK]
    assert len(direct) <= 3
    assert dispatch_pending(force=True).queued == 10 - len(direct)
    later = [args[0] for name, args in take_queued(celery_app) if name == PROCESS_TASK]
    assert sorted(direct + later) == sorted(payments)


def test_a_batch_is_queued_even_if_redis_forgot_the_admission_script(celery_app: Celery) -> None:
    """Redis restarted (its scripts gone): the batch's pipelined script is loaded again."""
    payment_ids = [str(uuid.uuid4()) for _ in range(3)]
    backend = webhooks.queue._redis()
    assert backend is not None
    backend.client.script_flush()

    assert enqueue_many(payment_ids) == 3

    assert sorted(take_queued(celery_app)) == sorted((PROCESS_TASK, [p]) for p in payment_ids)


def recording(monkeypatch: pytest.MonkeyPatch, *, insert_delay: float = 0.0) -> dict[str, list]:
    """Record each INSERT batch and each hand-over to the queue the writer makes (the real ones
    run; an INSERT can be made slower so that requests pile up behind it)."""
    seen: dict[str, list] = {"batches": [], "hand_overs": []}
    real_insert, real_enqueue = webhooks.writer.insert_events, webhooks.writer.enqueue_many

    def insert(rows: Any) -> list[int]:
        time.sleep(insert_delay)
        seen["batches"].append([notification.payment_id for notification, _ in rows])
        return real_insert(rows)

    def enqueue(payment_ids: list[str]) -> int:
        seen["hand_overs"].append(list(payment_ids))
        return real_enqueue(payment_ids)

    monkeypatch.setattr(webhooks.writer, "insert_events", insert)
    monkeypatch.setattr(webhooks.writer, "enqueue_many", enqueue)
    return seen


def test_under_load_one_hand_over_serves_several_batches_and_each_notification_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While requests wait to be stored, the next INSERT goes before the queue: committed
    notifications are handed over together, each exactly once, and none waits long."""
    seen = recording(monkeypatch, insert_delay=0.01)
    payments = [str(uuid.uuid4()) for _ in range(60)]
    answered: list[int] = []

    def send(chunk: list[str]) -> None:
        client = Client()
        for payment_id in chunk:
            answered.append(post(payment_id, client).status_code)

    threads = [threading.Thread(target=send, args=(payments[i::6],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert answered == [200] * 60
    wait_for(lambda: all(is_marked(payment) for payment in payments), timeout=5)
    handed = [payment for hand_over in seen["hand_overs"] for payment in hand_over]
    assert sorted(handed) == sorted(payments)
    assert len(seen["hand_overs"]) < len(seen["batches"])
    assert max(len(hand_over) for hand_over in seen["hand_overs"]) <= webhooks.writer.MAX_BATCH


def test_a_lone_notification_is_handed_over_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = recording(monkeypatch)
    payment_id = str(uuid.uuid4())

    assert post(payment_id).status_code == 200

    wait_for(lambda: is_marked(payment_id), timeout=2)
    assert seen["hand_overs"] == [[payment_id]]


def test_a_writer_stopping_hands_over_what_it_has_committed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Told to stop while it holds committed notifications not yet handed to the queue, the
    writer hands them over before it ends."""
    seen = recording(monkeypatch, insert_delay=0.05)
    payments = [str(uuid.uuid4()) for _ in range(3)]
    jobs_queue = writer._started()
    jobs = [webhooks.writer._Job(Notification(payment, "UPDATE"), None) for payment in payments]
    for job in jobs:
        jobs_queue.put(job)
    writer.stop()

    assert all(job.done.is_set() and job.event_id for job in jobs)
    assert sorted(p for hand_over in seen["hand_overs"] for p in hand_over) == sorted(payments)
    assert all(is_marked(payment) for payment in payments)
