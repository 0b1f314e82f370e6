"""Contract of `Idempotency-Key` on POST /payments, PATCH /payments/{id} and POST /refunds:
the same key and body answer the first answer again and do the work once; another body is
409 CL2208; a request still running is 409 CL2209; a 5xx is not kept, so a retry runs again."""

from __future__ import annotations

import threading
import uuid
from decimal import Decimal
from typing import Any

import requests

from tests.helpers.provider import VISA, Api, assert_error, decimal_json
from tests.helpers.sandbox import SandboxProcess

AMOUNT = Decimal("250.00")


def new_key() -> str:
    return f"test-{uuid.uuid4()}"


def payment_body(api: Api, **fields: Any) -> dict[str, Any]:
    """A POST /payments body with a fresh single-use card token."""
    return {
        "amount": AMOUNT,
        "currency": "MXN",
        "description": "Taza de barro",
        "payment_method": {"token": api.card_token(VISA)["id"]},
        **fields,
    }


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def inject_fault(api: Api, **fault: Any) -> None:
    response = api.post("/_sandbox/faults", fault)
    assert response.status_code == 201, response.text


def test_the_same_key_and_body_replays_the_payment(api: Api) -> None:
    """The same key and body on POST /payments: the same 201 answer, replayed, one payment."""
    # Given a payment created with an Idempotency-Key
    key, body = new_key(), payment_body(api)
    first = api.post("/payments", body, headers=keyed(key))
    assert first.status_code == 201, first.text
    assert "Idempotent-Replayed" not in first.headers

    # When the merchant sends the very same request again
    again = api.post("/payments", body, headers=keyed(key))

    # Then the first answer comes back, marked as replayed, and only one payment exists
    assert again.status_code == 201, again.text
    assert again.headers["Idempotent-Replayed"] == "true"
    assert decimal_json(again) == decimal_json(first)
    assert [p["id"] for p in api.payments()] == [decimal_json(first)["id"]]


def test_the_same_key_with_another_body_is_refused(api: Api) -> None:
    """The same key with another body on POST /payments: 409 CL2208 and nothing is created."""
    # Given a payment created with an Idempotency-Key
    key = new_key()
    first = api.post("/payments", payment_body(api), headers=keyed(key))
    assert first.status_code == 201, first.text

    # When the merchant reuses the key for another payment
    other = payment_body(api, amount=Decimal("99.00"))
    response = api.post("/payments", other, headers=keyed(key))

    # Then it is refused, nothing is created, and the other card token is still unused
    assert_error(response, 409, "CL2208")
    assert [p["id"] for p in api.payments()] == [decimal_json(first)["id"]]
    unkeyed = api.post("/payments", other)
    assert unkeyed.status_code == 201, unkeyed.text


def test_the_same_key_captures_once(api: Api) -> None:
    """The same key and body on PATCH (capture): the same answer, captured once, version +1 once."""
    # Given an authorization
    payment = api.create_payment(VISA, capture_method="manual")
    key = new_key()
    body = {"status": "approved", "paid_amount": Decimal("100.00")}

    # When the merchant sends the same capture twice with one key
    first = api.patch(f"/payments/{payment['id']}", body, headers=keyed(key))
    again = api.patch(f"/payments/{payment['id']}", body, headers=keyed(key))

    # Then the second replays the first, and the payment was changed once
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert decimal_json(again) == decimal_json(first)
    after = api.payment(payment["id"])
    assert after["status"] == "approved"
    assert after["captured_amount"] == Decimal("100.00")
    assert after["version"] == payment["version"] + 1

    # And the key cannot be reused for another capture body
    other = {"status": "approved", "paid_amount": Decimal("50.00")}
    assert_error(api.patch(f"/payments/{payment['id']}", other, headers=keyed(key)), 409, "CL2208")
    assert api.payment(payment["id"]) == after


