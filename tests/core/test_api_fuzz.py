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
import uuid
from typing import Any

import pytest
from django.conf import settings
from django.urls import reverse
from hypothesis import given
from hypothesis import settings as fuzz_settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from checkout.models import Order, OrderStatus, Product
from core.task_queue import is_marked, unmark
from payments.models import Payment
from payments.statuses import PaymentStatus
from payments.task_names import REFRESH_TASK, marker
from tests.core.fuzzing import (
    CLIENT_ADDRESS,
    CONTENT_TYPES,
    CSP_LIMIT,
    CSP_REPORT,
    DEPS,
    FUZZ,
    HEALTHZ,
    NOISE_HEADERS,
    NOISE_QUERY,
    PAY,
    PAY_LIMIT,
    READYZ,
    STATUS_GET,
    STATUS_POST,
    TOKEN,
    UUID_RE,
    WEBHOOK,
    WEBHOOK_LIMIT,
    Buyer,
    Shop,
    cases,
    json_object,
    raw_bodies,
    raw_case,
    state,
    strict_json,
    wire_body,
)
from tests.factories import OrderFactory
from tests.helpers.provider import THREE_DS, Api
from tests.helpers.shop import creates_sent_here
from webhooks.models import WebhookEvent

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]


@pytest.fixture
def paid(buyer: Buyer, product: Product) -> Order:
    """A second order of the buyer's, already paid."""
    return buyer.owns(OrderFactory(lines=[(product, 1)], status=OrderStatus.PAID))


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
