"""What the fuzz tests of the shop's JSON endpoints share (test_api_fuzz.py,
test_api_documented_answers.py): the operations of the OpenAPI document, the shop's WSGI
application in this process (every exception it runs into recorded), a buyer's session,
what a request might change, and the strategies and oracles of the examples. The
fixtures (shop, provider_calls, product, buyer): tests/core/conftest.py."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import schemathesis
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck
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

from checkout.models import Order, Product
from payments.models import Payment
from tests.core.helpers import shop_schema
from tests.helpers.shop import own
from webhooks.models import WebhookEvent

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


def state(buyer: Buyer | None = None) -> dict[str, Any]:
    """Everything a request might change in the shop."""
    return {
        "orders": list(Order.objects.order_by("pk").values_list("pk", "status", "updated_at")),
        "payments": list(Payment.objects.order_by("pk").values_list("pk", "status", "updated_at")),
        "events": WebhookEvent.objects.count(),
        "stock": list(Product.objects.order_by("pk").values_list("pk", "stock")),
        "session": buyer.session() if buyer else None,
    }


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
