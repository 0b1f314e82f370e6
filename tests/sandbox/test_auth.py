"""Credentials of the sandbox API: which scheme opens which endpoint, and that a refusal
(401 CL1501) changes nothing.

DESIGN.md "Sandbox contract": `Bearer <public key>` only on POST /card_tokens and
GET /payment_methods; `Basic base64(public:secret)` everywhere, the /_sandbox/ control
endpoints included; anything else is 401 CL1501 with the spec's error body.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from tests.helpers.provider import (
    CVV_FOR,
    PUBLIC_KEY,
    SECRET_KEY,
    VISA,
    Api,
    assert_error,
    decimal_json,
)

SUBSCRIPTION_ID = "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"  # a seeded one


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# The six credentials every endpoint is tried with: name -> Authorization header (None: absent).
CREDENTIALS: dict[str, str | None] = {
    "no_header": None,
    "garbage": "garbage",
    "bearer_public": f"Bearer {PUBLIC_KEY}",
    "bearer_secret": f"Bearer {SECRET_KEY}",
    "basic_wrong_secret": basic(PUBLIC_KEY, "sk_wrong"),
    "basic_secret": basic(PUBLIC_KEY, SECRET_KEY),
}


def card_body(number: str = VISA) -> dict[str, Any]:
    return {
        "card": {
            "number": number,
            "exp_month": "12",
            "exp_year": "2031",
            "cvv": CVV_FOR.get(number, "123"),
            "holder_name": "Ana Pérez",
        }
    }


def payment_body(token: str) -> dict[str, Any]:
    return {
        "amount": Decimal("250.00"),
        "currency": "MXN",
        "description": "Taza de barro",
        "payment_method": {"token": token},
    }


@dataclass
class Prepared:
    """A request ready to send, and what proves afterwards that a refusal changed nothing."""

    method: str
    path: str
    body: Any = None
    after_refusal: Callable[[Api], None] | None = None


@dataclass(frozen=True)
class Endpoint:
    name: str
    public_ok: bool
    success_status: int
    prepare: Callable[[Api], Prepared]


def _card_tokens(api: Api) -> Prepared:
    return Prepared("POST", "/card_tokens", card_body())


def _payment_methods(api: Api) -> Prepared:
    return Prepared("GET", "/payment_methods")


def _create_payment(api: Api) -> Prepared:
    token = api.card_token()["id"]

    def token_still_pays(api: Api) -> None:
        response = api.post("/payments", payment_body(token))
        assert response.status_code == 201, response.text

    return Prepared("POST", "/payments", payment_body(token), token_still_pays)


def _get_payment(api: Api) -> Prepared:
    payment = api.create_payment()
    return Prepared("GET", f"/payments/{payment['id']}")


def _patch_payment(api: Api) -> Prepared:
    payment = api.create_payment(capture_method="manual")
    body = {"status": "approved", "paid_amount": Decimal("100.00")}

    def still_authorized(api: Api) -> None:
        again = api.payment(payment["id"])
        assert again["status"] == "authorized"
        assert again["version"] == payment["version"]
        assert again["captured_amount"] == Decimal("0.00")

    return Prepared("PATCH", f"/payments/{payment['id']}", body, still_authorized)


def _put_subscription(api: Api) -> Prepared:
    def still_active(api: Api) -> None:
        # The subscription has no GET: move the sandbox clock an hour on, deactivate it with
        # the secret token, and check it is only now that it ended.
        before = datetime.fromisoformat(api.get("/_sandbox/clock").json()["now"])
        advanced = api.post("/_sandbox/clock", {"advance_seconds": 3600})
        assert advanced.status_code == 200, advanced.text
        response = api.put(f"/subscriptions/{SUBSCRIPTION_ID}", {"status": "inactive"})
        assert response.status_code == 201, response.text
        ended = datetime.fromisoformat(response.json()["end_date"])
        assert (ended - before).total_seconds() >= 3600

    return Prepared(
        "PUT", f"/subscriptions/{SUBSCRIPTION_ID}", {"status": "inactive"}, still_active
    )


def _refund(api: Api) -> Prepared:
    payment = api.create_payment()
    return Prepared("POST", "/refunds", {"payment_id": payment["id"]})


def _reset(api: Api) -> Prepared:
    api.create_payment()
    return Prepared("POST", "/_sandbox/reset")


def _clock_get(api: Api) -> Prepared:
    return Prepared("GET", "/_sandbox/clock")


def _clock_post(api: Api) -> Prepared:
    return Prepared("POST", "/_sandbox/clock", {"advance_seconds": 60})


def _faults_get(api: Api) -> Prepared:
    return Prepared("GET", "/_sandbox/faults")


def _faults_post(api: Api) -> Prepared:
    return Prepared("POST", "/_sandbox/faults", {"path": "/refunds", "status": 503, "times": 1})


def _faults_delete(api: Api) -> Prepared:
    created = api.post("/_sandbox/faults", {"path": "/refunds", "status": 503, "times": 1})
    assert created.status_code == 201, created.text
    return Prepared("DELETE", "/_sandbox/faults")


def _sandbox_payments(api: Api) -> Prepared:
    return Prepared("GET", "/_sandbox/payments")


def _webhooks(api: Api) -> Prepared:
    return Prepared("GET", "/_sandbox/webhooks")


def _chaos_get(api: Api) -> Prepared:
    return Prepared("GET", "/_sandbox/webhooks/chaos")


def _chaos_post(api: Api) -> Prepared:
    return Prepared("POST", "/_sandbox/webhooks/chaos", {"mode": "drop", "times": 1})


def _quirks_get(api: Api) -> Prepared:
    return Prepared("GET", "/_sandbox/quirks")


def _quirks_post(api: Api) -> Prepared:
    api.create_payment(capture_method="manual")
    return Prepared("POST", "/_sandbox/quirks", {"authorized_as_approved": True})


def _sandbox_subscriptions(api: Api) -> Prepared:
    body = {
        "price_id": "price_cafe_mensual",
        "customer": {
            "first_name": "Ana",
            "last_name": "Pérez",
            "email": "ana@example.com",
            "phone": "+525500000000",
        },
    }
    return Prepared("POST", "/_sandbox/subscriptions", body)


def _sandbox_payment_method(api: Api) -> Prepared:
    return Prepared("PATCH", "/_sandbox/payment_methods/visa", {"status": "deactive"})


ENDPOINTS = [
    Endpoint("POST /card_tokens", True, 201, _card_tokens),
    Endpoint("GET /payment_methods", True, 200, _payment_methods),
    Endpoint("POST /payments", False, 201, _create_payment),
    Endpoint("GET /payments/{id}", False, 200, _get_payment),
    Endpoint("PATCH /payments/{id}", False, 200, _patch_payment),
    Endpoint("PUT /subscriptions/{id}", False, 201, _put_subscription),
    Endpoint("POST /refunds", False, 201, _refund),
    Endpoint("POST /_sandbox/reset", False, 200, _reset),
    Endpoint("GET /_sandbox/clock", False, 200, _clock_get),
    Endpoint("POST /_sandbox/clock", False, 200, _clock_post),
    Endpoint("GET /_sandbox/faults", False, 200, _faults_get),
    Endpoint("POST /_sandbox/faults", False, 201, _faults_post),
    Endpoint("DELETE /_sandbox/faults", False, 200, _faults_delete),
    Endpoint("GET /_sandbox/payments", False, 200, _sandbox_payments),
    Endpoint("GET /_sandbox/webhooks", False, 200, _webhooks),
    Endpoint("GET /_sandbox/webhooks/chaos", False, 200, _chaos_get),
    Endpoint("POST /_sandbox/webhooks/chaos", False, 200, _chaos_post),
    Endpoint("GET /_sandbox/quirks", False, 200, _quirks_get),
    Endpoint("POST /_sandbox/quirks", False, 200, _quirks_post),
    Endpoint("POST /_sandbox/subscriptions", False, 201, _sandbox_subscriptions),
    Endpoint("PATCH /_sandbox/payment_methods/{id}", False, 200, _sandbox_payment_method),
]


def allowed(endpoint: Endpoint, credential: str) -> bool:
    return credential == "basic_secret" or (endpoint.public_ok and credential == "bearer_public")


def snapshot(api: Api) -> dict[str, Any]:
    """Everything the sandbox lets a merchant observe, read with the secret token."""
    views = {
        "payments": "/_sandbox/payments",
        "methods": "/payment_methods",
        "faults": "/_sandbox/faults",
        "chaos": "/_sandbox/webhooks/chaos",
        "quirks": "/_sandbox/quirks",
        "webhooks": "/_sandbox/webhooks",
    }
    state: dict[str, Any] = {}
    for name, path in views.items():
        response = api.get(path)
        assert response.status_code == 200, response.text
        state[name] = decimal_json(response)
    state["clock_offset"] = api.get("/_sandbox/clock").json()["offset_seconds"]
    return state


def send(api: Api, prepared: Prepared, authorization: str | None) -> Any:
    headers = {"Authorization": authorization} if authorization is not None else None
    return api.request(prepared.method, prepared.path, prepared.body, auth=None, headers=headers)


@pytest.mark.parametrize("credential", list(CREDENTIALS))
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e.name for e in ENDPOINTS])
def test_each_endpoint_takes_only_its_credentials(
    api: Api, endpoint: Endpoint, credential: str
) -> None:
    """Every endpoint answers with its credentials and 401 CL1501, changing nothing, otherwise."""
    # Given the state an endpoint needs, and a snapshot of everything observable
    prepared = endpoint.prepare(api)
    before = snapshot(api)

    # When the request is sent with this credential
    response = send(api, prepared, CREDENTIALS[credential])

    # Then it succeeds where the credential is in scope...
    if allowed(endpoint, credential):
        assert response.status_code == endpoint.success_status, response.text
        return
    # ...and otherwise is refused with the spec's error body, leaving everything as it was
    body = assert_error(response, 401, "CL1501")
    assert body["message"] == "Unauthorized"
    assert response.headers["Content-Type"].startswith("application/json")
    assert snapshot(api) == before
    if prepared.after_refusal is not None:
        prepared.after_refusal(api)


EXTRA_REFUSED: dict[str, str] = {
    "bearer_wrong_key": "Bearer pk_wrong",
    "bearer_empty": "Bearer ",
    "bearer_basic_token": "Bearer "
    + base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode(),
    "bearer_pair_in_clear": f"Bearer {PUBLIC_KEY}:{SECRET_KEY}",
    "basic_empty": "Basic ",
    "basic_not_base64": "Basic !!not-base64!!",
    "basic_pair_in_clear": f"Basic {PUBLIC_KEY}:{SECRET_KEY}",
    "basic_no_colon": "Basic " + base64.b64encode(f"{PUBLIC_KEY}{SECRET_KEY}".encode()).decode(),
    "basic_swapped": basic(SECRET_KEY, PUBLIC_KEY),
    "basic_wrong_public": basic("pk_wrong", SECRET_KEY),
    "basic_empty_public": basic("", SECRET_KEY),
    "basic_secret_only": "Basic " + base64.b64encode(SECRET_KEY.encode()).decode(),
    "basic_trailing_garbage": basic(PUBLIC_KEY, SECRET_KEY + "x"),
    "other_scheme": f"Token {SECRET_KEY}",
    "scheme_only": "Basic",
}


@pytest.mark.parametrize("path", ["/payment_methods", "/_sandbox/payments"])
@pytest.mark.parametrize("authorization", list(EXTRA_REFUSED.values()), ids=list(EXTRA_REFUSED))
def test_malformed_or_wrong_credentials_are_refused(
    api: Api, path: str, authorization: str
) -> None:
    """A wrong key, a malformed Basic token or an unknown scheme gets 401 CL1501."""
    # Given a credential that is close to a valid one but is not
    # When it is used on an endpoint open to the public key and on a secret-only one
    response = api.get(path, auth=None, headers={"Authorization": authorization})

    # Then both refuse it
    assert_error(response, 401, "CL1501")


@pytest.mark.parametrize(
    "authorization",
    [
        f"bearer {PUBLIC_KEY}",
        f"BEARER {PUBLIC_KEY}",
        "basic " + basic(PUBLIC_KEY, SECRET_KEY).removeprefix("Basic "),
    ],
    ids=["bearer_lower", "bearer_upper", "basic_lower"],
)
def test_the_scheme_name_is_case_insensitive(api: Api, authorization: str) -> None:
    """HTTP authentication schemes are case-insensitive (RFC 9110), so `bearer` works too."""
    # Given a valid credential whose scheme is written in another letter case
    # When it lists the payment methods
    response = api.get("/payment_methods", auth=None, headers={"Authorization": authorization})

    # Then it is accepted
    assert response.status_code == 200, response.text


def test_an_unknown_payment_without_credentials_is_401_not_404(api: Api) -> None:
    """Without credentials the sandbox does not reveal whether a payment exists."""
    # Given a payment that exists and an id that does not
    payment = api.create_payment()
    unknown = "00000000-0000-4000-8000-000000000000"

    # When both are read without credentials
    answers = [api.get(f"/payments/{pid}", auth=None) for pid in (payment["id"], unknown)]

    # Then both get the same 401
    for response in answers:
        assert_error(response, 401, "CL1501")


def test_a_refused_payment_leaves_its_token_usable(api: Api) -> None:
    """A POST /payments refused with the public key consumes no token and creates no payment."""
    # Given a fresh card token
    token = api.card_token(VISA)["id"]

    # When the browser-safe key tries to pay with it
    refused = api.post("/payments", payment_body(token), auth="public")

    # Then it is refused, no payment exists, and the token still pays once
    assert_error(refused, 401, "CL1501")
    assert api.payments() == []
    paid = api.post("/payments", payment_body(token))
    assert paid.status_code == 201, paid.text
    assert [p["id"] for p in api.payments()] == [paid.json()["id"]]
