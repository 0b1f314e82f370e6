"""Storing an attempt and sending its create (payment_attempt_store, payment_send_create)
against the live sandbox: outcomes, card data, idempotency, refusals, a provider not reached,
lost answers, order rules and bad amounts; and how provider answers read (local_status,
quirks)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone, translation

from payments.actions.calls import payment_capture
from payments.attempts.calls import payment_send_create
from payments.attempts.sealed import unseal
from payments.models import Payment, PaymentEventKind
from payments.provider.client import PaymentsClient
from payments.provider.errors import (
    InvalidAmount,
    OutcomeUnknown,
    PaymentAttemptBlocked,
    PaymentNotAllowed,
    PaymentOutcomeUnknown,
)
from payments.provider.types import ProviderPayment
from payments.rereading.calls import payment_refresh, payment_sync
from payments.statuses import PaymentStatus, UnknownProviderStatus, local_status
from payments.words import NOT_REACHED, NOT_REACHED_MESSAGE, REFUSALS, failure_message
from tests.factories import order_reference, provider_payment
from tests.helpers.provider import (
    AMEX,
    DECLINED,
    INSUFFICIENT_FUNDS,
    MASTER,
    PROVIDER_ERROR,
    THREE_DS,
    VISA,
    Api,
)
from tests.helpers.servers import free_port

pytestmark = pytest.mark.django_db


def kinds(payment: Payment) -> list[str]:
    return list(payment.events.values_list("kind", flat=True))


# --- Outcomes ------------------------------------------------------------------------------


def test_automatic_capture_with_a_good_card_is_approved(provider: Api) -> None:
    """A good card with automatic capture gives an approved payment charged in full."""
    # Given a visa card token; when the order is paid
    payment = provider_payment(provider, amount="250.00")

    # Then the payment is approved, charged in full, and recorded once in the ledger
    assert payment.status == PaymentStatus.APPROVED
    assert payment.status_code == "AP-PAI01"
    assert payment.captured_amount == Decimal("250.00")
    assert payment.provider_id
    assert payment.provider_version == 1
    assert payment.authorized_at is None
    assert kinds(payment) == [PaymentEventKind.CREATED]
    event = payment.events.get()
    assert (event.old_status, event.new_status) == (PaymentStatus.CREATING, PaymentStatus.APPROVED)
    assert provider.payment(payment.provider_id)["status"] == "approved"


def test_manual_capture_is_authorized_for_thirty_days(provider: Api) -> None:
    """Manual capture gives an authorization stamped now that expires 30 days later."""
    # Given a good card; when the order is paid with manual capture
    before = timezone.now()
    payment = provider_payment(provider, capture_method="manual", amount="1000.00")
    after = timezone.now()

    # Then it is authorized (AU-CAP01), nothing captured, with its expiry 30 days ahead
    assert payment.status == PaymentStatus.AUTHORIZED
    assert payment.status_code == "AU-CAP01"
    assert payment.captured_amount == Decimal("0.00")
    assert before <= payment.authorized_at <= after
    assert payment.authorization_expires_at - payment.authorized_at == timedelta(days=30)
    assert payment.days_to_expiry() in (29, 30)


def test_three_ds_card_is_pending_with_the_challenge_url(provider: Api) -> None:
    """A card that needs 3-D Secure leaves the payment pending with the challenge address."""
    # Given the 3-D Secure test card; when the order is paid
    payment = provider_payment(provider, number=THREE_DS)

    # Then the payment is pending (PE-3DS01) and keeps the sandbox's challenge URL
    assert payment.status == PaymentStatus.PENDING
    assert payment.status_code == "PE-3DS01"
    assert payment.three_ds_url.startswith(f"{provider.base_url}/3ds/")
    remote = provider.payment(payment.provider_id)
    assert remote["pending_action"] == {"type": "open_modal", "url": payment.three_ds_url}


@pytest.mark.parametrize(
    ("number", "code"), [(DECLINED, "RE-DEC01"), (INSUFFICIENT_FUNDS, "RE-FUN01")]
)
def test_declined_card_is_rejected_with_its_detail(provider: Api, number: str, code: str) -> None:
    """A declined card gives a rejected payment whose status_code says why."""
    # Given a card the issuer declines; when the order is paid
    payment = provider_payment(provider, number=number)

    # Then the payment is rejected with the decline detail, nothing captured
    assert payment.status == PaymentStatus.REJECTED
    assert payment.status_code == code
    assert payment.captured_amount == Decimal("0.00")
    assert payment.is_final


@pytest.mark.parametrize(
    ("number", "brand", "last4"),
    [(VISA, "visa", "4242"), (MASTER, "master", "4444"), (AMEX, "amex", "0005")],
)
def test_only_brand_and_last_digits_are_kept(
    provider: Api, number: str, brand: str, last4: str
) -> None:
    """The card brand and last four digits are stored; the full number is stored nowhere."""
    # Given a card of each brand; when the order is paid
    payment = provider_payment(provider, number=number)

    # Then brand and last digits are kept
    assert payment.card_brand == brand
    assert payment.card_last_digits == last4
    # And the full number appears in no field, no snapshot and no ledger message
    stored = json.dumps(model_to_dict(payment), default=str)
    stored += json.dumps(payment.snapshot, default=str)
    stored += json.dumps(list(payment.events.values()), default=str)
    assert number not in stored
    card = payment.snapshot["payment_method"]["card"]
    assert card["last_digits"] == last4
    assert len(card["bin"]) <= 6


# --- Idempotency -----------------------------------------------------------------------------


def test_same_attempt_key_twice_makes_one_payment(provider: Api) -> None:
    """The same attempt key twice gives one provider payment and the same local Payment."""
    # Given a paid attempt
    key = uuid.uuid4().hex
    reference = order_reference()
    first = provider_payment(provider, external_reference=reference, attempt_key=key)

    # When the same attempt is submitted again (a double click, a retried request)
    second = provider_payment(provider, external_reference=reference, attempt_key=key)

    # Then it is the same local payment and the provider holds a single payment
    assert second.pk == first.pk
    assert second.status == PaymentStatus.APPROVED
    assert [p["id"] for p in provider.payments()] == [first.provider_id]
    assert Payment.objects.filter(external_reference=reference).count() == 1


# --- Provider refusals ---------------------------------------------------------------------


def assert_refused(payment_qs: Any, code: str) -> None:
    payment = payment_qs.get()
    assert payment.status == PaymentStatus.FAILED
    assert payment.provider_id is None
    assert payment.create_request == ""  # nothing left to send again
    event = payment.events.get(kind=PaymentEventKind.FAILED)
    assert event.error_code == code
    assert (event.old_status, event.new_status) == (PaymentStatus.CREATING, PaymentStatus.FAILED)
    # The attempt keeps the code; the shopper reads a sentence, not a code
    assert payment.status_code == code
    message = failure_message(payment.status_code)
    assert message == str(REFUSALS[code])
    assert code not in message


def test_expired_card_token_is_refused(provider: Api) -> None:
    """A card token older than 15 minutes is refused (CL2201) with a readable message."""
    # Given a card token and a provider clock 15 minutes and one second later
    token = provider.card_token(VISA)["id"]
    assert provider.post("/_sandbox/clock", {"advance_seconds": 901}).status_code == 200
    reference = order_reference()

    # When the order is paid with it
    payment = provider_payment(provider, card_token=token, external_reference=reference)

    # Then the attempt failed, the ledger says why, and no provider payment exists
    assert payment.status == PaymentStatus.FAILED
    assert_refused(Payment.objects.filter(external_reference=reference), "CL2201")
    assert provider.payments() == []


def test_amount_outside_accepted_range_is_refused(provider: Api) -> None:
    """An amount below the method's accepted minimum is refused (CL2203)."""
    # Given a visa card (accepted from 10.00); when 5.00 is paid
    reference = order_reference()
    payment = provider_payment(provider, amount="5.00", external_reference=reference)

    # Then the attempt failed with CL2203 in the ledger and a readable message
    assert payment.status == PaymentStatus.FAILED
    assert_refused(Payment.objects.filter(external_reference=reference), "CL2203")
    assert provider.payments() == []


