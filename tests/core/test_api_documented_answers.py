"""Answers of the shop's JSON endpoints that the fuzz tests (test_api_fuzz.py) do not
reach, each the one the OpenAPI document describes, through the shop's whole WSGI
application: bodies nested deeper than Python's recursion limit, too many payment
attempts, the provider unreachable, a Content-Length that is no number or over the
limit, and multipart bodies; nothing changes and the provider is not called."""

from __future__ import annotations

from typing import Any

import pytest

from payments.catalogue.calls import provider_check
from tests.core.fuzzing import (
    CONFORMANCE,
    CSP_LIMIT,
    CSP_REPORT,
    DEPS,
    PAY,
    PAY_LIMIT,
    READYZ,
    STATUS_POST,
    TOKEN,
    WEBHOOK,
    WEBHOOK_LIMIT,
    Buyer,
    Shop,
    deeply_nested,
    state,
    wire_body,
)
from tests.helpers.servers import free_port

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]


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
