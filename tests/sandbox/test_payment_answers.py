"""The shape of every Payment answer of the sandbox: every field of the spec with its type,
exact amounts, the merchant's fields echoed back, the PE-3DS01 message case, the spec's sample
quirk, installments and binary mode."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from tests.helpers.provider import (
    AMEX,
    DECLINED,
    INSUFFICIENT_FUNDS,
    MASTER,
    THREE_DS,
    VISA,
    Api,
    assert_error,
    decimal_json,
    same_payment,
)
from tests.helpers.servers import WebhookReceiver
from tests.sandbox.helpers import (
    AMOUNT,
    PASS,
    ZERO,
    assert_iso_subsecond,
    cancel,
    capture,
    complete_challenge,
)

# Every field of the spec's Payment table, and of its nested objects.
PAYMENT_FIELDS = {
    "id",
    "amount",
    "tip_amount",
    "amount_refunded",
    "installment_amount",
    "installments",
    "capture_method",
    "net_amount",
    "paid_amount",
    "captured_amount",
    "binary_mode",
    "approved_at",
    "country",
    "currency",
    "description",
    "external_reference",
    "customer",
    "payment_method",
    "pending_action",
    "receipt_no",
    "claims",
    "refunds",
    "statement_descriptor",
    "status",
    "status_detail",
    "metadata",
    "return_url",
    "webhook_url",
    "created_at",
    "version",
}
MONEY_FIELDS = (
    "amount",
    "tip_amount",
    "amount_refunded",
    "installment_amount",
    "net_amount",
    "paid_amount",
    "captured_amount",
)
STRING_FIELDS = (
    "id",
    "capture_method",
    "country",
    "currency",
    "description",
    "external_reference",
    "receipt_no",
    "statement_descriptor",
    "status",
    "return_url",
    "webhook_url",
    "created_at",
)
PAYMENT_METHOD_FIELDS = {"id", "type", "token", "card"}
CARD_FIELDS = {"bin", "issuer", "name", "country", "last_digits", "exp_year", "exp_month"}
STATUSES = {"approved", "refunded", "cancelled", "rejected", "authorized", "pending"}


# --- helpers ---------------------------------------------------------------------------------


def assert_payment_fields(payment: dict[str, Any]) -> None:
    """Every field of the spec's Payment, with the spec's types (amounts are JSON numbers)."""
    missing = PAYMENT_FIELDS - set(payment)
    assert not missing, f"missing {sorted(missing)} in {payment}"
    for name in MONEY_FIELDS:
        value = payment[name]
        assert isinstance(value, Decimal | int) and not isinstance(value, bool), (name, value)
    for name in STRING_FIELDS:
        assert isinstance(payment[name], str), (name, payment[name])
    assert isinstance(payment["installments"], int)
    assert isinstance(payment["version"], int) and not isinstance(payment["version"], bool)
    assert isinstance(payment["binary_mode"], bool)
    assert payment["capture_method"] in {"manual", "automatic"}
    assert payment["status"] in STATUSES
    assert_iso_subsecond(payment["created_at"])
    if payment["status"] == "approved" and payment["status_detail"]["code"] == "AP-PAI01":
        assert_iso_subsecond(payment["approved_at"])
    else:
        assert payment["approved_at"] is None or isinstance(payment["approved_at"], str)
    for name in ("customer", "metadata", "pending_action"):
        assert isinstance(payment[name], dict), (name, payment[name])
    assert isinstance(payment["claims"], list)
    assert isinstance(payment["refunds"], list)
    detail = payment["status_detail"]
    assert set(detail) >= {"code", "message"}, detail
    assert isinstance(detail["code"], str) and detail["code"]
    assert isinstance(detail["message"], str) and detail["message"]
    method = payment["payment_method"]
    assert set(method) >= PAYMENT_METHOD_FIELDS, method
    assert all(isinstance(method[name], str) for name in ("id", "type", "token")), method
    assert set(method["card"]) >= CARD_FIELDS, method["card"]
    assert all(isinstance(method["card"][name], str) for name in CARD_FIELDS), method["card"]
    if payment["pending_action"]:
        assert set(payment["pending_action"]) >= {"type", "url"}


def luhn_number(prefix: str, length: int = 16) -> str:
    """A Luhn-valid card number of `length` digits starting with `prefix`."""
    body = prefix.ljust(length - 1, "0")
    for check in "0123456789":
        digits = [int(c) for c in reversed(body + check)]
        total = sum(
            d if i % 2 == 0 else (d * 2 - 9 if d * 2 > 9 else d * 2) for i, d in enumerate(digits)
        )
        if total % 10 == 0:
            return body + check
    raise AssertionError(prefix)


# --- the shape of every answer -----------------------------------------------------------------


def test_every_payment_answer_carries_every_spec_field(api: Api, receiver: WebhookReceiver) -> None:
    """POST, GET and PATCH answers carry every Payment field of the spec, in every status."""
    # Given payments in each status, reached through POST, PATCH and the challenge page
    answers: list[dict[str, Any]] = []
    for number, fields in [
        (VISA, {}),
        (DECLINED, {}),
        (INSUFFICIENT_FUNDS, {}),
        (THREE_DS, {}),
        (MASTER, {"capture_method": "manual"}),
        (AMEX, {"capture_method": "manual"}),
    ]:
        answers.append(api.create_payment(number, webhook_url=receiver.url, **fields))
    pending, to_capture, to_cancel = answers[3:6]
    captured = capture(api, to_capture["id"], Decimal("100.00"))
    cancelled = cancel(api, to_cancel["id"])
    assert captured.status_code == cancelled.status_code == 200
    answers += [decimal_json(captured), decimal_json(cancelled)]
    complete_challenge(pending, PASS)
    refund = api.post("/refunds", {"payment_id": to_capture["id"], "amount": Decimal("10.00")})
    assert refund.status_code == 201, refund.text

    # When each of them is also read back with GET
    answers += [api.payment(answer["id"]) for answer in answers[:6]]

    # Then every answer has every field, with the spec's types
    assert {answer["status"] for answer in answers} == {
        "approved",
        "rejected",
        "pending",
        "authorized",
        "cancelled",
    }
    for answer in answers:
        assert_payment_fields(answer)


def test_amounts_are_exact_json_numbers(api: Api) -> None:
    """Amounts go out as JSON numbers with exact cents (1234.56 stays Decimal('1234.56'))."""
    # Given a payment of 1234.56 with a tip of 10.10
    payment = api.create_payment(
        VISA, amount=Decimal("1234.56"), tip_amount=Decimal("10.10"), capture_method="manual"
    )

    # When it is captured for 1000.01
    response = capture(api, payment["id"], Decimal("1000.01"))

    # Then every amount is a JSON number that parses to the exact Decimal
    assert response.status_code == 200, response.text
    assert re.search(r'"amount":\s*1234\.56[,}]', response.text), response.text
    captured = decimal_json(response)
    assert payment["amount"] == Decimal("1234.56")
    assert str(payment["amount"]) == "1234.56"
    assert payment["tip_amount"] == Decimal("10.10")
    assert captured["amount"] == Decimal("1234.56")
    assert captured["paid_amount"] == Decimal("1000.01")
    assert captured["captured_amount"] == Decimal("1000.01")
    for name in MONEY_FIELDS:
        assert isinstance(captured[name], Decimal | int), (name, captured[name])
    assert api.payment(payment["id"]) == captured


def test_the_merchant_fields_are_echoed_back(api: Api, receiver: WebhookReceiver) -> None:
    """customer, metadata, external_reference, description and URLs come back as sent."""
    # Given a creation with every merchant field filled in
    customer = {
        "first_name": "Ana",
        "last_name": "Pérez",
        "description": "cliente frecuente",
        "email": "ana@example.com",
        "phone": "+525512345678",
        "address": {
            "street": "Av. Insurgentes Sur",
            "number": "1602",
            "external_number": "1602",
            "internal_number": "4B",
            "colony": "Crédito Constructor",
            "city": "Ciudad de México",
            "state": "CDMX",
            "postal_code": "03940",
            "country": "MX",
        },
        "identification": {"id": "PEAA800101XXX", "type": "RFC"},
    }
    fields = {
        "customer": customer,
        "metadata": {"order_id": "A-1001", "gift": True, "items": 3, "tags": ["barro", "taza"]},
        "external_reference": "order-A-1001",
        "description": "Taza de barro negro",
        "statement_descriptor": "TIENDA TLALI",
        "return_url": "http://127.0.0.1:8000/checkout/return",
        "webhook_url": receiver.url,
    }

    # When the merchant creates the payment and reads it back
    created = api.create_payment(VISA, **fields)
    read = api.payment(created["id"])

    # Then each field is echoed unchanged in both answers
    for answer in (created, read):
        for name, value in fields.items():
            assert answer[name] == value, name


def test_metadata_numbers_are_echoed_exactly(api: Api) -> None:
    """metadata holding a non-integer JSON number is kept and echoed exactly (no 500)."""
    # Given metadata with decimal numbers, as a merchant's JSON naturally carries
    metadata = {"weight_kg": Decimal("1.25"), "lines": [{"sku": "T-1", "price": Decimal("99.90")}]}

    # When the merchant creates the payment
    response = api.create_payment_response(VISA, metadata=metadata)

    # Then it is created and the metadata comes back as sent
    assert response.status_code == 201, response.text
    payment = decimal_json(response)
    assert payment["metadata"] == metadata
    assert api.payment(payment["id"])["metadata"] == metadata


def test_pe3ds01_code_is_constant_whatever_the_message_case(api: Api) -> None:
    """A pending payment's code is PE-3DS01 in every answer; only the message's case varies."""
    # Given a payment pending 3-D Secure
    created = api.create_payment(THREE_DS)

    # When it is read through POST, GET and the payments list
    answers = [created, api.payment(created["id"]), *api.payments()]

    # Then the code is always PE-3DS01 and the message is "Waiting 3DS" in some letter case
    for answer in answers:
        assert answer["status"] == "pending"
        assert answer["status_detail"]["code"] == "PE-3DS01"
        assert answer["status_detail"]["message"].casefold() == "waiting 3ds"


def test_pe3ds01_message_case_varies_between_answers(api: Api) -> None:
    """As the specification warns, the same pending payment read three times in a row answers
    its message in three letter cases: a client must compare codes, never messages."""
    created = api.create_payment(THREE_DS)

    messages = [api.payment(created["id"])["status_detail"]["message"] for _ in range(3)]

    assert {message.casefold() for message in messages} == {"waiting 3ds"}
    assert len(set(messages)) == 3, messages


def test_authorized_as_approved_quirk_keeps_the_code_and_the_capture(api: Api) -> None:
    """With the spec's sample quirk an authorization answers `approved` + AU-CAP01 and captures."""
    # Given the quirk of the spec's sample authorization response
    quirk = api.post("/_sandbox/quirks", {"authorized_as_approved": True})
    assert quirk.status_code == 200, quirk.text

    # When the merchant authorizes a payment
    payment = api.create_payment(VISA, capture_method="manual")

    # Then the answer says approved with AU-CAP01, nothing is captured yet, and capture works
    assert payment["status"] == "approved"
    assert payment["status_detail"]["code"] == "AU-CAP01"
    assert payment["captured_amount"] == ZERO
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)
    response = capture(api, payment["id"], Decimal("200.00"))
    assert response.status_code == 200, response.text
    captured = decimal_json(response)
    assert captured["status"] == "approved"
    assert captured["status_detail"]["code"] == "AP-PAI01"
    assert captured["captured_amount"] == Decimal("200.00")
    assert captured["version"] == payment["version"] + 1


