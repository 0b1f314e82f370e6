"""Fuzz tests of the shop's JSON endpoints, generated from their OpenAPI document (as
drf-spectacular generates it and /api/schema/ serves it).

schemathesis turns the description into valid and invalid requests (path parameters, query
parameters, headers, cookies and bodies); raw bodies the description cannot express (deep nesting,
oversized, not UTF-8) and unrelated headers and query parameters are mixed in. Every request goes
through the shop's whole WSGI application (every middleware, CSRF included) in this process, so
the examples share the test's transaction and rows are counted before and after each one.

For every example: never a server error (any exception inside the shop is recorded and fails the
test with its traceback), the answer is one the description documents, with its content type,
headers and body schema, and an independent oracle below decides what the answer must be. Invalid
input changes nothing: the same orders, payments, notifications, stock and session cart, and no
call to the card payments service (the live sandbox; every HTTP answer the shop's client gets is
counted).
"""

from __future__ import annotations

import json
import re
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
import requests
import schemathesis
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as fuzz_settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core import NotSet
from schemathesis.core.transport import Response
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from checkout.models import Order, OrderStatus, Product
from core.task_queue import is_marked, unmark
from payments.catalogue.calls import provider_check
from payments.models import Payment, PaymentStatus
from payments.provider.client import get_client
from payments.task_names import REFRESH_TASK, marker
from tests.factories import ProductFactory
from tests.html_tree import html
from tests.shop import add_to_cart, cart_of, creates_sent_here, make_order, own, place_order
from tests.shop import shopper as new_shopper
from tests.support import THREE_DS, Api, clear_cache, fill_catalogue, free_port, shop_schema
from webhooks.models import WebhookEvent

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

# Browsers send CSP reports as JSON under their own media type.
schemathesis.serializer.alias("application/csp-report", "application/json")
SCHEMA = schemathesis.openapi.from_dict(shop_schema())
PAY = SCHEMA["/pedidos/{reference}/pagos/"]["POST"]
STATUS_GET = SCHEMA["/pedidos/{reference}/estado-pago/"]["GET"]
STATUS_POST = SCHEMA["/pedidos/{reference}/estado-pago/"]["POST"]
WEBHOOK = SCHEMA["/webhooks/payments/{token}/"]["POST"]
CSP_REPORT = SCHEMA["/csp-report/"]["POST"]
HEALTHZ = SCHEMA["/healthz"]["GET"]
READYZ = SCHEMA["/readyz"]["GET"]
DEPS = SCHEMA["/healthz/deps"]["GET"]

CONFORMANCE = (
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
)
CHECKS = (not_a_server_error, *CONFORMANCE)
BASE_URL = "http://localhost"
CLIENT_ADDRESS = "203.0.113.7"
TOKEN = "whk-fuzz-9d2c7b1e4a6f8053"
WEBHOOK_LIMIT = 512  # a small WEBHOOKS_MAX_BODY_BYTES, so that oversized bodies come up too
PAY_LIMIT = 4096  # the JSON endpoints' body limit (core.api)
CSP_LIMIT = 8192  # monitoring.csp_reports.MAX_REPORT_BYTES
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

FUZZ = fuzz_settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


# --- The application, the provider and what they did ---------------------------------------


@dataclass
class Shop:
    """The shop's WSGI application in this process, and every exception it ran into."""

    app: WSGIHandler
    errors: list[str] = field(default_factory=list)

    def send(
        self, case: Case, raw: bytes | None, checks: tuple[Any, ...] = CHECKS, **extra: Any
    ) -> Response:
        """Send the case (with exactly `raw` as its body, when it has one) and check that the
        answer is one the description documents."""
        kwargs: dict[str, Any] = {
            "environ_base": {"REMOTE_ADDR": CLIENT_ADDRESS},
            "buffered": True,
            **extra,
        }
        if raw is not None:
            kwargs["data"] = raw
        # As Django's test client does: no connection is closed around the request, so every
        # example stays in the test's transaction.
        signals.request_started.disconnect(close_old_connections)
        signals.request_finished.disconnect(close_old_connections)
        try:
            response = case.call(app=self.app, base_url=BASE_URL, **kwargs)
        finally:
            signals.request_started.connect(close_old_connections)
            signals.request_finished.connect(close_old_connections)
        assert not self.errors, "\n".join(self.errors)
        case.validate_response(response, checks=list(checks))
        return response


