"""Processing notifications without a worker: webhook_process refetches a payment once for every
row waiting for it, unknown ids are looked up once and within a budget, claims survive a crash,
a provider that is down keeps the rows with their task, and the relay queues again what the
broker never got. The services are called directly; the provider is the live sandbox."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from decimal import Decimal
from io import StringIO
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

import webhooks.services
from checkout.models import Order, OrderStatus
from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentStatus
from tests.factories import PaymentFactory, ProductFactory
from tests.shop import make_order
from tests.support import Api, clear_cache
from tests.webhooks.support import take_queued
from webhooks.models import WebhookEvent, WebhookState
from webhooks.queue import PROCESS_TASK, enqueue_processing, is_marked
from webhooks.services import (
    DEFERRED,
    ProcessOutcome,
    RetryLater,
    webhook_events_retry,
    webhook_give_up,
    webhook_hold,
    webhook_process,
    webhook_relay,
)

CaptureCallbacks = Callable[..., Any]


# --- Helpers --------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def empty_redis(celery_app: Any) -> Iterator[None]:
    """No queued marker, lookup budget or queued task left over from another test."""
    clear_cache()
    yield
    take_queued(celery_app)
    clear_cache()


def notify(payment_id: str, event_type: str = "UPDATE", count: int = 1, **fields: Any) -> list[int]:
    """Rows as the receiver stores them (no task is queued): their pks."""
    return [
        WebhookEvent.objects.create(
            provider_payment_id=payment_id, event_type=event_type, **fields
        ).pk
        for _ in range(count)
    ]


def events(pks: list[int]) -> list[WebhookEvent]:
    return list(WebhookEvent.objects.filter(pk__in=pks).order_by("pk"))


def capture_at_provider(api: Api, payment: Payment, amount: str = "250.00") -> None:
    """Staff capture the authorization at the provider, not through the shop."""
    response = api.patch(
        f"/payments/{payment.provider_id}",
        {"status": "approved", "paid_amount": Decimal(amount)},
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    assert response.status_code == 200, response.text


def refund_at_provider(api: Api, payment: Payment, amount: str) -> None:
    response = api.post("/refunds", {"payment_id": payment.provider_id, "amount": Decimal(amount)})
    assert response.status_code == 201, response.text


def order_for(reference: str | None = None, price: str = "250.00") -> Order:
    product = ProductFactory(
        slug=f"jarra-{uuid.uuid4().hex[:8]}", name="Jarra", price=Decimal(price), stock=5
    )
    fields = {"reference": reference} if reference else {}
    return make_order((product, 1), **fields)


def shoppers_attempt(order: Order, status: str, provider_id: str | None = None) -> Payment:
    """The local record of the shopper's attempt to pay `order` (250.00, automatic capture)."""
    return Payment.objects.create(
        external_reference=order.reference,
        idempotency_key=uuid.uuid4().hex,
        capture_method="automatic",
        amount=Decimal("250.00"),
        status=status,
        provider_id=provider_id,
    )


def status_of(order: Order) -> str:
    order.refresh_from_db()
    return order.status


def provider_down(api: Api, status: int = 503) -> None:
    response = api.post(
        "/_sandbox/faults", {"path": "/payments", "method": "GET", "status": status, "times": 10}
    )
    assert response.status_code in (200, 201), response.text


def provider_back(api: Api) -> None:
    response = api.request("DELETE", "/_sandbox/faults")
    assert response.status_code in (200, 204), response.text


# --- A known payment -------------------------------------------------------------------------


