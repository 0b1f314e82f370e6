"""Orders follow their payments: the status derived from them, the sync, the signal, the email."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.core import mail

from checkout.models import Order, OrderStatus, Product
from checkout.services import (
    derive_order_status,
    order_payments,
    order_send_confirmation,
    order_sync_status,
)
from payments.models import Payment
from payments.signals import payment_status_changed
from tests.checkout.conftest import make_order, make_payment

pytestmark = pytest.mark.django_db


@pytest.fixture
def product(make_product) -> Product:
    return make_product(price="500.00", stock=5)


@pytest.fixture
def order(product: Product) -> Order:
    return make_order((product, 2))


def derived(order: Order) -> str:
    return derive_order_status(order_payments(order))


def sync(order: Order) -> Order:
    synced = order_sync_status(reference=order.reference)
    assert synced is not None
    order.refresh_from_db()
    return order


CASES: list[tuple[str, list[dict[str, Any]], str]] = [
    ("no payments", [], OrderStatus.AWAITING_PAYMENT),
    ("creating", [{"status": "creating"}], OrderStatus.AWAITING_PAYMENT),
    ("unknown", [{"status": "unknown"}], OrderStatus.AWAITING_PAYMENT),
    ("approved", [{"status": "approved", "captured_amount": "1000.00"}], OrderStatus.PAID),
    (
        "approved, partly refunded",
        [{"status": "approved", "captured_amount": "1000.00", "refunded_amount": "100.00"}],
        OrderStatus.PARTIALLY_REFUNDED,
    ),
    (
        "refunded",
        [{"status": "refunded", "captured_amount": "1000.00", "refunded_amount": "1000.00"}],
        OrderStatus.REFUNDED,
    ),
    (
        "cancelled after capture",
        [{"status": "cancelled", "captured_amount": "1000.00", "status_code": "CA-MER01"}],
        OrderStatus.REFUNDED,
    ),
    ("authorized", [{"status": "authorized"}], OrderStatus.AUTHORIZED),
    (
        "authorization cancelled by the merchant",
        [{"status": "cancelled", "status_code": "CA-MER01"}],
        OrderStatus.CANCELLED,
    ),
    (
        "authorization expired",
        [{"status": "cancelled", "status_code": "CA-EXP01"}],
        OrderStatus.CANCELLED,
    ),
    ("pending 3-D Secure", [{"status": "pending"}], OrderStatus.AWAITING_AUTHENTICATION),
    ("rejected", [{"status": "rejected", "status_code": "RE-CARD01"}], OrderStatus.PAYMENT_FAILED),
    ("failed", [{"status": "failed"}], OrderStatus.PAYMENT_FAILED),
    (
        "3-D Secure failed",
        [{"status": "cancelled", "status_code": "CA-3DS01"}],
        OrderStatus.PAYMENT_FAILED,
    ),
    (
        "rejected, then pending",
        [{"status": "rejected"}, {"status": "pending"}],
        OrderStatus.AWAITING_AUTHENTICATION,
    ),
    (
        "pending, then rejected",
        [{"status": "cancelled", "status_code": "CA-3DS01"}, {"status": "rejected"}],
        OrderStatus.PAYMENT_FAILED,
    ),
    (
        "failed, then a new attempt in flight",
        [{"status": "rejected"}, {"status": "creating"}],
        OrderStatus.AWAITING_PAYMENT,
    ),
    (
        "rejected, then approved",
        [{"status": "rejected"}, {"status": "approved", "captured_amount": "1000.00"}],
        OrderStatus.PAID,
    ),
    (
        "approved, then a later failed attempt",
        [{"status": "approved", "captured_amount": "1000.00"}, {"status": "rejected"}],
        OrderStatus.PAID,
    ),
    (
        "approved, then a later 3-D Secure failure",
        [
            {"status": "approved", "captured_amount": "1000.00"},
            {"status": "cancelled", "status_code": "CA-3DS01"},
        ],
        OrderStatus.PAID,
    ),
    (
        "authorized, then a later failed attempt",
        [{"status": "authorized"}, {"status": "failed"}],
        OrderStatus.AUTHORIZED,
    ),
    (
        "authorized, then a later pending attempt",
        [{"status": "authorized"}, {"status": "pending"}],
        OrderStatus.AUTHORIZED,
    ),
]


def _payment_fields(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: Decimal(v) if k.endswith("_amount") else v for k, v in spec.items() if k != "status"}


@pytest.mark.parametrize(("case", "payments", "expected"), CASES, ids=[c[0] for c in CASES])
def test_derive_order_status(
    order: Order, case: str, payments: list[dict[str, Any]], expected: str
) -> None:
    """What the order's payments (oldest first) say about the order."""
    for spec in payments:
        make_payment(order, spec["status"], **_payment_fields(spec))
    assert derived(order) == expected