@pytest.fixture
def shop(db: None) -> Iterator[Shop]:
    """The shop's WSGI application; exceptions are recorded as they happen, with tracebacks."""
    shop = Shop(WSGIHandler())

    def record(sender: Any, request: Any = None, **kwargs: Any) -> None:
        path = getattr(request, "path", "?")
        shop.errors.append(f"{getattr(request, 'method', '?')} {path}\n{traceback.format_exc()}")

    signals.got_request_exception.connect(record, weak=False)
    yield shop
    signals.got_request_exception.disconnect(record)


@pytest.fixture
def provider_calls(provider: Api, settings: Any) -> Iterator[list[str]]:
    """The shop on the live sandbox, with limits that fuzzing cannot reach; every answer the
    shop's provider client receives is recorded ("METHOD path")."""
    settings.PAYMENTS_READ_TIMEOUT = 3
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    settings.WEBHOOKS_MAX_BODY_BYTES = WEBHOOK_LIMIT
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"  # webhooks go nowhere
    settings.SHOP_PAY_ATTEMPTS_PER_SESSION = "100000/m"
    settings.SHOP_PAY_ATTEMPTS_PER_ADDRESS = "100000/m"
    settings.SHOP_STATUS_CHECKS_PER_SESSION = "100000/m"
    clear_cache()
    fill_catalogue()  # as the refresh task does; it stamps the provider check too
    calls: list[str] = []

    def count(response: requests.Response, *args: Any, **kwargs: Any) -> None:
        calls.append(f"{response.request.method} {response.request.path_url}")

    client = get_client()
    client.session.hooks["response"].append(count)
    yield calls
    client.session.hooks["response"].remove(count)
    clear_cache()


@dataclass
class Buyer:
    """A browser session that placed an order, has something in its cart again, and holds the
    CSRF token its payment page rendered."""

    client: Client
    order: Order
    csrf: str

    @property
    def cookies(self) -> dict[str, str]:
        return {
            settings.SESSION_COOKIE_NAME: self.client.cookies[settings.SESSION_COOKIE_NAME].value,
            settings.CSRF_COOKIE_NAME: self.client.cookies[settings.CSRF_COOKIE_NAME].value,
        }

    def owns(self, order: Order) -> Order:
        own(self.client, order)
        return order

    def session(self) -> dict[str, Any]:
        data = SessionStore(self.cookies[settings.SESSION_COOKIE_NAME]).load()
        return {"cart": data.get("cart"), "orders": data.get("orders")}


@pytest.fixture
def product(db: None) -> Product:
    return ProductFactory(
        slug="taza-fuzz",
        name="Taza de talavera",
        price=Decimal("289.00"),
        stock=50,
        image="img/products/taza-talavera.svg",
    )


@pytest.fixture
def buyer(provider_calls: list[str], product: Product) -> Buyer:
    client = new_shopper()
    order = place_order(client, (product, 2))
    assert add_to_cart(client, product, 1).status_code == 302
    page = client.get(reverse("checkout:pay", args=[order.reference]))
    csrf = html(page).one("section", id="payment").attrs["data-csrf"]
    assert cart_of(client) == {str(product.pk): 1}
    return Buyer(client, order, csrf)


def state(buyer: Buyer | None = None) -> dict[str, Any]:
    """Everything a request might change in the shop."""
    return {
        "orders": list(Order.objects.order_by("pk").values_list("pk", "status", "updated_at")),
        "payments": list(Payment.objects.order_by("pk").values_list("pk", "status", "updated_at")),
        "events": WebhookEvent.objects.count(),
        "stock": list(Product.objects.order_by("pk").values_list("pk", "stock")),
        "session": buyer.session() if buyer else None,
    }


