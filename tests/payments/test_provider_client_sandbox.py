"""Contract tests of the typed provider client against the live sandbox over real HTTP: every
operation, the typed errors built from the provider's answers, and one client per configuration."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from payments.provider.client import PaymentsClient, get_client
from payments.provider.errors import (
    Conflict,
    InvalidRequest,
    NotFound,
    OutcomeUnknown,
    ProviderApiError,
    Unauthorized,
)
from tests.helpers.provider import (
    AMEX,
    CVV_FOR,
    DECLINED,
    INSUFFICIENT_FUNDS,
    MASTER,
    PROVIDER_ERROR,
    PUBLIC_KEY,
    THREE_DS,
    VISA,
    Api,
)
from tests.payments.helpers import SEEDED_SUBSCRIPTION, assert_provider_error, key, pay


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("number", "method"),
    [
        (VISA, "visa"),
        (MASTER, "master"),
        (AMEX, "amex"),
        (THREE_DS, "visa"),
        (DECLINED, "visa"),
        (INSUFFICIENT_FUNDS, "visa"),
        (PROVIDER_ERROR, "visa"),
    ],
)
def test_create_card_token_for_each_test_card(provider: Api, number: str, method: str) -> None:
    """Every test card becomes a typed card token: id, masked card, method, aware expiry."""
    before = datetime.now(UTC)

    token = PaymentsClient.from_settings().create_card_token(
        number=number,
        exp_month="12",
        exp_year="2031",
        cvv=CVV_FOR.get(number, "123"),
        holder_name="Ana Pérez",
    )

    assert token.id
    assert token.payment_method_id == method
    assert token.card is not None
    assert (token.card.bin, token.card.last_digits) == (number[:6], number[-4:])
    assert token.expires_at is not None and token.expires_at.tzinfo is not None
    assert before < token.expires_at <= before + timedelta(minutes=16)


@pytest.mark.sandbox
def test_create_payment_automatic_is_approved(provider: Api) -> None:
    """Automatic capture: a typed approved payment with exact Decimal amounts."""
    payment = pay(PaymentsClient.from_settings(), amount="1234.56")

    assert (payment.status, payment.status_detail.code) == ("approved", "AP-PAI01")
    assert payment.amount == Decimal("1234.56") and isinstance(payment.amount, Decimal)
    assert payment.captured_amount == Decimal("1234.56")
    assert payment.capture_method == "automatic"
    assert payment.payment_method_id == "visa"
    assert payment.card is not None and payment.card.last_digits == "4242"
    assert payment.created_at is not None and payment.created_at.tzinfo is not None
    assert payment.approved_at is not None and payment.approved_at.tzinfo is not None
    assert payment.three_ds_url == ""


@pytest.mark.sandbox
def test_create_payment_manual_is_authorized(provider: Api) -> None:
    """Manual capture: the payment is authorized with AU-CAP01 and nothing captured."""
    payment = pay(get_client(), MASTER, capture_method="manual")

    assert (payment.status, payment.status_detail.code) == ("authorized", "AU-CAP01")
    assert payment.capture_method == "manual"
    assert payment.captured_amount == Decimal("0.00")


@pytest.mark.sandbox
def test_create_payment_three_ds_is_pending_with_url(provider: Api) -> None:
    """The 3-D Secure card leaves the payment pending PE-3DS01 with the challenge's URL."""
    payment = pay(get_client(), THREE_DS)

    assert (payment.status, payment.status_detail.code) == ("pending", "PE-3DS01")
    assert payment.three_ds_url.startswith(f"{provider.base_url}/3ds/")


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("number", "code"), [(DECLINED, "RE-DEC01"), (INSUFFICIENT_FUNDS, "RE-FUN01")]
)
def test_create_payment_declined_is_rejected(provider: Api, number: str, code: str) -> None:
    """A declined card gives a rejected payment (a result, not an error)."""
    payment = pay(get_client(), number)

    assert (payment.status, payment.status_detail.code) == ("rejected", code)


