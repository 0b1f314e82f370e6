"""Subscriptions: seeded ones, a sandbox-only way to create more, and PUT /subscriptions/{id},
which only ever sets `inactive` (an inactive subscription is never activated again)."""

from __future__ import annotations

import secrets
import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction

from sandbox.provider import clock
from sandbox.provider.errors import (
    SUBSCRIPTION_NOT_FOUND,
    SUBSCRIPTION_STATUS_NOT_ALLOWED,
    ApiError,
)
from sandbox.provider.models import Invoice, Subscription

PAYMENT_LINK = {"type": "payment_link"}
EMPTY_INFO = {"add_info_1": "", "add_info_2": "", "add_info_3": ""}

SEED_SUBSCRIPTIONS: list[dict[str, Any]] = [
    {
        "id": "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b",
        "price_id": "price_cafe_mensual",
        "customer": {
            "first_name": "María",
            "last_name": "González",
            "email": "maria@example.com",
            "phone": "+525512345678",
        },
        "amount": Decimal("349.00"),
    },
    {
        "id": "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d",
        "price_id": "price_caja_artesanal",
        "customer": {
            "first_name": "Jorge",
            "last_name": "Hernández",
            "email": "jorge@example.com",
            "phone": "+523312345678",
        },
        "amount": Decimal("899.00"),
    },
    {
        "id": "8b3c4d5e-6f7a-4b9c-8d1e-2f3a4b5c6d7e",
        "price_id": "price_cafe_mensual",
        "customer": {
            "first_name": "Lucía",
            "last_name": "Ramírez",
            "email": "lucia@example.com",
            "phone": "+528112345678",
        },
        "amount": Decimal("349.00"),
    },
]


def subscription_create(
    *,
    price_id: str,
    customer: dict[str, Any],
    amount: Decimal = Decimal("299.00"),
    invoices: int = 3,
    additional_information: dict[str, str] | None = None,
    subscription_id: str | None = None,
) -> Subscription:
    """Create an active subscription with `invoices` monthly invoices in status `scheduled`."""
    now = clock.now()
    info = {**EMPTY_INFO, **(additional_information or {})}
    with transaction.atomic():
        subscription = Subscription.objects.create(
            id=uuid.UUID(subscription_id) if subscription_id else uuid.uuid4(),
            price_id=price_id,
            customer=customer,
            status="active",
            additional_information=info,
            payment_method=PAYMENT_LINK,
            start_date=now,
            end_date=None,
            created_at=now,
            updated_at=now,
        )
        Invoice.objects.bulk_create(
            Invoice(
                subscription=subscription,
                payment_request_id=str(uuid.uuid4()),
                payment_request_code=f"PR-{secrets.token_hex(4).upper()}",
                amount=amount,
                currency="MXN",
                due_date=now + timedelta(days=30 * (month + 1)),
                status="scheduled",
                payment=None,
                payment_method=PAYMENT_LINK,
                additional_information=info,
                period=None,
                paid_at=None,
            )
            for month in range(invoices)
        )
    return subscription


def subscriptions_seed() -> int:
    """Create the demo subscriptions that are missing; returns how many were created."""
    created = 0
    for seed in SEED_SUBSCRIPTIONS:
        if not Subscription.objects.filter(pk=seed["id"]).exists():
            subscription_create(
                subscription_id=seed["id"],
                price_id=seed["price_id"],
                customer=seed["customer"],
                amount=seed["amount"],
            )
            created += 1
    return created


def _subscription_pk(subscription_id: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(subscription_id)
    except ValueError:
        return None


def _not_found() -> ApiError:
    return ApiError(404, SUBSCRIPTION_NOT_FOUND, "Subscription object not found", [])


def subscription_get(*, subscription_id: str) -> Subscription:
    pk = _subscription_pk(subscription_id)
    subscription = Subscription.objects.filter(pk=pk).first() if pk else None
    if subscription is None:
        raise _not_found()
    return subscription


def subscription_deactivate(*, subscription_id: str, body: Any) -> Subscription:
    """PUT /subscriptions/{id} with `{"status": "inactive"}`."""
    try:
        pk = uuid.UUID(subscription_id)
    except ValueError:
        pk = None
    with transaction.atomic():
        subscription = (
            Subscription.objects.select_for_update().filter(pk=pk).first() if pk else None
        )
        if subscription is None:
            raise ApiError(404, SUBSCRIPTION_NOT_FOUND, "Subscription object not found", [])
        if not isinstance(body, dict) or body.get("status") != "inactive":
            raise ApiError(
                400,
                SUBSCRIPTION_STATUS_NOT_ALLOWED,
                "Allowed Status is : inactive",
                ["Allowed Status is : inactive"],
            )
        if subscription.status != "inactive":
            now = clock.now()
            subscription.status = "inactive"
            subscription.end_date = now
            subscription.updated_at = now
            subscription.save()
    return subscription
