"""Claiming a payment's waiting events on PostgreSQL: concurrent claimers take each event once,
and a claimer never waits for another that holds the rows (SKIP LOCKED)."""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import pytest
from django.db import connection, transaction
from django.utils import timezone

from tests.helpers.threads import in_thread
from webhooks.calls import claim_events
from webhooks.models import WebhookEvent, WebhookState

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(
            "the claim's skip_locked is guarded only on PostgreSQL: this run, on "
            f"{connection.vendor}, does not check it"
        )


def waiting_events(payment_id: str, count: int) -> list[int]:
    WebhookEvent.objects.bulk_create(
        WebhookEvent(provider_payment_id=payment_id, event_type="UPDATE") for _ in range(count)
    )
    return list(
        WebhookEvent.objects.filter(provider_payment_id=payment_id).values_list("pk", flat=True)
    )


def test_four_claimers_at_once_take_every_event_exactly_once() -> None:
    """Given 200 events waiting for one payment, when four tasks claim them at the same instant
    and again until nothing is left, then every event is claimed by exactly one task, once."""
    payment_id = str(uuid.uuid4())
    pks = waiting_events(payment_id, 200)
    barrier = threading.Barrier(4)
    claimed: dict[str, list[int]] = {}

    def claimer(task_id: str) -> None:
        barrier.wait()
        mine: list[int] = []
        while got := claim_events(payment_id, task_id, timezone.now()):
            mine += got
            WebhookEvent.objects.filter(pk__in=got).update(state=WebhookState.PROCESSED)
        claimed[task_id] = mine

    threads = [
        threading.Thread(target=in_thread(lambda task=f"task-{n}": claimer(task))) for n in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    taken = Counter(pk for pks_of_task in claimed.values() for pk in pks_of_task)
    assert len(claimed) == 4
    assert set(taken) == set(pks)
    assert set(taken.values()) == {1}
    assert set(WebhookEvent.objects.values_list("attempts", flat=True)) == {1}


def test_a_second_claimer_does_not_wait_for_the_first() -> None:
    """Given a task that has claimed a payment's events and still holds their rows in its
    transaction, when another task claims the same payment, then it returns at once with
    nothing (it skips the locked rows instead of waiting), while the first still holds them."""
    payment_id = str(uuid.uuid4())
    pks = waiting_events(payment_id, 5)
    first_holds, release = threading.Event(), threading.Event()
    first_claimed: list[int] = []

    def first() -> None:
        with transaction.atomic():
            first_claimed.extend(claim_events(payment_id, "first", timezone.now()))
            first_holds.set()
            release.wait(timeout=60)

    holder = threading.Thread(target=in_thread(first))
    holder.start()
    try:
        assert first_holds.wait(timeout=30)
        second_claimed: list[list[int]] = []
        second = threading.Thread(
            target=in_thread(
                lambda: second_claimed.append(claim_events(payment_id, "second", timezone.now()))
            )
        )
        second.start()
        second.join(timeout=20)

        assert not second.is_alive(), "the second claimer waited for the first one's rows"
        assert second_claimed == [[]]
        assert holder.is_alive()  # the first still held them all along
    finally:
        release.set()
        holder.join(timeout=30)

    assert sorted(first_claimed) == sorted(pks)
    assert set(WebhookEvent.objects.values_list("task_id", flat=True)) == {"first"}
