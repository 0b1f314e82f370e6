"""The storefront's forms speak to shoppers as *tú* where they keep Django's own messages (an
email address, a choice, a length, a required or null-character field): Django's Spanish
catalogue says *usted* ("Introduzca...", "Escoja...", "Asegúrese..."), the shop's catalogue
gives them the shop's way. In English they stay Django's words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkout.models import Product
from tests.helpers.html import html
from tests.helpers.shop import CUSTOMER, add_to_cart, shopper

pytestmark = pytest.mark.django_db

# A checkout field, what is typed into it, and its error in Spanish and in English.
CHECKOUT_ERRORS: dict[str, tuple[str, str, str, str]] = {
    "email": (
        "email",
        "ana@",
        "Escribe un correo electrónico válido.",
        "Enter a valid email address.",
    ),
    "max_length": (
        "first_name",
        "A" * 101,
        "Asegúrate de que este valor tenga como máximo 100 caracteres (tiene 101).",
        "Ensure this value has at most 100 characters (it has 101).",
    ),
    "invalid_choice": (
        "state",
        "Atlantis",
        "Elige una opción válida. Atlantis no es una de las opciones disponibles.",
        "Select a valid choice. Atlantis is not one of the available choices.",
    ),
    "required": ("city", "", "Este campo es obligatorio.", "This field is required."),
    "null character": (
        "street",
        "Juárez\x00",
        "Este campo no puede llevar caracteres nulos.",
        "Null characters are not allowed.",
    ),
}
LANGUAGES = {"es": 2, "en": 3}

USTED = re.compile(
    r"\b(usted|asegúrese|introduzca|ingrese|seleccione|escoja|elija|verifique|compruebe|"
    r"escriba|revise|intente|inténtelo|vuelva|espere|proporcione)\b",
    re.IGNORECASE,
)


@pytest.fixture
def product(make_product: Any) -> Product:
    return make_product("rebozo-words", price="450.00", stock=5)


def checkout_page(product: Product, language: str, **typed: str) -> Any:
    """The checkout form posted by a browser in `language` with a cart, `typed` over the
    customer's details; the page it answers (the order is not placed)."""
    browser = shopper(HTTP_ACCEPT_LANGUAGE=language)
    add_to_cart(browser, product)
    response = browser.post(reverse("checkout:checkout"), {**CUSTOMER, **typed})
    assert response.status_code == 200, response
    return response


def field_error(response: Any, field: str) -> str:
    return html(response).one("div", id=f"id_{field}_error").text


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("case", CHECKOUT_ERRORS)
def test_each_checkout_error_reads_the_shops_way(
    product: Product, case: str, language: str
) -> None:
    """Given the checkout form with one field wrong, then the error under that field is in the
    page's language: *tú* in Spanish, Django's own words in English."""
    field, typed, *messages = CHECKOUT_ERRORS[case]

    response = checkout_page(product, language, **{field: typed})

    assert field_error(response, field) == messages[LANGUAGES[language] - 2]


@pytest.mark.parametrize(
    ("language", "message"),
    [
        ("es", "Asegúrate de que este valor tenga como máximo 254 caracteres (tiene 256)."),
        ("en", "Ensure this value has at most 254 characters (it has 256)."),
    ],
)
def test_an_address_too_long_for_my_orders_reads_the_shops_way(language: str, message: str) -> None:
    """Given "Mis pedidos" asked for an address over 254 characters, then its error is the
    shop's in Spanish."""
    browser = Client(HTTP_ACCEPT_LANGUAGE=language)

    response = browser.post(reverse("checkout:my_orders"), {"email": "a" * 248 + "@mail.mx"})

    assert response.status_code == 200
    assert field_error(response, "email") == message


def test_no_spanish_form_error_says_usted(product: Product) -> None:
    """Given the checkout form with every field wrong at once, and "Mis pedidos" with an
    address too long, then neither Spanish page says *usted* anywhere."""
    everything_wrong = {
        "first_name": "A" * 101,
        "last_name": "",
        "email": "ana@",
        "phone": "12",
        "street": "Juárez\x00",
        "number": "",
        "colony": "C" * 121,
        "city": "",
        "state": "Atlantis",
        "postal_code": "7200",
        "country": "US",
    }
    checkout = checkout_page(product, "es", **everything_wrong)
    errors = html(checkout).find_all("div", cls="error")
    assert len(errors) == len(everything_wrong)
    my_orders = Client().post(reverse("checkout:my_orders"), {"email": "a" * 248 + "@mail.mx"})

    for page in (checkout, my_orders):
        text = html(page).text
        assert USTED.findall(text) == []
