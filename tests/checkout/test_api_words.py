"""The shop's JSON endpoints speak to shoppers as *tú*, the REST framework's own messages
included: each field error a payment attempt's body can get, and each of the framework's
refusals that the shop's error handler passes into `message`, read the shop's way in Spanish
(the framework's Spanish catalogue says *usted*: "Asegúrese...", "Introduzca...") and stay the
framework's words in English. Nothing here reaches the provider: every request is refused first."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client
from django.urls import reverse

from checkout.models import Order, Product
from tests.factories import OrderFactory
from tests.helpers.provider import refuse_provider_calls
from tests.helpers.shop import own, shopper

pytestmark = pytest.mark.django_db

VALID = {"card_token": "tok_words", "attempt_id": "a" * 32}

# What a member of the body gets wrong, and the message it answers, in Spanish and in English.
FIELD_ERRORS: dict[str, tuple[dict[str, Any], str, str, str]] = {
    "required": (
        {"card_token": None},  # None here: the member is left out
        "card_token",
        "Este campo es obligatorio.",
        "This field is required.",
    ),
    "null": (
        {"card_token": "null"},
        "card_token",
        "Este campo necesita un valor.",
        "This field may not be null.",
    ),
    "blank": (
        {"card_token": ""},
        "card_token",
        "Este campo no puede quedar vacío.",
        "This field may not be blank.",
    ),
    "max_length": (
        {"card_token": "t" * 65},
        "card_token",
        "Asegúrate de que este campo no tenga más de 64 caracteres.",
        "Ensure this field has no more than 64 characters.",
    ),
    "max_length of a pattern": (
        {"attempt_id": "a" * 33},
        "attempt_id",
        "Asegúrate de que este campo no tenga más de 32 caracteres.",
        "Ensure this field has no more than 32 characters.",
    ),
    "pattern": (
        {"attempt_id": "g" * 32},
        "attempt_id",
        "Revisa este valor: no tiene el formato esperado.",
        "This value does not match the required pattern.",
    ),
    "pattern, not a string": (
        {"card_bin": True},
        "card_bin",
        "Revisa este valor: no tiene el formato esperado.",
        "This value does not match the required pattern.",
    ),
    "text, not a string": (
        {"card_token": 12},
        "card_token",
        "Escribe un valor válido.",
        "Enter a valid value.",
    ),
    "null character": (
        {"card_token": "tok\x00en"},
        "card_token",
        "Este campo no puede llevar caracteres nulos.",
        "Null characters are not allowed.",
    ),
    "surrogate character": (
        {"user_agent": "Mozilla \ud800"},
        "user_agent",
        "Este texto lleva un carácter que no es válido: U+D800.",
        "Surrogate characters are not allowed: U+D800.",
    ),
    "integer": (
        {"installments": "dos"},
        "installments",
        "Escribe un número entero válido.",
        "A valid integer is required.",
    ),
    "integer null": (
        {"installments": "null"},
        "installments",
        "Este campo necesita un valor.",
        "This field may not be null.",
    ),
    "max_value": (
        {"installments": 49},
        "installments",
        "Asegúrate de que este valor sea menor o igual a 48.",
        "Ensure this value is less than or equal to 48.",
    ),
    "min_value": (
        {"installments": 0},
        "installments",
        "Asegúrate de que este valor sea mayor o igual a 1.",
        "Ensure this value is greater than or equal to 1.",
    ),
    "integer as a long string": (
        {"installments": "1" * 1001},
        "installments",
        "Este valor es demasiado largo.",
        "String value too large.",
    ),
}
LANGUAGES = {"es": 2, "en": 3}  # where each language's message is in a FIELD_ERRORS row

USTED = re.compile(
    r"\b(usted|asegúrese|introduzca|ingrese|seleccione|escoja|elija|verifique|compruebe|"
    r"escriba|revise|intente|inténtelo|vuelva|espere|proporcione|tiene usted)\b",
    re.IGNORECASE,
)


@pytest.fixture(autouse=True)
def no_provider_call(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every request here is refused before the provider would be called."""
    sent = refuse_provider_calls(monkeypatch)
    yield
    assert sent == []


