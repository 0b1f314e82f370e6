"""An order holds its items for SHOP_RESERVATION_MINUTES; unpaid by then, it expires and the
items go back to stock (when a page shows stock, and by beat). A payment that comes after the
order expired takes the items back, or is given back. Orders are rate limited; stock never goes
below zero, however many shoppers buy the last items at once."""

from __future__ import annotations

import threading
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from checkout.cart import Cart
from checkout.models import Fulfilment, Order, OrderEventKind, OrderStatus, Product
from checkout.orders.rules import CheckoutError, order_create_from_cart, order_sync_status
from checkout.orders.selectors import order_payments
from checkout.reservations.rules import order_expire, reservations_expire
from checkout.tasks import reservations_expire_task
from payments.rereading.calls import payment_refresh
from payments.statuses import PaymentStatus
from tests.checkout.helpers import expect_given_back, open_challenge, pass_challenge, stock
from tests.factories import PaymentFactory, ProductFactory
from tests.helpers.html import html
from tests.helpers.provider import Api, refuse_provider_calls
from tests.helpers.shop import CUSTOMER, own, place_order, shopper


def _later(minutes: float) -> Any:
    """The clock moved `minutes` from now (and kept moving)."""
    return time_machine.travel(timezone.now() + timedelta(minutes=minutes), tick=True)


@pytest.fixture
def last_mug(db: None) -> Product:
    return ProductFactory(slug="taza", name="Taza de talavera", price=Decimal("289.00"), stock=1)


# --- Holding and giving back ----------------------------------------------------------------


def test_an_order_holds_its_items_for_the_reservation_time(
    last_mug: Product, settings: Any
) -> None:
    settings.SHOP_RESERVATION_MINUTES = 45
    before = timezone.now()
    order = place_order(shopper(), (last_mug, 1))
    assert stock(last_mug) == 0
    assert order.reserved_until is not None
    held = order.reserved_until - before
    assert timedelta(minutes=45) <= held < timedelta(minutes=45, seconds=30)


def test_an_unpaid_order_gives_its_stock_back_when_a_page_shows_the_product(
    last_mug: Product,
) -> None:
    """Given the last mug in an unpaid order, the shop shows it sold out while the order holds
    it, and for sale again as soon as the reservation is over, with no beat needed."""
    order = place_order(shopper(), (last_mug, 1))
    product_url = reverse("checkout:product", kwargs={"slug": last_mug.slug})
    visitor = shopper()
    assert "Agotado" in html(visitor.get(product_url)).text

    with _later(29):
        assert "Agotado" in html(visitor.get(product_url)).text
        assert Order.objects.get(pk=order.pk).status == OrderStatus.AWAITING_PAYMENT
    with _later(31):
        page = html(visitor.get(product_url)).text
    assert "Agotado" not in page
    assert stock(last_mug) == 1
    order.refresh_from_db()
    assert (order.status, order.fulfilment) == (OrderStatus.EXPIRED, Fulfilment.CANCELLED)
    assert order.items.get().quantity_restocked == 1
    assert list(order.events.values_list("kind", flat=True)) == [
        OrderEventKind.RESTOCKED,
        OrderEventKind.EXPIRED,
    ]


@pytest.mark.parametrize("page", ["checkout:home", "checkout:cart"])
def test_every_page_that_shows_stock_gives_back_what_expired_orders_hold(
    last_mug: Product, page: str
) -> None:
    place_order(shopper(), (last_mug, 1))
    with _later(31):
        shopper().get(reverse(page))
    assert stock(last_mug) == 1