@pytest.mark.parametrize(("case", "payments", "expected"), CASES, ids=[c[0] for c in CASES])
def test_order_sync_status_moves_the_order(
    order: Order, case: str, payments: list[dict[str, Any]], expected: str
) -> None:
    """order_sync_status stores what the payments say, and a second sync changes nothing."""
    for spec in payments:
        make_payment(order, spec["status"], **_payment_fields(spec))
    assert sync(order).status == expected
    assert sync(order).status == expected


def test_payments_of_other_orders_do_not_count(order: Order, product: Product) -> None:
    """Only the payments whose external_reference is the order's reference count."""
    other = make_order((product, 1))
    make_payment(other, "approved", captured_amount=other.total)
    assert derived(order) == OrderStatus.AWAITING_PAYMENT
    assert sync(order).status == OrderStatus.AWAITING_PAYMENT


def test_sync_of_an_unknown_reference_is_none() -> None:
    """Syncing a reference no order has does nothing."""
    assert order_sync_status(reference="ORD-ZZZZZ") is None


def test_a_later_failed_attempt_never_downgrades_a_paid_order(order: Order) -> None:
    """Once paid, a failed attempt recorded afterwards leaves the order paid."""
    make_payment(order, "approved", captured_amount=order.total)
    assert sync(order).status == OrderStatus.PAID
    make_payment(order, "rejected", status_code="RE-CARD01")
    make_payment(order, "failed")
    assert sync(order).status == OrderStatus.PAID


def test_partial_refund_moves_a_paid_order(order: Order) -> None:
    """A paid order becomes partially refunded when part of its payment is refunded."""
    payment = make_payment(order, "approved", captured_amount=order.total)
    assert sync(order).status == OrderStatus.PAID
    Payment.objects.filter(pk=payment.pk).update(refunded_amount=Decimal("100.00"))
    assert sync(order).status == OrderStatus.PARTIALLY_REFUNDED
    Payment.objects.filter(pk=payment.pk).update(status="refunded", refunded_amount=order.total)
    assert sync(order).status == OrderStatus.REFUNDED


# --- Stock of cancelled orders ---------------------------------------------------------------


@pytest.mark.parametrize("code", ["CA-MER01", "CA-EXP01"])
def test_cancelled_order_gives_its_stock_back_once(
    order: Order, product: Product, code: str
) -> None:
    """A cancelled authorization cancels the order and returns its stock, exactly once."""
    assert Product.objects.get(pk=product.pk).stock == 3
    payment = make_payment(order, "authorized")
    assert sync(order).status == OrderStatus.AUTHORIZED
    assert Product.objects.get(pk=product.pk).stock == 3
    Payment.objects.filter(pk=payment.pk).update(status="cancelled", status_code=code)
    assert sync(order).status == OrderStatus.CANCELLED
    assert Product.objects.get(pk=product.pk).stock == 5
    sync(order)
    payment.refresh_from_db()
    payment_status_changed.send(
        sender=Payment, payment=payment, old_status="authorized", new_status="cancelled"
    )
    assert Order.objects.get(pk=order.pk).status == OrderStatus.CANCELLED
    assert Product.objects.get(pk=product.pk).stock == 5


def test_cancelled_order_returns_exactly_its_quantities(make_product) -> None:
    """Each item's quantity goes back on top of the stock as it is now (sales meanwhile kept)."""
    a = make_product(stock=10)
    b = make_product(stock=4)
    order = make_order((a, 3), (b, 4))
    Product.objects.filter(pk=a.pk).update(stock=5)  # 2 more sold elsewhere meanwhile
    make_payment(order, "cancelled", status_code="CA-MER01")
    assert sync(order).status == OrderStatus.CANCELLED
    assert Product.objects.get(pk=a.pk).stock == 8
    assert Product.objects.get(pk=b.pk).stock == 4


def test_failed_payment_keeps_the_stock_reserved(order: Order, product: Product) -> None:
    """A rejected or 3-D Secure-failed attempt does not return the stock (the shopper may retry)."""
    make_payment(order, "rejected")
    make_payment(order, "cancelled", status_code="CA-3DS01")
    assert sync(order).status == OrderStatus.PAYMENT_FAILED
    assert Product.objects.get(pk=product.pk).stock == 3


