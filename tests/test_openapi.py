"""The description of the shop's JSON endpoints (docs/openapi.yaml) against the code: it is valid
OpenAPI, every path it describes is a route of the shop with the same parameters, every JSON view
of the URLconf is described, each path takes exactly the methods described (every other one is
refused with 405 and an Allow header naming them, after the CSRF check where the description says
there is one), and the cookies and header it names are the ones Django uses.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.utils.crypto import get_random_string
from schemathesis.core.transport import Response
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from werkzeug.test import Client as WsgiClient

from checkout.models import Order
from tests.checkout.conftest import make_order, own, shopper
from tests.factories import ProductFactory

DESCRIPTION = Path(__file__).resolve().parent.parent / "docs" / "openapi.yaml"
SCHEMA = schemathesis.openapi.from_path(DESCRIPTION)
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
TOKEN = "whk-openapi-3e9b1c7d5a"
OUR_APPS = ("checkout.", "config.", "webhooks.", "payments.")
CSRF_EXEMPT = {"/webhooks/payments/{token}/", "/csp-report/"}  # as the description says
CONFORMANCE = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def described() -> dict[str, set[str]]:
    """Each described path and its methods (upper case)."""
    paths: dict[str, set[str]] = {}
    for result in SCHEMA.get_all_operations():
        operation = result.ok()
        paths.setdefault(operation.path, set()).add(operation.method.upper())
    return paths


def example_path(template: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)


def routes(
    patterns: list[URLPattern | URLResolver] | None = None, prefix: str = ""
) -> Iterator[tuple[str, str, Callable[..., Any]]]:
    """Every route of the URLconf: (route, view name, view)."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            namespace = f"{entry.namespace}:" if entry.namespace else ""
            for route, name, view in routes(entry.url_patterns, prefix + str(entry.pattern)):
                yield route, f"{namespace}{name}" if name else "", view
        else:
            yield prefix + str(entry.pattern), entry.name or "", entry.callback


def speaks_json(view: Callable[..., Any]) -> bool:
    """A view of ours that answers JSON (returns a JsonResponse) or reads a JSON body."""
    function = inspect.unwrap(view)
    if not function.__module__.startswith(OUR_APPS):
        return False
    returns = str(inspect.signature(function).return_annotation)
    return "JsonResponse" in returns or "json.loads" in inspect.getsource(function)


# --- The description itself -----------------------------------------------------------------


def test_description_is_valid_openapi() -> None:
    """The description validates against the OpenAPI 3.0 schema and every operation in it can
    be read (parameters, bodies and responses resolve)."""
    SCHEMA.validate()
    operations = list(SCHEMA.get_all_operations())
    assert operations
    for result in operations:
        result.ok()


def test_description_names_djangos_cookies_and_header() -> None:
    """The session cookie, the CSRF cookie and the CSRF header of the description are the ones
    the settings name."""
    schemes = SCHEMA.raw_schema["components"]["securitySchemes"]
    header = settings.CSRF_HEADER_NAME.removeprefix("HTTP_").replace("_", "-")
    assert schemes["browserSession"]["name"] == settings.SESSION_COOKIE_NAME
    assert schemes["csrfCookie"]["name"] == settings.CSRF_COOKIE_NAME
    assert schemes["csrfHeader"]["name"].upper() == header


# --- The description and the URLconf ----------------------------------------------------------

EXAMPLES = {"reference": "ORD-7K2QX", "token": "any-token"}


@pytest.mark.parametrize("template", sorted(described()))
def test_described_path_is_a_route_of_the_shop(template: str) -> None:
    """Every described path resolves to a view of the shop that speaks JSON, with exactly the
    described path parameters, and the route reverses to the same path."""
    path = example_path(template, EXAMPLES)

    match = resolve(path)

    parameters = set(re.findall(r"\{(\w+)\}", template))
    assert set(match.kwargs) == parameters
    assert match.kwargs == {name: EXAMPLES[name] for name in parameters}
    assert speaks_json(match.func), match.view_name
    assert reverse(match.view_name, kwargs=match.kwargs) == path


