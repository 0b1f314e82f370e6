"""Processing notifications that name a payment the shop does not know: the provider is asked once
(within a budget per minute), and the payment is adopted when it is one of the shop's orders'
or the row ends unmatched when it is not."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from django.utils import timezone

import webhooks.calls
from checkout.models import Order, OrderStatus
from payments.models import Payment, PaymentEventKind
from payments.statuses import PaymentStatus
from tests.factories import PaymentFactory, provider_payment
from tests.helpers.broker import take_queued
from tests.helpers.provider import Api
from tests.webhooks.helpers import CaptureCallbacks, events, notify, order_for, status_of
from webhooks.calls import ProcessOutcome, webhook_process
from webhooks.models import DEFERRED, WebhookEvent, WebhookState
from webhooks.rules import webhook_relay
from webhooks.task_names import PROCESS_TASK

pytestmark = pytest.mark.usefixtures("empty_redis")


def shoppers_attempt(order: Order, status: str, provider_id: str | None = None) -> Payment:
    """The local record of the shopper's attempt to pay `order` (250.00, automatic capture)."""
    return PaymentFactory(
        order=order, amount=Decimal("250.00"), status=status, provider_id=provider_id
    )


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
    import payments.rereading.calls as reconciliation

    # Given an attempt that already holds the provider's id (the pay request got its answer)
    order = order_for()
    remote = provider.create_payment(external_reference=order.reference)
    attempt = shoppers_attempt(order, PaymentStatus.APPROVED, provider_id=remote["id"])
    pks = notify(remote["id"], "INSERT")
    # ... which the task's first look did not see yet
    real_held = reconciliation.payment_held
    looks: list[str] = []

    def held_after_the_first_looks(provider_id: str) -> Payment | None:
        # the task's look, the sync's and the adoption's first find nothing
        looks.append(provider_id)
        return None if len(looks) <= 3 else real_held(provider_id)

    monkeypatch.setattr(reconciliation, "payment_held", held_after_the_first_looks)
    monkeypatch.setattr("webhooks.calls.payment_held", held_after_the_first_looks)

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
    monkeypatch.setattr(webhooks.calls, "time", SimpleNamespace(time=lambda: clock.now))
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
    known = provider_payment(provider)
    known_rows = notify(known.provider_id)
    outcome = webhook_process(payment_id=known.provider_id, task_id="known")

    # Then it is read and processed all the same
    assert outcome == ProcessOutcome.PROCESSED
    assert provider_gets[-1] == known.provider_id
    assert [e.state for e in events(known_rows)] == [WebhookState.PROCESSED]

    # When the relay runs a minute later, with a notification of a known payment that the
    # broker never got, received after the deferred ones
    clock.now += 60
    lost = provider_payment(provider)
    notify(lost.provider_id, received_at=timezone.now())
    later = timezone.now() + timedelta(minutes=1)
    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(older_than=timedelta(seconds=30), now=later)

    # Then it is queued, and of the seven deferred only the three the budget can look up in
    # the minute, the longest waiting first: the others would only be deferred again
    assert relayed == 4
    queued = take_queued(celery_app)
    assert sorted(args[0] for _, args in queued) == sorted([*unknown[3:6], lost.provider_id])
    assert {name for name, _ in queued} == {PROCESS_TASK}

    # And the tasks read the known payment, and the next minute's budget looks up those three
    assert webhook_process(payment_id=lost.provider_id, task_id="lost") == (
        ProcessOutcome.PROCESSED
    )
    again = [webhook_process(payment_id=pid, task_id=f"again-{pid}") for pid in unknown[3:6]]
    assert again == [ProcessOutcome.UNMATCHED] * 3
    assert len(provider_gets) == 3 + 1 + 1 + 3
    assert WebhookEvent.objects.get(pk=rows[unknown[3]]).state == WebhookState.UNMATCHED

    # And the runs that follow queue the four left, three a minute, each looked up in its turn
    for minute, expected in ((2, unknown[6:9]), (3, unknown[9:])):
        clock.now += 60
        with django_capture_on_commit_callbacks(execute=True):
            webhook_relay(older_than=timedelta(seconds=30), now=later + timedelta(minutes=minute))
        queued_ids = sorted(args[0] for _, args in take_queued(celery_app))
        assert queued_ids == sorted(expected)
        for pid in queued_ids:
            assert webhook_process(payment_id=pid, task_id=f"{minute}-{pid}") == (
                ProcessOutcome.UNMATCHED
            )
    assert not WebhookEvent.objects.filter(state=WebhookState.RECEIVED).exists()