@pytest.mark.sandbox
def test_get_payment_reads_what_was_created(provider: Api) -> None:
    """get_payment returns the same payment, typed, as the sandbox holds it."""
    client = get_client()
    created = pay(client, amount="99.90")

    read = client.get_payment(created.id)

    assert read.id == created.id
    assert (read.status, read.amount, read.currency) == ("approved", Decimal("99.90"), "MXN")
    assert read.created_at == created.created_at
    assert provider.payment(created.id)["amount"] == Decimal("99.90")


@pytest.mark.sandbox
def test_capture_payment_in_full(provider: Api) -> None:
    """A full capture of an authorization approves it for the whole amount."""
    client = get_client()
    authorized = pay(client, capture_method="manual", amount="500.00")

    captured = client.capture_payment(
        authorized.id, amount=Decimal("500.00"), idempotency_key=key()
    )

    assert (captured.status, captured.status_detail.code) == ("approved", "AP-PAI01")
    assert captured.captured_amount == Decimal("500.00")


@pytest.mark.sandbox
def test_capture_payment_partially(provider: Api) -> None:
    """A partial capture charges only the amount asked for."""
    client = get_client()
    authorized = pay(client, capture_method="manual", amount="1000.00")

    captured = client.capture_payment(
        authorized.id, amount=Decimal("800.01"), idempotency_key=key()
    )

    assert captured.status == "approved"
    assert captured.captured_amount == Decimal("800.01")
    assert captured.amount == Decimal("1000.00")
    assert client.get_payment(authorized.id).captured_amount == Decimal("800.01")


@pytest.mark.sandbox
def test_cancel_payment_releases_authorization(provider: Api) -> None:
    """cancel_payment turns an authorization into cancelled CA-MER01, nothing captured."""
    client = get_client()
    authorized = pay(client, capture_method="manual")

    cancelled = client.cancel_payment(authorized.id, idempotency_key=key())

    assert (cancelled.status, cancelled.status_detail.code) == ("cancelled", "CA-MER01")
    assert cancelled.captured_amount == Decimal("0.00")


@pytest.mark.sandbox
def test_refund_partial_then_rest(provider: Api) -> None:
    """refund gives a typed refund; a partial one keeps approved, the rest closes the charge."""
    client = get_client()
    payment = pay(client, amount="250.00")

    refund = client.refund(
        payment.id, amount=Decimal("100.10"), reason="requested_by_customer", idempotency_key=key()
    )

    assert refund.id and refund.payment_id == payment.id
    assert refund.amount == Decimal("100.10")
    assert refund.created_at is not None and refund.created_at.tzinfo is not None
    after = client.get_payment(payment.id)
    assert (after.status, after.amount_refunded) == ("approved", Decimal("100.10"))
    assert [r.amount for r in after.refunds] == [Decimal("100.10")]

    rest = client.refund(payment.id, amount=None, reason="", idempotency_key=key())

    assert rest.amount == Decimal("149.90")
    final = client.get_payment(payment.id)
    assert final.status in ("cancelled", "refunded")
    assert final.amount_refunded == Decimal("250.00")


@pytest.mark.sandbox
def test_list_payment_methods(provider: Api) -> None:
    """The catalogue has four typed entries with Decimal accepted amounts and accepts()."""
    methods = get_client().list_payment_methods()

    assert sorted(m.id for m in methods) == ["amex", "cashpay", "master", "visa"]
    for method in methods:
        bounds = method.accepted_amount
        assert bounds is not None
        low, high = bounds
        assert isinstance(low, Decimal) and isinstance(high, Decimal) and low < high
        assert method.accepts(low) and method.accepts(high)
        assert not method.accepts(low - Decimal("0.01"))
        assert not method.accepts(high + Decimal("0.01"))
        assert method.is_active
    by_id = {m.id: m for m in methods}
    assert by_id["visa"].is_card and not by_id["cashpay"].is_card
    assert set(by_id["cashpay"].validations) == {"accepted_amount"}


