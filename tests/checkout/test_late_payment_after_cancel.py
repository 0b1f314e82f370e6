"""A payment that goes through after staff cancelled its order (a 3-D Secure challenge finished
late): the order's items went back to stock when it was cancelled. If they are all still there,
the order takes them back and goes on as paid; otherwise it stays cancelled and the payment is
given back (refunded, or its hold cancelled), as for an order that expired. Against the live
sandbox."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.urls import reverse

from checkout.models import Fulfilment, Order, OrderEventKind, OrderStatus, Product
from checkout.orders.rules import order_sync_status, orders_out_of_step
from checkout.orders.selectors import order_payments
from checkout.records import order_event_record
from checkout.stock.rules import order_restock_unshipped
from checkout.words import PAID_AFTER_CANCELLATION, RETURNED_AFTER_CANCELLATION
from payments.rereading.calls import payment_refresh
from payments.statuses import PaymentStatus
from tests.checkout.helpers import expect_given_back, open_challenge, pass_challenge, stock
from tests.factories import ProductFactory
from tests.helpers.html import html
from tests.helpers.provider import Api
from tests.helpers.shop import own, place_order, shopper
from tests.helpers.staff import sign_in_staff

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sandbox]


def _cancel_as_staff(order: Order, staff: Any) -> None:
    """What cancelling an unpaid order leaves: cancelled, its items back in stock, the ledger
    naming who did it (the 3-D Secure challenge was opened in a tab the shop did not hear
    from, so no payment of the order held anything)."""
    Order.objects.filter(pk=order.pk).update(
        status=OrderStatus.CANCELLED, fulfilment=Fulfilment.CANCELLED
    )
    order_event_record(order, OrderEventKind.CANCELLED, "", staff)
    order_restock_unshipped(order, staff)


@pytest.fixture
def staff(db: None) -> Any:
    return get_user_model().objects.create_superuser("gerente", password="a-long-test-password")


def _cancelled_with_challenge_open(
    provider: Api, product: Product, staff: Any
) -> tuple[Order, Any]:
    order = place_order(shopper(), (product, 1))
    pending = open_challenge(provider, order)
    _cancel_as_staff(order, staff)
    assert stock(product) == 1
    return order, pending


def _finish_challenge(order: Order, pending: Any) -> None:
    """The shopper passes the challenge; the shop learns it (as from a notification)."""
    pass_challenge(pending)
    payment_refresh(payment=order_payments(order)[-1])


def _mail_kinds(order: Order) -> list[str]:
    return sorted(order.mails.values_list("kind", flat=True))


def _order_page(order: Order, language: str) -> Any:
    client = own(shopper(HTTP_ACCEPT_LANGUAGE=language), order)
    return html(client.get(reverse("checkout:order", kwargs={"reference": order.reference})))


def _ledger_details(order: Order) -> list[tuple[str, str]]:
    return list(order.events.values_list("kind", "message"))


@pytest.fixture
def product(db: None) -> Product:
    return ProductFactory(price=Decimal("289.00"), stock=1)


@pytest.mark.parametrize("capture", ["automatic", "manual"])
def test_a_payment_after_a_cancellation_takes_the_items_back_while_they_are_in_stock(
    provider: Api, run_queued: Any, settings: Any, product: Product, staff: Any, capture: str
) -> None:
    """Given an order cancelled by staff with its challenge open and its item still in stock,
    when the challenge is passed, the order is paid (or held) again and holds its item, its
    ledger says why, nothing is given back, and the shopper gets the paid (held) mail."""
    settings.PAYMENTS_CAPTURE_METHOD = capture
    order, pending = _cancelled_with_challenge_open(provider, product, staff)

    _finish_challenge(order, pending)
    run_queued()

    order.refresh_from_db()
    paid = OrderStatus.PAID if capture == "automatic" else OrderStatus.AUTHORIZED
    assert (order.status, order.fulfilment) == (paid, Fulfilment.UNFULFILLED)
    assert stock(product) == 0
    assert order.items.get().quantity_restocked == 0
    assert (OrderEventKind.RESERVED, PAID_AFTER_CANCELLATION()) in _ledger_details(order)
    payment = order_payments(order)[-1]
    remote = provider.payment(payment.provider_id)
    assert remote["status"] == ("approved" if capture == "automatic" else "authorized")
    assert not remote.get("refunds")
    assert payment.refunded_amount == 0
    assert "payment_returned" not in _mail_kinds(order)
    assert ("paid" if capture == "automatic" else "held") in _mail_kinds(order)
    page = _order_page(order, "en")
    assert page.one(id="order-status").text.strip() == order.get_status_display()
    assert page.find(id="late-payment") is None


@pytest.mark.parametrize("capture", ["automatic", "manual"])
def test_a_payment_after_a_cancellation_whose_items_were_sold_is_given_back(
    provider: Api, run_queued: Any, settings: Any, product: Product, staff: Any, capture: str
) -> None:
    """Given an order cancelled by staff with its challenge open and its last item sold since,
    when the challenge is passed, the order stays cancelled, the payment is refunded
    (automatic capture) or its hold cancelled (manual) by a task, the ledger says so, the order
    page says it is being, then was, given back, and one "payment returned" mail goes out
    (never a paid or held one)."""
    settings.PAYMENTS_CAPTURE_METHOD = capture
    order, pending = _cancelled_with_challenge_open(provider, product, staff)
    place_order(shopper(), (product, 1))  # someone else buys it
    assert stock(product) == 0

    _finish_challenge(order, pending)
    order.refresh_from_db()
    assert order.status == OrderStatus.CANCELLED
    assert "lo estamos devolviendo" in _order_page(order, "es").one(id="late-payment").text
    run_queued()

    expect_given_back(provider, order, capture, Decimal("289.00"))
    order.refresh_from_db()
    assert (order.status, order.fulfilment) == (OrderStatus.CANCELLED, Fulfilment.CANCELLED)
    assert stock(product) == 0  # still the other shopper's
    assert (OrderEventKind.RETURNED, RETURNED_AFTER_CANCELLATION()) in _ledger_details(order)
    assert OrderEventKind.RESERVED not in dict(_ledger_details(order))
    kinds = _mail_kinds(order)
    assert kinds.count("payment_returned") == 1
    assert not {"paid", "held", "charged", "refunded"} & set(kinds), kinds
    [returned] = [m for m in mail.outbox if m.to == [order.email] and "devolv" in m.subject]
    assert "se canceló" in returned.body
    assert "te lo devolvimos completo" in _order_page(order, "es").one(id="late-payment").text

    order_sync_status(order_id=order.pk)  # and again: nothing moves
    assert Order.objects.get(pk=order.pk).status == OrderStatus.CANCELLED


@pytest.mark.parametrize("capture", ["automatic", "manual"])
def test_the_follow_up_sweep_leaves_a_settled_cancelled_order_alone(
    provider: Api, run_queued: Any, settings: Any, product: Product, staff: Any, capture: str
) -> None:
    """Given a cancelled order whose late payment was given back, the sweep that follows the
    payments does not find it out of step (it would sync it again forever); while the payment
    was still held, it did."""
    settings.PAYMENTS_CAPTURE_METHOD = capture
    order, pending = _cancelled_with_challenge_open(provider, product, staff)
    place_order(shopper(), (product, 1))

    _finish_challenge(order, pending)
    assert order.pk in orders_out_of_step()  # a charge is held: to be given back
    run_queued()

    assert order_payments(order)[-1].status == PaymentStatus.CANCELLED
    assert order.pk not in orders_out_of_step()


@pytest.mark.parametrize(
    ("language", "page_says", "ledger_says"),
    [
        (
            "es",
            "Tu pago llegó después de que se canceló el pedido",
            "pagado después de cancelarse; los productos ya no estaban en inventario",
        ),
        (
            "en",
            "Your payment arrived after the order was cancelled",
            "paid after it was cancelled; items no longer in stock",
        ),
    ],
)
def test_the_shopper_and_staff_read_it_in_their_language(
    provider: Api,
    run_queued: Any,
    settings: Any,
    product: Product,
    staff: Any,
    language: str,
    page_says: str,
    ledger_says: str,
) -> None:
    """The order page tells the shopper, and the admin's order page tells staff (its ledger),
    in Spanish and in English, that the late payment was given back."""
    order, pending = _cancelled_with_challenge_open(provider, product, staff)
    place_order(shopper(), (product, 1))
    _finish_challenge(order, pending)
    run_queued()

    assert page_says in _order_page(order, language).one(id="late-payment").text

    settings.LANGUAGE_CODE = language
    admin = Client(HTTP_ACCEPT_LANGUAGE=language)
    sign_in_staff(admin, staff)
    page = html(admin.get(reverse("admin:checkout_order_change", args=[order.pk])))
    ledger = page.one(id="order-ledger").text
    assert ledger_says in ledger
    given_back = "Pago tardío devuelto" if language == "es" else "Late payment given back"
    assert given_back in ledger


@pytest.mark.parametrize("in_stock", [True, False])
def test_a_payment_after_staff_released_the_first_follows_the_same_rule(
    provider: Api, run_queued: Any, settings: Any, product: Product, staff: Any, in_stock: bool
) -> None:
    """Given an order whose held payment staff cancelled (the hold released, the items back in
    stock), when a second payment of it goes through (an attempt from another tab), the order
    takes its items back if they are still there, else stays cancelled and the second payment
    is released; the first, released by staff, is never mailed as given back."""
    from checkout.fulfilment.calls import order_cancel
    from tests.factories import provider_payment

    settings.PAYMENTS_CAPTURE_METHOD = "manual"
    order = place_order(shopper(), (product, 1))
    first = provider_payment(provider, order=order, capture_method="manual")
    run_queued()
    order_cancel(order_id=order.pk, actor=staff)
    run_queued()
    order.refresh_from_db()
    assert order.status == OrderStatus.CANCELLED
    assert stock(product) == 1
    if not in_stock:
        place_order(shopper(), (product, 1))

    second = provider_payment(provider, order=order, capture_method="manual")
    run_queued()

    order.refresh_from_db()
    second.refresh_from_db()
    first.refresh_from_db()
    assert first.status == PaymentStatus.CANCELLED
    if in_stock:
        assert (order.status, order.fulfilment) == (OrderStatus.AUTHORIZED, Fulfilment.UNFULFILLED)
        assert second.status == PaymentStatus.AUTHORIZED
        assert stock(product) == 0
        assert "payment_returned" not in _mail_kinds(order)
    else:
        assert (order.status, order.fulfilment) == (OrderStatus.CANCELLED, Fulfilment.CANCELLED)
        assert provider.payment(second.provider_id)["status"] == "cancelled"
        assert _mail_kinds(order).count("payment_returned") == 1
        assert order.mails.get(kind="payment_returned").key == f"payment_returned:{second.pk}"
        assert order.pk not in orders_out_of_step()
