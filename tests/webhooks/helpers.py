"""Helpers of the webhook tests: rows as the receiver stores them and the shop's orders
they concern, for the tests that process notifications without a worker; and, for the
tests with a real worker (test_worker.py, test_worker_processes.py), the shop's receiver on
a live server, orders paid at the live sandbox and what is done to them there."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import requests

from checkout.models import Order
from payments.models import Payment, PaymentEvent
from payments.statuses import PaymentStatus
from tests.factories import OrderFactory, ProductFactory, provider_payment
from tests.helpers.provider import VISA, Api
from webhooks.models import WebhookEvent, WebhookState

CaptureCallbacks = Callable[..., Any]


def notify(payment_id: str, event_type: str = "UPDATE", count: int = 1, **fields: Any) -> list[int]:
    """Rows as the receiver stores them (no task is queued): their pks."""
    return [
        WebhookEvent.objects.create(
            provider_payment_id=payment_id, event_type=event_type, **fields
        ).pk
        for _ in range(count)
    ]


def events(pks: list[int]) -> list[WebhookEvent]:
    """The rows of `pks`, as the database holds them now, in the order they were stored."""
    return list(WebhookEvent.objects.filter(pk__in=pks).order_by("pk"))


def order_for(reference: str | None = None, price: str = "250.00") -> Order:
    """An order of one new product at `price` (under `reference` when given)."""
    product = ProductFactory(
        slug=f"jarra-{uuid.uuid4().hex[:8]}", name="Jarra", price=Decimal(price), stock=5
    )
    fields = {"reference": reference} if reference else {}
    return OrderFactory(lines=[(product, 1)], **fields)


def status_of(order: Order) -> str:
    """The order's status as the database holds it now."""
    order.refresh_from_db()
    return order.status


# --- The worker tests' live shop, and the provider's side --------------------------------------


FINISHED = (WebhookState.PROCESSED, WebhookState.UNMATCHED, WebhookState.FAILED)


@dataclass
class Shop:
    """The shop's webhook receiver on a live server, and the sandbox behind it."""

    api: Api
    receiver_url: str

    def notify(
        self, payment_id: str, event_type: str = "UPDATE", session: Any = requests
    ) -> requests.Response:
        """POST the provider's notification to the receiver, as the provider does."""
        body = {"id": payment_id, "origin": "payments-api", "event_type": event_type}
        return session.post(self.receiver_url, json=body, timeout=30)


def count_gets(api: Api, payment_id: str) -> int:
    """A 1 ms latency fault that only counts the provider reads of one payment."""
    return api.add_fault(path=f"/payments/{payment_id}", method="GET", latency_ms=1)


def idempotency() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def capture_at_provider(api: Api, payment_id: str) -> None:
    body = {"status": "approved", "paid_amount": Decimal("250.00")}
    response = api.patch(f"/payments/{payment_id}", body, headers=idempotency())
    assert response.status_code == 200, response.text


def new_order() -> Order:
    product = ProductFactory(
        slug=f"taza-{uuid.uuid4().hex[:8]}", name="Taza", price=Decimal("250.00"), stock=100
    )
    return OrderFactory(lines=[(product, 1)])


def order_paying(
    api: Api, *, number: str = VISA, capture_method: str = "automatic"
) -> tuple[Order, Payment]:
    """An order and its payment, made through the shop's payment service."""
    order = new_order()
    payment = provider_payment(
        api, number=number, capture_method=capture_method, external_reference=order.reference
    )
    assert payment.provider_id
    return order, payment


def captured_at_provider(api: Api) -> tuple[Order, Payment]:
    """An authorization the shop holds, captured at the provider behind the shop's back."""
    order, payment = order_paying(api, capture_method="manual")
    assert payment.status == PaymentStatus.AUTHORIZED
    capture_at_provider(api, payment.provider_id)
    return order, payment


def order_status(order: Order) -> str:
    order.refresh_from_db()
    return order.status


def approvals(payment: Payment) -> int:
    return PaymentEvent.objects.filter(payment=payment, new_status=PaymentStatus.APPROVED).count()
