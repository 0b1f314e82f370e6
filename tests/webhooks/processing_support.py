"""Helpers of the tests that process notifications without a worker: rows as the receiver
stores them, and the shop's orders they concern."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from checkout.models import Order
from tests.factories import ProductFactory
from tests.shop import make_order
from webhooks.models import WebhookEvent

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
    return make_order((product, 1), **fields)


def status_of(order: Order) -> str:
    """The order's status as the database holds it now."""
    order.refresh_from_db()
    return order.status