def test_every_json_view_is_described() -> None:
    """Every route of the URLconf whose view answers or reads JSON is a described path (an
    endpoint added without its description fails here)."""
    described_views = {resolve(example_path(t, EXAMPLES)).view_name for t in described()}
    json_routes = {name: route for route, name, view in routes() if speaks_json(view)}

    assert set(json_routes) - described_views == set(), json_routes
    assert described_views <= set(json_routes)


def test_json_views_found_are_the_known_ones() -> None:
    """The URLconf walk finds the shop's JSON views (and no HTML page), so the test above is
    not vacuous."""
    found = {name for _, name, view in routes() if speaks_json(view)}

    assert found == {
        "checkout:pay_attempt",
        "checkout:payment_status",
        "webhooks:payments",
        "csp_report",
        "healthz",
        "healthz_deps",
        "readyz",
    }


# --- Methods ------------------------------------------------------------------------------------


@pytest.fixture
def session_values(db: None, settings: Any) -> dict[str, Any]:
    """Path values a request gets past every check with (an order of this browser session, the
    webhook token), the session and CSRF cookies, and the CSRF header."""
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    product = ProductFactory(slug="taza-openapi", name="Taza", price=Decimal("289.00"), stock=5)
    order: Order = make_order((product, 1))
    browser = own(shopper(), order)
    csrf = get_random_string(32)
    return {
        "path": {"reference": order.reference, "token": TOKEN},
        "cookies": {
            settings.SESSION_COOKIE_NAME: browser.cookies[settings.SESSION_COOKIE_NAME].value,
            settings.CSRF_COOKIE_NAME: csrf,
        },
        "headers": {"X-CSRFToken": csrf},
    }


@contextmanager
def wsgi_client(cookies: dict[str, str]) -> Iterator[WsgiClient]:
    """A client of the shop's WSGI application that keeps the test's database connection open
    between requests (as Django's test client does)."""
    client = WsgiClient(WSGIHandler())
    for name, value in cookies.items():
        client.set_cookie(name, value, domain="localhost")
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield client
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def path_parameters(template: str, values: dict[str, str]) -> dict[str, str]:
    return {name: values[name] for name in re.findall(r"\{(\w+)\}", template)}


@pytest.mark.django_db
@pytest.mark.parametrize("template", sorted(described()))
def test_undescribed_methods_are_refused_as_described(
    template: str, session_values: dict[str, Any]
) -> None:
    """Every method a described path does not describe is refused with 405, and its Allow
    header lists exactly the described methods; the answer is the documented 405 (content
    type, headers, body)."""
    methods = described()[template]
    case = SCHEMA[template][sorted(methods)[0]].Case(
        path_parameters=path_parameters(template, session_values["path"])
    )
    path = example_path(template, session_values["path"])

    with wsgi_client(session_values["cookies"]) as client:
        for method in sorted(set(METHODS) - methods):
            answer = client.open(
                path,
                method=method,
                headers=session_values["headers"],
                environ_base={"REMOTE_ADDR": "127.0.0.1"},
            )

            assert answer.status_code == 405, (method, answer.status_code, answer.get_data())
            assert set(answer.headers["Allow"].split(", ")) == methods
            case.validate_response(Response.from_any(answer), checks=CONFORMANCE)


@pytest.mark.django_db
@pytest.mark.parametrize("template", sorted(described()))
def test_csrf_check_comes_first_where_described(
    template: str, session_values: dict[str, Any]
) -> None:
    """Without a CSRF token, an unsafe method the path does not take is refused with 403 on
    every path but the two the description exempts (405 there), and the exempt ones are the
    views marked csrf_exempt."""
    exempt = template in CSRF_EXEMPT
    path = example_path(template, session_values["path"])
    cookies = {
        settings.SESSION_COOKIE_NAME: session_values["cookies"][settings.SESSION_COOKIE_NAME]
    }
    unsafe = sorted({"PUT", "PATCH", "DELETE"} - described()[template])

    with wsgi_client(cookies) as client:
        answers = {
            method: client.open(path, method=method, environ_base={"REMOTE_ADDR": "127.0.0.1"})
            for method in unsafe
        }

    assert getattr(resolve(path).func, "csrf_exempt", False) is exempt
    assert {m: a.status_code for m, a in answers.items()} == dict.fromkeys(
        unsafe, 405 if exempt else 403
    )