def test_a_first_send_that_never_reaches_the_provider_fails_the_attempt(
    provider: Api, settings: Any
) -> None:
    """A first send that never reached the provider (its connection refused) charged nothing:
    the attempt fails at once, its request forgotten, and the shopper reads that the service
    is not reachable and nothing was charged; the order can be paid again."""
    # Given a card token, then a provider that cannot be reached (nothing listens)
    token = provider.card_token(VISA)["id"]
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{free_port()}"
    reference = order_reference()

    # When the order is paid
    payment = provider_payment(provider, card_token=token, external_reference=reference)

    # Then the attempt failed as not reached, with nothing left to send, and no payment exists
    assert (payment.status, payment.status_code) == (PaymentStatus.FAILED, NOT_REACHED)
    assert (payment.provider_id, payment.create_request) == (None, "")
    event = payment.events.get()
    assert (event.kind, event.old_status) == (PaymentEventKind.FAILED, PaymentStatus.CREATING)
    assert provider.payments() == []
    # And the shopper reads that nothing was charged, in their language
    with translation.override("en"):
        message = failure_message(payment.status_code)
        assert message == str(NOT_REACHED_MESSAGE)
    assert "nothing was charged" in message
    assert NOT_REACHED not in message

    # When the provider is back and the shopper pays again: approved
    settings.PAYMENTS_API_BASE_URL = provider.base_url
    again = provider_payment(provider, external_reference=reference)
    assert again.status == PaymentStatus.APPROVED
    assert len(provider.payments()) == 1


