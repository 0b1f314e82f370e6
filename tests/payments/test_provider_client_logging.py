"""The client's logging: every call is logged, without credentials, with its request id and the
provider's error code."""

from __future__ import annotations

import base64
import logging
import re
import uuid
from typing import Any

import pytest
import requests
import responses

from payments.provider.client import PaymentsClient
from payments.provider.errors import Conflict, NotFound, OutcomeUnknown, Unauthorized
from payments.provider.retries import default_retry
from tests.helpers.provider import PUBLIC_KEY, SECRET_KEY, VISA, Api
from tests.payments.helpers import (
    FAKE_URL,
    PAYMENT_ID,
    dumps,
    error_body,
    key,
    payment_body,
    payment_json,
    token_for,
)


@pytest.mark.sandbox
def test_calls_are_logged_without_credentials(
    provider: Api, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Each call logs method, path, status and request id; no token, secret or card token."""
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.INFO, logger="payments.provider.client")
    client = PaymentsClient.from_settings()
    card_token = token_for(client)
    payment = client.create_payment(body=payment_body(card_token), idempotency_key=key())
    client.get_payment(payment.id)
    with pytest.raises(NotFound) as missing:
        client.get_payment(str(uuid.uuid4()))
    settings.PAYMENTS_ACCESS_TOKEN = "bm90LWEtcmVhbC10b2tlbg=="
    with pytest.raises(Unauthorized):
        PaymentsClient.from_settings().get_payment(payment.id)

    lines = [r.getMessage() for r in caplog.records if r.name == "payments.provider.client"]
    assert len(lines) == 5, lines
    expected = [
        r"POST /card_tokens -> 201 ",
        r"POST /payments -> 201 ",
        rf"GET /payments/{payment.id} -> 200 ",
        r"GET /payments/[0-9a-f-]+ -> 404 .*\(BR1301\)",
        rf"GET /payments/{payment.id} -> 401 .*\(CL1501\)",
    ]
    for line, pattern in zip(lines, expected, strict=True):
        assert re.search(pattern, line), line
        assert re.search(r"request_id=[0-9a-f]{32}", line), line
    assert f"request_id={missing.value.request_id}" in lines[3]
    assert all(
        r.levelno == logging.INFO for r in caplog.records if r.name == "payments.provider.client"
    )

    everything = caplog.text + "\n".join(r.getMessage() for r in caplog.records)
    access_token = base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
    for secret in (access_token, SECRET_KEY, card_token, "bm90LWEtcmVhbC10b2tlbg=="):
        assert secret not in everything


def test_logs_carry_request_id_and_error_code(
    mocked: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    """Logs name the provider's request id and error code, and never the Authorization value."""
    caplog.set_level(logging.DEBUG)
    mocked.get(
        f"{FAKE_URL}/payments/{PAYMENT_ID}",
        body=dumps(payment_json()),
        headers={"X-Request-Id": "req-ok-1"},
    )
    mocked.post(
        f"{FAKE_URL}/card_tokens",
        status=409,
        body=error_body("CL2206"),
        headers={"X-Request-Id": "req-bad-2"},
    )
    mocked.post(f"{FAKE_URL}/payments", body=requests.ReadTimeout("read timed out"))
    client = PaymentsClient(
        base_url=FAKE_URL,
        public_key="pk_live_visible",
        access_token="tok_secret_value",
        retry=default_retry(0),
    )

    client.get_payment(PAYMENT_ID)
    with pytest.raises(Conflict):
        client.create_card_token(
            number=VISA, exp_month="12", exp_year="2031", cvv="123", holder_name="Ana"
        )
    with pytest.raises(OutcomeUnknown):
        client.create_payment(
            body={"payment_method": {"token": "tok_card_9"}}, idempotency_key=key()
        )

    lines = [r.getMessage() for r in caplog.records if r.name == "payments.provider.client"]
    assert len(lines) == 3, lines
    assert re.search(rf"GET /payments/{PAYMENT_ID} -> 200 .*request_id=req-ok-1", lines[0])
    assert re.search(r"POST /card_tokens -> 409 .*request_id=req-bad-2.*\(CL2206\)", lines[1])
    assert re.search(r"POST /payments -> ReadTimeout", lines[2])
    for secret in ("tok_secret_value", "Basic tok", "tok_card_9", VISA):
        assert secret not in caplog.text
