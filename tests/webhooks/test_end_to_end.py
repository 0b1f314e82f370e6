"""End to end: the sandbox delivers real webhooks to the shop on a live server, a real Celery
worker refetches the payments, and orders move, with nobody on the shopper's page."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest

from checkout.models import Order, OrderStatus
from payments.models import Payment, PaymentEvent
from payments.statuses import PaymentStatus
from tests.factories import OrderFactory, ProductFactory, provider_payment
from tests.helpers.provider import THREE_DS, VISA, Api
from tests.helpers.waiting import wait_until
from webhooks.addresses import payment_notification_url as webhook_url
from webhooks.models import WebhookEvent, WebhookState

pytestmark = [pytest.mark.sandbox, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def live_shop(live_server: Any, provider: Api, settings: Any) -> Api:
    """The shop on a live server that the sandbox notifies, with a real worker behind it."""
    settings.SHOP_BASE_URL = live_server.url
    settings.PAYMENTS_WEBHOOK_TOKEN = "e2e-" + uuid.uuid4().hex
    return provider


def _order_paid_with(api: Api, number: str, capture_method: str) -> tuple[Order, Payment]:

    product = ProductFactory(
        slug=f"jarra-{uuid.uuid4().hex[:6]}", name="Jarra", price=Decimal("250.00"), stock=5
    )
    order = OrderFactory(lines=[(product, 1)])
    payment = provider_payment(
        api,
        order=order,
        number=number,
        capture_method=capture_method,
        description=f"Order {order.reference}",
        prevention_data={},
        return_url="",
        webhook_url=webhook_url(),
    )
    return order, payment


def _status(order: Order) -> str:
    order.refresh_from_db()
    return order.status


def test_a_capture_made_at_the_provider_reaches_the_order(live_shop: Api, worker: Any) -> None:
    """Given an authorized order, when the payment is captured at the provider (not through the
    shop), then its UPDATE notification makes the shop refetch it and the order becomes paid."""
    order, payment = _order_paid_with(live_shop, VISA, "manual")
    assert payment.status == PaymentStatus.AUTHORIZED
    wait_until(lambda: WebhookEvent.objects.filter(state=WebhookState.PROCESSED).exists())

    captured = live_shop.patch(
        f"/payments/{payment.provider_id}",
        {"status": "approved", "paid_amount": Decimal("250.00")},
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    assert captured.status_code == 200, captured.text

    wait_until(lambda: _status(order) == OrderStatus.PAID, timeout=30)
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.APPROVED
    assert payment.captured_amount == Decimal("250.00")
    events = WebhookEvent.objects.filter(provider_payment_id=payment.provider_id)
    assert {e.event_type for e in events} == {"INSERT", "UPDATE"}
    wait_until(lambda: not events.exclude(state=WebhookState.PROCESSED).exists())
    assert all(e.payment_id == payment.pk for e in events)
    assert PaymentEvent.objects.filter(payment=payment, new_status="approved").count() == 1


def test_a_finished_3ds_challenge_moves_the_order_without_the_shoppers_page(
    live_shop: Api, worker: Any
) -> None:
    """Given a payment waiting for 3-D Secure, when the challenge is passed and the shopper's
    page is gone, then the webhook alone moves the order to paid."""
    order, payment = _order_paid_with(live_shop, THREE_DS, "automatic")
    assert payment.status == PaymentStatus.PENDING
    # the order follows by its sync task, which the worker runs
    wait_until(lambda: _status(order) == OrderStatus.AWAITING_AUTHENTICATION, timeout=30)

    page = live_shop.session.get(payment.three_ds_url, timeout=10)
    assert page.status_code == 200
    passed = live_shop.session.post(
        payment.three_ds_url, data={"action": "submit", "code": "123456"}, timeout=10
    )
    assert passed.status_code == 200, passed.text

    wait_until(lambda: _status(order) == OrderStatus.PAID, timeout=30)
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.APPROVED
