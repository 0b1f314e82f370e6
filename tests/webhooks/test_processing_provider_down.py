"""Processing notifications while the provider is down: the rows stay with their task until it
answers, the ones given up on are failed, and staff can retry or replay them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.utils import timezone

from tests.factories import provider_payment
from tests.helpers.broker import take_queued
from tests.helpers.provider import Api
from tests.webhooks.helpers import CaptureCallbacks, events, notify
from webhooks.calls import ProcessOutcome, RetryLater, webhook_give_up, webhook_process
from webhooks.models import WebhookEvent, WebhookState
from webhooks.rules import webhook_events_retry
from webhooks.task_names import PROCESS_TASK

pytestmark = pytest.mark.usefixtures("empty_redis")


def provider_down(api: Api, status: int = 503) -> None:
    response = api.post(
        "/_sandbox/faults", {"path": "/payments", "method": "GET", "status": status, "times": 10}
    )
    assert response.status_code in (200, 201), response.text


def provider_back(api: Api) -> None:
    response = api.request("DELETE", "/_sandbox/faults")
    assert response.status_code in (200, 204), response.text


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
    payment = provider_payment(provider)
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
    payment = provider_payment(provider)
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
    payment = provider_payment(provider)
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