def test_installments_need_a_bin_with_installments(api: Api) -> None:
    """installments > 1 with a BIN outside installment_pattern: 400 CL2210, token still usable."""
    # Given a visa whose BIN (424242) is not in the catalogue's installment_pattern
    token = api.card_token(VISA)["id"]
    body = {
        "amount": AMOUNT,
        "currency": "MXN",
        "payment_method": {"token": token},
    }

    # When the merchant asks for 3 installments
    response = api.post("/payments", {**body, "installments": 3})

    # Then it is refused, nothing is created, and the token can still pay once
    assert_error(response, 400, "CL2210")
    assert api.payments() == []
    retry = api.post("/payments", body)
    assert retry.status_code == 201, retry.text
    assert decimal_json(retry)["installments"] == 1


def test_installments_with_an_eligible_bin_split_the_amount(api: Api) -> None:
    """A BIN in installment_pattern pays in installments: installment_amount = amount / n."""
    # Given a visa whose BIN matches the catalogue's installment_pattern (4152...)
    number = luhn_number("4152")

    # When the merchant creates a payment of 300.00 in 3 installments
    payment = api.create_payment(number, amount=Decimal("300.00"), installments=3)

    # Then it is approved in 3 installments of 100.00
    assert payment["status"] == "approved"
    assert payment["installments"] == 3
    assert payment["installment_amount"] == Decimal("100.00")


def test_binary_mode_rejects_what_would_need_3ds(api: Api) -> None:
    """binary_mode true with the 3-D Secure card: rejected RE-BIN01 instead of pending."""
    # Given the 3-D Secure card
    # When the merchant creates a payment in binary mode
    payment = api.create_payment(THREE_DS, binary_mode=True)

    # Then it is rejected at once, with no challenge to open
    assert payment["status"] == "rejected"
    assert payment["status_detail"]["code"] == "RE-BIN01"
    assert payment["binary_mode"] is True
    assert payment["pending_action"] == {}
    assert payment["captured_amount"] == ZERO
