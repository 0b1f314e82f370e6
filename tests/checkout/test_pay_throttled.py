"""A provider that says "slow down" (429) while shoppers pay: the create is sent again with its
key after the wait asked for, the shopper's page says "processing" meanwhile (never "failed"),
and the payment is made once."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from checkout.models import Order, Product
from payments.attempts.calls import payment_send_create
from payments.models import Payment
from payments.provider.errors import PaymentOutcomeUnknown
from payments.statuses import PaymentStatus
from payments.tasks import payment_send_create_task
from tests.checkout.test_pay import attempt, status_of, token
from tests.helpers.provider import Api
from tests.helpers.servers import free_port
from tests.helpers.shop import place_order

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]


@pytest.fixture
def shop(provider: Api, settings: Any) -> Api:
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    return provider


@pytest.fixture
def order(browser: Client, taza: Product) -> Order:
    return place_order(browser, (taza, 1))


def test_creates_answered_429_five_times_then_accepted_pay_once(
    shop: Api, browser: Client, order: Order
) -> None:
    # Given a provider that answers the next five creates 429 ("too many requests")
    throttled = shop.add_fault(path="/payments", method="POST", status=429, times=5)
    passed = shop.add_fault(path="/payments", method="POST", latency_ms=1)

    # When the shopper pays (the attempt stored, its create not sent yet)
    taken = attempt(browser, order, token(shop), settle=False)
    assert taken.status_code == 202, taken.content
    payment = Payment.objects.get(external_reference=order.reference)

    # And its first send is throttled
    with pytest.raises(PaymentOutcomeUnknown):
        payment_send_create(payment=payment)

    # Then nothing failed: the attempt still waits to be sent, and the page says "processing"
    payment.refresh_from_db()
    assert (payment.status, bool(payment.create_request)) == (PaymentStatus.CREATING, True)
    assert status_of(browser, order).json()["result"] == "processing"

    # When its task runs, retrying as it does (eagerly here: the waits are not slept)
    payment_send_create_task.apply(args=[payment.pk])

    # Then the sixth create was accepted: approved, one payment at the provider, six creates
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.APPROVED
    assert status_of(browser, order).json()["result"] == "approved"
    made = [p for p in shop.payments() if p["external_reference"] == order.reference]
    assert len(made) == 1 and made[0]["id"] == payment.provider_id
    assert (shop.fault_hits(throttled), shop.fault_hits(passed)) == (5, 1)


def test_a_throttled_create_is_never_told_to_the_shopper_as_failed(
    shop: Api, browser: Client, order: Order
) -> None:
    # Given a provider that throttles every create
    shop.add_fault(path="/payments", method="POST", status=429)
    taken = attempt(browser, order, token(shop), settle=False)
    payment = Payment.objects.get(external_reference=order.reference)

    # When the create is sent three times, the last 30 s after the shopper clicked
    for _ in range(2):
        with pytest.raises(PaymentOutcomeUnknown):
            payment_send_create(payment=payment)
    with time_machine.travel(timezone.now() + timedelta(seconds=30)):
        with pytest.raises(PaymentOutcomeUnknown) as caught:
            payment_send_create(payment=payment)
    # Then the create held back longest is sent again first (the least jitter)
    assert caught.value.__cause__.seniority == 1.0  # type: ignore[union-attr]

    # Then the page still says "processing", the attempt keeps its request, nothing is made
    body = status_of(browser, order).json()
    assert body["result"] == "processing", json.dumps(body)
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.CREATING and payment.create_request
    assert taken.status_code == 202
    assert not [p for p in shop.payments() if p["external_reference"] == order.reference]
