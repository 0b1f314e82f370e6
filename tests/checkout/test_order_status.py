"""Orders follow their payments: the status derived from them, the sync, the signal, the email."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core import mail
from django.core.cache import cache
from django.utils import timezone

from checkout.mails.calls import order_mail_deliver
from checkout.models import Order, OrderMail, OrderMailKind, OrderStatus, Product
from checkout.orders.rules import (
    derive_order_status,
    order_as_paid_now,
    order_sync_status,
    orders_out_of_step,
)
from checkout.orders.selectors import order_payments
from checkout.tasks import order_sync_task, orders_follow_payments_task
from payments.models import Payment, PaymentEvent
from payments.signals import payment_status_changed
from tests.factories import OrderFactory, PaymentFactory
from tests.helpers.broker import take_queued

pytestmark = pytest.mark.django_db


@pytest.fixture
def product(make_product) -> Product:
    return make_product(price="500.00", stock=5)


@pytest.fixture
def order(product: Product) -> Order:
    """An order placed a moment ago, its "order received" mail already sent (these tests count
    the mails its payments call for)."""
    placed = OrderFactory(lines=[(product, 2)])
    OrderMail.objects.create(
        order=placed, kind=OrderMailKind.RECEIVED, key="received", sent_at=timezone.now()
    )
    return placed


def derived(order: Order) -> str:
    return derive_order_status(order_payments(order))


def sync(order: Order) -> Order:
    synced = order_sync_status(order_id=order.pk)
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
        PaymentFactory(order=order, status=spec["status"], **_payment_fields(spec))
    assert derived(order) == expected


@pytest.mark.parametrize(("case", "payments", "expected"), CASES, ids=[c[0] for c in CASES])
def test_order_sync_status_moves_the_order(
    order: Order, case: str, payments: list[dict[str, Any]], expected: str
) -> None:
    """order_sync_status stores what the payments say, and a second sync changes nothing."""
    for spec in payments:
        PaymentFactory(order=order, status=spec["status"], **_payment_fields(spec))
    assert sync(order).status == expected
    assert sync(order).status == expected


def test_payments_of_other_orders_do_not_count(order: Order, product: Product) -> None:
    """Only the payments whose external_reference is the order's reference count."""
    other = OrderFactory(lines=[(product, 1)])
    PaymentFactory(order=other, charged=True)
    assert derived(order) == OrderStatus.AWAITING_PAYMENT
    assert sync(order).status == OrderStatus.AWAITING_PAYMENT


def test_sync_of_an_unknown_reference_is_none() -> None:
    """Syncing an order that does not exist does nothing."""
    assert order_sync_status(order_id=987654) is None


def test_a_later_failed_attempt_never_downgrades_a_paid_order(order: Order) -> None:
    """Once paid, a failed attempt recorded afterwards leaves the order paid."""
    PaymentFactory(order=order, charged=True)
    assert sync(order).status == OrderStatus.PAID
    PaymentFactory(order=order, status="rejected", status_code="RE-CARD01")
    PaymentFactory(order=order, status="failed")
    assert sync(order).status == OrderStatus.PAID


def test_partial_refund_moves_a_paid_order(order: Order) -> None:
    """A paid order becomes partially refunded when part of its payment is refunded."""
    payment = PaymentFactory(order=order, charged=True)
    assert sync(order).status == OrderStatus.PAID
    Payment.objects.filter(pk=payment.pk).update(refunded_amount=Decimal("100.00"))
    assert sync(order).status == OrderStatus.PARTIALLY_REFUNDED
    Payment.objects.filter(pk=payment.pk).update(status="refunded", refunded_amount=order.total)
    assert sync(order).status == OrderStatus.REFUNDED


# --- Stock of cancelled orders ---------------------------------------------------------------


@pytest.mark.parametrize("code", ["CA-MER01", "CA-EXP01"])
def test_cancelled_order_gives_its_stock_back_once(
    order: Order, product: Product, code: str, run_queued: Any
) -> None:
    """A cancelled authorization cancels the order and returns its stock, exactly once."""
    assert Product.objects.get(pk=product.pk).stock == 3
    payment = PaymentFactory(order=order, status="authorized")
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
    assert run_queued() == ["checkout.tasks.order_sync_task"]
    assert Order.objects.get(pk=order.pk).status == OrderStatus.CANCELLED
    assert Product.objects.get(pk=product.pk).stock == 5


