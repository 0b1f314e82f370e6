"""Closing an attempt the provider never confirmed: staff unblock an order whose payment's
outcome stayed unknown, and a payment that turns up later is still attached to the order."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkout.models import Order, OrderStatus
from payments.attempts.rules import payment_close_unconfirmed
from payments.attempts.sealed import seal
from payments.models import Payment, PaymentEvent, PaymentEventKind
from payments.provider.errors import PaymentNotAllowed
from payments.rereading.calls import SyncOutcome, payment_sync
from payments.statuses import PaymentStatus
from tests.factories import OrderFactory, PaymentFactory, ProductFactory
from tests.helpers.provider import Api
from tests.helpers.staff import sign_in_staff

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]


def _order() -> Order:
    product = ProductFactory(
        slug=f"jarro-{uuid.uuid4().hex[:6]}", name="Jarro", price=Decimal("250.00"), stock=3
    )
    return OrderFactory(lines=[(product, 1)])


def _attempt(
    order: Order, *, status: str = PaymentStatus.UNKNOWN, age_minutes: int = 45, **fields: Any
) -> Payment:
    return PaymentFactory(
        order=order,
        status=status,
        created_at=timezone.now() - timedelta(minutes=age_minutes),
        **{"provider_id": None, **fields},
    )


@pytest.mark.parametrize("status", [PaymentStatus.UNKNOWN, PaymentStatus.CREATING])
def test_an_old_unconfirmed_attempt_is_closed_and_unblocks_its_order(
    status: str, admin_user: Any
) -> None:
    """Given an attempt whose outcome stayed unknown for 45 minutes, when staff close it, then
    it is failed, the ledger says who closed it and why, and the order accepts a new attempt."""
    order = _order()
    attempt = _attempt(order, status=status, create_request=seal({"payment_method": {}}))

    closed = payment_close_unconfirmed(payment=attempt, actor=admin_user)

    assert closed.status == PaymentStatus.FAILED
    assert Payment.objects.get(pk=attempt.pk).create_request == ""  # nothing left to send
    entry = PaymentEvent.objects.get(payment=attempt, kind=PaymentEventKind.FAILED)
    assert (entry.old_status, entry.new_status, entry.actor) == (status, "failed", admin_user)
    assert "Closed by staff" in entry.message
    assert not Payment.objects.filter(
        external_reference=order.reference, status__in=["creating", "unknown"]
    ).exists()
    order.refresh_from_db()
    assert order.status in (OrderStatus.AWAITING_PAYMENT, OrderStatus.PAYMENT_FAILED)


@pytest.mark.parametrize(
    ("status", "age", "provider_id", "why"),
    [
        (PaymentStatus.UNKNOWN, 10, None, "less than 30 minutes"),
        (PaymentStatus.UNKNOWN, 45, "5d5bd8be-ce75-4414-9f23-d1c979f4bc0c", "refresh"),
        (PaymentStatus.APPROVED, 45, "6e6bd8be-ce75-4414-9f23-d1c979f4bc0c", "refresh"),
        (PaymentStatus.FAILED, 45, None, "refresh"),
    ],
)
def test_other_payments_cannot_be_closed(
    status: str, age: int, provider_id: str | None, why: str
) -> None:
    """A young attempt (the provider may still confirm it), one the provider named, or a
    payment with a known outcome cannot be closed; nothing changes."""
    attempt = _attempt(_order(), status=status, age_minutes=age, provider_id=provider_id)

    with pytest.raises(PaymentNotAllowed, match=why):
        payment_close_unconfirmed(payment=attempt)

    attempt.refresh_from_db()
    assert attempt.status == status
    assert not PaymentEvent.objects.filter(payment=attempt).exists()


def _staff(django_user_model: Any, *perms: str) -> Client:
    user = django_user_model.objects.create_user(
        f"ops-{uuid.uuid4().hex[:6]}", password="pw-ops-2026", is_staff=True
    )
    for codename in ("view_payment", *perms):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    sign_in_staff(client, user)
    return client


def test_the_admin_offers_closing_only_with_the_permission(django_user_model: Any) -> None:
    """Staff without `payments.close_payment` see no close button and get 403 on its URL;
    with it they see the button, and the POST closes the attempt and leaves a LogEntry."""
    attempt = _attempt(_order())
    page = reverse("admin:payments_payment_change", args=[attempt.pk])
    close = reverse("admin:payments_payment_close", args=[attempt.pk])

    viewer = _staff(django_user_model)
    assert 'id="action-close"' not in viewer.get(page).content.decode()
    assert viewer.post(close).status_code == 403
    attempt.refresh_from_db()
    assert attempt.status == PaymentStatus.UNKNOWN

    closer = _staff(django_user_model, "close_payment")
    assert 'id="action-close"' in closer.get(page).content.decode()
    asked = closer.get(close)
    assert asked.status_code == 200 and "Look the order reference up" in asked.content.decode()
    attempt.refresh_from_db()
    assert attempt.status == PaymentStatus.UNKNOWN
    response = closer.post(close, follow=True)
    assert "closed as not created" in response.content.decode()
    attempt.refresh_from_db()
    assert attempt.status == PaymentStatus.FAILED
    assert LogEntry.objects.filter(object_id=str(attempt.pk)).exists()


def test_closing_a_young_attempt_in_the_admin_says_why(django_user_model: Any) -> None:
    """The admin shows the service's refusal as an error message and changes nothing."""
    attempt = _attempt(_order(), age_minutes=5)
    closer = _staff(django_user_model, "close_payment")

    response = closer.post(reverse("admin:payments_payment_close", args=[attempt.pk]), follow=True)

    assert "less than 30 minutes old" in response.content.decode()
    attempt.refresh_from_db()
    assert attempt.status == PaymentStatus.UNKNOWN


@pytest.mark.sandbox
def test_a_payment_found_after_closing_is_attached_to_the_order(
    provider: Api, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """Given an attempt closed as not created, when the provider's notification names a payment
    for that order after all, then the shop adopts it as a new payment and the order follows."""
    order = _order()
    attempt = _attempt(order)
    payment_close_unconfirmed(payment=attempt)
    remote = provider.create_payment(
        external_reference=order.reference, amount=order.total, currency="MXN"
    )

    with django_capture_on_commit_callbacks(execute=True):
        result = payment_sync(provider_id=remote["id"])

    assert result.outcome == SyncOutcome.ADOPTED
    assert result.payment is not None and result.payment.pk != attempt.pk
    assert result.payment.status == PaymentStatus.APPROVED
    assert run_queued()[0] == "checkout.tasks.order_sync_task"  # then its mails
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID
