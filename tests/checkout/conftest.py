"""Fixtures of the storefront tests: an empty cache, products."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

from checkout.models import Product
from tests.factories import ProductFactory
from tests.support import clear_cache


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Every test starts and ends with an empty cache (the payment methods catalogue)."""
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def make_product(db: None) -> Callable[..., Product]:
    """Create a product; slugs default to a unique value."""

    def make(slug: str | None = None, *, price: str = "289.00", **fields: Any) -> Product:
        return ProductFactory(**({"slug": slug} if slug else {}), price=Decimal(price), **fields)

    return make
