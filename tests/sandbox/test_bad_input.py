"""Bad input to POST /payments, PATCH /payments/{id} and POST /refunds: each gets a clear 4xx
with the spec's error body, and changes nothing (DESIGN.md "Testing": every bad input has a test
that it gets a clear error and changes nothing)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
import simplejson

from tests.helpers.provider import AMEX, MASTER, VISA, Api, assert_error, decimal_json

HUGE = "x" * (65 * 1024)  # the sandbox takes bodies up to 64 KiB
_LITERAL = "__literal__"


@dataclass
class Bad:
    """A bad request: a JSON body, or raw text, with the answer it must get."""

    body: Any = None
    raw: str | None = None
    headers: dict[str, str | None] = field(default_factory=dict)
    status: int = 400
    code: str = "CL2100"


def changed(valid: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `valid` with the dotted `path` set to `value`."""
    body = copy.deepcopy(valid)
    *parents, last = path.split(".")
    target = body
    for name in parents:
        target = target.setdefault(name, {})
    target[last] = value
    return body


def dropped(valid: dict[str, Any], path: str) -> dict[str, Any]:
    body = copy.deepcopy(valid)
    *parents, last = path.split(".")
    target = body
    for name in parents:
        target = target[name]
    del target[last]
    return body


def literal(valid: dict[str, Any], path: str, text: str) -> str:
    """`valid` as JSON text with the value at `path` written as `text` (e.g. NaN)."""
    return simplejson.dumps(changed(valid, path, _LITERAL), use_decimal=True).replace(
        f'"{_LITERAL}"', text
    )


def as_json(body: Any) -> str:
    return simplejson.dumps(body, use_decimal=True)


def send(api: Api, method: str, path: str, bad: Bad) -> Any:
    return api.request(method, path, bad.body, raw=bad.raw, headers=bad.headers or None)


BadCase = Callable[[dict[str, Any]], Bad]

# Bad input any of the three endpoints refuses the same way (`amount` is the money field).
COMMON: dict[str, BadCase] = {
    "malformed_json": lambda v: Bad(raw=as_json(v)[:-1]),
    "not_json": lambda v: Bad(raw="amount=10.00"),
    "json_array": lambda v: Bad(body=[v]),
    "json_string": lambda v: Bad(body="10.00"),
    "json_null": lambda v: Bad(raw="null"),
    "empty_body": lambda v: Bad(raw=""),
    "nan_literal": lambda v: Bad(raw=literal(v, "amount", "NaN")),
    "infinity_literal": lambda v: Bad(raw=literal(v, "amount", "Infinity")),
    "amount_as_string": lambda v: Bad(body=changed(v, "amount", "10.00")),
    "amount_as_boolean": lambda v: Bad(body=changed(v, "amount", True)),
    "amount_as_object": lambda v: Bad(body=changed(v, "amount", {"value": 10})),
    "amount_zero": lambda v: Bad(body=changed(v, "amount", Decimal("0"))),
    "amount_negative": lambda v: Bad(body=changed(v, "amount", Decimal("-5"))),
    "amount_over_precise": lambda v: Bad(body=changed(v, "amount", Decimal("10.001"))),
    "amount_exponent_over_precise": lambda v: Bad(raw=literal(v, "amount", "1.0001e1")),
    "amount_astronomic": lambda v: Bad(raw=literal(v, "amount", "1e400")),
    "body_over_64_kib": lambda v: Bad(body=changed(v, "padding", HUGE), status=413, code="CL2101"),
    "content_type_text": lambda v: Bad(
        body=v, headers={"Content-Type": "text/plain"}, status=415, code="CL2102"
    ),
    "content_type_form": lambda v: Bad(
        raw="amount=10.00",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        status=415,
        code="CL2102",
    ),
    "content_type_missing": lambda v: Bad(
        body=v, headers={"Content-Type": None}, status=415, code="CL2102"
    ),
}