# --- The signal ------------------------------------------------------------------------------


def test_payment_status_changed_moves_the_order(order: Order) -> None:
    """The payments app's signal makes the order follow its payment."""
    payment = make_payment(order, "pending")
    payment_status_changed.send(
        sender=Payment, payment=payment, old_status="creating", new_status="pending"
    )
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_AUTHENTICATION
    Payment.objects.filter(pk=payment.pk).update(status="approved", captured_amount=order.total)
    payment.refresh_from_db()
    payment_status_changed.send(
        sender=Payment, payment=payment, old_status="pending", new_status="approved"
    )
    assert Order.objects.get(pk=order.pk).status == OrderStatus.PAID


def test_signal_for_a_payment_of_no_order_is_harmless(order: Order) -> None:
    """A payment whose reference matches no order changes nothing and raises nothing."""
    stray = Payment.objects.create(
        external_reference="SUB-123", idempotency_key="stray-key", capture_method="automatic",
        status="approved", amount=Decimal("10.00"),
    )  # fmt: skip
    payment_status_changed.send(sender=Payment, payment=stray, old_status="", new_status="approved")
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_PAYMENT


# --- The confirmation email -------------------------------------------------------------------


def test_confirmation_sent_once_when_paid(
    order: Order, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """Paying the order emails the customer once (by a task queued on commit), even if the
    order is synced again."""
    make_payment(order, "approved", captured_amount=order.total)
    with django_capture_on_commit_callbacks(execute=True):
        sync(order)
    with django_capture_on_commit_callbacks(execute=True):
        sync(order)
        payment = order_payments(order)[-1]
        payment_status_changed.send(
            sender=Payment, payment=payment, old_status="creating", new_status="approved"
        )
    assert mail.outbox == []
    assert set(run_queued()) == {"checkout.tasks.order_send_confirmation_task"}
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [order.email]
    assert order.reference in message.subject
    assert order.reference in message.body
    order.refresh_from_db()
    assert order.confirmation_sent_at is not None


def test_confirmation_sent_once_when_authorized_then_captured(
    order: Order, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """An authorized order is confirmed; its capture later (paid) sends no second email."""
    payment = make_payment(order, "authorized")
    with django_capture_on_commit_callbacks(execute=True):
        assert sync(order).status == OrderStatus.AUTHORIZED
    run_queued()
    assert len(mail.outbox) == 1
    Payment.objects.filter(pk=payment.pk).update(status="approved", captured_amount=order.total)
    with django_capture_on_commit_callbacks(execute=True):
        assert sync(order).status == OrderStatus.PAID
    assert run_queued() == []
    assert len(mail.outbox) == 1


def test_no_confirmation_for_unpaid_orders(
    order: Order, django_capture_on_commit_callbacks: Any
) -> None:
    """Pending, failed and cancelled orders get no confirmation email."""
    payment = make_payment(order, "pending")
    with django_capture_on_commit_callbacks(execute=True):
        sync(order)
    Payment.objects.filter(pk=payment.pk).update(status="cancelled", status_code="CA-3DS01")
    with django_capture_on_commit_callbacks(execute=True):
        sync(order)
    assert order.status == OrderStatus.PAYMENT_FAILED
    assert mail.outbox == []
    assert Order.objects.get(pk=order.pk).confirmation_sent_at is None


def test_confirmation_is_sent_after_commit(
    order: Order, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """The email's task is queued only once the transaction that paid the order commits."""
    make_payment(order, "approved", captured_amount=order.total)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sync(order)
    assert run_queued() == []
    assert len(callbacks) == 1
    callbacks[0]()
    assert run_queued() == ["checkout.tasks.order_send_confirmation_task"]
    assert len(mail.outbox) == 1


def test_order_send_confirmation_claims_once(order: Order) -> None:
    """order_send_confirmation sends the first time and refuses every time after."""
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.PAID)
    assert order_send_confirmation(order_id=order.pk) is True
    assert order_send_confirmation(order_id=order.pk) is False
    assert len(mail.outbox) == 1


def test_confirmation_in_the_orders_language(product: Product) -> None:
    """An order placed in English is confirmed in English (the source language)."""
    order = make_order((product, 1), status=OrderStatus.AUTHORIZED, language="en")
    order_send_confirmation(order_id=order.pk)
    (message,) = mail.outbox
    assert message.subject == f"Your order {order.reference}"
    assert "held on your card" in message.body