@pytest.fixture
def product(make_product: Any) -> Product:
    return make_product("jarro-words", price="289.00", stock=1000)


def browser_with_order(product: Product, language: str) -> tuple[Client, Order]:
    """A browser of its own in `language` and an order it placed."""
    order = OrderFactory(lines=[(product, 1)])
    return own(shopper(HTTP_ACCEPT_LANGUAGE=language), order), order


def body_with(change: dict[str, Any]) -> str:
    body = {**VALID}
    for name, value in change.items():
        if value is None:
            body.pop(name, None)
        elif value == "null":
            body[name] = None
        else:
            body[name] = value
    return json.dumps(body)


def pay_url(order: Order) -> str:
    return reverse("checkout:pay_attempt", args=[order.reference])


def status_url(order: Order) -> str:
    return reverse("checkout:payment_status", args=[order.reference])


def answer(response: Any, status: int, error: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == error, body
    return body


# --- Field errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("case", FIELD_ERRORS)
def test_each_field_error_reads_the_shops_way(product: Product, case: str, language: str) -> None:
    """Given a payment attempt whose body gets one member wrong, then the answer names that
    member with the message of the request's language: *tú* in Spanish, the framework's own
    words in English."""
    change, field, *messages = FIELD_ERRORS[case]
    browser, order = browser_with_order(product, language)

    response = browser.post(pay_url(order), body_with(change), content_type="application/json")

    body = answer(response, 400, "invalid")
    assert body["fields"] == {field: messages[LANGUAGES[language] - 2]}


# --- The framework's refusals that the handler passes through ----------------------------------


def not_found_attempt(product: Product, language: str) -> Any:
    order = OrderFactory(lines=[(product, 1)])  # placed by another browser
    return shopper(HTTP_ACCEPT_LANGUAGE=language).post(
        pay_url(order), json.dumps(VALID), content_type="application/json"
    )


def not_found_status(product: Product, language: str) -> Any:
    order = OrderFactory(lines=[(product, 1)])
    return shopper(HTTP_ACCEPT_LANGUAGE=language).get(status_url(order))


def put_attempt(product: Product, language: str) -> Any:
    browser, order = browser_with_order(product, language)
    return browser.put(pay_url(order), json.dumps(VALID), content_type="application/json")


def delete_status(product: Product, language: str) -> Any:
    browser, order = browser_with_order(product, language)
    return browser.delete(status_url(order))


def get_csp_report(product: Product, language: str) -> Any:
    return shopper(HTTP_ACCEPT_LANGUAGE=language).get(reverse("csp_report"))


def post_healthz(product: Product, language: str) -> Any:
    return shopper(HTTP_ACCEPT_LANGUAGE=language).post(reverse("healthz"))


def text_attempt(product: Product, language: str) -> Any:
    browser, order = browser_with_order(product, language)
    return browser.post(pay_url(order), "card_token=tok", content_type="text/plain")


def form_csp_report(product: Product, language: str) -> Any:
    return shopper(HTTP_ACCEPT_LANGUAGE=language).post(
        reverse("csp_report"), "csp-report=x", content_type="application/x-www-form-urlencoded"
    )


REFUSALS: dict[str, tuple[Any, int, str, str, str]] = {
    "not found: paying another browser's order": (
        not_found_attempt,
        404,
        "not_found",
        "No encontramos lo que buscas.",
        "Not found.",
    ),
    "not found: the status of another browser's order": (
        not_found_status,
        404,
        "not_found",
        "No encontramos lo que buscas.",
        "Not found.",
    ),
    "method not allowed: PUT a payment attempt": (
        put_attempt,
        405,
        "method_not_allowed",
        'El método "PUT" no está permitido aquí.',
        'Method "PUT" not allowed.',
    ),
    "method not allowed: DELETE a payment status": (
        delete_status,
        405,
        "method_not_allowed",
        'El método "DELETE" no está permitido aquí.',
        'Method "DELETE" not allowed.',
    ),
    "method not allowed: GET the CSP reports": (
        get_csp_report,
        405,
        "method_not_allowed",
        'El método "GET" no está permitido aquí.',
        'Method "GET" not allowed.',
    ),
    "method not allowed: POST the liveness probe": (
        post_healthz,
        405,
        "method_not_allowed",
        'El método "POST" no está permitido aquí.',
        'Method "POST" not allowed.',
    ),
    "unsupported media type: a payment attempt in plain text": (
        text_attempt,
        415,
        "unsupported_media_type",
        'No aceptamos el tipo de contenido "text/plain".',
        'Unsupported media type "text/plain" in request.',
    ),
    "unsupported media type: a CSP report as a form": (
        form_csp_report,
        415,
        "unsupported_media_type",
        'No aceptamos el tipo de contenido "application/x-www-form-urlencoded".',
        'Unsupported media type "application/x-www-form-urlencoded" in request.',
    ),
}


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("case", REFUSALS)
def test_each_refusal_of_the_framework_reads_the_shops_way(
    product: Product, case: str, language: str
) -> None:
    """Given a request the REST framework refuses before the view's work (an order this browser
    did not place, a method the endpoint does not take, a body that is not JSON), then the
    answer's message is in the request's language, *tú* in Spanish."""
    send, status, error, *messages = REFUSALS[case]

    body = answer(send(product, language), status, error)

    assert body == {"error": error, "message": messages[LANGUAGES[language] - 2]}


@pytest.mark.parametrize(
    ("language", "message"),
    [
        ("es", "No tienes permiso para hacer esto."),
        ("en", "You do not have permission to perform this action."),
    ],
)
def test_a_permission_refusal_reads_the_shops_way(
    product: Product, monkeypatch: pytest.MonkeyPatch, language: str, message: str
) -> None:
    """Given a view that refuses with Django's PermissionDenied (which the handler answers as
    the framework's 403; today no endpoint of the shop raises it), then its message is the
    shop's in Spanish."""

    def refuse(request: Any, reference: str, **read: Any) -> Order:
        raise PermissionDenied

    monkeypatch.setattr("checkout.api.own_order", refuse)
    browser, order = browser_with_order(product, language)

    response = browser.post(pay_url(order), json.dumps(VALID), content_type="application/json")

    assert answer(response, 403, "permission_denied") == {
        "error": "permission_denied",
        "message": message,
    }


# --- Every message in Spanish -----------------------------------------------------------------


def test_no_spanish_answer_says_usted(product: Product, settings: Any) -> None:
    """Given every field error and refusal above, the shop's own refusals (bad JSON, a body
    that is no object, one too large, too many attempts) and a body wrong in every member at
    once, then no Spanish message or field message speaks as *usted*."""
    bodies = []
    for change, *_ in FIELD_ERRORS.values():
        browser, order = browser_with_order(product, "es")
        response = browser.post(pay_url(order), body_with(change), content_type="application/json")
        bodies.append(response.json())
    bodies += [send(product, "es").json() for send, *_ in REFUSALS.values()]
    everything_wrong = {
        "card_token": "",
        "attempt_id": 7,
        "session_id": "s" * 129,
        "user_agent": None,
        "installments": 100,
        "card_bin": "abc",
    }
    own_refusals = [
        json.dumps(everything_wrong),
        "{not json",
        "[1, 2]",
        json.dumps({**VALID, "user_agent": "x" * 5000}),
    ]
    for raw in own_refusals:
        browser, order = browser_with_order(product, "es")
        bodies.append(browser.post(pay_url(order), raw, content_type="application/json").json())
    settings.SHOP_PAY_ATTEMPTS_PER_SESSION = "1/m"
    browser, order = browser_with_order(product, "es")
    for _ in range(2):
        limited = browser.post(pay_url(order), json.dumps({}), content_type="application/json")
    assert limited.status_code == 429
    bodies.append(limited.json())

    texts = [b["message"] for b in bodies] + [
        t for b in bodies for t in b.get("fields", {}).values()
    ]
    assert len(texts) > len(FIELD_ERRORS) + len(REFUSALS) + 10
    assert [t for t in texts if USTED.search(t)] == []
    english = {row[-1] for row in [*FIELD_ERRORS.values(), *REFUSALS.values()]}
    assert set(texts) & english == set()