PAYMENT_CASES: dict[str, BadCase] = {
    **COMMON,
    "amount_null": lambda v: Bad(body=changed(v, "amount", None)),
    "currency_as_number": lambda v: Bad(body=changed(v, "currency", 484)),
    "currency_lower_case": lambda v: Bad(body=changed(v, "currency", "mxn")),
    "currency_too_long": lambda v: Bad(body=changed(v, "currency", "MXNN")),
    "capture_method_later": lambda v: Bad(body=changed(v, "capture_method", "later")),
    "capture_method_number": lambda v: Bad(body=changed(v, "capture_method", 1)),
    "payment_method_string": lambda v: Bad(body=changed(v, "payment_method", "tok")),
    "payment_method_list": lambda v: Bad(body=changed(v, "payment_method", [v["payment_method"]])),
    "token_as_number": lambda v: Bad(body=changed(v, "payment_method.token", 12345)),
    "customer_not_object": lambda v: Bad(body=changed(v, "customer", "Ana")),
    "customer_email_not_email": lambda v: Bad(body=changed(v, "customer.email", "not-an-email")),
    "customer_address_not_object": lambda v: Bad(body=changed(v, "customer.address", "Calle 1")),
    "prevention_data_not_object": lambda v: Bad(body=changed(v, "prevention_data", "x")),
    "webhook_url_ftp": lambda v: Bad(body=changed(v, "webhook_url", "ftp://x")),
    "webhook_url_not_url": lambda v: Bad(body=changed(v, "webhook_url", "not a url")),
    "webhook_url_number": lambda v: Bad(body=changed(v, "webhook_url", 8000)),
    "return_url_javascript": lambda v: Bad(body=changed(v, "return_url", "javascript:alert(1)")),
    "description_as_number": lambda v: Bad(body=changed(v, "description", 5)),
    "installments_zero": lambda v: Bad(body=changed(v, "installments", 0)),
    "installments_string": lambda v: Bad(body=changed(v, "installments", "3")),
    "binary_mode_string": lambda v: Bad(body=changed(v, "binary_mode", "yes")),
    "metadata_not_object": lambda v: Bad(body=changed(v, "metadata", "x")),
    "tip_amount_negative": lambda v: Bad(body=changed(v, "tip_amount", Decimal("-1"))),
    "missing_amount": lambda v: Bad(body=dropped(v, "amount")),
    "missing_currency": lambda v: Bad(body=dropped(v, "currency")),
    "missing_payment_method": lambda v: Bad(body=dropped(v, "payment_method")),
    "missing_token": lambda v: Bad(body=dropped(v, "payment_method.token")),
    "empty_object": lambda v: Bad(body={}),
}

CAPTURE_CASES: dict[str, BadCase] = {
    **COMMON,
    "missing_status": lambda v: Bad(body=dropped(v, "status")),
    "status_unknown": lambda v: Bad(body=changed(v, "status", "captured")),
    "status_refunded": lambda v: Bad(body=changed(v, "status", "refunded")),
    "status_as_number": lambda v: Bad(body=changed(v, "status", 1)),
    "approved_without_paid_amount": lambda v: Bad(body=dropped(v, "amount")),
    "cancelled_with_paid_amount": lambda v: Bad(body=changed(v, "status", "cancelled")),
    "empty_object": lambda v: Bad(body={}),
    "capture_above_authorized": lambda v: Bad(
        body=changed(v, "amount", Decimal("250.01")), code="CL2205"
    ),
}

REFUND_CASES: dict[str, BadCase] = {
    **COMMON,
    "missing_payment_id": lambda v: Bad(body=dropped(v, "payment_id")),
    "payment_id_as_number": lambda v: Bad(body=changed(v, "payment_id", 12345)),
    "payment_id_as_object": lambda v: Bad(body=changed(v, "payment_id", {"id": v["payment_id"]})),
    "reason_as_number": lambda v: Bad(body=changed(v, "reason", 5)),
    "unknown_payment": lambda v: Bad(
        body=changed(v, "payment_id", "00000000-0000-4000-8000-000000000000"),
        status=404,
        code="BR1301",
    ),
    "refund_above_captured": lambda v: Bad(
        body=changed(v, "amount", Decimal("250.01")), code="CL2207"
    ),
}


def capture_body(valid: dict[str, Any]) -> dict[str, Any]:
    """PATCH names its money field `paid_amount`; the cases above say `amount`."""
    body = dict(valid)
    if "amount" in body:
        body["paid_amount"] = body.pop("amount")
    return body


def valid_payment(token: str) -> dict[str, Any]:
    return {
        "amount": Decimal("250.00"),
        "currency": "MXN",
        "description": "Taza de barro",
        "payment_method": {"token": token},
        "customer": {"email": "ana@example.com"},
    }


@pytest.mark.parametrize("case", list(PAYMENT_CASES.values()), ids=list(PAYMENT_CASES))
def test_bad_payment_creation_changes_nothing(api: Api, case: BadCase) -> None:
    """A bad POST /payments gets its error and leaves the token usable and no payment made."""
    # Given a fresh card token
    token = api.card_token(VISA)["id"]
    bad = case(valid_payment(token))

    # When a payment is created with a bad request
    response = send(api, "POST", "/payments", bad)

    # Then it gets the error body, no payment exists, and the token still pays
    assert_error(response, bad.status, bad.code)
    assert api.payments() == []
    paid = api.post("/payments", valid_payment(token))
    assert paid.status_code == 201, paid.text
    assert [p["id"] for p in api.payments()] == [paid.json()["id"]]


@pytest.mark.parametrize("case", list(CAPTURE_CASES.values()), ids=list(CAPTURE_CASES))
def test_bad_capture_changes_nothing(api: Api, case: BadCase) -> None:
    """A bad PATCH /payments/{id} gets its error and leaves the authorization as it was."""
    # Given an authorized payment of 250.00
    payment = api.create_payment(capture_method="manual")
    before = api.payment(payment["id"])
    assert before["status"] == "authorized"
    valid = {"status": "approved", "amount": Decimal("100.00")}
    bad = case(valid)
    if bad.body is not None and isinstance(bad.body, dict):
        bad.body = capture_body(bad.body)
    if bad.raw is not None:
        bad.raw = bad.raw.replace('"amount"', '"paid_amount"')

    # When it is captured or cancelled with a bad request
    response = send(api, "PATCH", f"/payments/{payment['id']}", bad)

    # Then it gets the error body and the payment keeps its status and version
    assert_error(response, bad.status, bad.code)
    after = api.payment(payment["id"])
    assert (after["status"], after["version"]) == (before["status"], before["version"])
    assert after == before
    assert len(api.payments()) == 1
    captured = api.patch(f"/payments/{payment['id']}", capture_body(valid))
    assert captured.status_code == 200, captured.text
    assert captured.json()["status"] == "approved"


