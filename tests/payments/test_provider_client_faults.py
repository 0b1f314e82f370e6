"""The client against `responses`, for faults the sandbox cannot easily make: connection errors
and timeouts, error bodies and status codes turned into typed errors, the authorization header
and Idempotency-Key of each request, and exact JSON amounts."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
import requests
import responses

from payments.provider.errors import (
    Conflict,
    InvalidRequest,
    NotFound,
    OutcomeUnknown,
    ProviderApiError,
    ProviderUnavailable,
    Unauthorized,
)
from tests.helpers.provider import VISA
from tests.payments.helpers import (
    FAKE_URL,
    PAYMENT_ID,
    SEEDED_SUBSCRIPTION,
    dumps,
    error_body,
    fake_client,
    key,
    payment_json,
)


def test_connection_error_on_get_raises_provider_unavailable(
    mocked: responses.RequestsMock,
) -> None:
    """A GET whose connection fails raises ProviderUnavailable (never OutcomeUnknown)."""
    mocked.get(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=requests.ConnectionError("reset"))

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().get_payment(PAYMENT_ID)

    assert type(caught.value) is ProviderUnavailable
    assert caught.value.http_status is None


@pytest.mark.parametrize(
    "error",
    [
        requests.ConnectionError("Connection aborted: RemoteDisconnected"),
        requests.ReadTimeout("read timed out"),
    ],
    ids=["connection-error", "read-timeout"],
)
def test_connection_error_or_timeout_on_post_raises_outcome_unknown(
    mocked: responses.RequestsMock, error: Exception
) -> None:
    """A POST sent without an answer (reset, read timeout) raises OutcomeUnknown."""
    mocked.post(f"{FAKE_URL}/payments", body=error)

    with pytest.raises(OutcomeUnknown):
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=key())


@pytest.mark.parametrize(
    "error",
    [
        requests.ConnectionError(
            "HTTPConnectionPool(host='provider.test', port=80): Max retries exceeded (Caused by "
            "NewConnectionError(': Failed to establish a new connection: "
            "[Errno 111] Connection refused'))"
        ),
        requests.ConnectTimeout("connect timed out"),
    ],
    ids=["refused", "connect-timeout"],
)
def test_post_never_sent_raises_provider_unavailable(
    mocked: responses.RequestsMock, error: Exception
) -> None:
    """A POST refused or timed out before connecting raises plain ProviderUnavailable."""
    mocked.patch(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=error)

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().cancel_payment(PAYMENT_ID, idempotency_key=key())

    assert type(caught.value) is ProviderUnavailable


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (401, "CL1501", Unauthorized),
        (404, "BR1301", NotFound),
        (409, "CL2206", Conflict),
        (400, "CL2205", InvalidRequest),
    ],
)
def test_error_bodies_become_typed_errors(
    mocked: responses.RequestsMock, status: int, code: str, kind: type[ProviderApiError]
) -> None:
    """Error bodies become the matching typed error with status, code, message, detail, id."""
    mocked.patch(
        f"{FAKE_URL}/payments/{PAYMENT_ID}",
        status=status,
        body=error_body(code, "What happened", "why it happened"),
        headers={"X-Request-Id": "req-abc"},
    )

    with pytest.raises(ProviderApiError) as caught:
        fake_client().capture_payment(PAYMENT_ID, amount=Decimal("1.00"), idempotency_key=key())

    exc = caught.value
    assert type(exc) is kind
    assert (exc.http_status, exc.error_code) == (status, code)
    assert (exc.message, exc.detail, exc.request_id) == (
        "What happened",
        ["why it happened"],
        "req-abc",
    )
    assert len(mocked.calls) == 1


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [(404, "BR1301", NotFound), (500, "AI1899", ProviderUnavailable)],
)
def test_error_bodies_on_get_become_typed_errors(
    mocked: responses.RequestsMock, status: int, code: str, kind: type[ProviderApiError]
) -> None:
    """Reads map error bodies to typed errors; a server failure answering a read (500 AI1899)
    is the provider being unavailable, to read again later, not a refusal."""
    mocked.get(f"{FAKE_URL}/payments/{PAYMENT_ID}", status=status, body=error_body(code))

    with pytest.raises(kind) as caught:
        fake_client().get_payment(PAYMENT_ID)

    assert type(caught.value) is kind
    assert caught.value.error_code == code


def test_409_cl2209_raises_outcome_unknown(mocked: responses.RequestsMock) -> None:
    """409 CL2209 (same write still in progress) raises OutcomeUnknown, not Conflict."""
    mocked.post(f"{FAKE_URL}/payments", status=409, body=error_body("CL2209", "In progress"))

    with pytest.raises(OutcomeUnknown) as caught:
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=key())

    assert (caught.value.http_status, caught.value.error_code) == (409, "CL2209")


def test_502_on_post_raises_outcome_unknown_after_retries(
    mocked: responses.RequestsMock,
) -> None:
    """A POST that only ever meets 502 is retried with its key, then raises OutcomeUnknown."""
    mocked.post(f"{FAKE_URL}/payments", status=502, body="<html>Bad Gateway</html>")
    attempt = key()

    with pytest.raises(OutcomeUnknown) as caught:
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=attempt)

    assert caught.value.http_status == 502
    assert len(mocked.calls) == 3
    assert {c.request.headers["Idempotency-Key"] for c in mocked.calls} == {attempt}


def test_html_500_on_get_raises_provider_unavailable(mocked: responses.RequestsMock) -> None:
    """An HTML 500 without the provider's error body on a GET raises ProviderUnavailable."""
    mocked.get(
        f"{FAKE_URL}/payments/{PAYMENT_ID}",
        status=500,
        body="<html><h1>Internal Server Error</h1></html>",
        content_type="text/html",
    )

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().get_payment(PAYMENT_ID)

    assert type(caught.value) is ProviderUnavailable
    assert (caught.value.http_status, caught.value.error_code) == (500, "")
    assert len(mocked.calls) == 3  # a read is retried on 5xx


