"""End-to-end tests of the shopper checkout: Playwright driving Debian's Chromium against the
shop on pytest-django's live server, which talks to a live provider sandbox."""

from __future__ import annotations

import os
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command

from checkout.models import Product
from tests.e2e.helpers import Shop, open_page
from tests.factories import ProductFactory
from tests.helpers.cache import clear_cache
from tests.helpers.provider import Api
from tests.helpers.servers import StaticSite
from tests.helpers.shop import fill_catalogue

# Playwright's sync API keeps an asyncio event loop in this thread; Django would otherwise
# refuse database access from the test's own (synchronous) code.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


@pytest.fixture(scope="package")
def e2e_browser(playwright_browser: Any) -> Any:
    """The session's Chromium, with Playwright's expectations given this folder's timeout."""
    from playwright.sync_api import expect

    expect.set_options(timeout=15_000)
    return playwright_browser


@pytest.fixture
def shop(live_server: Any, provider: Api, settings: Any, worker: Any) -> Shop:
    """The shop on the live server, paying through a freshly reset sandbox, with the demo
    catalogue, an empty cache but for the stored payment methods catalogue, and a Celery worker
    (orders follow their payments by a task, as in production)."""
    settings.SHOP_BASE_URL = live_server.url
    clear_cache()
    fill_catalogue()
    call_command("seed_demo", verbosity=0)
    return Shop(url=live_server.url, api=provider)


@pytest.fixture
def page(e2e_browser: Any) -> Iterator[Any]:
    """A desktop page of its own browser context."""
    page = open_page(e2e_browser)
    yield page
    page.context.close()


@pytest.fixture(scope="package")
def foreign_site() -> Iterator[StaticSite]:
    """A third origin whose page, framed into the shop's, posts a forged 3-D Secure message
    (`?id=` names the payment) to the top window with target "*"."""
    forge = (
        "<!doctype html><title>forged</title><p>forged</p><script>"
        "var id = new URLSearchParams(location.search).get('id');"
        "window.top.postMessage({paymentId: id}, '*');"
        "</script>"
    )
    site = StaticSite({"/forge": forge})
    yield site
    site.stop()


# --- Staff in the admin ------------------------------------------------------------------


@pytest.fixture
def staff_shop(shop: Shop, settings: Any) -> Shop:
    settings.PAYMENTS_CAPTURE_METHOD = "manual"
    call_command("seed_demo", verbosity=0)
    return shop


@pytest.fixture
def products(staff_shop: Shop) -> dict[str, Product]:
    return {
        "blusa": ProductFactory(
            slug="blusa-e2e", name="Blusa bordada", price=Decimal("1290.00"), stock=5
        ),
        "taza": ProductFactory(
            slug="taza-e2e", name="Taza de talavera", price=Decimal("289.00"), stock=10
        ),
    }
