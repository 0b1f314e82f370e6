"""The buyer's factura pages under the order's signed link, the checkout's optional box, the
order page's section, and the files: only with the link's signature, never from a public
address; a fixed number of queries."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from books.links import factura_urls
from books.models import FacturaRequest
from books.rules import factura_register
from checkout.models import Product
from tests.books.helpers import BUYER, UUID, cfdi, paid_order, requested
from tests.factories import ProductFactory
from tests.helpers.shop import CUSTOMER, add_to_cart, shopper

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


def english() -> Client:
    return shopper(HTTP_ACCEPT_LANGUAGE="en")


def test_a_buyer_asks_for_a_factura_on_the_orders_link() -> None:
    order = paid_order()
    urls = factura_urls(order)
    browser = english()
    page = browser.get(urls["order"])
    assert urls["form"] in page.content.decode()  # "Request an invoice" on the order's page

    answer = browser.post(urls["form"], {**BUYER, "rfc": BUYER["rfc"].lower()})

    assert answer.status_code == 302 and answer["Location"] == urls["order"] + "#factura"
    factura = FacturaRequest.objects.get(order=order)
    assert (factura.rfc, factura.regimen, factura.use) == ("XOJI740919U48", "612", "G03")
    assert "You asked for an invoice" in browser.get(urls["order"]).content.decode()


def test_invalid_data_is_told_and_nothing_is_kept() -> None:
    order = paid_order()
    answer = english().post(factura_urls(order)["form"], {**BUYER, "regimen": "626", "use": "D01"})
    assert answer.status_code == 400
    assert "SAT does not allow the use D01" in answer.content.decode()
    assert not FacturaRequest.objects.exists()


def test_a_wrong_signature_finds_nothing() -> None:
    order = paid_order()
    url = reverse("books:factura", kwargs={"reference": order.reference, "token": "x" * 27})
    assert english().post(url, BUYER).status_code == 404
    assert not FacturaRequest.objects.exists()


def test_an_unpaid_order_is_refused_clearly() -> None:
    order = paid_order(status="awaiting_payment")
    answer = english().post(factura_urls(order)["form"], BUYER)
    assert answer.status_code == 409
    assert "once your order is paid" in answer.content.decode()
    assert not FacturaRequest.objects.exists()


def test_the_issued_files_only_with_the_link() -> None:
    order = paid_order()
    factura = requested(order)
    urls = factura_urls(order)
    assert english().get(urls["xml"]).status_code == 404  # not issued yet
    factura_register(factura_id=factura.pk, uuid=UUID, xml=cfdi(), pdf=b"%PDF-1.7 test", actor=None)

    xml = english().get(urls["xml"])
    assert xml.status_code == 200 and xml.content == cfdi()
    assert {"private", "no-store"} <= set(xml["Cache-Control"].replace(" ", "").split(","))
    assert english().get(urls["pdf"]).content == b"%PDF-1.7 test"
    bad = urls["xml"].replace(urls["xml"].split("/")[3], "y" * 27)
    assert english().get(bad).status_code == 404
    page = english().get(urls["order"]).content.decode()
    assert UUID in page and urls["pdf"] in page


def test_the_order_page_reads_the_factura_in_one_query_whatever_its_history() -> None:
    """The section adds one query to the order's page, with or without a factura."""
    spent = []
    for with_factura in (False, True):
        order = paid_order()
        if with_factura:
            requested(order)
        browser = english()
        browser.get(factura_urls(order)["order"])
        with CaptureQueriesContext(connection) as queries:
            assert browser.get(factura_urls(order)["order"]).status_code == 200
        spent.append(len(queries))
    assert spent[0] == spent[1]
    assert spent[0] <= 9, spent


def test_the_checkout_box_keeps_the_request_with_the_order() -> None:
    product: Product = ProductFactory(stock=3)
    browser = english()
    add_to_cart(browser, product, 1)
    boxed = {f"factura-{name}": value for name, value in BUYER.items()}

    refused = browser.post(
        reverse("checkout:checkout"), {**CUSTOMER, **boxed, "factura-wanted": "on",
                                       "factura-rfc": "XOJI740919U4"}
    )  # fmt: skip
    assert refused.status_code == 200 and "valid RFC" in refused.content.decode()
    assert not FacturaRequest.objects.exists()

    placed = browser.post(
        reverse("checkout:checkout"), {**CUSTOMER, **boxed, "factura-wanted": "on"}
    )
    assert placed.status_code == 302
    factura = FacturaRequest.objects.get()
    assert (factura.rfc, factura.order.email) == ("XOJI740919U48", CUSTOMER["email"])


def test_the_checkout_box_left_empty_asks_nothing() -> None:
    product: Product = ProductFactory(stock=3)
    browser = english()
    add_to_cart(browser, product, 1)
    page = browser.get(reverse("checkout:checkout")).content.decode()
    assert 'name="factura-rfc"' in page
    assert browser.post(reverse("checkout:checkout"), CUSTOMER).status_code == 302
    assert not FacturaRequest.objects.exists()


@pytest.mark.parametrize("language", ["es", "en"])
def test_the_form_speaks_the_buyers_language(language: str, settings: Any) -> None:
    order = paid_order()
    page = shopper(HTTP_ACCEPT_LANGUAGE=language).get(factura_urls(order)["form"])
    text = page.content.decode()
    if language == "es":
        assert "Escribe tus datos" in text and "Régimen fiscal" in text
    else:
        assert "Write your details" in text and "Tax regime" in text