def test_500_on_capture_raises_outcome_unknown_after_retries_with_its_key(
    mocked: responses.RequestsMock,
) -> None:
    """A capture answered 500 AI1899 is sent again with the same key, then raises
    OutcomeUnknown keeping the provider's code: the capture may have happened."""
    mocked.patch(f"{FAKE_URL}/payments/{PAYMENT_ID}", status=500, body=error_body("AI1899"))
    attempt = key()

    with pytest.raises(ProviderApiError) as caught:
        fake_client().capture_payment(PAYMENT_ID, amount=Decimal("1.00"), idempotency_key=attempt)

    assert type(caught.value) is OutcomeUnknown
    assert (caught.value.http_status, caught.value.error_code) == (500, "AI1899")
    assert len(mocked.calls) == 3
    assert {c.request.headers["Idempotency-Key"] for c in mocked.calls} == {attempt}


def test_html_500_on_post_raises_outcome_unknown(mocked: responses.RequestsMock) -> None:
    """An HTML 500 to a POST is sent again with its key, then raises OutcomeUnknown."""
    mocked.post(f"{FAKE_URL}/payments", status=500, body="<html>oops</html>")
    attempt = key()

    with pytest.raises(OutcomeUnknown):
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=attempt)

    assert len(mocked.calls) == 3
    assert {c.request.headers["Idempotency-Key"] for c in mocked.calls} == {attempt}


def test_non_json_200_on_get_raises_provider_unavailable(mocked: responses.RequestsMock) -> None:
    """A 200 whose body is not JSON raises ProviderUnavailable on a read."""
    mocked.get(
        f"{FAKE_URL}/payments/{PAYMENT_ID}",
        status=200,
        body="<html>ok</html>",
        headers={"X-Request-Id": "req-html"},
    )

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().get_payment(PAYMENT_ID)

    assert type(caught.value) is ProviderUnavailable
    assert (caught.value.http_status, caught.value.request_id) == (200, "req-html")


def test_non_json_201_on_post_raises_outcome_unknown(mocked: responses.RequestsMock) -> None:
    """A create answered 201 with an unreadable body did happen: OutcomeUnknown, not 'down'."""
    mocked.post(f"{FAKE_URL}/payments", status=201, body="<html>created</html>")

    with pytest.raises(ProviderUnavailable) as caught:
        fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key=key())

    assert type(caught.value) is OutcomeUnknown, repr(caught.value)


def test_authorization_header_per_operation(mocked: responses.RequestsMock) -> None:
    """Payments carry `Basic <access token>`; card tokens carry `Bearer <public key>`."""
    mocked.post(
        f"{FAKE_URL}/card_tokens",
        status=201,
        json={"id": "tok_1", "payment_method_id": "visa", "card": None},
    )
    mocked.get(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=dumps(payment_json()))
    client = fake_client()

    client.create_card_token(
        number=VISA, exp_month="12", exp_year="2031", cvv="123", holder_name="Ana"
    )
    client.get_payment(PAYMENT_ID)

    tokens, payments = mocked.calls
    assert tokens.request.headers["Authorization"] == "Bearer pk"
    assert payments.request.headers["Authorization"] == "Basic tok"
    assert payments.request.headers["Accept"] == "application/json"


