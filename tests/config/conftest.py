"""Fixtures of the configuration's tests: the world the CSRF tests' routes act on, and
the CSRF rejections Django reports (tests/config/csrf_cases.py)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from books.models import BooksExport
from payments.models import Subscription
from payments.statuses import PaymentStatus
from staff_signin.models import SignInEvent
from tests.books.helpers import paid_order, requested
from tests.config.csrf_cases import PASSWORD, WEBHOOK_TOKEN, World, payment_row
from tests.factories import OrderFactory, ProductFactory
from tests.helpers.staff import authenticator
from webhooks.models import WebhookEvent, WebhookState


@pytest.fixture
def rejections() -> Iterator[list[str]]:
    """The CSRF rejections Django reports (logger django.security.csrf), one per refusal."""
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Collect(level=logging.WARNING)
    logger = logging.getLogger("django.security.csrf")
    logger.addHandler(handler)
    yield seen
    logger.removeHandler(handler)


@pytest.fixture
def world(settings: Any, calls: list[tuple[str, str]], django_user_model: Any) -> World:
    settings.PAYMENTS_WEBHOOK_TOKEN = WEBHOOK_TOKEN
    product = ProductFactory(
        slug="taza", name="Taza de talavera", price=Decimal("289.00"), stock=10
    )
    spare_product = ProductFactory(
        slug="plato", name="Plato de barro", price=Decimal("150.00"), stock=5
    )
    order = OrderFactory(lines=[(product, 1)])
    waiting_order = OrderFactory(lines=[(product, 1)])
    payment_row(waiting_order.reference, PaymentStatus.PENDING, capture_method="automatic")
    root = django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)
    authenticator(root)
    SignInEvent.objects.create(kind="password_refused", username="nadie")
    return World(
        product=product,
        spare_product=spare_product,
        order=order,
        waiting_order=waiting_order,
        held=payment_row("ORD-HELD1", PaymentStatus.AUTHORIZED),
        paid=payment_row("ORD-PAID1", PaymentStatus.APPROVED),
        unconfirmed=payment_row(
            "ORD-LOST1",
            PaymentStatus.UNKNOWN,
            provider_id=None,
            authorized_at=None,
            created_at=timezone.now() - timedelta(hours=1),
        ),
        subscription=Subscription.objects.create(
            provider_id=str(uuid.uuid4()),
            price_id="price_cafe_mensual",
            customer_email="maria@example.com",
            status="active",
        ),
        event=WebhookEvent.objects.create(
            provider_payment_id=str(uuid.uuid4()),
            event_type="UPDATE",
            state=WebhookState.FAILED,
            attempts=3,
            last_error="Gave up after retries.",
        ),
        root=root,
        spare_user=django_user_model.objects.create_user("spare", password=PASSWORD),
        group=Group.objects.create(name="spare-group"),
        calls=calls,
        factura=requested(paid_order("250.00")),
        export=BooksExport.objects.create(
            kind="orders", format="csv", start=date(2026, 10, 1), end=date(2026, 10, 31)
        ),
    )