def test_cancelled_order_returns_exactly_its_quantities(make_product) -> None:
    """Each item's quantity goes back on top of the stock as it is now (sales meanwhile kept)."""
    a = make_product(stock=10)
    b = make_product(stock=4)
    order = OrderFactory(lines=[(a, 3), (b, 4)])
    Product.objects.filter(pk=a.pk).update(stock=5)  # 2 more sold elsewhere meanwhile
    PaymentFactory(order=order, status="cancelled", status_code="CA-MER01")
    assert sync(order).status == OrderStatus.CANCELLED
    assert Product.objects.get(pk=a.pk).stock == 8
    assert Product.objects.get(pk=b.pk).stock == 4


def test_failed_payment_keeps_the_stock_reserved(order: Order, product: Product) -> None:
    """A rejected or 3-D Secure-failed attempt does not return the stock (the shopper may retry)."""
    PaymentFactory(order=order, status="rejected")
    PaymentFactory(order=order, status="cancelled", status_code="CA-3DS01")
    assert sync(order).status == OrderStatus.PAYMENT_FAILED
    assert Product.objects.get(pk=product.pk).stock == 3


# --- The signal ------------------------------------------------------------------------------


def test_payment_status_changed_moves_the_order(order: Order, run_queued: Any) -> None:
    """The payments app's signal makes the order follow its payment (by the order's sync task,
    once a worker runs it)."""
    payment = PaymentFactory(order=order, status="pending")
    payment_status_changed.send(
        sender=Payment, payment=payment, old_status="creating", new_status="pending"
    )
    assert run_queued() == ["checkout.tasks.order_sync_task"]
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_AUTHENTICATION
    Payment.objects.filter(pk=payment.pk).update(status="approved", captured_amount=order.total)
    payment.refresh_from_db()
    payment_status_changed.send(
        sender=Payment, payment=payment, old_status="pending", new_status="approved"
    )
    assert run_queued() == [
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",
    ]
    assert Order.objects.get(pk=order.pk).status == OrderStatus.PAID


def test_signal_for_a_payment_of_no_order_is_harmless(order: Order, run_queued: Any) -> None:
    """A payment whose reference matches no order changes nothing, raises nothing, and queues
    no task."""
    stray = PaymentFactory(
        external_reference="SUB-123", idempotency_key="stray-key", capture_method="automatic",
        status="approved", amount=Decimal("10.00"), provider_id=None,
    )  # fmt: skip
    payment_status_changed.send(sender=Payment, payment=stray, old_status="", new_status="approved")
    assert run_queued() == []
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_PAYMENT


# --- The order's sync task, and the sweep behind it ------------------------------------------


def test_a_payment_status_change_queues_the_orders_sync_and_moves_nothing_itself(
    order: Order, celery_app: Any, empty_broker: None
) -> None:
    """Given an order whose payment became pending, when the payments app signals the change,
    then the order's sync task is queued (for that order) and the stored status is unchanged;
    only once the task runs does the order follow its payment."""
    payment = PaymentFactory(order=order, status="pending")

    payment_status_changed.send(
        sender=Payment, payment=payment, old_status="creating", new_status="pending"
    )

    assert take_queued(celery_app) == [("checkout.tasks.order_sync_task", [order.pk])]
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_PAYMENT
    assert order_sync_task.apply(args=[order.pk]).get() == OrderStatus.AWAITING_AUTHENTICATION
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_AUTHENTICATION