@pytest.mark.sandbox
@pytest.mark.django_db
def test_notifications_of_a_known_payment_are_applied_once(
    provider: Api,
    provider_gets: list[str],
    django_capture_on_commit_callbacks: CaptureCallbacks,
    run_queued: Any,
) -> None:
    """The rows of a payment captured at the provider become processed, linked to it, after one
    attempt; the payment and its ledger move once; a second run finds nothing to do."""
    # Given an authorization captured at the provider, and its notifications stored
    order = order_for()
    payment = PaymentFactory(
        provider=provider, capture_method="manual", external_reference=order.reference
    )
    assert payment.status == PaymentStatus.AUTHORIZED
    capture_at_provider(provider, payment)
    pks = notify(payment.provider_id, "INSERT") + notify(payment.provider_id, "UPDATE", count=2)

    # When they are processed
    with django_capture_on_commit_callbacks(execute=True):
        outcome = webhook_process(payment_id=payment.provider_id, task_id="task-1")

    # Then one read applied the capture, every row says so, and the order is paid
    assert outcome == ProcessOutcome.PROCESSED
    assert provider_gets == [payment.provider_id]
    for event in events(pks):
        assert event.state == WebhookState.PROCESSED
        assert event.payment_id == payment.pk
        assert event.attempts == 1
        assert event.task_id == "task-1"
        assert event.processed_at is not None
        assert event.last_error == ""
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.APPROVED
    assert payment.captured_amount == Decimal("250.00")
    assert list(payment.events.values_list("kind", "old_status", "new_status")) == [
        (PaymentEventKind.CREATED, "creating", "authorized"),
        (PaymentEventKind.SYNCED, "authorized", "approved"),
    ]
    assert run_queued()[0] == "checkout.tasks.order_sync_task"  # then its mails
    assert status_of(order) == OrderStatus.PAID

    # When the same task, or another, runs again for the payment
    again = [
        webhook_process(payment_id=payment.provider_id, task_id="task-1"),
        webhook_process(payment_id=payment.provider_id, task_id="task-2"),
    ]

    # Then there was nothing waiting: no provider call, no new ledger entry, rows unchanged
    assert again == [ProcessOutcome.COALESCED, ProcessOutcome.COALESCED]
    assert provider_gets == [payment.provider_id]
    assert PaymentEvent.objects.filter(payment=payment).count() == 2
    assert {(e.state, e.attempts, e.task_id) for e in events(pks)} == {
        (WebhookState.PROCESSED, 1, "task-1")
    }


@pytest.mark.sandbox
@pytest.mark.django_db
def test_a_burst_for_one_payment_is_one_provider_read_and_a_later_one_is_another(
    provider: Api, provider_gets: list[str], celery_app: Any
) -> None:
    """Ten rows for one payment cost one provider read; a row stored after that read began is
    not lost: the next run reads the payment again and applies what changed since."""
    # Given a charge and ten notifications for it, and the task's queued marker
    payment = PaymentFactory(provider=provider)
    burst = notify(payment.provider_id, count=10)
    assert enqueue_processing(payment.provider_id)
    assert take_queued(celery_app) == [(PROCESS_TASK, [payment.provider_id])]

    # When the task processes them
    outcome = webhook_process(payment_id=payment.provider_id, task_id="burst")

    # Then all ten are processed with exactly one read, and the marker is gone (a later
    # notification queues a task of its own)
    assert outcome == ProcessOutcome.PROCESSED
    assert provider_gets == [payment.provider_id]
    assert [e.state for e in events(burst)] == [WebhookState.PROCESSED] * 10
    assert not is_marked(payment.provider_id)

    # Given a partial refund at the provider, whose notification arrives after that read
    refund_at_provider(provider, payment, "40.00")
    late = notify(payment.provider_id)

    # When the next task runs
    outcome = webhook_process(payment_id=payment.provider_id, task_id="late")

    # Then it reads the payment again and applies the refund
    assert outcome == ProcessOutcome.PROCESSED
    assert provider_gets == [payment.provider_id] * 2
    assert [(e.state, e.task_id, e.attempts) for e in events(late)] == [
        (WebhookState.PROCESSED, "late", 1)
    ]
    payment.refresh_from_db()
    assert payment.refunded_amount == Decimal("40.00")
    assert payment.status == PaymentStatus.APPROVED


@pytest.mark.sandbox
@pytest.mark.django_db
def test_claims_survive_a_crash_and_belong_to_their_task(
    provider: Api, provider_gets: list[str]
) -> None:
    """Rows a task claimed before its worker died are taken again by that task's redelivery
    (same task id), never by another task; another task's rows are left alone."""
    # Given rows claimed by task X and by task Z (both crashed), and one row still waiting
    payment = PaymentFactory(provider=provider)
    claimed_at = timezone.now() - timedelta(minutes=2)
    of_x = notify(
        payment.provider_id,
        count=2,
        state=WebhookState.PROCESSING,
        task_id="X",
        claimed_at=claimed_at,
        attempts=1,
    )
    of_z = notify(
        payment.provider_id,
        state=WebhookState.PROCESSING,
        task_id="Z",
        claimed_at=claimed_at,
        attempts=1,
    )
    waiting = notify(payment.provider_id)

    # When another task Y runs for the payment
    outcome = webhook_process(payment_id=payment.provider_id, task_id="Y")

    # Then it takes only the waiting row
    assert outcome == ProcessOutcome.PROCESSED
    assert [(e.state, e.task_id) for e in events(waiting)] == [(WebhookState.PROCESSED, "Y")]
    assert {(e.state, e.task_id, e.attempts) for e in events(of_x + of_z)} == {
        (WebhookState.PROCESSING, "X", 1),
        (WebhookState.PROCESSING, "Z", 1),
    }

    # When task X is delivered again (same id)
    outcome = webhook_process(payment_id=payment.provider_id, task_id="X")

    # Then it finishes its own rows (a second attempt) and leaves Z's claimed
    assert outcome == ProcessOutcome.PROCESSED
    assert [(e.state, e.task_id, e.attempts) for e in events(of_x)] == [
        (WebhookState.PROCESSED, "X", 2)
    ] * 2
    assert [(e.state, e.task_id) for e in events(of_z)] == [(WebhookState.PROCESSING, "Z")]
    assert len(provider_gets) == 2