def test_provider_internal_error_is_unknown_until_the_provider_refuses_the_request_again(
    provider: Api,
) -> None:
    """A 500 AI1899 on create is not proof that nothing was charged: the attempt is `unknown`
    (never "nothing was charged"), its request kept sealed, and it is sent again with its key
    until the provider answers it with a refusal; only then is it failed and forgotten."""
    # Given the test card that makes the provider fail; when the order is paid
    reference = order_reference()
    with pytest.raises(PaymentOutcomeUnknown) as caught:
        provider_payment(provider, number=PROVIDER_ERROR, external_reference=reference)

    # Then the send says the result is not confirmed yet (its task tries again), and nothing
    # says "no charge": the attempt is unknown, not failed
    assert "not confirmed" in caught.value.message
    assert "nothing was charged" not in caught.value.message
    payment = Payment.objects.get(external_reference=reference)
    assert (payment.status, payment.status_code) == (PaymentStatus.UNKNOWN, "")
    # And the request is kept only encrypted: no card token in the clear
    token = unseal(payment.create_request)["payment_method"]["token"]
    assert token and token not in payment.create_request

    # When it is sent again while the provider still fails: still unknown
    with pytest.raises(PaymentOutcomeUnknown):
        payment_send_create(payment=payment)
    payment.refresh_from_db()
    assert (payment.status, bool(payment.create_request)) == (PaymentStatus.UNKNOWN, True)

    # When the card token has expired at the provider (16 minutes later) and it is sent again
    assert provider.post("/_sandbox/clock", {"advance_seconds": 16 * 60}).status_code == 200
    payment_send_create(payment=payment)

    # Then the provider's refusal of that very request settles it: failed, request erased
    payment.refresh_from_db()
    assert (payment.status, payment.create_request) == (PaymentStatus.FAILED, "")
    assert "CL2201" in payment.last_error
    assert provider.payments() == []


