"""The factura and the books in a real browser: a buyer asks for a factura on their paid
order's link (an invalid RFC, a use the régimen does not allow, then valid; and a past order
outside the window), staff register the PAC's XML in the admin (one whose total and one whose
RFC do not match, then the matching one), the buyer sees and downloads it and gets it by mail,
and the accountant exports a month whose file's rows and totals match the database. Every page
passes axe with no serious or critical finding. What happened is checked in the database."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core import mail
from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from books.links import factura_urls
from books.models import FacturaRequest, FacturaState
from checkout.models import Order, OrderStatus, Product
from payments.models import Payment
from tests.books.helpers import BUYER, UUID, cfdi
from tests.e2e.helpers import Shop, Shopper, log_in, open_page, success, violations
from tests.factories import ProductFactory
from tests.helpers.shop import paid_order
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def blusa(shop: Shop) -> Product:
    return ProductFactory(slug="blusa-factura", name="Blusa bordada", price=Decimal("1290.00"))


def clean(page: Any, where: str) -> None:
    found = violations(page)
    assert not found, f"{where}: " + "; ".join(
        f"{v['id']} ({v['impact']}) {v['targets']}" for v in found
    )


def fill_factura(page: Any, **changes: str) -> None:
    data = {**BUYER, **changes}
    page.locator("#id_rfc").fill(data["rfc"])
    page.locator("#id_name").fill(data["name"])
    page.locator("#id_regimen").select_option(data["regimen"])
    page.locator("#id_use").select_option(data["use"])
    page.locator("#id_postal_code").fill(data["postal_code"])
    page.locator("#id_email").fill(data["email"])
    page.locator("#factura-submit").click()


def test_a_buyer_asks_for_a_factura_on_the_paid_order(
    page: Any, shop: Shop, blusa: Product
) -> None:
    order = paid_order(shop.api, (blusa, 1))
    assert order.status == OrderStatus.PAID
    urls = factura_urls(order)
    page.goto(shop.url + urls["order"])
    clean(page, "order page")
    page.locator("#factura-ask").click()
    expect(page.locator("#id_rfc")).to_be_visible()
    clean(page, "factura form")

    fill_factura(page, rfc="XOJI740919U4")  # 12 characters, not a company's pattern
    expect(page.locator("#error-summary")).to_contain_text("RFC")
    clean(page, "factura form with errors")
    assert not FacturaRequest.objects.exists()

    fill_factura(page, regimen="626", use="D01")
    expect(page.locator("#id_use_error")).to_contain_text("no permite el uso D01")
    assert not FacturaRequest.objects.exists()

    fill_factura(page)
    expect(page.locator("#factura-requested")).to_be_visible()
    factura = FacturaRequest.objects.get(order=order)
    assert (factura.rfc, factura.regimen, factura.use, factura.postal_code) == (
        "XOJI740919U48", "612", "G03", "88965"
    )  # fmt: skip

    page.locator("#factura-correct").click()
    page.locator("#id_postal_code").fill("06600")
    page.locator("#factura-submit").click()
    expect(page.locator("#factura-requested")).to_be_visible()
    assert FacturaRequest.objects.get(order=order).postal_code == "06600"


def test_outside_the_window_the_buyer_is_told_why(
    page: Any, shop: Shop, blusa: Product, settings: Any
) -> None:
    settings.BOOKS_FACTURA_DAYS_AFTER_MONTH = 5
    order = paid_order(shop.api, (blusa, 1))
    Order.objects.filter(pk=order.pk).update(created_at=timezone.now() - timedelta(days=70))
    urls = factura_urls(order)
    page.goto(shop.url + urls["order"])
    expect(page.locator("#factura-refused")).to_contain_text("terminó el")
    expect(page.locator("#factura-ask")).to_have_count(0)
    page.goto(shop.url + urls["form"])
    expect(page.locator("#factura-refusal")).to_contain_text("terminó el")
    clean(page, "factura form outside the window")
    assert not FacturaRequest.objects.exists()


def register(page: Any, xml: bytes) -> None:
    page.locator("#id_uuid").fill(UUID)
    page.locator("#id_xml").set_input_files(
        files=[{"name": "cfdi.xml", "mimeType": "application/xml", "buffer": xml}]
    )
    page.locator("#register-submit").click()


def test_staff_register_the_xml_and_the_buyer_gets_it(
    e2e_browser: Any, page: Any, staff_shop: Shop, blusa: Product, tmp_path: Path
) -> None:
    staff_shop_settings_automatic()
    order = paid_order(staff_shop.api, (blusa, 1))
    charged = Payment.objects.get(external_reference=order.reference).captured_amount
    FacturaRequest.objects.create(order=order, **BUYER)
    admin = log_in(e2e_browser, staff_shop, "admin", "tienda-demo-2026")
    admin.goto(staff_shop.url + reverse("admin:books_facturatoissue_changelist"))
    expect(admin.locator("#result_list")).to_contain_text(order.reference)
    expect(admin.locator("#result_list")).to_contain_text("04 Tarjeta de crédito")
    clean(admin, "Facturas por emitir")
    admin.locator(".field-register a").first.click()
    clean(admin, "register form")

    register(admin, cfdi(f"{charged + 1:.2f}"))
    expect(admin.locator("#register-errors")).to_contain_text("total")
    register(admin, cfdi(f"{charged:.2f}", rfc="EKU9003173C9"))
    expect(admin.locator("#register-errors")).to_contain_text("EKU9003173C9")
    assert FacturaRequest.objects.get(order=order).state == FacturaState.REQUESTED

    register(admin, cfdi(f"{charged:.2f}"))
    expect(success(admin)).to_contain_text(UUID)
    assert FacturaRequest.objects.get(order=order).state == FacturaState.ISSUED
    admin.context.close()

    wait_until(lambda: FacturaRequest.objects.get(order=order).mailed_at is not None, 60)
    [sent] = [m for m in mail.outbox if order.reference in m.subject and m.attachments]
    assert {name for name, _c, _t in sent.attachments} == {f"{UUID}.pdf", f"{UUID}.xml"}

    page.goto(staff_shop.url + factura_urls(order)["order"])
    expect(page.locator("#factura-issued")).to_contain_text(UUID)
    clean(page, "order page with its factura")
    with page.expect_download() as download:
        page.locator("#factura-xml").click()
    assert Path(download.value.path()).read_bytes() == cfdi(f"{charged:.2f}")
    with page.expect_download() as download:
        page.locator("#factura-pdf").click()
    assert Path(download.value.path()).read_bytes().startswith(b"%PDF-")


def staff_shop_settings_automatic() -> None:
    from django.conf import settings

    settings.PAYMENTS_CAPTURE_METHOD = "automatic"


def test_the_accountant_exports_a_month(e2e_browser: Any, shop: Shop, blusa: Product) -> None:
    orders = [paid_order(shop.api, (blusa, 1)) for _ in range(3)]
    accountant = get_user_model().objects.create_user(
        "contadora", password="contadora-2026-libros", is_staff=True
    )
    accountant.user_permissions.add(Permission.objects.get(codename="export_books"))
    page = log_in(e2e_browser, shop, "contadora", "contadora-2026-libros")
    today = timezone.localdate()
    page.goto(shop.url + reverse("admin:books_booksexport_add"))
    clean(page, "export form")
    page.locator("#id_kind").select_option("orders")
    page.locator("#id_start").fill(today.replace(day=1).isoformat())
    page.locator("#id_end").fill(today.isoformat())
    page.locator("#id_format").select_option("csv")
    page.locator("#export-submit").click()
    expect(page.locator(".export-download")).to_be_visible(timeout=60_000)
    clean(page, "exports list")
    with page.expect_download() as download:
        page.locator(".export-download").first.click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text("utf-8-sig"))))
    page.context.close()

    references = {o.reference for o in orders}
    assert {row["pedido"] for row in rows} == references
    charged = Payment.objects.filter(external_reference__in=references).aggregate(
        total=Sum("captured_amount")
    )["total"]
    assert sum(Decimal(row["cobrado"]) for row in rows) == charged
    assert sum(Decimal(row["total"]) for row in rows) == Decimal("3870.00")


def test_the_checkout_box_in_english(e2e_browser: Any, shop: Shop) -> None:
    """In English, the checkout's optional box: a use its régimen does not allow is said next
    to the box and the order is not placed; corrected, the order is placed with its request."""
    page = open_page(e2e_browser, locale="en-US")
    shopper = Shopper(page, shop)
    shopper.open_home()
    shopper.open_product()
    shopper.add_to_cart()
    shopper.go_to_checkout()
    clean(page, "checkout with its factura box")
    shopper.fill_details()
    page.locator("#id_factura-wanted").check()
    for name in ("rfc", "name", "postal_code", "email"):
        page.locator(f"#id_factura-{name}").fill(BUYER[name])
    page.locator("#id_factura-regimen").select_option("626")
    page.locator("#id_factura-use").select_option("D01")
    page.locator("form.details button.primary").click()
    expect(page.locator("#id_factura-use_error")).to_contain_text("SAT does not allow the use D01")
    expect(page.locator("#factura-box-errors")).to_be_visible()
    clean(page, "checkout with the box's errors")
    assert not Order.objects.exists()

    page.locator("#id_factura-regimen").select_option("612")
    reference = shopper.submit_details()
    factura = FacturaRequest.objects.get(order__reference=reference)
    assert (factura.rfc, factura.regimen, factura.use) == ("XOJI740919U48", "612", "D01")
    page.context.close()