def test_every_write_carries_an_idempotency_key(mocked: responses.RequestsMock) -> None:
    """Every POST/PATCH/PUT carries Idempotency-Key (the caller's when given); GETs do not."""
    subscription = {"id": SEEDED_SUBSCRIPTION, "status": "inactive"}
    refund = {"id": "r1", "payment_id": PAYMENT_ID, "amount": 1, "status": "approved"}
    mocked.post(f"{FAKE_URL}/card_tokens", status=201, json={"id": "tok_1"})
    mocked.post(f"{FAKE_URL}/payments", status=201, body=dumps(payment_json()))
    mocked.patch(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=dumps(payment_json()))
    mocked.post(f"{FAKE_URL}/refunds", status=201, json=refund)
    mocked.put(f"{FAKE_URL}/subscriptions/{SEEDED_SUBSCRIPTION}", status=201, json=subscription)
    mocked.get(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=dumps(payment_json()))
    client = fake_client()

    client.create_card_token(number=VISA, exp_month="12", exp_year="2031", cvv="1", holder_name="A")
    client.create_payment(body={"amount": Decimal("1.00")}, idempotency_key="k-create")
    client.capture_payment(PAYMENT_ID, amount=Decimal("1.00"), idempotency_key="k-capture")
    client.cancel_payment(PAYMENT_ID, idempotency_key="k-cancel")
    client.refund(PAYMENT_ID, amount=None, reason="", idempotency_key="k-refund")
    client.cancel_subscription(SEEDED_SUBSCRIPTION, idempotency_key="k-sub")
    client.get_payment(PAYMENT_ID)

    keys = [(c.request.method, c.request.headers.get("Idempotency-Key")) for c in mocked.calls]
    assert keys[0][0] == "POST" and keys[0][1]
    assert keys[1:] == [
        ("POST", "k-create"),
        ("PATCH", "k-capture"),
        ("PATCH", "k-cancel"),
        ("POST", "k-refund"),
        ("PUT", "k-sub"),
        ("GET", None),
    ]


@pytest.mark.parametrize("first", [502, 503, 504])
def test_retried_write_reuses_its_key(mocked: responses.RequestsMock, first: int) -> None:
    """A write retried after a gateway error sends the same Idempotency-Key again."""
    mocked.post(f"{FAKE_URL}/payments", status=first, body="gateway")
    mocked.post(f"{FAKE_URL}/payments", status=201, body=dumps(payment_json()))

    payment = fake_client().create_payment(body={"amount": Decimal("1.00")}, idempotency_key="k-1")

    assert payment.id == PAYMENT_ID
    assert [c.request.headers["Idempotency-Key"] for c in mocked.calls] == ["k-1", "k-1"]
    assert mocked.calls[0].request.body == mocked.calls[1].request.body


def test_retried_card_token_reuses_its_generated_key(mocked: responses.RequestsMock) -> None:
    """The key the client makes up for a card token is the same on every retry."""
    mocked.post(f"{FAKE_URL}/card_tokens", status=503, body="busy")
    mocked.post(f"{FAKE_URL}/card_tokens", status=201, json={"id": "tok_1"})

    token = fake_client().create_card_token(
        number=VISA, exp_month="12", exp_year="2031", cvv="123", holder_name="Ana"
    )

    assert token.id == "tok_1"
    first, second = (c.request.headers["Idempotency-Key"] for c in mocked.calls)
    assert first and first == second


def test_amounts_are_sent_as_exact_json_numbers(mocked: responses.RequestsMock) -> None:
    """Decimal amounts go out as literal JSON numbers (1234.56), never strings or floats."""
    mocked.post(f"{FAKE_URL}/payments", status=201, body=dumps(payment_json("1234.56")))
    mocked.patch(f"{FAKE_URL}/payments/{PAYMENT_ID}", body=dumps(payment_json("1234.56")))
    mocked.post(
        f"{FAKE_URL}/refunds",
        status=201,
        body=dumps({"id": "r1", "payment_id": PAYMENT_ID, "amount": Decimal("0.10")}),
    )
    client = fake_client()

    client.create_payment(body={"amount": Decimal("1234.56")}, idempotency_key=key())
    client.capture_payment(PAYMENT_ID, amount=Decimal("1234.56"), idempotency_key=key())
    refund = client.refund(PAYMENT_ID, amount=Decimal("0.10"), reason="", idempotency_key=key())
    assert refund.amount == Decimal("0.10")

    create, capture, refund = (
        c.request.body.decode() if isinstance(c.request.body, bytes) else c.request.body
        for c in mocked.calls
    )
    assert re.search(r'"amount":\s*1234\.56[,}]', create), create
    assert re.search(r'"paid_amount":\s*1234\.56[,}]', capture), capture
    assert re.search(r'"amount":\s*0\.10[,}]', refund), refund
    for body in (create, capture, refund):
        assert '"1234.56"' not in body and "1234.5600000" not in body
        assert "0.1000000" not in body


@pytest.mark.parametrize(
    "bad", ["a/b", "..", ".", "../payments", "x?y=1", "x#y", "%2e%2e", "", "a b"]
)
def test_unsafe_path_segment_is_refused_without_request(
    mocked: responses.RequestsMock, bad: str
) -> None:
    """An id that could change the path is refused with NotFound before any request."""
    client = fake_client()

    for call in (
        lambda: client.get_payment(bad),
        lambda: client.capture_payment(bad, amount=Decimal("1.00"), idempotency_key=key()),
        lambda: client.cancel_payment(bad, idempotency_key=key()),
        lambda: client.get_subscription(bad),
        lambda: client.cancel_subscription(bad, idempotency_key=key()),
    ):
        with pytest.raises(NotFound):
            call()

    assert len(mocked.calls) == 0
