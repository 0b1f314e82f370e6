"""The staff's buttons in a real browser: Chromium logs into the admin of the live shop and clicks
every action of the order page (ship in part, cancel, refund, refresh), the payment page (refresh,
close as not created) and the orders list (ship several), as admin; as consulta it finds no action
and a readable refusal at every action address. What happened is checked in the database, at the
provider and on screen."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from checkout.models import Fulfilment, Order, Product
from payments.models import Payment
from payments.statuses import PaymentStatus
from tests.e2e.helpers import Shop, full_page_screenshot, log_in, success
from tests.factories import PaymentFactory
from tests.helpers.paths import ROOT
from tests.helpers.shop import paid_order, place_order, remote_of, shopper

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["es-MX", "en-US"], ids=["es", "en"])
def admin_page(e2e_browser: Any, staff_shop: Shop, request: pytest.FixtureRequest) -> Any:
    """The admin, logged in, in Spanish and in English."""
    page = log_in(e2e_browser, staff_shop, "admin", "tienda-demo-2026", locale=request.param)
    yield page
    page.context.close()


@pytest.fixture
def consulta_page(e2e_browser: Any, staff_shop: Shop) -> Any:
    page = log_in(e2e_browser, staff_shop, "consulta", "consulta-demo-2026")
    yield page
    page.context.close()


def open_order(page: Any, shop: Shop, order: Order) -> None:
    page.goto(f"{shop.url}{reverse('admin:checkout_order_change', args=[order.pk])}")
    expect(page.locator("#order-payments")).to_be_visible()


def test_a_partial_shipment_from_the_order_page(
    admin_page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    """Ship the blusa of a blusa + 2 tazas authorization: $1,290.00 charged, $578.00 released,
    said on screen; the tazas are back in stock."""
    order = paid_order(staff_shop.api, (products["blusa"], 1), (products["taza"], 2))
    taza = order.items.get(product=products["taza"])
    open_order(admin_page, staff_shop, order)

    admin_page.locator("#action-ship").click()
    admin_page.locator(f"#id_item-{taza.pk}").fill("0")
    admin_page.locator("#confirm").click()

    expect(success(admin_page)).to_contain_text("$1,290.00")
    expect(success(admin_page)).to_contain_text("$578.00")
    order.refresh_from_db()
    assert order.fulfilment == Fulfilment.PARTIALLY_SHIPPED
    assert remote_of(staff_shop.api, order)["captured_amount"] == Decimal("1290.00")
    products["taza"].refresh_from_db()
    assert products["taza"].stock == 10
    expect(admin_page.locator("#order-ledger")).to_contain_text("admin")


def test_cancel_then_refresh_from_the_order_page(
    admin_page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    order = paid_order(staff_shop.api, (products["blusa"], 2))
    open_order(admin_page, staff_shop, order)

    admin_page.locator("#action-cancel").click()
    admin_page.locator("#confirm").click()

    expect(success(admin_page)).to_contain_text(order.reference)
    assert remote_of(staff_shop.api, order)["status"] == "cancelled"
    products["blusa"].refresh_from_db()
    assert products["blusa"].stock == 5
    admin_page.locator("#action-refresh").click()
    admin_page.locator("#confirm").click()
    expect(success(admin_page)).to_contain_text(order.reference)
    expect(admin_page.locator("#action-cancel")).to_have_count(0)


def test_a_partial_refund_from_the_order_page(
    admin_page: Any, staff_shop: Shop, products: dict[str, Product], settings: Any
) -> None:
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    order = paid_order(staff_shop.api, (products["blusa"], 1), (products["taza"], 2))
    taza = order.items.get(product=products["taza"])
    open_order(admin_page, staff_shop, order)

    admin_page.locator("#action-refund").click()
    expect(admin_page.locator("#id_amount")).to_have_value("1868.00")
    admin_page.locator("#id_amount").fill("289.00")
    admin_page.locator("#id_reason").fill("Taza rota")
    admin_page.locator(f"#id_item-{taza.pk}").fill("1")
    admin_page.locator("#confirm").click()

    expect(success(admin_page)).to_contain_text("$289.00")
    assert remote_of(staff_shop.api, order)["amount_refunded"] == Decimal("289.00")
    products["taza"].refresh_from_db()
    assert products["taza"].stock == 9


def test_shipping_several_orders_from_the_list(
    admin_page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    first = paid_order(staff_shop.api, (products["blusa"], 1))
    second = paid_order(staff_shop.api, (products["taza"], 1))
    admin_page.goto(f"{staff_shop.url}{reverse('admin:checkout_order_changelist')}")

    for order in (first, second):
        admin_page.locator(f'input.action-select[value="{order.pk}"]').check()
    admin_page.locator('select[name="action"]').select_option("ship_selected")
    admin_page.locator('button[name="index"]').click()
    expect(admin_page.locator("#confirm")).to_be_visible()
    assert remote_of(staff_shop.api, first)["status"] == "authorized"  # asked first
    admin_page.locator("#confirm").click()

    expect(success(admin_page)).to_have_count(2)
    for order in (first, second):
        order.refresh_from_db()
        assert order.fulfilment == Fulfilment.SHIPPED
        assert remote_of(staff_shop.api, order)["status"] == "approved"


def test_refresh_and_close_on_the_payment_page(
    admin_page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    """The payment page's own buttons work (they once posted to the change form and got 403)."""
    order = paid_order(staff_shop.api, (products["blusa"], 1))
    payment = Payment.objects.get(external_reference=order.reference)
    staff_shop.api.patch(f"/payments/{payment.provider_id}", {"status": "cancelled"})
    admin_page.goto(
        f"{staff_shop.url}{reverse('admin:payments_payment_change', args=[payment.pk])}"
    )

    admin_page.locator("#action-refresh").click()
    admin_page.locator("input[type=submit]").click()

    expect(success(admin_page)).to_be_visible()
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.CANCELLED

    lost = PaymentFactory(
        order=place_order(shopper(), (products["taza"], 1)),
        status=PaymentStatus.UNKNOWN,
        provider_id=None,
        created_at=timezone.now() - timedelta(hours=2),
    )
    admin_page.goto(f"{staff_shop.url}{reverse('admin:payments_payment_change', args=[lost.pk])}")
    admin_page.locator("#action-close").click()
    expect(admin_page.locator("#content-main")).to_contain_text(re.compile("provider|proveedor"))
    admin_page.locator("input[type=submit]").click()

    expect(success(admin_page)).to_be_visible()
    lost.refresh_from_db()
    assert lost.status == PaymentStatus.FAILED


