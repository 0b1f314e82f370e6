"""The shop window: home page, product pages, the `mxn` price filter, and the demo catalogue and
staff account that seed_demo creates."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from checkout.management.demo_catalogue import DEMO_PRODUCTS
from checkout.models import Product
from checkout.templatetags.shop import mxn
from tests.helpers.html import html
from tests.helpers.staff import sign_in_staff

pytestmark = pytest.mark.django_db


def product_links(response) -> set[str]:
    return {
        a.attrs["href"]
        for card in html(response).find_all("li", cls="card")
        for a in card.find_all("a")
    }


def test_home_page_names_the_shop(client: Client) -> None:
    """The home page answers in Spanish by default with the shop's name."""
    response = client.get("/")
    assert response.status_code == 200
    assert "Tienda Tlali" in response.content.decode()
    assert response["Content-Language"] == "es"


def test_home_refuses_other_methods(client: Client) -> None:
    """A POST to a read-only page is a 405, not an error."""
    assert client.post("/").status_code in (403, 405)


def test_home_lists_active_products_only(client: Client, make_product) -> None:
    """The home page shows every active product and hides inactive ones."""
    shown = make_product("taza", name="Taza")
    other = make_product("olla", name="Olla")
    hidden = make_product("retirado", name="Retirado", active=False)
    response = client.get(reverse("checkout:home"))
    assert response.status_code == 200
    links = product_links(response)
    assert reverse("checkout:product", args=[shown.slug]) in links
    assert reverse("checkout:product", args=[other.slug]) in links
    assert reverse("checkout:product", args=[hidden.slug]) not in links
    assert len(html(response).find_all("li", cls="card")) == 2


def test_home_marks_sold_out_products_with_a_badge(client: Client, make_product) -> None:
    """A product without stock is still listed, with the sold-out badge; others have none."""
    make_product("agotado", name="A agotado", stock=0)
    make_product("disponible", name="B disponible", stock=3)
    cards = html(client.get(reverse("checkout:home"))).find_all("li", cls="card")
    by_slug = {c.one("a").attrs["href"].rstrip("/").rsplit("/", 1)[-1]: c for c in cards}
    assert by_slug["agotado"].find_all("p", cls="out")
    assert "badge" in by_slug["agotado"].one("p", cls="out").classes
    assert not by_slug["disponible"].find_all(cls="badge")


def test_home_formats_prices_in_pesos(client: Client, make_product) -> None:
    """Prices on the home page read $1,250.00 (comma thousands, point decimals)."""
    make_product("rebozo", price="1250.00")
    card = html(client.get(reverse("checkout:home"))).one("li", cls="card")
    assert card.one("p", cls="price").text.startswith("$1,250.00")


def test_product_page_shows_the_product(client: Client, make_product) -> None:
    """An active product's page answers 200 with its price and an add-to-cart form."""
    product = make_product("olla", price="1250.00", stock=4, name="Olla de barro")
    response = client.get(reverse("checkout:product", args=[product.slug]))
    assert response.status_code == 200
    page = html(response)
    assert page.one("h1").text == "Olla de barro"
    assert page.one("p", cls="price").text.startswith("$1,250.00")
    form = page.one("form", cls="add")
    assert form.attrs["action"] == reverse("checkout:cart_add", args=[product.slug])
    assert form.one("input", id="quantity").attrs["max"] == "4"


def test_product_page_of_a_sold_out_product_has_no_form(client: Client, make_product) -> None:
    """A sold-out product shows the badge and no add-to-cart form."""
    product = make_product("jaguar", stock=0)
    page = html(client.get(reverse("checkout:product", args=[product.slug])))
    assert page.find_all("p", cls="out")
    assert not page.find_all("form", cls="add")


def test_product_page_of_an_unknown_slug_is_404(client: Client) -> None:
    """An unknown slug is a 404."""
    assert client.get(reverse("checkout:product", args=["no-existe"])).status_code == 404


def test_product_page_of_an_inactive_product_is_404(client: Client, make_product) -> None:
    """An inactive product's page is a 404."""
    product = make_product("retirado", active=False)
    assert client.get(reverse("checkout:product", args=[product.slug])).status_code == 404


def test_product_page_in_english_uses_the_english_name(make_product) -> None:
    """With English chosen by the browser, the product shows its English name."""
    product = make_product("taza", name="Taza de talavera", name_en="Talavera mug")
    response = Client(HTTP_ACCEPT_LANGUAGE="en").get(
        reverse("checkout:product", args=[product.slug])
    )
    assert html(response).one("h1").text == "Talavera mug"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal("1250"), "$1,250.00"),
        (Decimal("1250.5"), "$1,250.50"),
        (Decimal("0.10"), "$0.10"),
        (Decimal("1234567.89"), "$1,234,567.89"),
        (Decimal("999.999"), "$1,000.00"),
        (1250, "$1,250.00"),
        (0, "$0.00"),
        ("1250.00", "$1,250.00"),
        ("89", "$89.00"),
        (None, ""),
        ("", ""),
    ],
)
def test_mxn_filter(value: object, expected: str) -> None:
    """mxn writes pesos as in Mexico for Decimal, int and str, and nothing for no value."""
    assert mxn(value) == expected


def test_mxn_filter_is_exact_for_decimals() -> None:
    """mxn never goes through float: 0.1 + 0.2 is $0.30, and large amounts keep every cent."""
    assert mxn(Decimal("0.1") + Decimal("0.2")) == "$0.30"
    assert mxn(Decimal("98765432.01")) == "$98,765,432.01"


def test_seed_demo_creates_the_demo_products_once() -> None:
    """seed_demo creates the 8 demo products, and running it again creates no more."""
    call_command("seed_demo")
    call_command("seed_demo")
    assert Product.objects.count() == len(DEMO_PRODUCTS) == 8
    slugs = set(Product.objects.values_list("slug", flat=True))
    assert slugs == {p["slug"] for p in DEMO_PRODUCTS}
    rebozo = Product.objects.get(slug="rebozo-seda")
    assert rebozo.price == Decimal("12500.00")
    assert rebozo.stock == 2


def test_seed_demo_keeps_changes_made_to_the_products() -> None:
    """Running seed_demo again does not overwrite a product staff has changed."""
    call_command("seed_demo")
    Product.objects.filter(slug="molcajete").update(price=Decimal("999.00"), stock=1)
    call_command("seed_demo")
    molcajete = Product.objects.get(slug="molcajete")
    assert (molcajete.price, molcajete.stock) == (Decimal("999.00"), 1)


def test_seed_demo_creates_the_documented_staff_account_once(client: Client) -> None:
    """seed_demo creates admin / tienda-demo-2026, can run twice, and the account logs in."""
    call_command("seed_demo")
    call_command("seed_demo")
    assert get_user_model().objects.filter(username="admin", is_staff=True).count() == 1
    sign_in_staff(client, get_user_model().objects.get(username="admin"), "tienda-demo-2026")
    assert client.get("/admin/").status_code == 200