@pytest.mark.parametrize("case", list(REFUND_CASES.values()), ids=list(REFUND_CASES))
def test_bad_refund_changes_nothing(api: Api, case: BadCase) -> None:
    """A bad POST /refunds gets its error and leaves the charge as it was."""
    # Given an approved payment of 250.00
    payment = api.create_payment()
    before = api.payment(payment["id"])
    assert before["status"] == "approved"
    valid = {"payment_id": payment["id"], "amount": Decimal("100.00"), "reason": "broken"}
    bad = case(valid)

    # When it is refunded with a bad request
    response = send(api, "POST", "/refunds", bad)

    # Then it gets the error body and the payment is unchanged, with no refund
    assert_error(response, bad.status, bad.code)
    after = api.payment(payment["id"])
    assert (after["status"], after["version"]) == (before["status"], before["version"])
    assert after == before
    assert after["refunds"] == [] and after["amount_refunded"] == Decimal("0.00")
    refunded = api.post("/refunds", valid)
    assert refunded.status_code == 201, refunded.text


# --- Amounts outside the method's accepted_amount, and currencies -------------------------


def accepted_amounts(api: Api) -> dict[str, tuple[Decimal, Decimal]]:
    methods = decimal_json(api.get("/payment_methods"))
    bounds = {}
    for method in methods:
        for item in method["validations"]:
            if item["name"] == "accepted_amount":
                bounds[method["id"]] = (item["metadata"]["min"], item["metadata"]["max"])
    return bounds


CARD_OF = {"visa": VISA, "master": MASTER, "amex": AMEX}
CENT = Decimal("0.01")


@pytest.mark.parametrize("side", ["below_min", "above_max"])
@pytest.mark.parametrize("method_id", sorted(CARD_OF))
def test_an_amount_outside_the_method_bounds_is_cl2203(api: Api, method_id: str, side: str) -> None:
    """An amount a cent outside the method's accepted_amount is 400 CL2203 and pays nothing."""
    # Given a token of the method and its listed bounds
    low, high = accepted_amounts(api)[method_id]
    assert low == Decimal("10.00")
    if method_id == "amex":
        assert high == Decimal("150000.00")
    amount = low - CENT if side == "below_min" else high + CENT
    token = api.card_token(CARD_OF[method_id])["id"]

    # When a payment is made a cent outside them
    response = api.post("/payments", changed(valid_payment(token), "amount", amount))

    # Then it is refused, no payment exists, and the token still pays a valid amount
    assert_error(response, 400, "CL2203")
    assert api.payments() == []
    paid = api.post("/payments", valid_payment(token))
    assert paid.status_code == 201, paid.text


@pytest.mark.parametrize("side", ["min", "max"])
@pytest.mark.parametrize("method_id", sorted(CARD_OF))
def test_the_bounds_themselves_are_accepted(api: Api, method_id: str, side: str) -> None:
    """The accepted_amount bounds are inclusive: min and max themselves pay."""
    # Given a token of the method and its listed bounds
    low, high = accepted_amounts(api)[method_id]
    token = api.card_token(CARD_OF[method_id])["id"]

    # When a payment is made for exactly a bound
    amount = low if side == "min" else high
    response = api.post("/payments", changed(valid_payment(token), "amount", amount))

    # Then it is approved for that amount
    assert response.status_code == 201, response.text
    assert decimal_json(response)["amount"] == amount


@pytest.mark.parametrize("currency", ["USD", "EUR"])
def test_a_currency_other_than_mxn_is_cl2211(api: Api, currency: str) -> None:
    """A payment in a currency the country does not use is 400 CL2211 and pays nothing."""
    # Given a fresh card token
    token = api.card_token(VISA)["id"]

    # When a payment in another currency is made
    response = api.post("/payments", changed(valid_payment(token), "currency", currency))

    # Then it is refused, and the token still pays in MXN
    assert_error(response, 400, "CL2211")
    assert api.payments() == []
    paid = api.post("/payments", valid_payment(token))
    assert paid.status_code == 201, paid.text


def test_json_with_a_charset_is_accepted(api: Api) -> None:
    """Content-Type application/json with a charset parameter is JSON too."""
    # Given a fresh card token
    token = api.card_token(VISA)["id"]

    # When a payment is sent with a charset in its Content-Type
    response = api.post(
        "/payments",
        valid_payment(token),
        headers={"Content-Type": "application/json; charset=utf-8"},
    )

    # Then it is created
    assert response.status_code == 201, response.text