def test_order_sync_task_run_twice_lands_in_the_same_place(
    order: Order, product: Product, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """Given an order whose authorization was cancelled, when its sync task runs twice (a
    redelivery), then both runs land on cancelled, its stock comes back once, and one
    "cancelled" mail goes out."""
    PaymentFactory(order=order, status="cancelled", status_code="CA-MER01")
    assert Product.objects.get(pk=product.pk).stock == 3

    with django_capture_on_commit_callbacks(execute=True):
        first = order_sync_task.apply(args=[order.pk]).get()
        second = order_sync_task.apply(args=[order.pk]).get()

    assert first == second == OrderStatus.CANCELLED
    assert Order.objects.get(pk=order.pk).status == OrderStatus.CANCELLED
    assert Product.objects.get(pk=product.pk).stock == 5
    # and the shopper is told once that it was cancelled (no payment mail)
    assert run_queued() == ["checkout.tasks.order_mail_send_task"]
    assert [m.kind for m in paid_mails(order)] == [OrderMailKind.CANCELLED]
    assert len(mail.outbox) == 1


def test_order_sync_task_queued_twice_for_a_paid_order_confirms_it_once(
    order: Order, run_queued: Any
) -> None:
    """Given an approved payment, when the order's sync task is queued twice and both run, then
    the order is paid and the customer gets one confirmation email."""
    PaymentFactory(order=order, charged=True)
    order_sync_task.delay(order.pk)
    order_sync_task.delay(order.pk)

    ran = run_queued()

    assert ran[:2] == ["checkout.tasks.order_sync_task"] * 2
    assert set(ran[2:]) == {"checkout.tasks.order_mail_send_task"}
    assert Order.objects.get(pk=order.pk).status == OrderStatus.PAID
    assert len(mail.outbox) == 1


def test_the_sweep_syncs_an_order_whose_sync_task_was_lost(
    order: Order, product: Product, celery_app: Any, run_queued: Any
) -> None:
    """Given an order paid at its payment whose sync task was lost (queued, then the broker
    emptied), and another order whose status already says what its payments do, when the
    beat's sweep runs, then it syncs the first (and its confirmation is queued), leaves the
    other alone, and a second sweep finds nothing to do."""
    in_step = OrderFactory(lines=[(product, 1)])
    PaymentFactory(order=in_step, status="rejected", status_code="RE-CARD01")
    sync(in_step)
    payment = PaymentFactory(order=order, charged=True)
    payment_status_changed.send(
        sender=Payment, payment=payment, old_status="creating", new_status="approved"
    )
    celery_app.control.purge()  # the order's task is lost
    assert run_queued() == []
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_PAYMENT

    orders_follow_payments_task.delay()
    assert run_queued() == [
        "checkout.tasks.orders_follow_payments_task",
        "checkout.tasks.order_mail_send_task",
    ]

    assert Order.objects.get(pk=order.pk).status == OrderStatus.PAID
    assert len(mail.outbox) == 1
    assert Order.objects.get(pk=in_step.pk).status == OrderStatus.PAYMENT_FAILED
    assert orders_follow_payments_task.apply().get() == 0


def test_the_sweep_counts_the_orders_it_syncs_and_leaves_in_step_ones_alone(
    order: Order, product: Product
) -> None:
    """Given an order whose payment changed without the signal reaching checkout, and orders
    in step with their payments, when the sweep runs, then it syncs that one order (it returns
    1); run again, it returns 0, and so it does when every order is in step."""
    in_step = [OrderFactory(lines=[(product, 1)]) for _ in range(2)]
    PaymentFactory(order=in_step[0], status="authorized")
    PaymentFactory(order=in_step[1], status="pending")
    for other in in_step:
        sync(other)
    assert orders_follow_payments_task.apply().get() == 0

    PaymentFactory(order=order, status="pending")  # written straight to the database: no signal

    assert orders_follow_payments_task.apply().get() == 1
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_AUTHENTICATION
    assert [Order.objects.get(pk=o.pk).status for o in in_step] == [
        OrderStatus.AUTHORIZED,
        OrderStatus.AWAITING_AUTHENTICATION,
    ]
    assert orders_follow_payments_task.apply().get() == 0


def test_the_sweep_looks_only_at_payments_changed_in_the_last_six_hours(order: Order) -> None:
    """Given an order out of step with a payment last changed seven hours ago, when the sweep
    runs, then it leaves that order alone (it looks back six hours, not through every order)."""
    payment = PaymentFactory(order=order, charged=True)
    Payment.objects.filter(pk=payment.pk).update(updated_at=timezone.now() - timedelta(hours=7))

    assert orders_follow_payments_task.apply().get() == 0
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_PAYMENT


# --- What the shopper sees before the sync ---------------------------------------------------


def test_order_as_paid_now_shows_a_payable_order_what_its_payments_say(order: Order) -> None:
    """Given a payable order whose payment was approved a moment ago (its sync not run yet),
    when it is read for the shopper, then it shows paid (no longer payable), and nothing is
    stored: the sync task does that."""
    PaymentFactory(order=order, charged=True)

    shown = order_as_paid_now(Order.objects.get(pk=order.pk))

    assert shown.status == OrderStatus.PAID
    assert not shown.is_payable
    assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_PAYMENT


def test_order_as_paid_now_leaves_an_order_that_moved_on_alone(product: Product) -> None:
    """Given an order cancelled by staff, with no payment (its payments would say awaiting
    payment), when it is read for the shopper, then it stays cancelled, and not payable."""
    cancelled = OrderFactory(lines=[(product, 1)], status=OrderStatus.CANCELLED)
    assert derived(cancelled) == OrderStatus.AWAITING_PAYMENT

    shown = order_as_paid_now(Order.objects.get(pk=cancelled.pk))

    assert shown.status == OrderStatus.CANCELLED
    assert not shown.is_payable


# --- The payment's mail (checkout.mails) ------------------------------------------------------


def paid_mails(order: Order) -> list[OrderMail]:
    return list(OrderMail.objects.filter(order=order).exclude(kind=OrderMailKind.RECEIVED))


def test_confirmation_sent_once_when_paid(
    order: Order, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """Paying the order emails the customer once (by a task queued on commit), even if the
    order is synced again."""
    PaymentFactory(order=order, charged=True)
    with django_capture_on_commit_callbacks(execute=True):
        sync(order)
    with django_capture_on_commit_callbacks(execute=True):
        sync(order)
        payment = order_payments(order)[-1]
        payment_status_changed.send(
            sender=Payment, payment=payment, old_status="creating", new_status="approved"
        )
    assert mail.outbox == []
    assert set(run_queued()) == {
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",
    }
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [order.email]
    assert order.reference in message.subject
    assert order.reference in message.body
    [paid] = paid_mails(order)
    assert (paid.kind, paid.amount) == (OrderMailKind.PAID, order.total)
    assert paid.sent_at is not None


def test_confirmation_sent_once_when_authorized_then_captured(
    order: Order, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """An authorized order gets the "amount held" mail once; its capture later sends the
    "charged" mail, never a second "held" or a "paid" one."""
    payment = PaymentFactory(order=order, held=True)
    PaymentEvent.objects.create(
        payment=payment, kind="created", old_status="creating", new_status="authorized"
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert sync(order).status == OrderStatus.AUTHORIZED
        sync(order)
    run_queued()
    assert len(mail.outbox) == 1
    assert [m.kind for m in paid_mails(order)] == [OrderMailKind.HELD]
    Payment.objects.filter(pk=payment.pk).update(status="approved", captured_amount=order.total)
    PaymentEvent.objects.create(
        payment=payment,
        kind="captured",
        old_status="authorized",
        new_status="approved",
        amount=order.total,
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert sync(order).status == OrderStatus.PAID
        sync(order)
    assert run_queued() == ["checkout.tasks.order_mail_send_task"]
    assert len(mail.outbox) == 2
    assert [m.kind for m in paid_mails(order)] == [OrderMailKind.HELD, OrderMailKind.CHARGED]


def test_no_confirmation_for_unpaid_orders(
    order: Order, django_capture_on_commit_callbacks: Any
) -> None:
    """Pending, failed and cancelled orders get no confirmation email."""
    payment = PaymentFactory(order=order, status="pending")
    with django_capture_on_commit_callbacks(execute=True):
        sync(order)
    Payment.objects.filter(pk=payment.pk).update(status="cancelled", status_code="CA-3DS01")
    with django_capture_on_commit_callbacks(execute=True):
        sync(order)
    assert order.status == OrderStatus.PAYMENT_FAILED
    assert mail.outbox == []
    assert paid_mails(order) == []


def test_confirmation_is_sent_after_commit(
    order: Order, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """The email's task is queued only once the transaction that paid the order commits."""
    PaymentFactory(order=order, charged=True)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sync(order)
    assert run_queued() == []
    assert len(callbacks) == 1
    callbacks[0]()
    assert run_queued() == ["checkout.tasks.order_mail_send_task"]
    assert len(mail.outbox) == 1


def test_order_mail_send_claims_once(order: Order, django_capture_on_commit_callbacks: Any) -> None:
    """order_mail_deliver sends the first time and refuses every time after."""
    PaymentFactory(order=order, charged=True)
    with django_capture_on_commit_callbacks(execute=False):
        sync(order)
    [paid] = paid_mails(order)
    assert order_mail_deliver(mail_id=paid.pk) is True
    assert order_mail_deliver(mail_id=paid.pk) is False
    assert len(mail.outbox) == 1


def test_confirmation_in_the_orders_language(
    product: Product, django_capture_on_commit_callbacks: Any
) -> None:
    """An order placed in English gets its mails in English (the source language)."""
    order = OrderFactory(lines=[(product, 1)], language="en")
    PaymentFactory(order=order, held=True)
    with django_capture_on_commit_callbacks(execute=False):
        sync(order)
    [held] = OrderMail.objects.filter(order=order, kind=OrderMailKind.HELD)
    order_mail_deliver(mail_id=held.pk)
    (message,) = mail.outbox
    assert message.subject == f"Your order {order.reference}: amount held on your card"
    assert "holding $500.00 MXN on your card" in message.body


def _out_of_step_orders(product: Product, count: int) -> list[Order]:
    """`count` orders whose payments were written without the signal reaching checkout."""
    product.stock = 100
    product.save(update_fields=["stock"])
    orders = [OrderFactory(lines=[(product, 1)]) for _ in range(count)]
    for each in orders:
        PaymentFactory(order=each, status="pending")
    return orders


@pytest.mark.parametrize("count", [2, 12])
def test_the_sweep_makes_the_same_queries_for_few_changes_as_for_many(
    product: Product, count: int, django_assert_num_queries: Any
) -> None:
    """Finding the orders out of step is three queries a batch of changed payments (their
    references, their orders, those orders' payments), whatever the number of orders."""
    expected = _out_of_step_orders(product, count)
    with django_assert_num_queries(3):
        found = orders_out_of_step(batch=500)
    assert sorted(found) == sorted(o.pk for o in expected)


def test_the_sweep_goes_through_every_batch(product: Product) -> None:
    """With batches of 2, five changed orders are all found, none twice."""
    expected = _out_of_step_orders(product, 5)
    found = orders_out_of_step(batch=2)
    assert sorted(found) == sorted(o.pk for o in expected)


def test_the_sweep_reads_only_what_changed_since_its_last_run(
    product: Product, django_assert_max_num_queries: Any
) -> None:
    """A run looks at the payments changed since the previous run began (a minute's overlap),
    not at six hours of them each time: an order whose payment changed two minutes before the
    last run, out of step since, is left to that run."""
    old = _out_of_step_orders(product, 1)[0]
    assert orders_follow_payments_task.apply().get() == 1
    Payment.objects.filter(external_reference=old.reference).update(
        updated_at=timezone.now() - timedelta(minutes=2)
    )
    Order.objects.filter(pk=old.pk).update(status=OrderStatus.AWAITING_PAYMENT)
    new = _out_of_step_orders(product, 1)[0]

    assert orders_follow_payments_task.apply().get() == 1

    assert Order.objects.get(pk=new.pk).status != OrderStatus.AWAITING_PAYMENT
    assert Order.objects.get(pk=old.pk).status == OrderStatus.AWAITING_PAYMENT
    # With its cursor lost (the cache emptied), it looks six hours back again.
    cache.delete("checkout:orders-followed-until")
    assert orders_follow_payments_task.apply().get() == 1
    assert Order.objects.get(pk=old.pk).status != OrderStatus.AWAITING_PAYMENT
