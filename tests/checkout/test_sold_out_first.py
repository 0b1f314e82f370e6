"""A cart the stock no longer covers is refused first (`cart_stock_check`, from the products as
the cart just read them): at the checkout before the order is counted against the shopper's
order limits (checkout/orders/limits.py), and in `order_create_from_cart` before anything is
written.
Without it the stock's conditional UPDATE would still refuse the order, but only after the order
was counted, written and rolled back.

The order limits are django-ratelimit's counters in the cache (Redis when REDIS_URL is set), per
browser session and per client address; they are read here without counting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.contrib.sessions.backends.cache import SessionStore
from django.db import connection
from django.http import HttpRequest
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation
from django_ratelimit.core import get_usage

from checkout.cart import Cart
from checkout.models import Order, OrderItem, Product
from checkout.orders.rules import CheckoutError, order_create_from_cart
from core.sessions import session_identity
from payments.models import Payment
from tests.helpers.shop import CUSTOMER, add_to_cart, error_messages, place_order, shopper

pytestmark = pytest.mark.django_db

SOLD_OUT = "Taza de talavera se agotó."


def _session_or_address(group: str, request: HttpRequest) -> str:
    """What the order limit per session counts by (checkout/orders/limits.py)."""
    return session_identity(request.session) or f"address:{request.META.get('REMOTE_ADDR', '')}"


def orders_counted(request: HttpRequest) -> tuple[int, int]:
    """The browser's order-limit counts (by its session, by its address) as the checkout keeps
    them in the cache, read without counting."""
    by_session = get_usage(
        request,
        group="checkout.orders.session",
        key=_session_or_address,
        rate=settings.SHOP_ORDERS_PER_SESSION,
    )
    by_address = get_usage(
        request, group="checkout.orders.address", key="ip", rate=settings.SHOP_ORDERS_PER_ADDRESS
    )
    assert by_session is not None and by_address is not None
    return by_session["count"], by_address["count"]


def writes(queries: CaptureQueriesContext) -> list[str]:
    """The statements that wrote to the database."""
    return [
        query["sql"]
        for query in queries.captured_queries
        if query["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]


@pytest.fixture
def last_mug(make_product: Callable[..., Product]) -> Product:
    return make_product("taza", name="Taza de talavera", stock=1)


def test_a_sold_out_cart_is_refused_before_it_is_counted_or_written(
    last_mug: Product, settings: Any
) -> None:
    """Given one order an hour allowed per session and per address, and a cart whose last mug
    was sold meanwhile: the checkout answers on the cart's page (409) that it sold out, and
    nothing was counted or written: the order-limit counts are still 0, no statement wrote to
    the database (no order, item, mail or stock taken). Then, the mug back in stock, the same
    browser places its one order of the hour, and that one is counted."""
    settings.SHOP_ORDERS_PER_SESSION = "1/h"
    settings.SHOP_ORDERS_PER_ADDRESS = "1/h"
    browser = shopper()
    add_to_cart(browser, last_mug, 1)
    Product.objects.filter(pk=last_mug.pk).update(stock=0)

    # When the shopper places the order
    with CaptureQueriesContext(connection) as queries:
        response = browser.post(reverse("checkout:checkout"), CUSTOMER)

    # Then they are told it sold out, on the cart's page
    assert response.status_code == 409
    assert error_messages(response) == [SOLD_OUT]
    assert SOLD_OUT in response.content.decode()
    # And nothing was counted against their order limits, nothing written
    assert orders_counted(response.wsgi_request) == (0, 0)
    assert writes(queries) == []
    assert not Order.objects.exists() and not OrderItem.objects.exists()
    assert Product.objects.get(pk=last_mug.pk).stock == 0

    # And their one order of the hour is still theirs to place
    Product.objects.filter(pk=last_mug.pk).update(stock=1)
    order = place_order(browser)
    assert [item.product_id for item in order.items.all()] == [last_mug.pk]
    assert orders_counted(request_of(browser)) == (1, 1)


def request_of(browser: Client) -> HttpRequest:
    """A request of the browser as the checkout sees it (its session, its address)."""
    return browser.get(reverse("checkout:cart")).wsgi_request


def test_order_creation_refuses_a_sold_out_cart_before_writing_anything(
    last_mug: Product,
) -> None:
    """Given a cart whose last mug was sold meanwhile, creating the order from it (as the
    checkout does, and anything else that makes orders from carts) is refused with the words
    the shopper reads, before any statement writes to the database: no order written and
    rolled back, no stock row locked."""
    cart = Cart(SessionStore())
    cart.add(last_mug, 1)
    Product.objects.filter(pk=last_mug.pk).update(stock=0)

    with (
        CaptureQueriesContext(connection) as queries,
        pytest.raises(CheckoutError) as refused,
        translation.override("es"),
    ):
        order_create_from_cart(cart=cart, customer=dict(CUSTOMER), language="es")

    assert refused.value.message == SOLD_OUT
    assert writes(queries) == []
    assert not Order.objects.exists() and not Payment.objects.exists()
