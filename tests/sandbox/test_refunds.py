"""Contract of the refunds API (DESIGN.md sandbox contract): POST /refunds
{payment_id, amount?, reason?} -> 201 refund; never above what is left to refund; a full refund
on the day of approval voids the charge, later it refunds it; partial refunds keep `approved`."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
import requests

from tests.helpers.provider import (
    DECLINED,
    THREE_DS,
    VISA,
    Api,
    assert_error,
    decimal_json,
    same_payment,
)
from tests.helpers.servers import WebhookReceiver

AMOUNT = Decimal("250.00")
REFUND_FIELDS = {"id", "payment_id", "amount", "status", "created_at"}
ISO_SUBSECOND = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+(Z|[+-]\d{2}:\d{2})$")


def notification(payment_id: str, event_type: str) -> dict[str, str]:
    return {"id": payment_id, "origin": "payments-api", "event_type": event_type}


def refund(api: Api, payment_id: str, amount: Any = None, **extra: Any) -> requests.Response:
    body = {"payment_id": payment_id, **extra}
    if amount is not None:
        body["amount"] = amount
    return api.post("/refunds", body)


def refunded(api: Api, payment_id: str, amount: Any = None) -> dict[str, Any]:
    response = refund(api, payment_id, amount)
    assert response.status_code == 201, response.text
    return decimal_json(response)


def advance_clock(api: Api, days: int) -> None:
    response = api.post("/_sandbox/clock", {"advance_days": days})
    assert response.status_code == 200, response.text


def event_types(api: Api, payment_id: str) -> list[str]:
    """The notifications queued for a payment (the outbox is written with the change)."""
    return [delivery["event_type"] for delivery in api.deliveries(payment_id)]


def payment_in(api: Api, status: str) -> dict[str, Any]:
    """A payment brought to `status` through the API."""
    if status == "authorized":
        return api.create_payment(VISA, capture_method="manual")
    if status == "pending":
        return api.create_payment(THREE_DS)
    if status == "rejected":
        return api.create_payment(DECLINED)
    if status == "cancelled":
        payment = api.create_payment(VISA, capture_method="manual")
        response = api.patch(f"/payments/{payment['id']}", {"status": "cancelled"})
        assert response.status_code == 200, response.text
        return api.payment(payment["id"])
    if status == "voided":
        payment = api.create_payment(VISA)
        refunded(api, payment["id"])
        return api.payment(payment["id"])
    if status == "refunded":
        payment = api.create_payment(VISA)
        refunded(api, payment["id"], Decimal("50.00"))
        refunded(api, payment["id"])
        return api.payment(payment["id"])
    raise AssertionError(status)


def test_a_refund_answers_the_refund_record(api: Api) -> None:
    """POST /refunds answers 201 {id, payment_id, amount, status, created_at} with exact amounts."""
    # Given an approved payment
    payment = api.create_payment(VISA)

    # When the merchant refunds 100.50 of it with a reason
    response = refund(api, payment["id"], Decimal("100.50"), reason="cliente devolvió la taza")

    # Then the refund record is answered
    assert response.status_code == 201, response.text
    body = decimal_json(response)
    assert set(body) >= REFUND_FIELDS, body
    uuid.UUID(body["id"])
    assert body["payment_id"] == payment["id"]
    assert body["amount"] == Decimal("100.50")
    assert re.search(r'"amount":\s*100\.50[,}]', response.text), response.text
    assert isinstance(body["status"], str) and body["status"]
    assert ISO_SUBSECOND.match(body["created_at"]), body["created_at"]
    datetime.fromisoformat(body["created_at"])


def test_a_partial_refund_keeps_the_payment_approved(api: Api, receiver: WebhookReceiver) -> None:
    """A partial refund keeps `approved`, raises amount_refunded, is listed, sends no UPDATE."""
    # Given an approved payment of 250.00 whose INSERT was notified
    payment = api.create_payment(VISA, webhook_url=receiver.url)
    receiver.wait_for(1)

    # When the merchant refunds 100.50
    made = refunded(api, payment["id"], Decimal("100.50"))

    # Then the payment stays approved with 100.50 refunded, one version later, and no UPDATE
    after = api.payment(payment["id"])
    assert after["status"] == "approved"
    assert after["status_detail"]["code"] == "AP-PAI01"
    assert after["amount_refunded"] == Decimal("100.50")
    assert after["captured_amount"] == AMOUNT
    assert after["amount"] == AMOUNT
    assert after["version"] == payment["version"] + 1
    assert [(r["id"], r["amount"]) for r in after["refunds"]] == [(made["id"], Decimal("100.50"))]
    assert event_types(api, payment["id"]) == ["INSERT"]


def test_refunds_never_exceed_what_is_left(api: Api) -> None:
    """Partial refunds add up to at most the captured amount: beyond it 400 CL2207, unchanged."""
    # Given an approved payment of 250.00 with 100.00 and 100.00 refunded
    payment = api.create_payment(VISA)
    refunded(api, payment["id"], Decimal("100.00"))
    refunded(api, payment["id"], Decimal("100.00"))
    before = api.payment(payment["id"])

    # When the merchant asks for 50.01 with only 50.00 left
    response = refund(api, payment["id"], Decimal("50.01"))

    # Then it is refused and nothing changes
    assert_error(response, 400, "CL2207")
    assert api.payment(payment["id"]) == before
    assert before["status"] == "approved"
    assert before["amount_refunded"] == Decimal("200.00")
    assert len(before["refunds"]) == 2


def test_a_first_refund_above_the_charge_is_refused(api: Api) -> None:
    """A refund above the captured amount: 400 CL2207, unchanged."""
    # Given an approved payment of 250.00
    payment = api.create_payment(VISA)

    # When the merchant asks for 250.01
    response = refund(api, payment["id"], Decimal("250.01"))

    # Then it is refused and nothing changes
    assert_error(response, 400, "CL2207")
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)


def test_only_the_captured_amount_can_be_refunded(api: Api) -> None:
    """After a partial capture the refundable amount is what was captured, not what was held."""
    # Given an authorization of 250.00 captured for 100.00
    payment = api.create_payment(VISA, capture_method="manual")
    response = api.patch(
        f"/payments/{payment['id']}", {"status": "approved", "paid_amount": Decimal("100.00")}
    )
    assert response.status_code == 200, response.text
    captured = decimal_json(response)

    # When the merchant asks to refund 150.00, then refunds without an amount
    too_much = refund(api, payment["id"], Decimal("150.00"))
    made = refunded(api, payment["id"])

    # Then the first is refused and the second refunds the 100.00 captured
    assert_error(too_much, 400, "CL2207")
    assert made["amount"] == Decimal("100.00")
    after = api.payment(payment["id"])
    assert after["amount_refunded"] == Decimal("100.00")
    assert after["status"] == "cancelled"
    assert after["status_detail"]["code"] == "CA-VOI01"
    assert after["version"] == captured["version"] + 1


def test_a_full_refund_on_the_day_of_approval_voids_the_charge(
    api: Api, receiver: WebhookReceiver
) -> None:
    """A full refund on the day of approval: cancelled CA-VOI01, with a webhook UPDATE."""
    # Given a payment approved today
    payment = api.create_payment(VISA, webhook_url=receiver.url)

    # When the merchant refunds all of it the same day
    made = refunded(api, payment["id"], AMOUNT)

    # Then the charge is voided, one version later, and an UPDATE is notified
    after = api.payment(payment["id"])
    assert made["amount"] == AMOUNT
    assert after["status"] == "cancelled"
    assert after["status_detail"]["code"] == "CA-VOI01"
    assert after["amount_refunded"] == AMOUNT
    assert after["version"] == payment["version"] + 1
    assert receiver.wait_for(2) == [
        notification(payment["id"], "INSERT"),
        notification(payment["id"], "UPDATE"),
    ]


def test_a_full_refund_a_day_later_refunds_the_charge(api: Api, receiver: WebhookReceiver) -> None:
    """A full refund after the day of approval: refunded RF-REF01, with a webhook UPDATE."""
    # Given a payment approved yesterday
    payment = api.create_payment(VISA, webhook_url=receiver.url)
    advance_clock(api, 1)

    # When the merchant refunds all of it
    refunded(api, payment["id"])

    # Then it is refunded, one version later, and an UPDATE is notified
    after = api.payment(payment["id"])
    assert after["status"] == "refunded"
    assert after["status_detail"]["code"] == "RF-REF01"
    assert after["amount_refunded"] == AMOUNT
    assert after["version"] == payment["version"] + 1
    assert receiver.wait_for(2) == [
        notification(payment["id"], "INSERT"),
        notification(payment["id"], "UPDATE"),
    ]


def test_a_partial_refund_then_the_rest_refunds_the_charge(
    api: Api, receiver: WebhookReceiver
) -> None:
    """A partial refund then the rest (same day): refunded RF-REF01, one UPDATE only at the end."""
    # Given an approved payment of 250.00 partly refunded
    payment = api.create_payment(VISA, webhook_url=receiver.url)
    first = refunded(api, payment["id"], Decimal("100.00"))

    # When the merchant refunds the rest without giving an amount
    rest = refunded(api, payment["id"])

    # Then the rest is 150.00, the payment is refunded, and one UPDATE follows the INSERT
    assert rest["amount"] == Decimal("150.00")
    after = api.payment(payment["id"])
    assert after["status"] == "refunded"
    assert after["status_detail"]["code"] == "RF-REF01"
    assert after["amount_refunded"] == AMOUNT
    assert after["version"] == payment["version"] + 2
    assert [r["id"] for r in after["refunds"]] == [first["id"], rest["id"]]
    assert event_types(api, payment["id"]) == ["INSERT", "UPDATE"]
    assert receiver.wait_for(2) == [
        notification(payment["id"], "INSERT"),
        notification(payment["id"], "UPDATE"),
    ]


@pytest.mark.parametrize(
    "status", ["authorized", "pending", "rejected", "cancelled", "voided", "refunded"]
)
def test_only_an_approved_payment_can_be_refunded(api: Api, status: str) -> None:
    """Refund of an authorized, pending, rejected, cancelled or refunded payment: 409 CL2206."""
    # Given a payment that is not approved
    payment = payment_in(api, status)

    # When the merchant asks for a refund (full, then partial)
    full = refund(api, payment["id"])
    partial = refund(api, payment["id"], Decimal("10.00"))

    # Then both are refused and nothing changes
    assert_error(full, 409, "CL2206")
    assert_error(partial, 409, "CL2206")
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)


@pytest.mark.parametrize("payment_id", [str(uuid.uuid4()), "not-a-uuid"], ids=["uuid", "non-uuid"])
def test_a_refund_of_an_unknown_payment_is_not_found(api: Api, payment_id: str) -> None:
    """Refund of a payment that does not exist: 404 BR1301."""
    # Given a sandbox with an unrelated approved payment
    api.create_payment(VISA)

    # When the merchant refunds a payment id it never got
    response = refund(api, payment_id, Decimal("10.00"))

    # Then it is not found
    assert_error(response, 404, "BR1301")


@pytest.mark.parametrize(
    "amount",
    [Decimal("0"), Decimal("0.00"), Decimal("-5.00"), Decimal("1.234"), "10.00", True],
    ids=["zero", "zero-cents", "negative", "over-precise", "string", "boolean"],
)
def test_a_refund_amount_must_be_a_positive_number_of_cents(api: Api, amount: Any) -> None:
    """A refund amount that is zero, negative, over-precise or not a number: 400 CL2100."""
    # Given an approved payment
    payment = api.create_payment(VISA)

    # When the merchant refunds a bad amount
    response = refund(api, payment["id"], amount)

    # Then it is refused and nothing changes
    assert_error(response, 400, "CL2100")
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)


def test_a_refund_needs_a_payment_id(api: Api) -> None:
    """A refund without payment_id: 400 CL2100."""
    # Given an approved payment
    payment = api.create_payment(VISA)

    # When the merchant forgets payment_id
    response = api.post("/refunds", {"amount": Decimal("10.00")})

    # Then it is refused and nothing changes
    assert_error(response, 400, "CL2100")
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)