# --- Strategies -----------------------------------------------------------------------------


def cases(operation: Any, invalid: bool | None = None, **fixed: Any) -> SearchStrategy[Case]:
    """Valid or invalid (either when None) requests of one operation; `fixed` values are not
    generated."""
    modes = {
        False: [GenerationMode.POSITIVE],
        True: [GenerationMode.NEGATIVE],
        None: [GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    }[invalid]
    return st.sampled_from(modes).flatmap(lambda mode: operation.as_strategy(mode, **fixed))


def raw_case(operation: Any, media_type: str, **fixed: Any) -> Callable[[bytes], Case]:
    return lambda raw: operation.Case(body=raw, media_type=media_type, **fixed)


def deeply_nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def raw_bodies(limit: int) -> SearchStrategy[bytes]:
    """Bodies the description cannot express: nested past Python's recursion limit, just under
    and over the size limit, not UTF-8, not JSON, JSON that is not an object."""
    return st.one_of(
        st.integers(min_value=limit // 4, max_value=limit // 2).map(deeply_nested),
        st.integers(min_value=limit // 24, max_value=limit // 6).map(
            lambda d: b'{"a":' * d + b"1" + b"}" * d
        ),
        st.integers(min_value=limit - 2, max_value=limit + 2).map(lambda n: b" " * (n - 2) + b"{}"),
        st.binary(max_size=64),
        st.sampled_from([b"", b"null", b"[]", b'"x"', b"1e999", b"NaN", b"\xff\xfe{}", b"{\x00}"]),
        st.integers(min_value=limit - 100, max_value=limit + 100).map(lambda n: b"1" * n),
    )


# Declared body types other than JSON (None: the case's own).
CONTENT_TYPES = st.sampled_from(
    [None] * 6
    + [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=fuzz",
        "multipart/form-data",
    ]
)
# Headers and query parameters nobody described: they must change nothing.
HEADER_NAMES = st.sampled_from(
    ["Accept", "Accept-Language", "Accept-Encoding", "User-Agent", "X-Requested-With",
     "X-Forwarded-For", "X-Real-IP", "If-None-Match", "Cache-Control", "X-Request-Id"]
)  # fmt: skip
HEADER_VALUES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=40).map(
    str.lstrip
)
NOISE_HEADERS = st.dictionaries(HEADER_NAMES, HEADER_VALUES, max_size=3)
NOISE_QUERY = st.dictionaries(
    st.text(min_size=1, max_size=10).filter(lambda k: k != "payment_id"),
    st.text(max_size=20),
    max_size=3,
)


def wire_body(case: Case) -> bytes | None:
    """The exact bytes sent for the case's body (JSON as Python writes it)."""
    if isinstance(case.body, NotSet):
        return None
    if isinstance(case.body, bytes):
        return case.body
    return json.dumps(case.body).encode()


def strict_json(raw: bytes) -> Any:
    """JSON as the shop reads it: UTF-8, and no NaN or Infinity (ValueError)."""

    def refuse(name: str) -> None:
        raise ValueError(name)

    return json.loads(raw.decode("utf-8"), parse_constant=refuse)


def json_object(raw: bytes | None, limit: int, *, empty: bytes = b"") -> dict[str, Any] | None:
    """The JSON object in `raw`, or None when it is too large, not JSON or not an object."""
    raw = raw or empty
    if len(raw) > limit:
        return None
    try:
        data = strict_json(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


# --- POST /pedidos/{reference}/pagos/ -------------------------------------------------------


@pytest.fixture
def paid(buyer: Buyer, product: Product) -> Order:
    """A second order of the buyer's, already paid."""
    return buyer.owns(make_order((product, 1), status=OrderStatus.PAID))


def _text(value: Any, *, required: bool, max_length: int, pattern: str | None = None) -> bool:
    """A JSON string (or null/absent when optional) as the payment page sends it: no NUL,
    within its length, and either trimmed of white space or matching its pattern exactly."""
    if value is None or value == "":
        return not required
    if not isinstance(value, str) or "\x00" in value:
        return False
    if pattern is not None:
        return bool(re.fullmatch(pattern, value))
    value = value.strip()
    if not value:
        return not required
    return len(value) <= max_length


def _whole_number(value: Any) -> int | None:
    """A number of installments as the REST framework reads it: an integer, or a string or
    float that is one (6, "6", 6.0); anything else is None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    text = str(value).strip()
    text = re.sub(r"\.0*$", "", text)
    return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) and len(text) < 1000 else None


def valid_attempt(raw: bytes | None) -> bool:
    """A body the pay attempt takes, for this order: its members valid, and paid in full (the
    fuzzed order is below the installments' minimum total, so any other plan is refused)."""
    data = json_object(raw, PAY_LIMIT, empty=b"{}")
    if data is None:
        return False
    installments = _whole_number(data.get("installments", 1))
    card_bin = data.get("card_bin")
    return all(
        (
            _text(data.get("card_token"), required=True, max_length=64),
            _text(data.get("attempt_id"), required=True, max_length=32, pattern="[0-9a-f]{32}"),
            _text(data.get("session_id"), required=False, max_length=128),
            _text(data.get("user_agent"), required=False, max_length=512),
            card_bin in (None, "")
            or _text(card_bin, required=True, max_length=6, pattern="[0-9]{6}"),
            installments == 1,
        )
    )


@FUZZ
@given(data=st.data())
def test_pay_attempt_fuzz(
    shop: Shop, buyer: Buyer, paid: Order, provider_calls: list[str], data: Any
) -> None:
    """Whatever is posted to the payment endpoint, the answer is documented and never a 5xx.
    Without the CSRF token: 403; not this session's order: 404; a body that is not JSON by its
    type: 415; over 4096 bytes: 413; an invalid body: 400; a valid one: 409 for an order already
    paid, else taken (202, `processing`, its create queued; `unknown` while an earlier attempt
    is on its way) or failed outright (200), with at most one new payment. No request calls the
    provider; anything but a valid attempt on a payable order changes nothing."""
    credentials = data.draw(st.sampled_from(["valid"] * 8 + ["no token", "stranger"]))
    fixed: dict[str, Any] = {
        "cookies": buyer.cookies,
        "headers": {"X-CSRFToken": buyer.csrf},
    }
    if credentials == "no token":
        fixed["headers"] = {}
    elif credentials == "stranger":
        fixed["cookies"] = {settings.CSRF_COOKIE_NAME: buyer.cookies[settings.CSRF_COOKIE_NAME]}
    reference = data.draw(
        st.sampled_from([buyer.order.reference] * 6 + [paid.reference] * 2 + [None] * 2)
    )
    if reference is not None:
        fixed["path_parameters"] = {"reference": reference}
    kind = data.draw(st.sampled_from(["valid"] * 4 + ["invalid"] * 3 + ["raw"] * 3))
    if kind == "raw" and reference is not None:
        case = data.draw(raw_bodies(PAY_LIMIT).map(raw_case(PAY, "application/json", **fixed)))
    else:
        case = data.draw(cases(PAY, kind != "valid", **fixed))
    raw = wire_body(case)
    headers = data.draw(NOISE_HEADERS)
    content_type = data.draw(CONTENT_TYPES)
    if content_type and raw is not None and credentials == "valid" and reference is not None:
        headers["Content-Type"] = content_type
    before, calls = state(buyer), len(provider_calls)
    # The same attempt sent again (an earlier example drew its id) is answered as it stands.
    sent = json_object(raw, PAY_LIMIT, empty=b"{}") if valid_attempt(raw) else None
    again = (
        sent is not None
        and Payment.objects.filter(
            idempotency_key=f"{case.path_parameters.get('reference')}-{sent['attempt_id']}"
        ).exists()
    )

    response = shop.send(case, raw, headers=headers, params=data.draw(NOISE_QUERY))

    owned = case.path_parameters.get("reference") in (buyer.order.reference, paid.reference)
    if credentials == "no token":
        expected = 403
    elif credentials == "stranger" or not owned:
        expected = 404
    elif headers.get("Content-Type", "").startswith("multipart/"):
        expected = 400  # Django reads a form first: nothing is left to read as JSON
    elif headers.get("Content-Type", "application/json") != "application/json" and raw:
        expected = 415  # (no body at all is only incomplete: 400, whatever its type says)
    elif len(raw or b"") > PAY_LIMIT:
        expected = 413
    elif not valid_attempt(raw):
        expected = 400
    elif case.path_parameters["reference"] == paid.reference:
        expected = 409
    else:
        expected = 202
    taken = expected == 202 and response.status_code in (200, 202)  # 200: failed outright
    assert taken or response.status_code == expected, (response.status_code, response.text, raw)
    after = state(buyer)
    assert len(provider_calls) == calls, provider_calls[calls:]
    if expected != 202:
        assert after == before
        if "json" in response.headers["content-type"][0]:  # else one of Django's own pages
            assert {"error", "message"} <= set(response.json()), response.text
        return
    # A valid attempt: at most one new payment (stored, its create queued), nothing else changes.
    result = response.json()["result"]
    answers = ("failed",) if response.status_code == 200 else ("processing", "unknown")
    assert result in answers, response.text
    new_payments = len(after["payments"]) - len(before["payments"])
    assert new_payments == (1 if result == "processing" and not again else 0)
    assert (after["events"], after["stock"], after["session"]) == (
        before["events"],
        before["stock"],
        before["session"],
    )
    assert [o[0] for o in after["orders"]] == [o[0] for o in before["orders"]]


# --- GET and POST /pedidos/{reference}/estado-pago/ -----------------------------------------


@pytest.fixture
def pending(buyer: Buyer) -> Payment:
    """An attempt of the buyer's order waiting for 3-D Secure (a real one, at the sandbox, its
    create sent as its task does)."""
    api = Api(settings.PAYMENTS_API_BASE_URL)
    card = api.card_token(THREE_DS)["id"]
    with creates_sent_here():
        response = buyer.client.post(
            reverse("checkout:pay_attempt", args=[buyer.order.reference]),
            data=json.dumps({"card_token": card, "attempt_id": uuid.uuid4().hex}),
            content_type="application/json",
            HTTP_X_CSRFTOKEN=buyer.csrf,
        )
    assert response.status_code == 202, response.content
    payment = Payment.objects.get(external_reference=buyer.order.reference)
    assert payment.status == PaymentStatus.PENDING and payment.provider_id, payment.status
    return payment


@FUZZ
@given(data=st.data())
def test_payment_status_fuzz(
    shop: Shop, buyer: Buyer, pending: Payment, provider_calls: list[str], data: Any
) -> None:
    """Whatever the status check is asked, by GET or POST, the answer is documented and never
    a 5xx; it answers from the shop's records, never creates anything nor calls the provider,
    and only the check of an attempt waiting for the bank queues a read of it (one at a
    time)."""
    operation = data.draw(st.sampled_from([STATUS_GET, STATUS_POST]))
    csrf = data.draw(st.sampled_from([True, True, False])) or operation is STATUS_GET
    fixed: dict[str, Any] = {"cookies": buyer.cookies}
    if csrf:
        fixed["headers"] = {"X-CSRFToken": buyer.csrf}
    if data.draw(st.booleans()):
        fixed["path_parameters"] = {"reference": buyer.order.reference}
    payment_id = data.draw(
        st.sampled_from([None, pending.provider_id, "", "x" * 70, pending.provider_id + "x"])
    )
    if payment_id is not None:
        fixed["query"] = {"payment_id": payment_id}
    case = data.draw(cases(operation, **fixed))
    before, calls = state(buyer), len(provider_calls)
    unmark(marker(REFRESH_TASK, pending.pk))

    response = shop.send(case, wire_body(case), headers=data.draw(NOISE_HEADERS))

    after = state(buyer)
    owned = case.path_parameters.get("reference") == buyer.order.reference
    expected = 403 if not csrf else 200 if owned else 404
    assert response.status_code == expected, (response.status_code, response.text)
    assert (after["events"], after["stock"], after["session"]) == (
        before["events"],
        before["stock"],
        before["session"],
    )
    assert [p[0] for p in after["payments"]] == [p[0] for p in before["payments"]]
    assert [o[0] for o in after["orders"]] == [o[0] for o in before["orders"]]
    asked = case.query.get("payment_id", "")[:64]
    checks_pending = expected == 200 and asked in ("", pending.provider_id)
    assert len(provider_calls) == calls, provider_calls[calls:]
    assert is_marked(marker(REFRESH_TASK, pending.pk)) == checks_pending
    if expected == 200:
        outcome = response.json()
        assert outcome["result"] == ("pending" if checks_pending else "unknown"), outcome


# --- POST /webhooks/payments/{token}/ -------------------------------------------------------


def valid_notification(raw: bytes | None) -> dict[str, Any] | None:
    data = json_object(raw, WEBHOOK_LIMIT)
    if (
        data is not None
        and isinstance(data.get("id"), str)
        and UUID_RE.fullmatch(data["id"])
        and data.get("origin") == "payments-api"
        and data.get("event_type") in ("INSERT", "UPDATE")
    ):
        return data
    return None


@FUZZ
@given(data=st.data())
def test_webhook_fuzz(shop: Shop, provider_calls: list[str], data: Any) -> None:
    """Whatever is posted to the webhook address, the answer is documented and never a 5xx:
    a wrong token is 404, an oversized body 413, anything but a valid notification 400, and
    only a valid one stores a row (exactly one). The provider is never called."""
    token = data.draw(st.sampled_from([TOKEN] * 4 + [None]))
    if token is None:
        case = data.draw(cases(WEBHOOK))  # a generated token, as good as any wrong one
    else:
        notifications = st.fixed_dictionaries(
            {
                "id": st.uuids().map(str),
                "origin": st.just("payments-api"),
                "event_type": st.sampled_from(["INSERT", "UPDATE"]),
            }
        )
        fixed = {"path_parameters": {"token": token}}
        case = data.draw(
            st.one_of(
                cases(WEBHOOK, **fixed),
                notifications.map(lambda body: WEBHOOK.Case(body=body, **fixed)),
                raw_bodies(WEBHOOK_LIMIT).map(raw_case(WEBHOOK, "application/json", **fixed)),
            )
        )
    raw = wire_body(case)
    before, calls = state(), len(provider_calls)

    response = shop.send(case, raw, headers=data.draw(NOISE_HEADERS), params=data.draw(NOISE_QUERY))

    valid = valid_notification(raw)
    if case.path_parameters.get("token") != TOKEN:
        expected = 404
    elif len(raw or b"") > WEBHOOK_LIMIT:
        expected = 413
    else:
        expected = 200 if valid is not None else 400
    assert response.status_code == expected, (response.status_code, response.text, raw)
    after = state()
    assert len(provider_calls) == calls
    if expected != 200:
        assert after == before
        return
    assert after["events"] == before["events"] + 1
    event = WebhookEvent.objects.get(pk=response.json()["event"])
    assert (event.provider_payment_id, event.event_type) == (
        valid["id"].lower(),
        valid["event_type"],
    )
    assert event.remote_addr == CLIENT_ADDRESS
    assert {k: v for k, v in after.items() if k != "events"} == {
        k: v for k, v in before.items() if k != "events"
    }


# --- POST /csp-report/ ----------------------------------------------------------------------


def expected_csp_status(raw: bytes | None) -> int:
    raw = raw or b""
    if len(raw) > CSP_LIMIT:
        return 413
    try:
        report = strict_json(raw)
    except (ValueError, RecursionError):
        return 400
    details = report.get("csp-report", report) if isinstance(report, dict) else report
    return 204 if isinstance(details, dict) and details else 400


@FUZZ
@given(data=st.data())
def test_csp_report_fuzz(shop: Shop, provider_calls: list[str], data: Any) -> None:
    """Whatever is posted as a CSP report, the answer is documented and never a 5xx: 204 for a
    report object with members, 413 over 8 KB, 400 otherwise; nothing is stored, nobody is
    called."""
    media_type = data.draw(st.sampled_from(["application/csp-report", "application/json"]))
    case = data.draw(
        st.one_of(
            cases(CSP_REPORT, media_type=media_type),
            raw_bodies(CSP_LIMIT).map(raw_case(CSP_REPORT, media_type)),
        )
    )
    raw = wire_body(case)
    before, calls = state(), len(provider_calls)

    response = shop.send(case, raw, headers=data.draw(NOISE_HEADERS), params=data.draw(NOISE_QUERY))

    assert response.status_code == expected_csp_status(raw), (response.status_code, raw)
    assert state() == before
    assert len(provider_calls) == calls


# --- GET /healthz, /readyz and /healthz/deps ------------------------------------------------


@fuzz_settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_probes_fuzz(shop: Shop, provider_calls: list[str], data: Any) -> None:
    """The probes answer whatever headers and query parameters come with them: /healthz is up
    and /readyz ready (the database answers), /healthz/deps ok (the cache and the broker answer
    and the provider check's stamp is recent), none asking the provider. None changes anything."""
    operation = data.draw(st.sampled_from([HEALTHZ, READYZ, DEPS]))
    case = data.draw(operation.as_strategy(GenerationMode.POSITIVE))
    before, calls = state(), len(provider_calls)

    response = shop.send(
        case, None, headers=data.draw(NOISE_HEADERS), params=data.draw(NOISE_QUERY)
    )

    assert response.status_code == 200, response.text
    assert "no-cache" in response.headers["cache-control"][0]
    assert state() == before
    assert len(provider_calls) == calls
    if operation is HEALTHZ:
        assert response.json() == {"status": "ok"}
    elif operation is READYZ:
        body = response.json()
        assert (body["status"], set(body["checks"])) == ("ready", {"database"})
    else:
        assert response.json()["status"] == "ok"


# --- Bodies nested deeper than Python's recursion limit -------------------------------------


@pytest.mark.parametrize("depth", [999, 1500, PAY_LIMIT // 2])
def test_deeply_nested_bodies_are_refused(
    shop: Shop, buyer: Buyer, provider_calls: list[str], depth: int
) -> None:
    """JSON nested deeper than the parser can follow is a bad request at every endpoint that
    reads JSON, never a server error, and changes nothing. (Outside the fuzz tests: Hypothesis
    raises the recursion limit while it runs an example, which can hide this.)"""
    raw = deeply_nested(depth)
    pay = PAY.Case(
        path_parameters={"reference": buyer.order.reference},
        cookies=buyer.cookies,
        headers={"X-CSRFToken": buyer.csrf},
        body=raw,
        media_type="application/json",
    )
    webhook = WEBHOOK.Case(
        path_parameters={"token": TOKEN}, body=raw, media_type="application/json"
    )
    report = CSP_REPORT.Case(body=raw, media_type="application/csp-report")
    before = state(buyer)

    answers = [shop.send(case, raw).status_code for case in (pay, webhook, report)]

    limits = (PAY_LIMIT, WEBHOOK_LIMIT, CSP_LIMIT)
    assert answers == [400 if len(raw) <= limit else 413 for limit in limits]
    assert state(buyer) == before
    assert provider_calls == []  # the payment page read the stored catalogue


# --- Answers the fuzzing does not reach ----------------------------------------------------


def test_too_many_attempts_is_the_documented_429(
    shop: Shop, buyer: Buyer, provider_calls: list[str], settings: Any
) -> None:
    """Past the per-session limit of payment attempts, the endpoint answers the documented 429
    (whether the body is valid or not) and changes nothing."""
    settings.SHOP_PAY_ATTEMPTS_PER_SESSION = "2/m"
    case = PAY.Case(
        path_parameters={"reference": buyer.order.reference},
        cookies=buyer.cookies,
        headers={"X-CSRFToken": buyer.csrf},
        body={"card_token": "", "attempt_id": ""},
        media_type="application/json",
    )
    assert [shop.send(case, wire_body(case)).status_code for _ in range(2)] == [400, 400]
    before, calls = state(buyer), len(provider_calls)

    response = shop.send(case, wire_body(case))

    assert response.status_code == 429
    assert response.json()["error"] == "too_many_attempts"
    assert state(buyer) == before
    assert len(provider_calls) == calls


def test_without_the_provider_readyz_is_ready_and_deps_the_documented_503(
    shop: Shop, provider_calls: list[str], settings: Any
) -> None:
    """With the card payments service unreachable (as the provider check task found it), the
    instance stays ready (/readyz 200), and /healthz/deps answers the documented 503 naming the
    failed check by its exception's class only."""
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{free_port()}"
    assert provider_check() is False

    ready = shop.send(READYZ.Case(), None, checks=CONFORMANCE)
    deps = shop.send(DEPS.Case(), None, checks=CONFORMANCE)  # a documented 503

    assert (ready.status_code, ready.json()["status"]) == (200, "ready")
    assert deps.status_code == 503
    checks = deps.json()["checks"]
    assert [name for name, check in checks.items() if not check["ok"]] == ["provider"]
    assert checks["provider"]["error"] == "ProviderUnavailable"


@pytest.mark.parametrize(
    ("content_length", "status"), [("abc", 400), (str(WEBHOOK_LIMIT + 1), 413)]
)
def test_webhook_content_length_answers(
    shop: Shop, provider_calls: list[str], content_length: str, status: int
) -> None:
    """A Content-Length that is no number, or one over the limit, is answered as documented
    before the body is read; nothing is stored."""
    case = WEBHOOK.Case(path_parameters={"token": TOKEN}, body=b"{}", media_type="application/json")
    before = state()

    response = shop.send(case, b"{}", environ_overrides={"CONTENT_LENGTH": content_length})

    assert response.status_code == status
    assert state() == before


def test_pay_attempt_content_length_that_is_no_number(shop: Shop, buyer: Buyer) -> None:
    """A payment attempt whose Content-Length is no number is a bad request, not a crash."""
    case = PAY.Case(
        path_parameters={"reference": buyer.order.reference},
        cookies=buyer.cookies,
        headers={"X-CSRFToken": buyer.csrf},
        body=b"{}",
        media_type="application/json",
    )
    before = state(buyer)

    response = shop.send(case, b"{}", environ_overrides={"CONTENT_LENGTH": "abc"})

    assert response.status_code == 400
    assert state(buyer) == before


@pytest.mark.parametrize("operation", [PAY, STATUS_POST], ids=["pay", "status"])
@pytest.mark.parametrize("boundary", ["", "; boundary=fuzz"])
def test_multipart_bodies_are_the_documented_400(
    shop: Shop, buyer: Buyer, provider_calls: list[str], operation: Any, boundary: str
) -> None:
    """A multipart body where JSON (or nothing) is expected is a bad request, whether Django
    can parse it as a form or not; nothing changes and the provider is not called."""
    case = operation.Case(
        path_parameters={"reference": buyer.order.reference},
        cookies=buyer.cookies,
        headers={"X-CSRFToken": buyer.csrf},
    )
    raw = b'--fuzz\r\nContent-Disposition: form-data; name="card_token"\r\n\r\ntok\r\n--fuzz--\r\n'
    before, calls = state(buyer), len(provider_calls)

    response = shop.send(case, raw, headers={"Content-Type": f"multipart/form-data{boundary}"})

    expected = 400 if operation is PAY or not boundary else 200
    assert response.status_code == expected
    assert state(buyer) == before
    assert len(provider_calls) == calls
