"""The client's retries against the live sandbox: reads are retried with backoff, and a write is
sent again only with its own Idempotency-Key (a timeout or a 5xx means "outcome unknown")."""

from __future__ import annotations

from typing import Any

import pytest

from payments.provider.client import PaymentsClient, get_client
from payments.provider.errors import (
    InvalidRequest,
    OutcomeUnknown,
    ProviderApiError,
    ProviderUnavailable,
)
from tests.helpers.provider import Api
from tests.helpers.servers import abandoned_requests
from tests.helpers.waiting import wait_until
from tests.payments.helpers import (
    REQUEST_ID,
    assert_provider_error,
    key,
    pay,
    payment_body,
    token_for,
)


@pytest.mark.sandbox
def test_get_retried_after_injected_503s(provider: Api) -> None:
    """A GET that meets two 503s is retried and succeeds on the third call."""
    client = get_client()
    payment = pay(client)
    failing = provider.add_fault(path="/payments", method="GET", status=503, times=2)
    # Taken only once the 503 fault is used up: it counts the call that got through.
    counter = provider.add_fault(path="/payments", method="GET", latency_ms=1)

    read = client.get_payment(payment.id)

    assert read.id == payment.id
    # `hits` counts the calls a fault answered: 2 faulted + 1 passed through = 3 calls.
    assert (provider.fault(failing)["hits"], provider.fault(failing)["remaining"]) == (2, 0)
    assert provider.fault(counter)["hits"] == 1


@pytest.mark.sandbox
def test_get_always_503_raises_provider_unavailable(provider: Api) -> None:
    """A GET that always meets 503 raises ProviderUnavailable after 1 + 3 attempts."""
    client = get_client()
    payment = pay(client)
    failing = provider.add_fault(path="/payments", method="GET", status=503)

    with pytest.raises(ProviderUnavailable) as caught:
        client.get_payment(payment.id)

    assert type(caught.value) is ProviderUnavailable
    assert caught.value.http_status == 503
    assert REQUEST_ID.match(caught.value.request_id)
    assert provider.fault(failing)["hits"] == 4


@pytest.mark.sandbox
def test_same_idempotency_key_twice_creates_one_payment(provider: Api) -> None:
    """The same Idempotency-Key sent twice returns the same payment; the sandbox holds one."""
    client = get_client()
    body = payment_body(token_for(client))
    attempt = key()

    first = client.create_payment(body=body, idempotency_key=attempt)
    second = client.create_payment(body=body, idempotency_key=attempt)

    assert second.id == first.id
    assert [p["id"] for p in provider.payments()] == [first.id]


@pytest.mark.sandbox
def test_lost_post_answer_is_retried_with_same_key(provider: Api) -> None:
    """A POST processed but answered 502 is retried with its key and returns that payment."""
    client = get_client()
    body = payment_body(token_for(client))
    lost = provider.add_fault(
        path="/payments", method="POST", status=502, times=1, after_processing=True
    )

    payment = client.create_payment(body=body, idempotency_key=key())

    assert payment.status == "approved"
    assert [p["id"] for p in provider.payments()] == [payment.id]
    assert provider.fault(lost)["hits"] == 1


@pytest.mark.sandbox
def test_post_timing_out_every_attempt_raises_outcome_unknown(provider: Api, settings: Any) -> None:
    """A create whose every attempt times out raises OutcomeUnknown: it may have happened."""
    settings.PAYMENTS_READ_TIMEOUT = 0.5
    client = PaymentsClient.from_settings()
    body = payment_body(token_for(client))
    slow = provider.add_fault(path="/payments", method="POST", latency_ms=1500)

    with pytest.raises(ProviderApiError) as caught:
        client.create_payment(body=body, idempotency_key=key())

    assert type(caught.value) is OutcomeUnknown, repr(caught.value)
    assert not isinstance(caught.value, InvalidRequest)
    # And it did happen: the slow sandbox created exactly one payment (the retries replayed).
    wait_until(lambda: len(provider.payments()) == 1, timeout=10)
    hits = provider.fault(slow)["hits"]
    assert 2 <= hits <= 4
    # Once the sandbox has answered every request the client gave up on, still one payment.
    wait_until(lambda: abandoned_requests(provider.base_url) == 0, timeout=10)
    assert len(provider.payments()) == 1


@pytest.mark.sandbox
def test_post_answered_500_after_processing_is_sent_again_and_returns_the_payment(
    provider: Api,
) -> None:
    """A create processed but answered 500 is sent again with its key; the provider replays
    what it did: the one payment, not a second."""
    client = get_client()
    body = payment_body(token_for(client))
    lost = provider.add_fault(
        path="/payments", method="POST", status=500, times=1, after_processing=True
    )

    payment = client.create_payment(body=body, idempotency_key=key())

    assert payment.status == "approved"
    assert [p["id"] for p in provider.payments()] == [payment.id]
    assert provider.fault(lost)["hits"] == 1


@pytest.mark.sandbox
def test_post_always_500_raises_outcome_unknown_after_sending_it_again(provider: Api) -> None:
    """A create that only ever meets 500 AI1899 is sent 1 + 3 times, then raises OutcomeUnknown
    (what happened is still to be learned), not a refusal."""
    client = get_client()
    body = payment_body(token_for(client))
    failing = provider.add_fault(path="/payments", method="POST", status=500)

    with pytest.raises(ProviderApiError) as caught:
        client.create_payment(body=body, idempotency_key=key())

    assert_provider_error(caught.value, OutcomeUnknown, 500, "AI1899")
    assert provider.fault(failing)["hits"] == 4
    assert provider.payments() == []