def test_consulta_finds_no_action_and_is_refused_readably(
    consulta_page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    order = paid_order(staff_shop.api, (products["blusa"], 1))
    open_order(consulta_page, staff_shop, order)

    expect(consulta_page.locator("[id^=action-]")).to_have_count(0)
    for action in ("ship", "cancel", "refund"):
        response = consulta_page.goto(
            f"{staff_shop.url}{reverse(f'admin:checkout_order_{action}', args=[order.pk])}"
        )
        assert response.status == 403
        expect(consulta_page.locator("#forbidden-reason")).not_to_be_empty()
    assert remote_of(staff_shop.api, order)["status"] == "authorized"


@pytest.mark.parametrize("locale", ["es-MX", "en-US"])
def test_screenshot_of_the_order_page(
    e2e_browser: Any, staff_shop: Shop, products: dict[str, Product], tmp_path: Path, locale: str
) -> None:
    """The order page after a partial shipment, as staff see it, in each language."""
    update = os.environ.get("UPDATE_SCREENSHOTS") == "1"
    folder = ROOT / "docs" / "screenshots" if update else tmp_path
    order = paid_order(staff_shop.api, (products["blusa"], 1), (products["taza"], 2))
    page = log_in(e2e_browser, staff_shop, "admin", "tienda-demo-2026", locale=locale)
    open_order(page, staff_shop, order)
    page.locator("#action-ship").click()
    page.locator(f"#id_item-{order.items.get(product=products['taza']).pk}").fill("0")
    page.locator("#confirm").click()
    expect(success(page)).to_be_visible()

    path = folder / f"admin-order-{locale[:2]}.png"
    full_page_screenshot(page, path)

    assert path.stat().st_size > 10_000
    assert re.search(r"\$1,290\.00", page.locator("#order-payments").inner_text())
    page.context.close()
