"""Contract of the payment state machine: one test (or case) per row of the spec's payment
transition table, with status, status_detail.code, amounts and `version` (up by one on every
change), and the sandbox contract's error codes. The shape of the answers is in
test_payment_answers.py."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest

from tests.helpers.provider import (
    AMEX,
    DECLINED,
    INSUFFICIENT_FUNDS,
    MASTER,
    PROVIDER_ERROR,
    THREE_DS,
    VISA,
    Api,
    assert_error,
    decimal_json,
    same_payment,
)
from tests.helpers.sandbox import SandboxProcess
from tests.helpers.servers import WebhookReceiver
from tests.sandbox.helpers import (
    AMOUNT,
    PASS,
    ZERO,
    assert_iso_subsecond,
    cancel,
    capture,
    challenge_page,
    challenge_post,
    complete_challenge,
)

# --- helpers ---------------------------------------------------------------------------------


def notification(payment_id: str, event_type: str) -> dict[str, str]:
    return {"id": payment_id, "origin": "payments-api", "event_type": event_type}


def advance_clock(api: Api, days: int) -> None:
    response = api.post("/_sandbox/clock", {"advance_days": days})
    assert response.status_code == 200, response.text


def payment_in(api: Api, status: str) -> dict[str, Any]:
    """A payment brought to `status` through the API."""
    if status == "approved":
        return api.create_payment(VISA)
    if status == "rejected":
        return api.create_payment(DECLINED)
    if status == "pending":
        return api.create_payment(THREE_DS)
    if status == "authorized":
        return api.create_payment(VISA, capture_method="manual")
    if status == "cancelled":
        payment = api.create_payment(VISA, capture_method="manual")
        assert cancel(api, payment["id"]).status_code == 200
        return api.payment(payment["id"])
    if status == "refunded":
        payment = api.create_payment(VISA)
        advance_clock(api, 1)
        response = api.post("/refunds", {"payment_id": payment["id"]})
        assert response.status_code == 201, response.text
        return api.payment(payment["id"])
    raise AssertionError(status)


# --- (none) -> authorized / pending / approved / rejected -------------------------------------


@pytest.mark.parametrize(
    ("number", "method_id"),
    [(VISA, "visa"), (MASTER, "master"), (AMEX, "amex")],
    ids=["visa", "master", "amex"],
)
def test_manual_capture_authorizes_without_charging(
    api: Api, receiver: WebhookReceiver, number: str, method_id: str
) -> None:
    """(none) -> authorized AU-CAP01: manual capture holds the funds, captures nothing, INSERT."""
    # Given a tokenized test card of each network
    # When the merchant creates a payment with manual capture
    payment = api.create_payment(number, capture_method="manual", webhook_url=receiver.url)

    # Then it is authorized, nothing is captured, and an INSERT is notified
    assert payment["status"] == "authorized"
    assert payment["status_detail"] == {"code": "AU-CAP01", "message": "Pending capture"}
    assert payment["capture_method"] == "manual"
    assert payment["amount"] == AMOUNT
    assert payment["captured_amount"] == ZERO
    assert payment["paid_amount"] == ZERO
    assert payment["approved_at"] is None
    assert payment["pending_action"] == {}
    assert payment["payment_method"]["id"] == method_id
    assert payment["payment_method"]["card"]["last_digits"] == number[-4:]
    assert isinstance(payment["version"], int) and payment["version"] >= 1
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)
    assert receiver.wait_for(1) == [notification(payment["id"], "INSERT")]


def test_a_3ds_card_leaves_the_payment_pending_with_a_challenge(
    api: Api, sandbox: SandboxProcess
) -> None:
    """(none) -> pending PE-3DS01 with pending_action {open_modal, url on the sandbox origin}."""
    # Given the 3-D Secure test card
    # When the merchant creates a payment
    payment = api.create_payment(THREE_DS)

    # Then it waits for 3-D Secure at a page on the sandbox's own origin
    assert payment["status"] == "pending"
    assert payment["status_detail"]["code"] == "PE-3DS01"
    assert payment["pending_action"]["type"] == "open_modal"
    assert payment["pending_action"]["url"].startswith(f"{sandbox.base_url}/")
    assert payment["captured_amount"] == ZERO
    assert payment["approved_at"] is None
    challenge_page(payment)


def test_automatic_capture_approves_and_charges_the_full_amount(api: Api) -> None:
    """(none) -> approved AP-PAI01: paid_amount = captured_amount = amount, approved_at set."""
    # Given a tokenized visa
    # When the merchant creates a payment with automatic capture
    payment = api.create_payment(VISA, capture_method="automatic")

    # Then it is charged in full at once
    assert payment["status"] == "approved"
    assert payment["status_detail"] == {"code": "AP-PAI01", "message": "paid"}
    assert payment["amount"] == AMOUNT
    assert payment["paid_amount"] == AMOUNT
    assert payment["captured_amount"] == AMOUNT
    assert payment["amount_refunded"] == ZERO
    assert_iso_subsecond(payment["approved_at"])
    assert_iso_subsecond(payment["created_at"])
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)


@pytest.mark.parametrize(
    ("number", "code"),
    [(DECLINED, "RE-DEC01"), (INSUFFICIENT_FUNDS, "RE-FUN01")],
    ids=["declined", "insufficient-funds"],
)
def test_declined_cards_are_rejected(api: Api, number: str, code: str) -> None:
    """(none) -> rejected: a declined card gives RE-DEC01, insufficient funds RE-FUN01."""
    # Given a card the issuer declines
    # When the merchant creates a payment
    payment = api.create_payment(number)

    # Then it is rejected with the decline's detail and nothing is charged
    assert payment["status"] == "rejected"
    assert payment["status_detail"]["code"] == code
    assert payment["captured_amount"] == ZERO
    assert payment["paid_amount"] == ZERO
    assert payment["approved_at"] is None
    assert payment["pending_action"] == {}
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)


# --- pending -> approved / rejected / authorized ---------------------------------------------


@pytest.mark.parametrize(
    ("form", "status", "code"),
    [
        (PASS, "approved", "AP-PAI01"),
        ({"action": "submit", "code": "000000"}, "rejected", "RE-3DS01"),
        ({"action": "cancel"}, "rejected", "RE-3DS01"),
    ],
    ids=["right-code", "wrong-code", "cancel"],
)
def test_completing_3ds_decides_the_pending_payment(
    api: Api, receiver: WebhookReceiver, form: dict[str, str], status: str, code: str
) -> None:
    """pending -> approved (code 123456) or rejected RE-3DS01 (wrong code, cancel); UPDATE sent."""
    # Given a payment pending 3-D Secure
    payment = api.create_payment(THREE_DS, webhook_url=receiver.url)
    assert payment["status"] == "pending"

    # When the shopper completes the challenge page
    complete_challenge(payment, form)

    # Then GET gives the final status, one version later, and an UPDATE is notified
    after = api.payment(payment["id"])
    assert after["status"] == status
    assert after["status_detail"]["code"] == code
    assert after["version"] == payment["version"] + 1
    assert after["pending_action"] == {}
    charged = AMOUNT if status == "approved" else ZERO
    assert after["captured_amount"] == charged
    assert after["paid_amount"] == charged
    if status == "approved":
        assert_iso_subsecond(after["approved_at"])
    else:
        assert after["approved_at"] is None
    assert receiver.wait_for(2) == [
        notification(payment["id"], "INSERT"),
        notification(payment["id"], "UPDATE"),
    ]


def test_passing_3ds_with_manual_capture_authorizes(api: Api) -> None:
    """pending -> authorized AU-CAP01 when the payment asked for manual capture; capture works."""
    # Given a manual-capture payment pending 3-D Secure
    payment = api.create_payment(THREE_DS, capture_method="manual")
    assert payment["status"] == "pending"

    # When the shopper passes the challenge
    complete_challenge(payment, PASS)

    # Then the funds are held, not charged, and can be captured
    after = api.payment(payment["id"])
    assert after["status"] == "authorized"
    assert after["status_detail"]["code"] == "AU-CAP01"
    assert after["captured_amount"] == ZERO
    assert after["version"] == payment["version"] + 1
    captured = capture(api, payment["id"], AMOUNT)
    assert captured.status_code == 200, captured.text
    assert decimal_json(captured)["status"] == "approved"


@pytest.mark.parametrize("first", [PASS, {"action": "cancel"}], ids=["passed", "failed"])
def test_a_completed_challenge_cannot_be_replayed(api: Api, first: dict[str, str]) -> None:
    """Posting the challenge again after it is over answers 409 and changes nothing."""
    # Given a challenge already completed
    payment = api.create_payment(THREE_DS)
    complete_challenge(payment, first)
    done = api.payment(payment["id"])

    # When the form is posted again (passing or failing)
    for form in (PASS, {"action": "submit", "code": "000000"}):
        again = challenge_post(payment, form)

        # Then it is refused and the payment is as it was
        assert again.status_code == 409, again.text
        assert api.payment(payment["id"]) == done


# --- authorized -> approved / cancelled / expired --------------------------------------------


@pytest.mark.parametrize("paid_amount", [AMOUNT, Decimal("100.50")], ids=["full", "partial"])
def test_capturing_an_authorization_charges_the_paid_amount(
    api: Api, receiver: WebhookReceiver, paid_amount: Decimal
) -> None:
    """authorized -> approved AP-PAI01 by PATCH: captured_amount = paid_amount, amount unchanged."""
    # Given an authorization of 250.00
    payment = api.create_payment(VISA, capture_method="manual", webhook_url=receiver.url)

    # When the merchant captures all of it or less
    response = capture(api, payment["id"], paid_amount)

    # Then the captured amount is charged, one version later, with an UPDATE
    assert response.status_code == 200, response.text
    captured = decimal_json(response)
    assert captured["status"] == "approved"
    assert captured["status_detail"] == {"code": "AP-PAI01", "message": "paid"}
    assert captured["amount"] == AMOUNT
    assert captured["paid_amount"] == paid_amount
    assert captured["captured_amount"] == paid_amount
    assert captured["version"] == payment["version"] + 1
    assert_iso_subsecond(captured["approved_at"])
    assert api.payment(payment["id"]) == captured
    assert receiver.wait_for(2) == [
        notification(payment["id"], "INSERT"),
        notification(payment["id"], "UPDATE"),
    ]


def test_a_capture_above_the_authorization_is_refused(api: Api) -> None:
    """PATCH approved with paid_amount above the authorized amount: 400 CL2205, nothing changes."""
    # Given an authorization of 250.00
    payment = api.create_payment(VISA, capture_method="manual")

    # When the merchant tries to capture 250.01
    response = capture(api, payment["id"], Decimal("250.01"))

    # Then it is refused and the authorization is untouched
    assert_error(response, 400, "CL2205")
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)


def test_cancelling_an_authorization_releases_it(api: Api, receiver: WebhookReceiver) -> None:
    """authorized -> cancelled CA-MER01 by PATCH {status: cancelled}; nothing is charged."""
    # Given an authorization
    payment = api.create_payment(VISA, capture_method="manual", webhook_url=receiver.url)

    # When the merchant cancels it
    response = cancel(api, payment["id"])

    # Then it is cancelled without charge, one version later, with an UPDATE
    assert response.status_code == 200, response.text
    cancelled = decimal_json(response)
    assert cancelled["status"] == "cancelled"
    assert cancelled["status_detail"] == {"code": "CA-MER01", "message": "Cancelled"}
    assert cancelled["captured_amount"] == ZERO
    assert cancelled["paid_amount"] == ZERO
    assert cancelled["amount"] == AMOUNT
    assert cancelled["version"] == payment["version"] + 1
    assert api.payment(payment["id"]) == cancelled
    assert receiver.wait_for(2)[1] == notification(payment["id"], "UPDATE")


def test_an_authorization_expires_after_30_days(api: Api, receiver: WebhookReceiver) -> None:
    """authorized -> cancelled CA-EXP01 after 30 days, with an UPDATE; no capture after that."""
    # Given an authorization that was never captured
    payment = api.create_payment(VISA, capture_method="manual", webhook_url=receiver.url)
    receiver.wait_for(1)

    # When 30 days pass
    advance_clock(api, 30)

    # Then it is cancelled as expired, one version later, with an UPDATE
    expired = api.payment(payment["id"])
    assert expired["status"] == "cancelled"
    assert expired["status_detail"]["code"] == "CA-EXP01"
    assert expired["captured_amount"] == ZERO
    assert expired["version"] == payment["version"] + 1
    assert receiver.wait_for(2) == [
        notification(payment["id"], "INSERT"),
        notification(payment["id"], "UPDATE"),
    ]
    assert_error(capture(api, payment["id"], AMOUNT), 409, "CL2206")
    assert api.payment(payment["id"]) == expired


def test_an_authorization_is_still_capturable_after_29_days(api: Api) -> None:
    """29 days are not enough to expire an authorization: it stays authorized and captures."""
    # Given an authorization
    payment = api.create_payment(VISA, capture_method="manual")

    # When 29 days pass
    advance_clock(api, 29)

    # Then it is unchanged and can still be captured
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)
    response = capture(api, payment["id"], AMOUNT)
    assert response.status_code == 200, response.text
    captured = decimal_json(response)
    assert captured["status"] == "approved"
    assert captured["version"] == payment["version"] + 1


# --- approved -> cancelled / refunded ----------------------------------------------------------


@pytest.mark.parametrize(
    ("days_later", "status", "code"),
    [(0, "cancelled", "CA-VOI01"), (1, "refunded", "RF-REF01")],
    ids=["same-day-void", "next-day-refund"],
)
def test_an_approved_payment_is_reversed_through_refunds(
    api: Api, receiver: WebhookReceiver, days_later: int, status: str, code: str
) -> None:
    """approved -> cancelled (same day) or refunded (later) via POST /refunds, with an UPDATE."""
    # Given an approved payment
    payment = api.create_payment(VISA, webhook_url=receiver.url)
    receiver.wait_for(1)
    if days_later:
        advance_clock(api, days_later)

    # When the merchant refunds it in full
    response = api.post("/refunds", {"payment_id": payment["id"]})

    # Then it is voided or refunded, one version later, with an UPDATE
    assert response.status_code == 201, response.text
    after = api.payment(payment["id"])
    assert after["status"] == status
    assert after["status_detail"]["code"] == code
    assert after["amount_refunded"] == AMOUNT
    assert after["version"] == payment["version"] + 1
    assert receiver.wait_for(2) == [
        notification(payment["id"], "INSERT"),
        notification(payment["id"], "UPDATE"),
    ]


# --- transitions that are not in the table ---------------------------------------------------


@pytest.mark.parametrize("status", ["approved", "rejected", "pending", "cancelled", "refunded"])
@pytest.mark.parametrize(
    "body",
    [{"status": "approved", "paid_amount": Decimal("10.00")}, {"status": "cancelled"}],
    ids=["capture", "cancel"],
)
def test_patch_is_refused_unless_authorized(api: Api, status: str, body: dict[str, Any]) -> None:
    """PATCH from approved, rejected, pending, cancelled or refunded: 409 CL2206, unchanged."""
    # Given a payment that is not authorized
    payment = payment_in(api, status)
    assert payment["status"] == status

    # When the merchant tries to capture or cancel it
    response = api.patch(f"/payments/{payment['id']}", body)

    # Then the transition is refused and the payment is as it was
    assert_error(response, 409, "CL2206")
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)


@pytest.mark.parametrize(
    "body",
    [
        {"status": "approved"},
        {"status": "cancelled", "paid_amount": Decimal("10.00")},
        {"status": "refunded"},
        {"status": "approved", "paid_amount": Decimal("0")},
        {"status": "approved", "paid_amount": Decimal("-1.00")},
        {"status": "approved", "paid_amount": Decimal("10.001")},
        {"status": "approved", "paid_amount": "10.00"},
        {"paid_amount": Decimal("10.00")},
    ],
    ids=[
        "capture-without-amount",
        "cancel-with-amount",
        "unknown-status",
        "zero",
        "negative",
        "over-precise",
        "amount-as-string",
        "no-status",
    ],
)
def test_a_malformed_patch_is_refused(api: Api, body: dict[str, Any]) -> None:
    """A malformed PATCH of an authorization: 400 CL2100, nothing changes."""
    # Given an authorization
    payment = api.create_payment(VISA, capture_method="manual")

    # When the merchant sends a malformed capture or cancel
    response = api.patch(f"/payments/{payment['id']}", body)

    # Then it is refused and the authorization is untouched
    assert_error(response, 400, "CL2100")
    assert same_payment(api.payment(payment["id"])) == same_payment(payment)


@pytest.mark.parametrize("payment_id", [str(uuid.uuid4()), "not-a-uuid"], ids=["uuid", "non-uuid"])
@pytest.mark.parametrize("method", ["GET", "PATCH"])
def test_an_unknown_payment_is_not_found(api: Api, payment_id: str, method: str) -> None:
    """GET or PATCH of a payment that does not exist: 404 BR1301."""
    # Given a sandbox with an unrelated payment
    api.create_payment(VISA, capture_method="manual")
    body = {"status": "cancelled"} if method == "PATCH" else None

    # When the merchant asks for a payment id it never got
    response = api.request(method, f"/payments/{payment_id}", body)

    # Then it is not found
    assert_error(response, 404, "BR1301")


def test_a_provider_error_card_creates_nothing(api: Api) -> None:
    """The provider-error card: 500 AI1899 with the error body, and no payment exists."""
    # Given the provider-error test card
    # When the merchant creates a payment
    response = api.create_payment_response(PROVIDER_ERROR)

    # Then the answer is the spec's internal error and nothing was created
    body = assert_error(response, 500, "AI1899")
    assert body["message"] == "Internal error."
    assert api.payments() == []
