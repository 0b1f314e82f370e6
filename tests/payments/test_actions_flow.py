"""The payments services end to end against the live sandbox."""

from __future__ import annotations

from decimal import Decimal

import pytest

from payments.actions.calls import payment_capture, payment_refund
from payments.models import PaymentEventKind
from payments.rereading.calls import payment_refresh
from payments.statuses import PaymentStatus
from tests.factories import provider_payment
from tests.helpers.provider import Api

pytestmark = pytest.mark.django_db


def test_authorize_capture_partially_then_refund(provider: Api, admin_user) -> None:
    """Manual capture: authorized, captured in part, refunded in part; the ledger tells it all."""
    payment = provider_payment(provider, capture_method="manual", amount="1000.00")
    assert payment.status == PaymentStatus.AUTHORIZED
    assert payment.authorization_expires_at is not None

    payment = payment_capture(payment=payment, amount=Decimal("800.00"), actor=admin_user)
    assert (payment.status, payment.captured_amount) == (PaymentStatus.APPROVED, Decimal("800.00"))

    payment_refund(payment=payment, amount=Decimal("300.00"), actor=admin_user)
    payment.refresh_from_db()
    assert payment.refunded_amount == Decimal("300.00")
    assert payment.refundable_amount == Decimal("500.00")
    kinds = list(payment.events.values_list("kind", flat=True))
    assert kinds == [PaymentEventKind.CREATED, PaymentEventKind.CAPTURED, PaymentEventKind.REFUNDED]
    assert payment.events.last().actor == admin_user

    assert payment_refresh(payment=payment).status == PaymentStatus.APPROVED
