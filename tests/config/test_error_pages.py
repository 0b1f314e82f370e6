"""The shop's own error pages (config/error_pages.py): a mistyped address gets the shop's 404, a
server error the shop's 500, both in the shopper's language and without the database."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

import checkout.api
import checkout.views
from tests.html_tree import Node, html

SPANISH_404 = "No encontramos esta página"
ENGLISH_404 = "We could not find this page"
DJANGO_DEFAULTS = ("Not Found", "Server Error", "Service Unavailable", "requested resource")


def page_in(response: Any) -> Node:
    """The page as a tree, once it is the shop's own HTML page (its header and footer)."""
    assert response["Content-Type"].startswith("text/html"), response["Content-Type"]
    page = html(response)
    assert page.one("a", cls="brand").text == "Tienda Tlali"
    assert page.find_all("footer", cls="site-footer")
    for default in DJANGO_DEFAULTS:
        assert default not in response.content.decode()
    return page


def description(page: Node) -> str:
    return page.one("meta", name="description").attrs["content"]


def written_back(response: Any, *secrets: str) -> bool:
    """Whether the page writes back any of `secrets`, or the address it was asked for in its
    language switch."""
    text = response.content.decode()
    switch = html(response).one("form", cls="lang")
    return any(secret in text for secret in secrets) or bool(switch.find_all(name="next"))


def in_english(client: Client) -> Client:
    """The shopper chooses English with the header's language button (/i18n/setlang/)."""
    response = client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert response.status_code == 302
    assert client.cookies["django_language"].value == "en"
    return client


# --- 404 -------------------------------------------------------------------------------------


def test_a_mistyped_address_answers_the_shops_404_in_spanish() -> None:
    """Given a shopper who never chose a language, when they open /no-such-page, then the answer
    is 404 with the shop's own page in Spanish (its header, its words, its description, links
    back to the products and to their orders), not Django's bare English "Not Found"; the
    database is not needed for it (this test has none)."""
    response = Client().get("/no-such-page")

    assert response.status_code == 404
    assert response["Content-Language"] == "es"
    page = page_in(response)
    assert page.one("html").attrs["lang"] == "es"
    assert page.one("h1").text == SPANISH_404
    assert page.one("title").text == "Página no encontrada · Tienda Tlali"
    assert description(page) == (
        "Esta página no existe en Tienda Tlali. Mira nuestras artesanías mexicanas o encuentra "
        "tus pedidos."
    )
    links = {a.attrs["href"] for a in page.one("main").find_all("a")}
    assert links == {"/", "/mis-pedidos/"}


def test_a_mistyped_address_answers_in_english_once_the_shopper_chose_english() -> None:
    """Given a shopper who chose English with the language button, then /no-such-page is the
    shop's 404 page in English."""
    response = in_english(Client()).get("/no-such-page")

    assert response.status_code == 404
    assert response["Content-Language"] == "en"
    page = page_in(response)
    assert page.one("html").attrs["lang"] == "en"
    assert page.one("h1").text == ENGLISH_404
    assert description(page) == (
        "This page does not exist at Tienda Tlali. See our Mexican crafts or find your orders."
    )


def test_the_error_pages_never_write_back_the_address_asked() -> None:
    """Given an address that holds a secret (a guess at the webhook's token, a card token in the
    query string) and exists not, then the 404 page does not write it anywhere, not even in
    its language switch."""
    response = Client().get("/webhooks/payments/a-secret-token-123/extra/?card_token=tok-456")

    assert response.status_code == 404
    assert not written_back(response, "a-secret-token-123", "tok-456")


def test_the_language_switch_of_an_error_page_returns_to_its_address() -> None:
    """Given a shopper on the 404 page, when they press its "English" button (its form sends no
    address), then the shop takes them back to that address (the browser's Referer), now in
    English."""
    shopper = Client()
    switch = html(shopper.get("/no-such-page")).one("form", cls="lang")
    fields = {field.attrs["name"]: field.attrs["value"] for field in switch.find_all("input")}
    button = switch.one("button")
    fields[button.attrs["name"]] = button.attrs["value"]

    switched = shopper.post(
        switch.attrs["action"], fields, HTTP_REFERER="http://testserver/no-such-page"
    )

    assert switched.status_code == 302
    assert switched["Location"] == "http://testserver/no-such-page"
    assert html(shopper.get("/no-such-page")).one("h1").text == ENGLISH_404


@pytest.mark.django_db
def test_an_unknown_product_answers_the_shops_404() -> None:
    """A product page of a product that does not exist is the same 404 page."""
    response = Client().get("/productos/no-existe/")

    assert response.status_code == 404
    assert page_in(response).one("h1").text == SPANISH_404


# --- 500 -------------------------------------------------------------------------------------


def failing(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("a bug")


@pytest.mark.parametrize(
    ("language", "heading", "said"),
    [
        ("es", "Algo salió mal", "Un error de nuestro lado impidió abrir esta página."),
        ("en", "Something went wrong", "An error on our side kept this page from opening."),
    ],
)
def test_a_server_error_answers_the_shops_500_page_without_the_database(
    monkeypatch: pytest.MonkeyPatch, language: str, heading: str, said: str
) -> None:
    """Given a page whose view fails with a bug, then the answer is 500 with the shop's page in
    the shopper's language, its description, and the request's id to quote; rendering it asks
    nothing of the database, not even the shopper's session (this test has none: a query would
    fail it)."""
    monkeypatch.setattr(checkout.views, "reservations_expire", failing)
    shopper = Client(raise_request_exception=False)
    shopper.cookies["django_language"] = language
    shopper.cookies["sessionid"] = "a-session-the-database-holds"

    response = shopper.get("/?ref=not-written-back", HTTP_X_REQUEST_ID="req-500-page-1")

    assert response.status_code == 500
    page = page_in(response)
    assert page.one("html").attrs["lang"] == language
    assert page.one("h1").text == heading
    assert description(page).startswith(said)
    assert "req-500-page-1" in page.one("main").text
    assert not written_back(response, "not-written-back")
    assert "no-store" in response["Cache-Control"]
    assert not response.has_header("Retry-After")


def test_a_json_endpoints_server_error_is_a_json_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Given a JSON endpoint that fails with a bug, then its answer is a 500 in the shop's JSON
    error shape, not an HTML page."""
    monkeypatch.setattr(checkout.api, "own_order", failing)

    response = Client(raise_request_exception=False).get("/pedidos/ORD-AAAAA/estado-pago/")

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": "server_error",
        "message": "Algo salió mal de nuestro lado. Vuelve a intentarlo en un momento.",
    }