def test_the_same_key_refunds_once(api: Api) -> None:
    """The same key and body on POST /refunds: the same refund answered twice, one refund made."""
    # Given an approved payment
    payment = api.create_payment(VISA)
    key = new_key()
    body = {"payment_id": payment["id"], "amount": Decimal("50.00")}

    # When the merchant sends the same refund twice with one key
    first = api.post("/refunds", body, headers=keyed(key))
    again = api.post("/refunds", body, headers=keyed(key))

    # Then the second replays the first, and one refund of 50.00 exists
    assert first.status_code == again.status_code == 201, (first.text, again.text)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert decimal_json(again) == decimal_json(first)
    after = api.payment(payment["id"])
    assert after["amount_refunded"] == Decimal("50.00")
    assert [r["id"] for r in after["refunds"]] == [decimal_json(first)["id"]]
    assert after["version"] == payment["version"] + 1

    # And the key cannot be reused for another refund body
    other = {"payment_id": payment["id"], "amount": Decimal("60.00")}
    assert_error(api.post("/refunds", other, headers=keyed(key)), 409, "CL2208")
    assert api.payment(payment["id"]) == after


def test_concurrent_requests_with_one_key_create_one_payment(
    api: Api, sandbox: SandboxProcess
) -> None:
    """20 simultaneous POSTs with one key and body: one payment; each answer 201 or 409 CL2209."""
    # Given one payment request and one key, and 20 clients released together
    key, body = new_key(), payment_body(api)
    clients = 20
    barrier = threading.Barrier(clients)
    answers: list[requests.Response | BaseException] = [RuntimeError("not run")] * clients

    def send(index: int) -> None:
        client = Api(sandbox.base_url)
        try:
            barrier.wait(timeout=30)
            answers[index] = client.post("/payments", body, headers=keyed(key))
        except BaseException as exc:  # reported by the assertions below
            answers[index] = exc
        finally:
            client.session.close()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(clients)]

    # When they all send it at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # Then exactly one payment exists, and every answer is that payment or "in progress"
    payments = api.payments()
    assert len(payments) == 1, payments
    created = payments[0]["id"]
    outcomes = []
    for answer in answers:
        assert isinstance(answer, requests.Response), answer
        if answer.status_code == 201:
            assert decimal_json(answer)["id"] == created
            outcomes.append("created")
        else:
            assert_error(answer, 409, "CL2209")
            outcomes.append("in progress")
    assert "created" in outcomes
    originals = [
        a for a in answers if a.status_code == 201 and "Idempotent-Replayed" not in a.headers
    ]
    assert len(originals) == 1, "exactly one answer comes from running the request"


def test_a_server_error_is_not_kept_for_the_key(api: Api) -> None:
    """A 5xx answer is not kept: the retry with the same key runs and creates the payment."""
    # Given the next POST /payments fails with 503 before it is processed
    inject_fault(api, path="/payments", method="POST", status=503, times=1)
    key, body = new_key(), payment_body(api)

    # When the merchant posts with a key, then retries with the same key
    failed = api.post("/payments", body, headers=keyed(key))
    assert_error(failed, 503, "AI1899")
    assert api.payments() == []
    retry = api.post("/payments", body, headers=keyed(key))

    # Then the retry creates the payment (it is not a replay of the 503)
    assert retry.status_code == 201, retry.text
    assert [p["id"] for p in api.payments()] == [decimal_json(retry)["id"]]


def test_a_processed_request_whose_answer_failed_is_replayed_on_retry(api: Api) -> None:
    """Processed but answered 502: the retry with the same key answers 201, one payment only."""
    # Given the next POST /payments is processed but its answer is replaced by a 502
    inject_fault(api, path="/payments", method="POST", status=502, times=1, after_processing=True)
    key, body = new_key(), payment_body(api)

    # When the merchant posts with a key, gets the 502, and retries with the same key
    failed = api.post("/payments", body, headers=keyed(key))
    assert_error(failed, 502, "AI1899")
    retry = api.post("/payments", body, headers=keyed(key))

    # Then the retry answers the payment that was made, and no second one was made
    assert retry.status_code == 201, retry.text
    payments = api.payments()
    assert [p["id"] for p in payments] == [decimal_json(retry)["id"]]
    assert payments[0]["status"] == "approved"


def test_a_validation_error_is_replayed_for_the_key(api: Api) -> None:
    """A 400 is kept: the same key and body answer the same 400 again, and nothing is created."""
    # Given a payment request with an invalid amount
    key = new_key()
    body = payment_body(api, amount="two hundred")

    # When the merchant sends it twice with one key
    first = api.post("/payments", body, headers=keyed(key))
    again = api.post("/payments", body, headers=keyed(key))

    # Then both answers are the same 400, the second replayed, and nothing is created
    first_body = assert_error(first, 400, "CL2100")
    assert assert_error(again, 400, "CL2100") == first_body
    assert again.headers["Idempotent-Replayed"] == "true"
    assert api.payments() == []