# --- Ids the shop does not know ------------------------------------------------------------


@pytest.mark.sandbox
@pytest.mark.django_db
def test_an_id_the_provider_does_not_know_is_unmatched_and_looked_up_once(
    provider: Api, provider_gets: list[str]
) -> None:
    """A notification naming a payment the provider has not (404) ends unmatched with an error
    staff can read; a second one for the same id is settled without asking the provider."""
    # Given a notification for an id nobody knows
    unknown = str(uuid.uuid4())
    first = notify(unknown, "INSERT")

    # When it is processed
    outcome = webhook_process(payment_id=unknown, task_id="t-1")

    # Then it is unmatched after one lookup, with a readable reason and no payment
    assert outcome == ProcessOutcome.UNMATCHED
    assert provider_gets == [unknown]
    [event] = events(first)
    assert event.state == WebhookState.UNMATCHED
    assert event.payment is None
    assert event.processed_at is not None
    assert "the provider has no payment with this id" in event.last_error
    assert not Payment.objects.exists()

    # When another notification for the same id comes
    second = notify(unknown, "UPDATE")
    outcome = webhook_process(payment_id=unknown, task_id="t-2")

    # Then it is unmatched too, with the same reason, and the provider was not asked again
    assert outcome == ProcessOutcome.UNMATCHED
    assert provider_gets == [unknown]
    [again] = events(second)
    assert (again.state, again.last_error, again.payment) == (
        WebhookState.UNMATCHED,
        event.last_error,
        None,
    )


@pytest.mark.sandbox
@pytest.mark.django_db
def test_an_attempt_whose_answer_was_lost_is_adopted_from_its_insert(
    provider: Api,
    provider_gets: list[str],
    django_capture_on_commit_callbacks: CaptureCallbacks,
    run_queued: Any,
) -> None:
    """A local attempt left `unknown` without a provider id (the create's answer never came) is
    the provider's payment with its reference: processing the INSERT attaches the id, applies
    the status with an `adopted` ledger entry, links the rows, and the order follows."""
    # Given an order whose attempt was charged at the provider, but the shop never heard back
    order = order_for()
    attempt = shoppers_attempt(order, PaymentStatus.UNKNOWN)
    remote = provider.create_payment(external_reference=order.reference)
    assert remote["status"] == "approved"
    pks = notify(remote["id"], "INSERT") + notify(remote["id"], "UPDATE")

    # When the notifications are processed
    with django_capture_on_commit_callbacks(execute=True):
        outcome = webhook_process(payment_id=remote["id"], task_id="adopt")

    # Then the attempt is that payment, approved, with the ledger saying how it was learnt
    assert outcome == ProcessOutcome.PROCESSED
    assert provider_gets == [remote["id"]]
    attempt.refresh_from_db()
    assert attempt.provider_id == remote["id"]
    assert attempt.status == PaymentStatus.APPROVED
    assert attempt.captured_amount == Decimal("250.00")
    assert list(attempt.events.values_list("kind", "old_status", "new_status")) == [
        (PaymentEventKind.ADOPTED, "unknown", "approved")
    ]
    assert Payment.objects.count() == 1
    assert {(e.state, e.payment_id) for e in events(pks)} == {(WebhookState.PROCESSED, attempt.pk)}
    assert run_queued()[0] == "checkout.tasks.order_sync_task"  # then its mails
    assert status_of(order) == OrderStatus.PAID


