"""A flash rush on the shop as production runs it (gunicorn, workers, PostgreSQL, Redis): a
thousand shoppers with the last ten units in their carts press "continue" at once. Ten orders
are made, none oversold, and every other shopper is answered (no 5xx, no silence) that it sold
out. (How fast: bench/sale_day.py; tests judge no clock.)"""

from __future__ import annotations

import re
import threading
from collections import Counter
from functools import partial
from typing import Any

import pytest
import requests

from checkout.models import Order, OrderItem
from tests.factories import ProductFactory
from tests.helpers.processes import Processes
from tests.helpers.shop import CUSTOMER

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

SHOPPERS, UNITS = 1000, 10


@pytest.fixture
def behind_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each shopper from an address of its own (the shop behind its proxy), so that the rush is
    a thousand shoppers, not one address over its order limit."""
    monkeypatch.setenv("SHOP_CLIENT_IP_HEADER", "HTTP_X_FORWARDED_FOR")


class Rusher:
    """A shopper's browser with the product in its cart and the order form open."""

    def __init__(self, shop: str, n: int, slug: str) -> None:
        self.shop, self.http = shop, requests.Session()
        self.http.headers["X-Forwarded-For"] = f"10.9.{n >> 8 & 255}.{n & 255}"
        self.http.get(f"{shop}/productos/{slug}/", timeout=60).raise_for_status()
        added = self.http.post(
            f"{shop}/carrito/agregar/{slug}/",
            {"quantity": 1, "csrfmiddlewaretoken": self.http.cookies["csrftoken"]},
            allow_redirects=False,
            timeout=60,
        )
        assert added.status_code == 302, added.status_code
        self.status, self.location, self.told = 0, "", ""

    def press_continue(self) -> None:
        form = {**CUSTOMER, "csrfmiddlewaretoken": self.http.cookies["csrftoken"]}
        post = partial(self.http.post, f"{self.shop}/checkout/", form, allow_redirects=False,
                       timeout=120)  # fmt: skip
        try:
            try:
                answer = post()
            except requests.ConnectionError:  # a kept-alive connection the server had closed
                answer = post()  # while idle: sent again on a new one, as a browser does
        except requests.RequestException as exc:
            self.status, self.told = -1, repr(exc)
            return
        self.status, self.location = answer.status_code, answer.headers.get("Location", "")
        found = re.search(r'class="[^"]*message[^"]*error[^"]*"[^>]*>\s*([^<]+)<', answer.text)
        self.told = found.group(1).strip() if found else ""


def in_threads(work: Any, items: list[Any]) -> None:
    threads = [threading.Thread(target=work, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.usefixtures("behind_proxy")
def test_a_thousand_shoppers_for_the_last_ten_units(processes: Processes) -> None:
    # Given the last ten units of a product, and a thousand shoppers with it in their carts
    product = ProductFactory(slug="ultimas-piezas", name="Rebozo de seda", stock=UNITS)
    rushers: list[Rusher] = []
    lock = threading.Lock()

    def ready(n: int) -> None:
        rusher = Rusher(processes.url, n, product.slug)
        with lock:
            rushers.append(rusher)

    for start in range(0, SHOPPERS, 100):  # a hundred browsers at a time open their carts
        in_threads(ready, list(range(start, start + 100)))
    assert len(rushers) == SHOPPERS

    # When all of them press "continue" at once
    at_once = threading.Barrier(SHOPPERS)

    def rush(rusher: Rusher) -> None:
        at_once.wait()
        rusher.press_continue()

    in_threads(rush, rushers)

    # Then ten orders were made and the stock is 0, never below: none oversold
    product.refresh_from_db()
    orders = Order.objects.filter(items__product=product).distinct()
    assert (orders.count(), product.stock) == (UNITS, 0)
    assert sum(OrderItem.objects.filter(product=product).values_list("quantity", flat=True)) == 10

    # And every shopper was answered: ten sent on to pay, every other one told in the answer
    # itself (409, the cart's page) that the product sold out
    answers = Counter((r.status, r.location.split("/")[1] if r.location else "") for r in rushers)
    unanswered = Counter(r.told for r in rushers if r.status == -1)
    assert answers == {(302, "pedidos"): UNITS, (409, ""): SHOPPERS - UNITS}, unanswered
    told = Counter(r.told for r in rushers if r.status == 409)
    assert told == {"Rebozo de seda se agotó.": SHOPPERS - UNITS}, told


def test_a_sold_out_cart_is_refused_without_waiting_on_the_stock_row_lock() -> None:
    """While another checkout holds the product's row (it is taking the stock), a cart the stock
    no longer covers is refused from a plain read: it neither takes nor waits for the lock."""
    from django.contrib.sessions.backends.cache import SessionStore
    from django.db import connection, transaction
    from django.utils import translation

    from checkout.cart import Cart
    from checkout.orders.rules import CheckoutError, order_create_from_cart

    product = ProductFactory(slug="agotado", name="Jarro de barro", stock=1)
    cart = Cart(SessionStore())
    cart.add(product, 1)
    Product = type(product)
    Product.objects.filter(pk=product.pk).update(stock=0)  # the last one went meanwhile
    holding, done = threading.Event(), threading.Event()

    def hold_the_row() -> None:
        with transaction.atomic():
            Product.objects.select_for_update().get(pk=product.pk)
            holding.set()
            done.wait(30)
        connection.close()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    try:
        assert holding.wait(30)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '200ms'")  # a wait on the lock would fail
        with pytest.raises(CheckoutError) as refused, translation.override("es"):
            order_create_from_cart(cart=cart, customer=dict(CUSTOMER), language="es")
        assert refused.value.message == "Jarro de barro se agotó."
    finally:
        done.set()
        holder.join()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert not Order.objects.exists()
