"""What the shop does is counted in /metrics: a payment, a declined card, a notification
received and processed, and a provider read that failed (the live sandbox as the provider;
the shop's own services and receiver, as in production)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from payments.models import Payment
from payments.provider.errors import PaymentOutcomeUnknown, ProviderDown
from payments.rereading.calls import payment_refresh
from payments.statuses import PaymentStatus
from tests.factories import provider_payment
from tests.helpers.broker import take_queued
from tests.helpers.metrics import TOKEN, Samples, scrape, value
from tests.helpers.provider import DECLINED, THREE_DS, Api
from webhooks.calls import webhook_process

pytestmark = [pytest.mark.sandbox, pytest.mark.django_db]

WEBHOOK_TOKEN = "whk-metrics-5Tq8pWz2xLr7vN4c"


@pytest.fixture
def shop(settings: Any, provider: Api, celery_app: Any, empty_broker: None) -> Iterator[Api]:
    settings.METRICS_TOKEN = TOKEN
    settings.PAYMENTS_WEBHOOK_TOKEN = WEBHOOK_TOKEN
    yield provider
    take_queued(celery_app)  # what the payments' changes queued for checkout


def deltas(before: Samples, after: Samples) -> Callable[..., float]:
    def delta(name: str, **labels: Any) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    return delta


def test_a_payment_a_decline_a_notification_and_a_failed_read_are_counted(
    client: Client, shop: Api, django_capture_on_commit_callbacks: Any
) -> None:
    """Each is counted once, under its outcome: the approval and the decline (by its reason's
    family), the creates that got them, the notification received, processed and its lag, and
    the provider read answered 500."""
    before = scrape(client)

    # A payment and a declined card, made by the payment service against the sandbox
    with django_capture_on_commit_callbacks(execute=True):
        paid = provider_payment(shop)
    with django_capture_on_commit_callbacks(execute=True):
        declined = provider_payment(shop, number=DECLINED)
    assert (paid.status, declined.status) == (PaymentStatus.APPROVED, PaymentStatus.REJECTED)

    # A notification of the paid one, received over HTTP and processed (one provider read)
    response = client.post(
        reverse("webhooks:payments", kwargs={"token": WEBHOOK_TOKEN}),
        data=json.dumps({"id": paid.provider_id, "origin": "payments-api", "event_type": "UPDATE"}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    webhook_process(payment_id=paid.provider_id, task_id=f"task-{uuid.uuid4().hex}")

    # A read of it that the provider answers 500, every try
    shop.add_fault(path=f"/payments/{paid.provider_id}", method="GET", status=500)
    with pytest.raises(ProviderDown):
        payment_refresh(payment=paid)

    delta = deltas(before, scrape(client))
    assert delta("shop_payment_outcomes_total", outcome="approved", reason="") == 1
    assert delta("shop_payment_outcomes_total", outcome="declined", reason="card_declined") == 1
    assert (
        delta("shop_provider_calls_total", endpoint="/payments", method="POST", outcome="ok") == 2
    )
    assert delta("shop_notifications_received_total", event_type="UPDATE") == 1
    assert delta("shop_notifications_finished_total", state="processed") == 1
    assert delta("shop_notification_lag_seconds_count") == 1
    assert (
        delta("shop_http_requests_total", view="webhooks:payments", method="POST", status="200")
        == 1
    )
    read = {"endpoint": "/payments/{id}", "method": "GET"}
    assert delta("shop_provider_calls_total", outcome="ok", **read) == 1  # the notification's
    assert delta("shop_provider_calls_total", outcome="server_error", **read) == 1
    assert delta("shop_provider_call_duration_seconds_count", **read) == 2
    # A refresh that changes nothing and a repeated notification count no new outcome
    assert delta("shop_payment_outcomes_total", outcome="approved", reason="") == 1


def test_three_d_secure_and_an_unanswered_create_are_counted(
    client: Client, shop: Api, django_capture_on_commit_callbacks: Any
) -> None:
    """A card that needs 3-D Secure counts a challenge required; one whose create is answered
    500 counts an unknown outcome (and no approval)."""
    before = scrape(client)
    with django_capture_on_commit_callbacks(execute=True):
        challenged = provider_payment(shop, number=THREE_DS)
    assert challenged.status == PaymentStatus.PENDING

    shop.add_fault(path="/payments", method="POST", status=500)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(PaymentOutcomeUnknown):
        provider_payment(shop, external_reference="ORD-LOST01")
    assert Payment.objects.get(external_reference="ORD-LOST01").status == PaymentStatus.UNKNOWN

    delta = deltas(before, scrape(client))
    assert delta("shop_payment_three_ds_total", result="required") == 1
    assert delta("shop_payment_outcomes_total", outcome="unknown", reason="") == 1
    assert delta("shop_payment_outcomes_total", outcome="approved", reason="") == 0
    assert (
        delta(
            "shop_provider_calls_total", endpoint="/payments", method="POST", outcome="server_error"
        )
        == 1
    )
