"""Fixtures of core's tests: the shop's WSGI application, on the live sandbox, and a
buyer's session, for the fuzz tests of the JSON endpoints (tests/core/fuzzing.py)."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
import requests
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.urls import reverse

from checkout.models import Product
from payments.provider.client import get_client
from tests.core.fuzzing import TOKEN, WEBHOOK_LIMIT, Buyer, Shop
from tests.factories import ProductFactory
from tests.helpers.cache import clear_cache
from tests.helpers.html import html
from tests.helpers.provider import Api
from tests.helpers.servers import free_port
from tests.helpers.shop import add_to_cart, cart_of, fill_catalogue, place_order
from tests.helpers.shop import shopper as new_shopper


@pytest.fixture
def shop(db: None) -> Iterator[Shop]:
    """The shop's WSGI application; exceptions are recorded as they happen, with tracebacks."""
    shop = Shop(WSGIHandler())

    def record(sender: Any, request: Any = None, **kwargs: Any) -> None:
        path = getattr(request, "path", "?")
        shop.errors.append(f"{getattr(request, 'method', '?')} {path}\n{traceback.format_exc()}")

    signals.got_request_exception.connect(record, weak=False)
    yield shop
    signals.got_request_exception.disconnect(record)


@pytest.fixture
def provider_calls(provider: Api, settings: Any) -> Iterator[list[str]]:
    """The shop on the live sandbox, with limits that fuzzing cannot reach; every answer the
    shop's provider client receives is recorded ("METHOD path")."""
    settings.PAYMENTS_READ_TIMEOUT = 3
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    settings.WEBHOOKS_MAX_BODY_BYTES = WEBHOOK_LIMIT
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"  # webhooks go nowhere
    settings.SHOP_PAY_ATTEMPTS_PER_SESSION = "100000/m"
    settings.SHOP_PAY_ATTEMPTS_PER_ADDRESS = "100000/m"
    settings.SHOP_STATUS_CHECKS_PER_SESSION = "100000/m"
    clear_cache()
    fill_catalogue()  # as the refresh task does; it stamps the provider check too
    calls: list[str] = []

    def count(response: requests.Response, *args: Any, **kwargs: Any) -> None:
        calls.append(f"{response.request.method} {response.request.path_url}")

    client = get_client()
    client.session.hooks["response"].append(count)
    yield calls
    client.session.hooks["response"].remove(count)
    clear_cache()


@pytest.fixture
def product(db: None) -> Product:
    return ProductFactory(
        slug="taza-fuzz",
        name="Taza de talavera",
        price=Decimal("289.00"),
        stock=50,
        image="img/products/taza-talavera.svg",
    )


@pytest.fixture
def buyer(provider_calls: list[str], product: Product) -> Buyer:
    client = new_shopper()
    order = place_order(client, (product, 2))
    assert add_to_cart(client, product, 1).status_code == 302
    page = client.get(reverse("checkout:pay", args=[order.reference]))
    csrf = html(page).one("section", id="payment").attrs["data-csrf"]
    assert cart_of(client) == {str(product.pk): 1}
    return Buyer(client, order, csrf)