def test_until_a_reservation_can_end_pages_read_nothing_of_them(last_mug: Product) -> None:
    """Given a page that looked (and noted when the soonest reservation ends), the next pages
    read only what they show until then; an order placed after the look, its reservation
    ending later still, gives its stock back the moment it ends."""
    product_url = reverse("checkout:product", kwargs={"slug": last_mug.slug})
    visitor = shopper()
    visitor.get(product_url)  # the look: no order holds anything yet
    order = place_order(shopper(), (last_mug, 1))
    with CaptureQueriesContext(connection) as queries:
        assert "Agotado" in html(visitor.get(product_url)).text
    assert [q["sql"] for q in queries if "checkout_order" in q["sql"]] == []
    with _later(31):
        assert "Agotado" not in html(visitor.get(product_url)).text
    order.refresh_from_db()
    assert order.status == OrderStatus.EXPIRED and stock(last_mug) == 1


def test_the_soonest_end_is_that_of_the_order_holding_items_now(
    last_mug: Product, settings: Any
) -> None:
    """An order placed with a shorter reservation than a later one's: the look after both
    notes the first's end, and its stock comes back then, not at the second's."""
    settings.SHOP_RESERVATION_MINUTES = 10
    first = place_order(shopper(), (last_mug, 1))
    other = ProductFactory(slug="jarra", name="Jarra", price=Decimal("100.00"), stock=1)
    settings.SHOP_RESERVATION_MINUTES = 30
    with _later(1):
        place_order(shopper(), (other, 1))
        shopper().get(reverse("checkout:home"))  # the look after both
    with _later(11):
        shopper().get(reverse("checkout:home"))
    first.refresh_from_db()
    assert first.status == OrderStatus.EXPIRED and stock(last_mug) == 1
    assert stock(other) == 0


def test_the_beat_task_expires_what_no_page_read(last_mug: Product) -> None:
    """Given three orders: one unpaid past its time, one unpaid within it, one paid past its
    time (its sync not run yet), the beat's task expires the first only, and only once."""
    vase = ProductFactory(stock=5)
    late = place_order(shopper(), (last_mug, 1))
    with _later(-10):
        recent_client = shopper()
    recent = place_order(recent_client, (vase, 1))
    Order.objects.filter(pk=recent.pk).update(reserved_until=timezone.now() + timedelta(hours=1))
    paid = place_order(shopper(), (vase, 2))
    PaymentFactory(order=paid, status=PaymentStatus.APPROVED)

    with _later(31):
        assert reservations_expire_task.apply().get() == 1
        assert reservations_expire_task.apply().get() == 0
    statuses = dict(Order.objects.values_list("pk", "status"))
    assert statuses[late.pk] == OrderStatus.EXPIRED
    assert statuses[recent.pk] == OrderStatus.AWAITING_PAYMENT
    assert statuses[paid.pk] == OrderStatus.AWAITING_PAYMENT  # its sync makes it paid
    assert (stock(last_mug), stock(vase)) == (1, 2)


@pytest.mark.parametrize(
    "status", [PaymentStatus.APPROVED, PaymentStatus.AUTHORIZED, PaymentStatus.UNKNOWN]
)
def test_an_order_whose_payment_went_through_or_may_have_is_not_expired(
    last_mug: Product, status: str
) -> None:
    """A payment approved or held is not expired away; one whose answer was lost (unknown)
    leaves the order payable, and it expires: if that payment went through after all, the late
    payment's path takes over."""
    order = place_order(shopper(), (last_mug, 1))
    PaymentFactory(order=order, status=status)
    with _later(31):
        expired = order_expire(order_id=order.pk)
    assert expired is (status == PaymentStatus.UNKNOWN)


def test_a_new_order_may_take_the_items_an_expired_one_held(last_mug: Product) -> None:
    place_order(shopper(), (last_mug, 1))
    with _later(31):
        order = place_order(shopper(), (last_mug, 1))
    assert order.items.get().quantity == 1
    assert stock(last_mug) == 0


# --- The shopper of an expired order --------------------------------------------------------


