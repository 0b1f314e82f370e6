"""Every page of the storefront describes itself to search engines and link previews
(`<meta name="description">`) in the shopper's language; a product's page with the product's own
description. (The error pages' descriptions: tests/core/test_error_pages.py.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkout.models import Order, Product
from tests.factories import OrderFactory
from tests.helpers.html import html
from tests.helpers.shop import add_to_cart, own, shopper

pytestmark = pytest.mark.django_db

# What each page says of itself, in Spanish and in English ({reference}: the order's).
DESCRIPTIONS = {
    "home": (
        "Artesanías mexicanas hechas a mano: talavera, barro negro, textiles y café de artesanos "
        "de todo México, con pago seguro con tarjeta.",
        "Mexican crafts made by hand: talavera, barro negro, textiles and coffee from artisans "
        "across Mexico, paid securely by card.",
    ),
    "cart": (
        "Tu carrito en Tienda Tlali: revisa las artesanías que elegiste, cambia sus cantidades "
        "y continúa al pago.",
        "Your cart at Tienda Tlali: check the crafts you chose, change their quantities and go "
        "on to pay.",
    ),
    "checkout": (
        "Tus datos para enviar tu pedido: nombre, correo, teléfono y una dirección de entrega "
        "en México.",
        "Your details to ship your order: name, email, phone and a delivery address in Mexico.",
    ),
    "pay": (
        "Paga el pedido {reference} con tarjeta: escribes el número de tu tarjeta en el "
        "formulario de nuestro proveedor de pagos, y nunca pasa por este sitio.",
        "Pay order {reference} by card: you type your card number into our payment provider's "
        "form, and it never touches this site.",
    ),
    "order": (
        "Pedido {reference}: cómo va, sus artículos y su pago.",
        "Order {reference}: where it stands, its items and its payment.",
    ),
    "my_orders": (
        "Recibe por correo los enlaces de tus pedidos: escribe el correo que diste al hacer tu "
        "pedido.",
        "Get the links to your orders by mail: write the email address you gave when you ordered.",
    ),
}
LANGUAGES = ["es", "en"]


def described(response: Any) -> str:
    """The page's one description."""
    assert response.status_code == 200, response.status_code
    return html(response).one("meta", name="description").attrs["content"]


def browser_in(language: str) -> Client:
    browser = shopper()
    browser.cookies["django_language"] = language
    return browser


@pytest.fixture
def taza(make_product: Callable[..., Product]) -> Product:
    return make_product(
        "taza-talavera",
        name="Taza de talavera",
        name_en="Talavera mug",
        description="Taza de talavera poblana pintada a mano.",
        description_en="Hand-painted Talavera mug from Puebla.",
        stock=10,
    )


@pytest.fixture
def order(taza: Product) -> Order:
    return OrderFactory(lines=[(taza, 1)])


def page(name: str, browser: Client, taza: Product, order: Order) -> Any:
    """Open the storefront page `name` as a shopper with what it needs: a cart for the cart and
    the details, an order of theirs for the payment page and the order's page."""
    if name in ("cart", "checkout"):
        add_to_cart(browser, taza)
    if name in ("pay", "order"):
        own(browser, order)
    args = [order.reference] if name in ("pay", "order") else []
    return browser.get(reverse(f"checkout:{name}", args=args))


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", list(DESCRIPTIONS))
def test_each_storefront_page_describes_itself_in_the_shoppers_language(
    name: str, language: str, taza: Product, order: Order
) -> None:
    """Given a shopper in Spanish (the default) or English, then the home page, the cart, the
    details form, the payment page, the order's page and "Mis pedidos" each carry their own
    description, in that language."""
    response = page(name, browser_in(language), taza, order)

    expected = DESCRIPTIONS[name][LANGUAGES.index(language)]
    assert described(response) == expected.format(reference=order.reference)


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("es", "Taza de talavera poblana pintada a mano."),
        ("en", "Hand-painted Talavera mug from Puebla."),
    ],
)
def test_a_products_page_is_described_by_the_products_own_description(
    taza: Product, language: str, expected: str
) -> None:
    """A product's page carries the product's description in the shopper's language."""
    response = browser_in(language).get(reverse("checkout:product", args=[taza.slug]))

    assert described(response) == expected


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("es", "Olla de barro: artesanía mexicana hecha a mano, en Tienda Tlali."),
        ("en", "Clay pot: a Mexican craft made by hand, at Tienda Tlali."),
    ],
)
def test_a_product_without_a_description_is_described_by_its_name(
    make_product: Callable[..., Product], language: str, expected: str
) -> None:
    """A product without a description of its own is described by its name, in the shopper's
    language."""
    olla = make_product("olla", name="Olla de barro", name_en="Clay pot", description="")

    response = browser_in(language).get(reverse("checkout:product", args=[olla.slug]))

    assert described(response) == expected


def test_a_long_product_description_is_cut_short(make_product: Callable[..., Product]) -> None:
    """A product's long description is cut to 160 characters for its page's description (what
    search engines show), its page still showing it whole."""
    long = "Rebozo de seda tejido en telar de cintura por artesanas de Santa María del Río. " * 5
    rebozo = make_product("rebozo", description=long.strip())

    response = shopper().get(reverse("checkout:product", args=[rebozo.slug]))

    summary = described(response)
    assert len(summary) == 160 and summary.endswith("…")
    assert long.strip()[:150] in summary
    assert long.strip() in response.content.decode()