@pytest.mark.sandbox
def test_get_and_cancel_seeded_subscription(provider: Api) -> None:
    """A seeded subscription reads active and cancel_subscription makes it inactive."""
    client = get_client()

    subscription = client.get_subscription(SEEDED_SUBSCRIPTION)

    assert (subscription.id, subscription.status) == (SEEDED_SUBSCRIPTION, "active")
    assert subscription.price_id == "price_cafe_mensual"
    assert subscription.customer["email"] == "maria@example.com"
    assert subscription.invoices

    cancelled = client.cancel_subscription(SEEDED_SUBSCRIPTION, idempotency_key=key())

    assert (cancelled.id, cancelled.status) == (SEEDED_SUBSCRIPTION, "inactive")
    assert client.get_subscription(SEEDED_SUBSCRIPTION).status == "inactive"


@pytest.mark.sandbox
def test_bad_credentials_raise_unauthorized(provider: Api, settings: Any) -> None:
    """Refused credentials raise Unauthorized 401 CL1501 with message, detail, request id."""
    settings.PAYMENTS_ACCESS_TOKEN = base64.b64encode(f"{PUBLIC_KEY}:wrong".encode()).decode()

    with pytest.raises(Unauthorized) as caught:
        PaymentsClient.from_settings().get_payment(str(uuid.uuid4()))

    assert_provider_error(caught.value, Unauthorized, 401, "CL1501")


@pytest.mark.sandbox
def test_unknown_payment_raises_not_found(provider: Api) -> None:
    """An unknown payment id raises NotFound 404 BR1301."""
    with pytest.raises(NotFound) as caught:
        get_client().get_payment(str(uuid.uuid4()))

    assert_provider_error(caught.value, NotFound, 404, "BR1301")


@pytest.mark.sandbox
def test_capture_twice_raises_conflict(provider: Api) -> None:
    """A second capture (another key) raises Conflict 409 CL2206."""
    client = get_client()
    authorized = pay(client, capture_method="manual")
    client.capture_payment(authorized.id, amount=Decimal("250.00"), idempotency_key=key())

    with pytest.raises(Conflict) as caught:
        client.capture_payment(authorized.id, amount=Decimal("250.00"), idempotency_key=key())

    assert_provider_error(caught.value, Conflict, 409, "CL2206")


@pytest.mark.sandbox
def test_capture_above_authorized_raises_invalid_request(provider: Api) -> None:
    """Capturing more than authorized raises InvalidRequest 400 CL2205; nothing captured."""
    client = get_client()
    authorized = pay(client, capture_method="manual", amount="250.00")

    with pytest.raises(InvalidRequest) as caught:
        client.capture_payment(authorized.id, amount=Decimal("250.01"), idempotency_key=key())

    assert_provider_error(caught.value, InvalidRequest, 400, "CL2205")
    assert client.get_payment(authorized.id).status == "authorized"


@pytest.mark.sandbox
def test_provider_error_card_raises_outcome_unknown(provider: Api) -> None:
    """The 0119 card's 500 AI1899 raises OutcomeUnknown: a server failure is not proof that
    nothing was created. Nothing was."""
    with pytest.raises(ProviderApiError) as caught:
        pay(get_client(), PROVIDER_ERROR)

    assert_provider_error(caught.value, OutcomeUnknown, 500, "AI1899")
    assert provider.payments() == []


@pytest.mark.sandbox
def test_get_client_follows_settings(provider: Api, settings: Any) -> None:
    """get_client keeps one client per configuration and a new one when settings change."""
    first = get_client()
    assert get_client() is first
    assert first.base_url == provider.base_url

    settings.PAYMENTS_READ_TIMEOUT = 7

    assert get_client() is not first
    assert get_client().timeout[1] == 7