@pytest.mark.sandbox
@pytest.mark.django_db
def test_an_insert_racing_the_shoppers_own_answer_applies_the_payment_once(
    provider: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shopper's pay request records the provider's id on its attempt just after the
    INSERT's task looked for that id and found nothing: the task's adoption then collides with
    that record (the provider id is unique). It applies the payment to the shopper's attempt
    instead, once, with no second record, and its events are processed, not left claimed."""
    import payments.reconciliation as reconciliation

    # Given an attempt that already holds the provider's id (the pay request got its answer)
    order = order_for()
    remote = provider.create_payment(external_reference=order.reference)
    attempt = shoppers_attempt(order, PaymentStatus.APPROVED, provider_id=remote["id"])
    pks = notify(remote["id"], "INSERT")
    # ... which the task's first look did not see yet
    real_held = reconciliation._held
    looks: list[str] = []

    def held_after_the_first_look(provider_id: str) -> Payment | None:
        looks.append(provider_id)
        return None if len(looks) <= 2 else real_held(provider_id)

    monkeypatch.setattr(reconciliation, "_held", held_after_the_first_look)

    # When the INSERT is processed
    outcome = webhook_process(payment_id=remote["id"], task_id="race")

    # Then the shopper's attempt is the payment, and nothing is left claimed
    assert outcome == ProcessOutcome.PROCESSED
    assert Payment.objects.filter(external_reference=order.reference).count() == 1
    assert {(e.state, e.payment_id) for e in events(pks)} == {(WebhookState.PROCESSED, attempt.pk)}


@pytest.mark.sandbox
@pytest.mark.django_db
def test_a_payment_for_one_of_our_orders_without_a_local_record_is_adopted(
    provider: Api, django_capture_on_commit_callbacks: CaptureCallbacks, run_queued: Any
) -> None:
    """A provider payment for an order of this shop that left no local record at all gets one,
    applied as adopted, and the order follows."""
    # Given an order paid at the provider, and no payment row for it here
    order = order_for()
    remote = provider.create_payment(external_reference=order.reference)
    pks = notify(remote["id"], "INSERT")

    # When its INSERT is processed
    with django_capture_on_commit_callbacks(execute=True):
        outcome = webhook_process(payment_id=remote["id"], task_id="adopt")

    # Then a local payment exists for it, approved, and the order is paid
    assert outcome == ProcessOutcome.PROCESSED
    payment = Payment.objects.get()
    assert (payment.provider_id, payment.external_reference) == (remote["id"], order.reference)
    assert (payment.status, payment.amount) == (PaymentStatus.APPROVED, Decimal("250.00"))
    assert payment.customer_email == ""  # the sandbox payment was made without a customer
    assert list(payment.events.values_list("kind", flat=True)) == [PaymentEventKind.ADOPTED]
    assert [(e.state, e.payment_id) for e in events(pks)] == [(WebhookState.PROCESSED, payment.pk)]
    assert run_queued()[0] == "checkout.tasks.order_sync_task"  # then its mails
    assert status_of(order) == OrderStatus.PAID


@pytest.mark.sandbox
@pytest.mark.django_db
def test_a_payment_for_a_reference_that_is_not_ours_is_unmatched(provider: Api) -> None:
    """A provider payment whose reference names no order of this shop is unmatched: nothing is
    created, and the row says why."""
    # Given a payment at the provider for somebody else's reference
    remote = provider.create_payment(external_reference="OTRA-TIENDA-1")
    pks = notify(remote["id"], "INSERT")

    # When it is processed
    outcome = webhook_process(payment_id=remote["id"], task_id="t")

    # Then it is unmatched and no payment or order was made
    assert outcome == ProcessOutcome.UNMATCHED
    [event] = events(pks)
    assert (event.state, event.payment) == (WebhookState.UNMATCHED, None)
    assert "'OTRA-TIENDA-1' matches no order" in event.last_error
    assert not Payment.objects.exists()
    assert not Order.objects.exists()


@pytest.mark.sandbox
@pytest.mark.django_db
def test_lookups_of_unknown_ids_are_bounded_per_minute_and_the_rest_wait(
    provider: Api,
    provider_gets: list[str],
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    celery_app: Any,
    django_capture_on_commit_callbacks: CaptureCallbacks,
) -> None:
    """A flood of random ids costs at most the per-minute budget of provider reads; the rest go
    back to `received` with a "Deferred" note (not lost) and the relay queues them again later.
    Payments the shop knows are never held back by that budget."""
    # Given a budget of 3 lookups a minute (within one minute) and ten unknown ids notified
    settings.WEBHOOKS_UNKNOWN_LOOKUPS_PER_MINUTE = 3
    clock = SimpleNamespace(now=time.time())
    monkeypatch.setattr(webhooks.services, "time", SimpleNamespace(time=lambda: clock.now))
    unknown = [str(uuid.uuid4()) for _ in range(10)]
    rows = {payment_id: notify(payment_id)[0] for payment_id in unknown}

    # When each is processed
    outcomes = [webhook_process(payment_id=pid, task_id=f"t-{pid}") for pid in unknown]

    # Then three were looked up (and are unmatched) and seven wait, received again
    assert len(provider_gets) == 3
    assert outcomes == [ProcessOutcome.UNMATCHED] * 3 + [ProcessOutcome.DEFERRED] * 7
    deferred = WebhookEvent.objects.filter(state=WebhookState.RECEIVED)
    assert sorted(deferred.values_list("provider_payment_id", flat=True)) == sorted(unknown[3:])
    assert {(e.last_error, e.task_id) for e in deferred} == {(DEFERRED, "")}
    assert DEFERRED.startswith("Deferred")

    # When a payment the shop knows is notified while the budget is spent
    known = PaymentFactory(provider=provider)
    known_rows = notify(known.provider_id)
    outcome = webhook_process(payment_id=known.provider_id, task_id="known")

    # Then it is read and processed all the same
    assert outcome == ProcessOutcome.PROCESSED
    assert provider_gets[-1] == known.provider_id
    assert [e.state for e in events(known_rows)] == [WebhookState.PROCESSED]

    # When the relay runs a minute later
    clock.now += 60
    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(older_than=timedelta(0), now=timezone.now() + timedelta(minutes=1))

    # Then the seven deferred rows are queued again
    assert relayed == 7
    queued = take_queued(celery_app)
    assert sorted(args[0] for _, args in queued) == sorted(unknown[3:])
    assert {name for name, _ in queued} == {PROCESS_TASK}

    # And the next minute's budget looks up three more of them
    later = [webhook_process(payment_id=pid, task_id=f"again-{pid}") for pid in unknown[3:]]
    assert later == [ProcessOutcome.UNMATCHED] * 3 + [ProcessOutcome.DEFERRED] * 4
    assert len(provider_gets) == 3 + 1 + 3
    assert WebhookEvent.objects.get(pk=rows[unknown[3]]).state == WebhookState.UNMATCHED


# --- The provider is down ------------------------------------------------------------------


@pytest.mark.sandbox
@pytest.mark.django_db
@pytest.mark.parametrize("status", [503, 500])
def test_while_the_provider_is_down_rows_stay_with_their_task_until_it_answers(
    provider: Api, status: int
) -> None:
    """A provider answering 503, or 500 AI1899 (a server failure answering a read is an outage,
    not a refusal), makes processing raise RetryLater: the rows stay claimed by the task with the
    error and the attempt counted; once it is back, the same task finishes them."""
    # Given a payment with two notifications, and the provider failing every read
    payment = PaymentFactory(provider=provider)
    pks = notify(payment.provider_id, count=2)
    provider_down(provider, status)

    # When the task processes them
    with pytest.raises(RetryLater) as raised:
        webhook_process(payment_id=payment.provider_id, task_id="t-down")

    # Then they stay processing with that task, the error and one attempt
    assert "not reachable" in raised.value.message
    for event in events(pks):
        assert (event.state, event.task_id, event.attempts) == (
            WebhookState.PROCESSING,
            "t-down",
            1,
        )
        assert event.last_error == raised.value.message
        assert event.processed_at is None

    # When the provider is back and the task retries
    provider_back(provider)
    outcome = webhook_process(payment_id=payment.provider_id, task_id="t-down")

    # Then the same task finishes them on its second attempt, the error cleared
    assert outcome == ProcessOutcome.PROCESSED
    assert {(e.state, e.attempts, e.last_error, e.payment_id) for e in events(pks)} == {
        (WebhookState.PROCESSED, 2, "", payment.pk)
    }


@pytest.mark.sandbox
@pytest.mark.django_db
def test_rows_given_up_on_are_failed_and_staff_can_retry_them(
    provider: Api, celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """When retries run out the task's rows are marked failed with the reason; staff's retry
    brings them back to received and queues them; they are then processed."""
    # Given rows claimed by a task that could not reach the provider
    payment = PaymentFactory(provider=provider)
    pks = notify(payment.provider_id, count=2)
    other_task = notify(
        payment.provider_id,
        state=WebhookState.PROCESSING,
        task_id="other",
        claimed_at=timezone.now(),
    )
    provider_down(provider)
    with pytest.raises(RetryLater):
        webhook_process(payment_id=payment.provider_id, task_id="t-tired")

    # When the task gives up
    given_up = webhook_give_up(
        payment_id=payment.provider_id, task_id="t-tired", error="provider unreachable"
    )

    # Then its rows (only its own) are failed with the reason
    assert given_up == 2
    for event in events(pks):
        assert event.state == WebhookState.FAILED
        assert event.last_error == "Gave up after retries: provider unreachable"
        assert event.processed_at is not None
    assert [e.state for e in events(other_task)] == [WebhookState.PROCESSING]

    # When staff retry them
    with django_capture_on_commit_callbacks(execute=True):
        retried = webhook_events_retry(events=WebhookEvent.objects.filter(pk__in=pks))

    # Then they are received again, cleared, and a task is queued for the payment
    assert retried == 2
    assert {(e.state, e.last_error, e.task_id, e.processed_at) for e in events(pks)} == {
        (WebhookState.RECEIVED, "", "", None)
    }
    assert take_queued(celery_app) == [(PROCESS_TASK, [payment.provider_id])]

    # And once the provider answers, that task processes them
    provider_back(provider)
    assert webhook_process(payment_id=payment.provider_id, task_id="t-new") == "processed"
    assert {e.state for e in events(pks)} == {WebhookState.PROCESSED}


@pytest.mark.sandbox
@pytest.mark.django_db
def test_staff_retry_of_an_unmatched_id_looks_it_up_again_and_replay_takes_processed_rows(
    provider: Api, provider_gets: list[str]
) -> None:
    """Retrying one unmatched row brings back every unmatched row of that id, so the provider
    is asked again; processed rows are only taken by a replay."""
    # Given two unmatched rows of an unknown id, and a processed row of a known payment
    unknown = str(uuid.uuid4())
    unmatched = notify(unknown)
    webhook_process(payment_id=unknown, task_id="t-1")
    unmatched += notify(unknown)
    webhook_process(payment_id=unknown, task_id="t-2")
    payment = PaymentFactory(provider=provider)
    processed = notify(payment.provider_id)
    webhook_process(payment_id=payment.provider_id, task_id="t-3")
    assert len(provider_gets) == 2

    # When staff retry the first unmatched row and the processed one (without replay)
    retried = webhook_events_retry(
        events=WebhookEvent.objects.filter(pk__in=unmatched[:1] + processed)
    )

    # Then only the unmatched row counts, but both rows of its id wait again; the processed
    # row is untouched
    assert retried == 1
    assert [e.state for e in events(unmatched)] == [WebhookState.RECEIVED] * 2
    assert [e.state for e in events(processed)] == [WebhookState.PROCESSED]

    # When they are processed, then the provider is asked once more
    assert webhook_process(payment_id=unknown, task_id="t-4") == ProcessOutcome.UNMATCHED
    assert provider_gets[2:] == [unknown]

    # When staff replay the processed row
    replayed = webhook_events_retry(
        events=WebhookEvent.objects.filter(pk__in=processed), replay=True
    )

    # Then it waits again and is processed by a fresh read
    assert replayed == 1
    assert [e.state for e in events(processed)] == [WebhookState.RECEIVED]
    assert webhook_process(payment_id=payment.provider_id, task_id="t-5") == "processed"
    assert provider_gets[3:] == [payment.provider_id]


# --- Relay ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_rows_the_broker_never_got_are_relayed_once(
    celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """Rows received long ago and never relayed are queued again, one task per payment, with
    relayed_at set; a relay right after finds nothing; recent rows are left to their task."""
    # Given three rows for two payments received 5 minutes ago, and one received just now
    now = timezone.now()
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    old = notify(first, count=2, received_at=now - timedelta(minutes=5)) + notify(
        second, received_at=now - timedelta(minutes=5)
    )
    recent = notify(str(uuid.uuid4()), received_at=now - timedelta(seconds=5))

    # When the relay runs
    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay()

    # Then the old rows are relayed and a task is queued per payment, marked as queued
    assert relayed == 3
    assert all(e.relayed_at is not None and e.state == WebhookState.RECEIVED for e in events(old))
    assert [e.relayed_at for e in events(recent)] == [None]
    queued = take_queued(celery_app)
    assert sorted(queued) == sorted([(PROCESS_TASK, [first]), (PROCESS_TASK, [second])])
    assert is_marked(first)
    assert is_marked(second)

    # When it runs again right after
    with django_capture_on_commit_callbacks(execute=True):
        again = webhook_relay()

    # Then nothing is relayed twice
    assert again == 0
    assert take_queued(celery_app) == []


@pytest.mark.django_db
def test_rows_claimed_longer_than_the_lease_are_reset(
    settings: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """A row claimed by a task that vanished (its worker died) more than WEBHOOKS_CLAIM_LEASE
    ago is received again and relayed; a row claimed within the lease still belongs to its
    task."""
    # Given a 60-second lease, a row claimed 61 seconds ago and one claimed 50 seconds ago
    settings.WEBHOOKS_CLAIM_LEASE = 60
    now = timezone.now()
    long_ago = now - timedelta(hours=3)
    stuck = notify(
        str(uuid.uuid4()),
        state=WebhookState.PROCESSING,
        task_id="gone",
        received_at=long_ago,
        claimed_at=now - timedelta(seconds=61),
        attempts=1,
    )
    busy = notify(
        str(uuid.uuid4()),
        state=WebhookState.PROCESSING,
        task_id="busy",
        received_at=long_ago,
        claimed_at=now - timedelta(seconds=50),
        attempts=1,
    )

    # When the relay runs
    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(now=now)

    # Then only the stuck row is released, to be claimed by its new task
    assert relayed == 1
    [event] = events(stuck)
    assert (event.state, event.task_id, event.attempts) == (WebhookState.RECEIVED, "", 1)
    assert event.relayed_at is not None
    assert [(e.state, e.task_id) for e in events(busy)] == [(WebhookState.PROCESSING, "busy")]


@pytest.mark.django_db
def test_a_task_waiting_to_retry_keeps_its_rows_until_its_lease_after_the_retry(
    settings: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """A task that will retry in five minutes holds its rows: the relay leaves them alone until
    the retry is due plus the lease, and takes them only if the retry never came."""
    settings.WEBHOOKS_CLAIM_LEASE = 60
    now = timezone.now()
    payment_id = str(uuid.uuid4())
    held = notify(
        payment_id,
        state=WebhookState.PROCESSING,
        task_id="retrying",
        received_at=now - timedelta(minutes=10),
        claimed_at=now - timedelta(minutes=2),
        attempts=2,
    )

    # When the task says it retries in 5 minutes
    assert webhook_hold(payment_id=payment_id, task_id="retrying", until=now + timedelta(minutes=5))

    # Then the relay leaves the rows to it until the retry is due plus the lease
    for later in (timedelta(0), timedelta(minutes=5), timedelta(minutes=5, seconds=59)):
        with django_capture_on_commit_callbacks(execute=True):
            assert webhook_relay(now=now + later) == 0
    assert [(e.state, e.task_id) for e in events(held)] == [(WebhookState.PROCESSING, "retrying")]

    # And takes them once that has passed with no retry
    with django_capture_on_commit_callbacks(execute=True):
        assert webhook_relay(now=now + timedelta(minutes=6, seconds=1)) == 1
    assert [(e.state, e.task_id) for e in events(held)] == [(WebhookState.RECEIVED, "")]


@pytest.mark.django_db
def test_events_given_up_on_are_tried_again_by_the_schedule_with_backoff(
    settings: Any, celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """Events a task gave up on while the provider could not be reached are queued again by the
    relay, with no staff step: after WEBHOOKS_RETRY_BACKOFF_MAX the first time, twice that after
    a second round of retries, at most ten minutes. Events that failed for another reason (a
    refusal) are left for staff."""
    settings.WEBHOOKS_MAX_RETRIES = 8  # a round of retries is 9 attempts
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 300
    now = timezone.now()
    long_ago = now - timedelta(hours=2)

    def failed(minutes_ago: float, attempts: int, error: str) -> int:
        [pk] = notify(
            str(uuid.uuid4()),
            state=WebhookState.FAILED,
            received_at=long_ago,
            processed_at=now - timedelta(minutes=minutes_ago),
            attempts=attempts,
            last_error=error,
        )
        return pk

    gave_up = "Gave up after retries: The payment service is not reachable."
    first_round_due = failed(5.5, 9, gave_up)
    first_round_waiting = failed(4, 9, gave_up)
    second_round_waiting = failed(9, 18, gave_up)  # waits 10 minutes
    second_round_due = failed(10.5, 18, gave_up)
    many_rounds_due = failed(10.5, 90, gave_up)  # at most ten minutes
    many_rounds_waiting = failed(9.5, 90, gave_up)
    refused = failed(120, 1, "The provider no longer finds payment x.")

    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(now=now)

    due = [first_round_due, second_round_due, many_rounds_due]
    assert relayed == 3
    assert {e.pk: e.state for e in events(due)} == dict.fromkeys(due, WebhookState.RECEIVED)
    assert all(e.processed_at is None and e.last_error == gave_up for e in events(due))
    waiting = [first_round_waiting, second_round_waiting, many_rounds_waiting, refused]
    assert {e.state for e in events(waiting)} == {WebhookState.FAILED}
    queued = {args[0] for _, args in take_queued(celery_app)}
    assert queued == {e.provider_payment_id for e in events(due)}


@pytest.mark.django_db
def test_events_given_up_and_still_waiting_never_crowd_out_lost_ones(
    settings: Any, celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """However many failed events are still waiting their turn (received earlier), the relay's
    batch still takes a notification left without a task."""
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 300
    now = timezone.now()
    notify(
        str(uuid.uuid4()),
        count=3,
        state=WebhookState.FAILED,
        received_at=now - timedelta(hours=2),
        processed_at=now - timedelta(minutes=7),  # a second round: waits ten minutes
        attempts=2 * (settings.WEBHOOKS_MAX_RETRIES + 1),
        last_error="Gave up after retries: The payment service is not reachable.",
    )
    [lost] = notify(str(uuid.uuid4()), received_at=now - timedelta(hours=1))

    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(limit=2, now=now)

    assert relayed == 1
    assert [e.relayed_at for e in events([lost])] == [now]
    assert {e.state for e in WebhookEvent.objects.exclude(pk=lost)} == {WebhookState.FAILED}
    take_queued(celery_app)


@pytest.mark.django_db(transaction=True)
def test_concurrent_relays_share_the_rows_without_relaying_any_twice() -> None:
    """Two relays started at the same instant (SKIP LOCKED) relay every row exactly once
    between them."""
    # Given forty rows left behind
    received_at = timezone.now() - timedelta(minutes=5)
    pks = [
        pk for _ in range(20) for pk in notify(str(uuid.uuid4()), count=2, received_at=received_at)
    ]
    barrier = threading.Barrier(2)
    results: list[int] = []
    errors: list[BaseException] = []

    def relay() -> None:
        try:
            barrier.wait(timeout=10)
            results.append(webhook_relay(limit=500))
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    # When two relays run at once
    threads = [threading.Thread(target=relay) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # Then each row was relayed by exactly one of them
    assert errors == []
    assert len(results) == 2
    assert sum(results) == len(pks) == 40
    assert not WebhookEvent.objects.filter(relayed_at__isnull=True).exists()
    assert webhook_relay() == 0


@pytest.mark.django_db
def test_the_relay_command_prints_how_many_rows_it_relayed() -> None:
    """`webhooks_relay` relays rows and says how many: one pass by default, every pass with
    --all, any age with --older-than 0."""
    # Given five rows received 5 minutes ago and two just now
    old = notify(str(uuid.uuid4()), count=5, received_at=timezone.now() - timedelta(minutes=5))
    recent = notify(str(uuid.uuid4()), count=2)

    # When it runs once with a limit of 2, then with --all
    out = StringIO()
    call_command("webhooks_relay", "--limit", "2", stdout=out)
    call_command("webhooks_relay", "--limit", "2", "--all", stdout=out)

    # Then the first pass relays two and the rest are relayed in passes of two
    assert out.getvalue().splitlines() == [
        "2 webhook event(s) relayed.",
        "3 webhook event(s) relayed.",
    ]
    assert all(e.relayed_at is not None for e in events(old))
    assert all(e.relayed_at is None for e in events(recent))

    # When it runs with --older-than 0
    out = StringIO()
    call_command("webhooks_relay", "--older-than", "0", stdout=out)

    # Then every row still received is relayed, the recent ones too
    assert out.getvalue().strip() == "7 webhook event(s) relayed."
    assert all(e.relayed_at is not None for e in events(recent))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--limit", "0"], "--limit must be at least 1"),
        (["--older-than", "-1"], "--older-than at least 0"),
        (["--limit", "many"], "invalid int value"),
    ],
)
def test_the_relay_command_refuses_bad_options(args: list[str], error: str) -> None:
    """A limit below 1, a negative age or a non-number is refused with a clear error, and
    nothing is relayed."""
    # Given a row left behind
    pks = notify(str(uuid.uuid4()), received_at=timezone.now() - timedelta(minutes=5))

    # When the command is given a bad option, then it says what is wrong
    with pytest.raises(CommandError, match=error):
        call_command("webhooks_relay", *args, stdout=StringIO())

    # And nothing was relayed
    assert [e.relayed_at for e in events(pks)] == [None]


@pytest.mark.django_db
def test_the_relay_command_with_all_and_any_age_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """`webhooks_relay --all --older-than 0` relays each waiting row once and stops, even when no
    worker has taken them yet."""
    import webhooks.management.commands.webhooks_relay as command

    # Given a row left behind, and a guard that stops a command looping for ever
    pks = notify(str(uuid.uuid4()), received_at=timezone.now() - timedelta(minutes=5))
    passes: list[int] = []
    relay = command.webhook_relay

    def guarded(**kwargs: Any) -> int:
        passes.append(relay(**kwargs))
        if len(passes) > 5:
            raise AssertionError(f"still relaying after {len(passes)} passes: {passes}")
        return passes[-1]

    monkeypatch.setattr(command, "webhook_relay", guarded)

    # When the command relays every row of any age
    out = StringIO()
    call_command("webhooks_relay", "--all", "--older-than", "0", stdout=out)

    # Then the row was relayed once and a last pass found nothing
    assert passes == [1, 0]
    assert out.getvalue().strip() == "1 webhook event(s) relayed."
    assert [e.state for e in events(pks)] == [WebhookState.RECEIVED]
