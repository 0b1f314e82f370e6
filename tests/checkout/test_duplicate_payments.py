"""An order is paid once: a second charge that slips through is given back automatically."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import requests
from django.core import mail

from checkout.models import Order, OrderStatus
from checkout.orders.selectors import order_payments
from payments.models import Payment
from payments.rereading.calls import payment_refresh
from payments.statuses import PaymentStatus
from tests.checkout.helpers import open_challenge, pay_order
from tests.factories import ProductFactory
from tests.helpers.provider import VISA, Api

pytestmark = pytest.mark.django_db(transaction=True)


def _order() -> Order:
    product = ProductFactory(slug="taza", name="Taza", price=Decimal("289.00"), stock=5)
    order = Order.objects.create(
        first_name="Ana",
        last_name="Pérez",
        email="ana@example.com",
        phone="5512345678",
        street="Juárez",
        number="1",
        colony="Centro",
        city="Oaxaca",
        state="Oaxaca",
        postal_code="68000",
        total=Decimal("289.00"),
    )
    order.items.create(product=product, name="Taza", unit_price=product.price, quantity=1)
    return order


def _paid_twice(provider: Api) -> tuple[Order, Payment]:
    """An order paid by a second card while its 3-D Secure attempt was left open, then that
    challenge completed at the provider: the attempt's local record, not yet refreshed."""
    order = _order()
    pending = open_challenge(provider, order)
    paid = pay_order(provider, order, VISA)
    assert (pending.result, paid.result) == ("pending", "approved")
    answer = requests.post(
        pending.three_ds_url, data={"action": "submit", "code": "123456"}, timeout=10
    )
    assert answer.status_code == 200
    first = next(p for p in order_payments(order) if p.provider_id == pending.payment_id)
    return order, first


def test_a_challenge_finished_after_another_card_paid_is_refunded(
    provider: Api, run_queued: Any
) -> None:
    """Given a 3-D Secure attempt left open and a second card that paid the order, when the
    first challenge is completed anyway, that second charge is refunded (by a task of its own,
    not inside the refresh) and the order stays paid, with one "paid" mail and one for the
    refund."""
    order, first = _paid_twice(provider)

    payment_refresh(payment=first)
    first.refresh_from_db()
    assert first.status == PaymentStatus.APPROVED  # not refunded inside the refresh
    assert "checkout.tasks.order_release_duplicates_task" in run_queued()

    first.refresh_from_db()
    assert first.status == PaymentStatus.CANCELLED  # voided: refunded in full the same day
    assert first.refunded_amount == Decimal("289.00")
    assert first.refunds.get().reason == f"duplicate payment of order {order.reference}"
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID
    # One "paid" mail (never a second), and one for the refund of the second charge.
    kinds = sorted(order.mails.exclude(sent_at=None).values_list("kind", flat=True))
    assert kinds == ["paid", "received", "refunded"]
    assert len(mail.outbox) == 3


def test_a_duplicate_another_action_is_releasing_is_logged_as_such_not_as_an_error(
    provider: Api,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    run_queued: Any,
) -> None:
    """Given a second charge of a paid order, when another action is releasing it at that very
    moment, then this release says so at INFO, logs no error, and is tried again later."""
    import logging

    import checkout.paying.calls
    from payments.provider.errors import PaymentInProgress

    _, first = _paid_twice(provider)

    def busy(**_: object) -> None:
        raise PaymentInProgress("Another action (refund) is already running.")

    monkeypatch.setattr(checkout.paying.calls, "payment_refund", busy)
    caplog.set_level(logging.INFO, logger="checkout.paying.calls")
    payment_refresh(payment=first)
    run_queued()

    records = [r for r in caplog.records if r.name == "checkout.paying.calls"]
    busy_records = [r for r in records if "already running" in r.getMessage()]
    assert len(busy_records) > 1  # tried again
    assert {r.levelno for r in busy_records} == {logging.INFO}
    assert not [r for r in records if r.levelno >= logging.ERROR]
