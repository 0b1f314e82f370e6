"""Fixtures of the storefront tests: an empty cache, products, a shopper's browser, the shop on
the live sandbox."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from checkout.models import Product
from tests.factories import ProductFactory
from tests.helpers.provider import Api
from tests.helpers.servers import free_port
from tests.helpers.shop import shopper


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_cache: None) -> None:
    """Every test starts and ends with an empty cache (the payment methods catalogue)."""


@pytest.fixture
def make_product(db: None) -> Callable[..., Product]:
    """Create a product; slugs default to a unique value."""

    def make(slug: str | None = None, *, price: str = "289.00", **fields: Any) -> Product:
        return ProductFactory(**({"slug": slug} if slug else {}), price=Decimal(price), **fields)

    return make


@pytest.fixture
def blusa(make_product: Callable[..., Product]) -> Product:
    return make_product("blusa", price="1290.00", stock=5, name="Blusa bordada")


@pytest.fixture
def taza(make_product: Callable[..., Product]) -> Product:
    return make_product("taza", price="289.00", stock=10, name="Taza de talavera")


@pytest.fixture
def browser() -> Client:
    """A shopper's browser of its own."""
    return shopper()


@pytest.fixture
def shop(provider: Api, settings: Any) -> Api:
    """The shop on the live sandbox, holding payments for a manual capture; its own address is
    a closed port, so webhooks go nowhere."""
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.PAYMENTS_CAPTURE_METHOD = "manual"
    return provider