def test_lost_create_answer_is_confirmed_by_sending_it_again_with_its_key(provider: Api) -> None:
    """A create the provider made but whose every answer was lost as a 500 is `unknown`; sent
    again with its key, the provider's stored answer settles it: one payment, approved here."""
    # Given the provider creates the payment but answers 500 four times (every client retry)
    provider.add_fault(path="/payments", method="POST", status=500, after_processing=True, times=4)
    reference = order_reference()
    with pytest.raises(PaymentOutcomeUnknown):
        provider_payment(provider, external_reference=reference)
    payment = Payment.objects.get(external_reference=reference)
    assert (payment.status, payment.provider_id) == (PaymentStatus.UNKNOWN, None)
    assert len(provider.payments()) == 1

    # When it is confirmed (the task queued for it, or the reconciliation schedule)
    confirmed = payment_send_create(payment=payment)

    # Then it is the provider's one payment, approved here, and the request is erased
    remote = provider.payments()
    assert [p["id"] for p in remote] == [confirmed.provider_id]
    assert (confirmed.status, confirmed.create_request) == (PaymentStatus.APPROVED, "")
    assert confirmed.captured_amount == Decimal("250.00")
    # And sending it again later changes nothing
    assert payment_send_create(payment=confirmed).status == PaymentStatus.APPROVED
    assert len(provider.payments()) == 1


def test_failed_attempt_allows_a_new_attempt(provider: Api) -> None:
    """After a refused attempt the same order can be paid again."""
    # Given an order whose first attempt was refused
    reference = order_reference()
    assert (
        provider_payment(provider, amount="5.00", external_reference=reference).status
        == PaymentStatus.FAILED
    )

    # When the shopper tries again with an accepted amount
    payment = provider_payment(provider, amount="50.00", external_reference=reference)

    # Then the new attempt is approved
    assert payment.status == PaymentStatus.APPROVED
    statuses = set(
        Payment.objects.filter(external_reference=reference).values_list("status", flat=True)
    )
    assert statuses == {PaymentStatus.FAILED, PaymentStatus.APPROVED}


# --- Lost answers ----------------------------------------------------------------------------


def test_lost_answer_leaves_outcome_unknown_and_blocks_new_attempts(provider: Api) -> None:
    """A create whose answer never comes is `unknown` and blocks new attempts for the order."""
    # Given the provider processes POST /payments but every answer is lost (502)
    fault = provider.add_fault(
        path="/payments", method="POST", status=502, after_processing=True, times=10
    )
    reference = order_reference()

    # When the order is paid
    with pytest.raises(PaymentOutcomeUnknown):
        provider_payment(provider, external_reference=reference)

    # Then the payment is unknown with its request kept to send again, the ledger says so,
    # and the provider made one payment
    payment = Payment.objects.get(external_reference=reference)
    assert payment.status == PaymentStatus.UNKNOWN
    assert payment.create_request
    event = payment.events.get()
    assert event.kind == PaymentEventKind.OUTCOME_UNKNOWN
    assert (event.old_status, event.new_status) == (PaymentStatus.CREATING, PaymentStatus.UNKNOWN)
    assert len(provider.payments()) == 1
    hits = provider.fault_hits(fault)
    assert hits > 1  # the client retried with the same key

    # When the shopper tries again with a new attempt key (in English): told to wait, so as
    # not to be charged twice
    with translation.override("en"), pytest.raises(PaymentAttemptBlocked) as caught:
        provider_payment(provider, external_reference=reference)
    assert "still being confirmed" in caught.value.message

    # Then the provider was not called and no new local payment exists
    assert provider.fault_hits(fault) == hits
    assert len(provider.payments()) == 1
    assert Payment.objects.filter(external_reference=reference).count() == 1


# --- Order rules -----------------------------------------------------------------------------


@pytest.mark.parametrize("capture_method", ["automatic", "manual"])
def test_paid_order_refuses_a_new_attempt(provider: Api, capture_method: str) -> None:
    """An order already approved or authorized refuses a new payment attempt."""
    # Given an order paid (or authorized)
    reference = order_reference()
    provider_payment(provider, external_reference=reference, capture_method=capture_method)

    # When another attempt is made for it
    with pytest.raises(PaymentNotAllowed):
        provider_payment(provider, external_reference=reference)

    # Then no second payment exists, locally or at the provider
    assert Payment.objects.filter(external_reference=reference).count() == 1
    assert len(provider.payments()) == 1