def test_the_payment_page_of_an_expired_order_sends_the_shopper_to_the_order(
    last_mug: Product,
) -> None:
    client = shopper()
    order = place_order(client, (last_mug, 1))
    with _later(31):
        response = client.get(reverse("checkout:pay", kwargs={"reference": order.reference}))
        assert response.status_code == 302
        assert response["Location"] == reverse(
            "checkout:order", kwargs={"reference": order.reference}
        )
        page = html(client.get(response["Location"]))
    notice = page.one(id="order-expired").text
    assert "no se pagó en 30 minutos" in notice
    assert (
        page.find("a", href=reverse("checkout:pay", kwargs={"reference": order.reference})) is None
    )
    assert stock(last_mug) == 1


def test_a_payment_attempt_after_the_reservation_is_refused_without_calling_the_provider(
    last_mug: Product, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = refuse_provider_calls(monkeypatch)
    client = shopper()
    order = place_order(client, (last_mug, 1))
    with _later(31):
        response = client.post(
            reverse("checkout:pay_attempt", kwargs={"reference": order.reference}),
            {"card_token": "tok_x", "attempt_id": "a" * 32},
            content_type="application/json",
        )
    assert response.status_code == 409, response.content
    assert "El tiempo para pagar este pedido terminó" in response.json()["message"]
    assert calls == []
    assert Order.objects.get(pk=order.pk).status == OrderStatus.EXPIRED


# --- A payment that comes after the order expired -------------------------------------------

pytest_provider = pytest.mark.django_db(transaction=True)


def _late_challenge(provider: Api, product: Product) -> tuple[Order, Any]:
    """An order whose 3-D Secure challenge is left open until after its reservation is over."""
    client = shopper()
    order = place_order(client, (product, 1))
    pending = open_challenge(provider, order)
    with _later(31):
        assert reservations_expire() == 1
    return order, pending


@pytest_provider
def test_a_late_payment_takes_the_items_back_while_they_are_instock(
    provider: Api, run_queued: Any
) -> None:
    product = ProductFactory(price=Decimal("289.00"), stock=1)
    order, pending = _late_challenge(provider, product)
    assert stock(product) == 1

    pass_challenge(pending)
    payment_refresh(payment=order_payments(order)[-1])
    run_queued()

    order.refresh_from_db()
    assert (order.status, order.fulfilment) == (OrderStatus.PAID, Fulfilment.UNFULFILLED)
    assert stock(product) == 0
    assert order.items.get().quantity_restocked == 0
    assert OrderEventKind.RESERVED in order.events.values_list("kind", flat=True)
    assert order_payments(order)[-1].status == PaymentStatus.APPROVED


@pytest_provider
@pytest.mark.parametrize("capture", ["automatic", "manual"])
def test_a_late_payment_whose_items_were_sold_is_given_back_and_the_shopper_told(
    provider: Api, run_queued: Any, settings: Any, capture: str
) -> None:
    """Given an order that expired with its challenge open and its last item sold since, when
    the challenge is completed, the payment is refunded (automatic capture) or its hold
    cancelled (manual) by a task, the order stays expired, and its page says why."""
    settings.PAYMENTS_CAPTURE_METHOD = capture
    product = ProductFactory(price=Decimal("289.00"), stock=1)
    order, pending = _late_challenge(provider, product)
    place_order(shopper(), (product, 1))  # someone else buys it
    assert stock(product) == 0

    pass_challenge(pending)
    payment_refresh(payment=order_payments(order)[-1])
    order.refresh_from_db()
    assert order.status == OrderStatus.EXPIRED
    run_queued()

    expect_given_back(provider, order, capture, Decimal("289.00"))
    order.refresh_from_db()
    assert order.status == OrderStatus.EXPIRED
    assert stock(product) == 0  # still the other shopper's
    page = html(
        own(Client(SERVER_NAME="localhost"), order).get(
            reverse("checkout:order", kwargs={"reference": order.reference})
        )
    )
    assert "te lo devolvimos completo" in page.one(id="late-payment").text
    order_sync_status(order_id=order.pk)  # and again: nothing moves
    assert Order.objects.get(pk=order.pk).status == OrderStatus.EXPIRED


# --- Limits and concurrency -----------------------------------------------------------------


def test_orders_are_limited_per_session(last_mug: Product, settings: Any) -> None:
    settings.SHOP_ORDERS_PER_SESSION = "2/h"
    vase = ProductFactory(stock=10)
    client = shopper()
    place_order(client, (vase, 1))
    place_order(client, (vase, 1))
    client.post(reverse("checkout:cart_add", kwargs={"slug": vase.slug}), {"quantity": 1})
    response = client.post(reverse("checkout:checkout"), CUSTOMER)
    assert response.status_code == 429
    summary = html(response).one(id="error-summary").text
    assert "Hiciste muchos pedidos en poco tiempo" in summary
    assert Order.objects.count() == 2
    assert stock(vase) == 8
    # Another browser is not held back by this one.
    place_order(shopper(), (vase, 1))


def test_orders_are_limited_per_address(db: None, settings: Any) -> None:
    settings.SHOP_ORDERS_PER_ADDRESS = "3/h"
    vase = ProductFactory(stock=10)
    for _ in range(3):
        place_order(shopper(REMOTE_ADDR="203.0.113.9"), (vase, 1))
    client = shopper(REMOTE_ADDR="203.0.113.9")
    client.post(reverse("checkout:cart_add", kwargs={"slug": vase.slug}), {"quantity": 1})
    assert client.post(reverse("checkout:checkout"), CUSTOMER).status_code == 429
    assert Order.objects.count() == 3
    place_order(shopper(REMOTE_ADDR="203.0.113.10"), (vase, 1))


def test_an_invalid_form_is_not_counted_as_an_order(db: None, settings: Any) -> None:
    settings.SHOP_ORDERS_PER_SESSION = "1/h"
    vase = ProductFactory(stock=10)
    client = shopper()
    client.post(reverse("checkout:cart_add", kwargs={"slug": vase.slug}), {"quantity": 1})
    assert client.post(reverse("checkout:checkout"), {}).status_code == 200
    place_order(client, (vase, 1))


class _Session(dict[str, Any]):
    modified = False


@pytest.mark.django_db(transaction=True)
def test_stock_never_goes_below_zero_under_concurrent_orders() -> None:
    """Eight shoppers order 2 of the last 5 at the same moment (threads, PostgreSQL): two get
    them, the others are told, and the stock ends at 1, never below zero."""
    product = ProductFactory(stock=5)
    start = threading.Barrier(8)
    placed: list[str] = []
    refused: list[str] = []

    def buy() -> None:
        session = _Session()
        cart = Cart(session)  # type: ignore[arg-type]
        cart.add(product, 2)
        start.wait()
        try:
            order = order_create_from_cart(cart=cart, customer=dict(CUSTOMER), language="es")
            placed.append(order.reference)
        except CheckoutError as exc:
            refused.append(exc.message)
        finally:
            connection.close()

    threads = [threading.Thread(target=buy) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(placed) == 2
    assert len(refused) == 6
    assert all("solo queda" in message for message in refused), refused
    assert stock(product) == 1
    assert sum(o.items.get().quantity for o in Order.objects.all()) == 4


@pytest.mark.parametrize("closed", [OrderStatus.CANCELLED, OrderStatus.EXPIRED])
def test_an_order_the_shop_closed_does_not_become_payable_again(
    last_mug: Product, closed: str
) -> None:
    """Given an unpaid order closed by the shop (cancelled by staff, or expired) with a
    declined attempt, its sync, however often it runs, leaves it closed."""
    from checkout.orders.rules import orders_out_of_step

    order = place_order(shopper(), (last_mug, 1))
    PaymentFactory(order=order, status=PaymentStatus.REJECTED)
    Order.objects.filter(pk=order.pk).update(status=closed)
    order_sync_status(order_id=order.pk)
    assert Order.objects.get(pk=order.pk).status == closed
    assert order.pk not in orders_out_of_step()
