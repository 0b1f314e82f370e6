"""The shop's own error pages (core/error_pages.py): a mistyped address gets the shop's 404, a
server error the shop's 500, both in the shopper's language and without the database; and while
the database cannot be reached the pages, the JSON endpoints and the admin answer 503 with
`Retry-After` (the shop's page, or its JSON error), logged as one warning line. A form
refused by the CSRF check gets the shop's own 403 page."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from html import unescape
from typing import Any

import psycopg
import pytest
from django.db import OperationalError, connections
from django.test import Client

import checkout.api
import checkout.views
from tests.core.helpers import shop_schema
from tests.factories import ProductFactory
from tests.helpers.database import unreachable_database
from tests.helpers.html import Node, html

SPANISH_404 = "No encontramos esta página"
ENGLISH_404 = "We could not find this page"
SPANISH_503 = "Volvemos en un momento"
ENGLISH_503 = "We will be right back"
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


# --- 503 while the database cannot be reached --------------------------------------------------


@contextmanager
def database_away() -> Iterator[None]:
    """Within: the shop's database connection is one to a database that cannot be reached (a
    closed port; on SQLite a file in a folder that does not exist); the tests' own connection,
    and what the test wrote on it, is back afterwards."""
    default, unreachable = connections["default"], unreachable_database("default")
    connections["default"] = unreachable
    try:
        yield
    finally:
        connections["default"] = default
        unreachable.close()


def unavailable_page(response: Any, retry_after: int) -> Node:
    assert response.status_code == 503, response.content[:500]
    assert response["Retry-After"] == str(retry_after)
    assert "no-store" in response["Cache-Control"]
    return page_in(response)


SHOP_PAGES = ["/", "/productos/taza-talavera/", "/carrito/", "/checkout/", "/mis-pedidos/"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", [*SHOP_PAGES, "/pedidos/ORD-AAAAA/", "/pedidos/ORD-AAAAA/pagar/"])
def test_with_the_database_away_a_page_answers_503_with_retry_after(
    path: str, settings: Any
) -> None:
    """Given the database cannot be reached, when a shopper opens a page of the shop (the
    session holding the cart is in the database too), then the answer is 503 with
    `Retry-After: DATABASE_RETRY_AFTER` and the shop's page saying to try again in a few
    seconds, in Spanish, with a link to try again (the same address, not written back);
    never a 500."""
    settings.DATABASE_RETRY_AFTER = 7
    shopper = Client(raise_request_exception=False)
    shopper.cookies["sessionid"] = "a-session-the-database-holds"

    with database_away():
        response = shopper.get(path, {"ref": "not-written-back"})

    page = unavailable_page(response, 7)
    assert page.one("html").attrs["lang"] == "es"
    assert page.one("h1").text == SPANISH_503
    assert description(page) == (
        "Tienda Tlali no está disponible por un momento. Vuelve a intentarlo en unos segundos."
    )
    assert page.one("main").find("a").attrs["href"] == ""  # this very address, again
    assert not written_back(response, "not-written-back")


@pytest.mark.django_db
def test_with_the_database_away_a_form_sent_answers_503_in_english() -> None:
    """Given the database cannot be reached and a shopper who chose English, when they add a
    product to their cart, then the answer is the 503 page in English."""
    shopper = in_english(Client(raise_request_exception=False))

    with database_away():
        response = shopper.post("/carrito/agregar/taza-talavera/", {"quantity": "1"})

    page = unavailable_page(response, 5)
    assert page.one("html").attrs["lang"] == "en"
    assert page.one("h1").text == ENGLISH_503
    assert description(page) == (
        "Tienda Tlali is unavailable for a moment. Please try again in a few seconds."
    )


@pytest.mark.django_db
def test_with_the_database_away_the_webhook_receiver_asks_the_provider_to_send_again(
    settings: Any,
) -> None:
    """The provider's notification that cannot be stored is answered 503 with the same
    `Retry-After` as the pages (the provider sends it again), in the receiver's own error."""
    settings.PAYMENTS_WEBHOOK_TOKEN = "whk-7Yq2pLr9sT4vW8xZ1bC3dF5gH6jK0mN"
    settings.DATABASE_RETRY_AFTER = 7
    provider = Client(raise_request_exception=False)
    body = {"id": "3f2b8c1e-5d4a-4b6f-9e7d-2a1c0b9e8f7d", "origin": "payments-api",
            "event_type": "UPDATE"}  # fmt: skip

    with database_away():
        response = provider.post(
            f"/webhooks/payments/{settings.PAYMENTS_WEBHOOK_TOKEN}/",
            json.dumps(body),
            content_type="application/json",
        )

    assert response.status_code == 503
    assert response["Retry-After"] == "7"
    assert response.json()["error"] == "unavailable"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "operation"),
    [("get", "/pedidos/{reference}/estado-pago/"), ("post", "/pedidos/{reference}/pagos/")],
)
def test_with_the_database_away_a_json_endpoint_answers_a_json_503(
    method: str, operation: str
) -> None:
    """Given the database cannot be reached, then the payment page's JSON endpoints (the pay
    attempt, the status check) answer 503 with `Retry-After` and the shop's JSON error
    `{"error": "unavailable", "message": ...}` in the shopper's language, as their OpenAPI
    description documents."""
    path = operation.format(reference="ORD-AAAAA")
    shopper = Client(raise_request_exception=False)
    shopper.cookies["sessionid"] = "a-session-the-database-holds"

    with database_away():
        if method == "post":
            body = json.dumps({"attempt_id": "a" * 32})
            response = shopper.post(path, body, content_type="application/json")
        else:
            response = shopper.get(path)

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": "unavailable",
        "message": "Este servicio no está disponible por un momento. Vuelve a intentarlo.",
    }
    documented = shop_schema()["paths"][operation][method]["responses"]["503"]
    assert documented["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }


@pytest.mark.django_db
def test_with_the_database_away_the_admin_answers_503(admin_client: Client) -> None:
    """Given a staff member signed in to the admin, when the database cannot be reached, then
    an admin page answers 503 with `Retry-After` and the shop's page, not a server error."""
    admin_client.raise_request_exception = False

    with database_away():
        response = admin_client.get("/admin/checkout/order/")

    assert unavailable_page(response, 5).one("h1").text == SPANISH_503


@pytest.mark.django_db
def test_the_503_page_leaves_the_shoppers_messages_for_the_next_page() -> None:
    """Given a shopper with a message waiting to be shown (a product added to the cart), when
    the database is away for their next page, then the 503 page neither shows nor uses it up:
    the page after it, with the database back, shows it."""
    ProductFactory(slug="taza-talavera", name="Taza de Talavera", stock=5)
    shopper = Client(raise_request_exception=False)
    assert shopper.post("/carrito/agregar/taza-talavera/", {"quantity": "1"}).status_code == 302
    waiting = shopper.cookies["messages"].value

    with database_away():
        response = shopper.get("/")

    assert response.status_code == 503
    assert "Taza de Talavera" not in response.content.decode()
    assert shopper.cookies["messages"].value == waiting
    later = html(shopper.get("/carrito/")).one("div", cls="messages").text
    assert later == "Agregamos Taza de Talavera a tu carrito."


@pytest.mark.django_db
def test_a_database_outage_is_logged_as_one_warning_line(caplog: pytest.LogCaptureFixture) -> None:
    """Given the database cannot be reached, then each request answered 503 is logged as one
    warning line, "database unavailable", naming the request and the error, without a
    traceback (nor an error, which would mail the admins)."""
    shopper = Client(raise_request_exception=False)

    with caplog.at_level(logging.INFO), database_away():
        assert shopper.get("/").status_code == 503

    logged = [r for r in caplog.records if r.name.startswith("django")]
    assert [(r.name, r.levelname) for r in logged] == [("django.request", "WARNING")]
    assert logged[0].exc_info is None and not logged[0].exc_text
    assert (
        logged[0]
        .getMessage()
        .startswith("database unavailable: GET / answered 503 (OperationalError: ")
    )


def lock_timeout(*args: Any, **kwargs: Any) -> None:
    """A database error that is not a lost connection: a lock not taken in time."""
    try:
        raise psycopg.errors.LockNotAvailable("canceling statement due to lock timeout")
    except psycopg.Error as driver:
        raise OperationalError("canceling statement due to lock timeout") from driver


def test_a_database_error_of_a_reachable_database_is_a_500_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Given a database that answers but refuses a statement (a lock timeout), then the page
    answers the shop's 500, not 503: it is not an outage to wait out; its traceback is
    logged as an error."""
    monkeypatch.setattr(checkout.views, "reservations_expire", lock_timeout)

    with caplog.at_level(logging.INFO):
        response = Client(raise_request_exception=False).get("/")

    assert response.status_code == 500
    assert not response.has_header("Retry-After")
    assert page_in(response).one("h1").text == "Algo salió mal"
    [logged] = [r for r in caplog.records if r.name == "django.request"]
    assert logged.levelname == "ERROR" and logged.exc_info is not None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "said", "back"),
    [
        (
            "es",
            "Esta página estuvo abierta demasiado tiempo, o en otra pestaña, así que no se pudo "
            "enviar. Vuelve a cargarla e inténtalo de nuevo.",
            "Volver a la tienda",
        ),
        (
            "en",
            "This page was open for too long, or in another tab, so it could not be sent. Reload "
            "the page and try again.",
            "Back to the shop",
        ),
    ],
)
def test_a_form_refused_by_the_csrf_check_gets_the_shops_own_page(
    language: str, said: str, back: str
) -> None:
    """Given a shopper's form sent without its CSRF token (a page left open past its session,
    or a forged form), then the answer is the shop's 403 page in the shopper's language, saying
    what to do, and not Django's (which speaks as usted and of DEBUG); nothing is added."""
    shopper = Client(enforce_csrf_checks=True)
    shopper.cookies["django_language"] = language

    response = shopper.post("/carrito/agregar/taza-talavera/", {"quantity": "1"})

    assert response.status_code == 403
    page = response.content.decode()
    assert said in unescape(page)
    assert back in page
    for django_default in ("CSRF", "DEBUG", "usted", "Prohibido", "Forbidden"):
        assert django_default not in page
    assert "cart" not in shopper.session