def test_rejected_order_allows_a_new_attempt(provider: Api) -> None:
    """After a declined card the shopper can pay the same order with another card."""
    # Given an order whose card was declined
    reference = order_reference()
    rejected = provider_payment(provider, number=DECLINED, external_reference=reference)
    assert rejected.status == PaymentStatus.REJECTED

    # When they pay with another card
    payment = provider_payment(provider, number=MASTER, external_reference=reference)

    # Then the new attempt is approved and both attempts are kept
    assert payment.status == PaymentStatus.APPROVED
    assert payment.pk != rejected.pk
    assert Payment.objects.filter(external_reference=reference).count() == 2
    assert len(provider.payments()) == 2


@pytest.mark.parametrize(
    "amount", [Decimal("0"), Decimal("-1"), Decimal("1.001"), Decimal("NaN"), 12.5]
)
def test_bad_amount_is_refused_before_the_provider(provider: Api, amount: Any) -> None:
    """Zero, negative, sub-cent, NaN or float amounts raise InvalidAmount; nothing is made."""
    # Given an order; when it is paid with a bad amount
    reference = order_reference()
    with pytest.raises(InvalidAmount) as caught:
        provider_payment(
            provider, card_token="tok_never_used", amount=amount, external_reference=reference
        )

    # Then the error is readable and nothing was created anywhere
    assert caught.value.message
    assert not Payment.objects.filter(external_reference=reference).exists()
    assert provider.payments() == []


def test_unknown_capture_method_is_refused(provider: Api) -> None:
    """A capture method other than automatic or manual is refused before the provider."""
    # Given an order; when it is paid with an unknown capture method
    reference = order_reference()
    with pytest.raises(PaymentNotAllowed):
        provider_payment(
            provider,
            card_token="tok_never_used",
            capture_method="later",
            external_reference=reference,
        )

    # Then nothing was created
    assert not Payment.objects.filter(external_reference=reference).exists()
    assert provider.payments() == []


# --- Quirks of provider answers -----------------------------------------------------------


def test_authorized_as_approved_quirk_reads_as_authorized(provider: Api, admin_user) -> None:
    """An authorization answered as `approved` with AU-CAP01 is authorized locally and captures."""
    # Given the provider answers authorizations like the spec's sample
    assert provider.post("/_sandbox/quirks", {"authorized_as_approved": True}).status_code == 200

    # When an order is paid with manual capture
    payment = provider_payment(provider, capture_method="manual", amount="400.00")

    # Then the detail code decides: it is authorized, with an expiry
    assert provider.payment(payment.provider_id)["status"] == "approved"
    assert payment.status == PaymentStatus.AUTHORIZED
    assert payment.authorization_expires_at is not None
    assert payment.captured_amount == Decimal("0.00")
    # And a refresh keeps reading it as authorized
    assert payment_refresh(payment=payment).status == PaymentStatus.AUTHORIZED

    # When staff capture it
    payment = payment_capture(payment=payment, amount=None, actor=admin_user)

    # Then the capture is made at the provider
    assert (payment.status, payment.status_code) == (PaymentStatus.APPROVED, "AP-PAI01")
    assert payment.captured_amount == Decimal("400.00")


def test_three_ds_payment_reads_pending_whatever_the_message_case(provider: Api) -> None:
    """The sandbox varies PE-3DS01's message case; every answer reads as pending."""
    # Given a pending 3-D Secure payment
    payment = provider_payment(provider, number=THREE_DS)

    # When its answers (whose message case varies with the version) are read
    remote = provider.payment(payment.provider_id)

    # Then each reads as pending
    for message in ("Waiting 3DS", "waiting 3ds", "WAITING 3DS"):
        snapshot = {**remote, "status_detail": {"code": "PE-3DS01", "message": message}}
        assert local_status(ProviderPayment.from_json(snapshot)) == PaymentStatus.PENDING
    assert payment_refresh(payment=payment).status == PaymentStatus.PENDING


