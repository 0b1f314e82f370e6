"""Processing the notifications of a payment the shop knows, without a worker (the services are
called directly; the provider is the live sandbox): every row waiting for the payment costs one
provider read and is applied once, and claims survive a crash and belong to their task."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from checkout.models import OrderStatus
from core.task_queue import is_marked
from payments.models import Payment, PaymentEvent, PaymentEventKind
from payments.statuses import PaymentStatus
from tests.factories import provider_payment
from tests.helpers.broker import take_queued
from tests.helpers.provider import Api
from tests.webhooks.helpers import CaptureCallbacks, events, notify, order_for, status_of
from webhooks.calls import ProcessOutcome, webhook_process
from webhooks.models import WebhookState
from webhooks.rules import enqueue_processing
from webhooks.task_names import PROCESS_TASK, marker

pytestmark = pytest.mark.usefixtures("empty_redis")


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
    payment = provider_payment(
        provider, capture_method="manual", external_reference=order.reference
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
    payment = provider_payment(provider)
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
    assert not is_marked(marker(payment.provider_id))

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
    payment = provider_payment(provider)
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