def remote(status: str, code: str, message: str) -> ProviderPayment:
    return ProviderPayment.from_json(
        {
            "id": str(uuid.uuid4()),
            "status": status,
            "status_detail": {"code": code, "message": message},
            "amount": "100.00",
            "currency": "MXN",
            "version": 1,
        }
    )


@pytest.mark.parametrize("message", ["Waiting 3DS", "waiting 3ds", "WAITING 3DS", "wAiTiNg 3dS"])
@pytest.mark.parametrize("code", ["PE-3DS01", "pe-3ds01", " PE-3DS01 "])
def test_local_status_pe_3ds01_is_pending_in_any_case(code: str, message: str) -> None:
    """PE-3DS01 reads as pending whatever the letter case of its message (or code)."""
    # Given a pending answer; when it is read; then it is pending
    assert local_status(remote("pending", code, message)) == PaymentStatus.PENDING


@pytest.mark.parametrize(
    ("status", "code", "message", "expected"),
    [
        ("approved", "AU-CAP01", "Pending capture", PaymentStatus.AUTHORIZED),
        ("APPROVED", "au-cap01", "PENDING CAPTURE", PaymentStatus.AUTHORIZED),
        ("authorized", "AU-CAP01", "Pending capture", PaymentStatus.AUTHORIZED),
        ("approved", "AP-PAI01", "Waiting 3DS", PaymentStatus.APPROVED),
        ("approved", "AP-PAI01", "Pending capture", PaymentStatus.APPROVED),
        ("rejected", "RE-DEC01", "waiting 3ds", PaymentStatus.REJECTED),
        ("cancelled", "CA-EXP01", "Authorization expired", PaymentStatus.CANCELLED),
        ("refunded", "RF-REF01", "Refunded", PaymentStatus.REFUNDED),
        ("Pending", "", "", PaymentStatus.PENDING),
    ],
)
def test_local_status_is_decided_by_codes_never_messages(
    status: str, code: str, message: str, expected: str
) -> None:
    """The detail code (where specific) then the status decide; the message never does."""
    # Given a hand-built provider answer; when it is read; then codes and status decide
    assert local_status(remote(status, code, message)) == expected


@pytest.mark.parametrize("status", ["paid", "", "creating", "unknown", "failed"])
def test_local_status_refuses_unknown_provider_statuses(status: str) -> None:
    """A status the provider does not define (or a local-only one) is refused, not guessed."""
    # Given an answer with a status outside the provider's set; when read; then it raises
    with pytest.raises(UnknownProviderStatus):
        local_status(remote(status, "XX-000", "whatever"))


def test_a_payment_named_by_its_notification_while_the_answer_was_awaited_stays_as_named(
    provider: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider makes the payment and its INSERT notification is processed (the payment
    adopted) while the create's own answer is still awaited, then lost: the attempt keeps the
    provider's status, not "unknown", and nothing is left to send again."""
    original = PaymentsClient.create_payment

    def answered_late(self: PaymentsClient, **kwargs: Any) -> Any:
        made = original(self, **kwargs)
        payment_sync(provider_id=made.id)  # the notification's task, meanwhile
        raise OutcomeUnknown("the answer was lost", http_status=500, error_code="AI1899")

    monkeypatch.setattr(PaymentsClient, "create_payment", answered_late)
    reference = order_reference()

    payment = provider_payment(provider, external_reference=reference)

    assert (payment.status, payment.create_request) == (PaymentStatus.APPROVED, "")
    assert [p["id"] for p in provider.payments()] == [payment.provider_id]
    assert not payment.events.filter(kind=PaymentEventKind.OUTCOME_UNKNOWN).exists()
