"""Staff actions against the live sandbox: capture, cancel, refund, their refusals and provider
failures, every outcome in the ledger with its actor; and subscription sync and cancel."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.utils import translation

from payments.actions.calls import payment_cancel, payment_capture, payment_refund
from payments.actions.subscription_calls import subscription_cancel, subscription_sync
from payments.models import Payment, PaymentEventKind, Refund, Subscription, SubscriptionStatus
from payments.provider.errors import InvalidAmount, PaymentNotAllowed, PaymentRefused, ProviderDown
from payments.statuses import PaymentStatus
from payments.words import REFUSALS
from tests.factories import provider_payment
from tests.helpers.provider import DECLINED, THREE_DS, VISA, Api
from tests.payments.helpers import approved, authorized

pytestmark = pytest.mark.django_db

# Seeded by the sandbox on reset (sandbox/provider/subscriptions.py SEED_SUBSCRIPTIONS).
SEED_MARIA = "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"
SEED_JORGE = "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"


@pytest.fixture
def staff(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(
        username="caja", password="not-used-here", is_staff=True
    )


def probe(provider: Api, path: str, method: str) -> int:
    """A 1 ms latency fault that only counts the matching provider calls."""
    return provider.add_fault(path=path, method=method, latency_ms=1)


def kinds(payment: Payment) -> list[str]:
    return list(payment.events.values_list("kind", flat=True))


# --- Capture ---------------------------------------------------------------------------------


def test_capture_in_full(provider: Api, staff: Any) -> None:
    """Capturing without an amount charges the whole authorization, recorded with the actor."""
    # Given an authorization of 250.00
    payment = authorized(provider)

    # When staff capture it without an amount
    payment = payment_capture(payment=payment, amount=None, actor=staff)

    # Then it is approved for 250.00, locally and at the provider
    assert (payment.status, payment.status_code) == (PaymentStatus.APPROVED, "AP-PAI01")
    assert payment.captured_amount == Decimal("250.00")
    assert payment.intent == ""
    remote = provider.payment(payment.provider_id)
    assert (remote["status"], remote["captured_amount"]) == ("approved", Decimal("250.00"))
    # And the ledger names the actor and the amount
    event = payment.events.last()
    assert event.kind == PaymentEventKind.CAPTURED
    assert (event.old_status, event.new_status) == (PaymentStatus.AUTHORIZED, "approved")
    assert (event.actor, event.amount) == (staff, Decimal("250.00"))


def test_capture_in_part(provider: Api, staff: Any) -> None:
    """A smaller capture charges only that amount and leaves only it refundable."""
    # Given an authorization of 250.00
    payment = authorized(provider)

    # When staff capture 100.00
    payment = payment_capture(payment=payment, amount=Decimal("100.00"), actor=staff)

    # Then 100.00 is charged and refundable
    assert payment.status == PaymentStatus.APPROVED
    assert payment.captured_amount == Decimal("100.00")
    assert payment.refundable_amount == Decimal("100.00")
    assert provider.payment(payment.provider_id)["paid_amount"] == Decimal("100.00")
    assert payment.events.last().amount == Decimal("100.00")


@pytest.mark.parametrize(
    "amount",
    [Decimal("250.01"), Decimal("0"), Decimal("0.00"), Decimal("-5"), Decimal("10.001"), 100.5],
)
def test_bad_capture_amount_changes_nothing(provider: Api, staff: Any, amount: Any) -> None:
    """A capture above the authorization, zero, negative or sub-cent never reaches the provider."""
    # Given an authorization of 250.00
    payment = authorized(provider)
    version = provider.payment(payment.provider_id)["version"]
    patches = probe(provider, "/payments", "PATCH")

    # When staff capture a bad amount
    with pytest.raises(InvalidAmount) as caught:
        payment_capture(payment=payment, amount=amount, actor=staff)

    # Then the error is readable and nothing changed anywhere
    assert caught.value.message
    assert provider.fault_hits(patches) == 0
    assert provider.payment(payment.provider_id)["version"] == version
    payment.refresh_from_db()
    assert (payment.status, payment.intent) == (PaymentStatus.AUTHORIZED, "")
    assert kinds(payment) == [PaymentEventKind.CREATED]


@pytest.mark.parametrize(
    ("number", "capture_method", "status"),
    [
        (VISA, "automatic", PaymentStatus.APPROVED),
        (THREE_DS, "manual", PaymentStatus.PENDING),
        (DECLINED, "manual", PaymentStatus.REJECTED),
    ],
)
@pytest.mark.parametrize("action", ["capture", "cancel"])
def test_capture_or_cancel_needs_an_authorization(
    provider: Api, staff: Any, number: str, capture_method: str, status: str, action: str
) -> None:
    """Capture and cancel are refused on a payment that is not authorized."""
    # Given a payment that is approved, pending or rejected
    payment = provider_payment(provider, number=number, capture_method=capture_method)
    assert payment.status == status
    patches = probe(provider, "/payments", "PATCH")

    # When staff capture or cancel it
    with pytest.raises(PaymentNotAllowed) as caught:
        if action == "capture":
            payment_capture(payment=payment, amount=None, actor=staff)
        else:
            payment_cancel(payment=payment, actor=staff)

    # Then it is refused with its status in the message, and the provider is not called
    assert payment.get_status_display().lower() in caught.value.message
    assert provider.fault_hits(patches) == 0
    payment.refresh_from_db()
    assert payment.status == status
    assert kinds(payment) == [PaymentEventKind.CREATED]


def test_capture_of_a_cancelled_authorization_is_refused(provider: Api, staff: Any) -> None:
    """A cancelled authorization can be neither captured nor cancelled again."""
    # Given a cancelled authorization
    payment = payment_cancel(payment=authorized(provider), actor=staff)
    patches = probe(provider, "/payments", "PATCH")

    # When staff capture it, or cancel it again; then both are refused without a provider call
    with pytest.raises(PaymentNotAllowed):
        payment_capture(payment=payment, amount=None, actor=staff)
    with pytest.raises(PaymentNotAllowed):
        payment_cancel(payment=payment, actor=staff)
    assert provider.fault_hits(patches) == 0


# --- Cancel ----------------------------------------------------------------------------------


def test_cancel_releases_the_authorization(provider: Api, staff: Any) -> None:
    """Cancelling an authorization gives cancelled CA-MER01, recorded with the actor."""
    # Given an authorization
    payment = authorized(provider)

    # When staff cancel it
    payment = payment_cancel(payment=payment, actor=staff)

    # Then it is cancelled (CA-MER01) here and at the provider, with nothing charged
    assert (payment.status, payment.status_code) == (PaymentStatus.CANCELLED, "CA-MER01")
    assert payment.captured_amount == Decimal("0.00")
    assert payment.intent == ""
    assert provider.payment(payment.provider_id)["status"] == "cancelled"
    event = payment.events.last()
    assert event.kind == PaymentEventKind.CANCELLED
    assert (event.old_status, event.new_status, event.actor) == ("authorized", "cancelled", staff)


# --- Refund ----------------------------------------------------------------------------------


def test_refund_in_part_then_the_rest(provider: Api, staff: Any) -> None:
    """A partial refund keeps the charge approved; refunding the rest makes it refunded."""
    # Given a charge of 250.00
    payment = approved(provider)

    # When staff refund 100.00
    refund = payment_refund(
        payment=payment, amount=Decimal("100.00"), reason="Taza rota", actor=staff
    )

    # Then 150.00 is left, the payment stays approved and the refund is recorded
    payment.refresh_from_db()
    assert (refund.amount, refund.actor, refund.reason) == (Decimal("100.00"), staff, "Taza rota")
    assert payment.status == PaymentStatus.APPROVED
    assert payment.refunded_amount == Decimal("100.00")
    assert payment.refundable_amount == Decimal("150.00")
    assert payment.intent == ""

    # When staff refund the rest (no amount)
    rest = payment_refund(payment=payment, amount=None, actor=staff)

    # Then the payment is refunded in full, here and at the provider
    payment.refresh_from_db()
    assert rest.amount == Decimal("150.00")
    assert (payment.status, payment.status_code) == (PaymentStatus.REFUNDED, "RF-REF01")
    assert payment.refunded_amount == Decimal("250.00")
    assert payment.refundable_amount == Decimal("0.00")
    remote = provider.payment(payment.provider_id)
    assert (remote["status"], remote["amount_refunded"]) == ("refunded", Decimal("250.00"))
    assert Refund.objects.filter(payment=payment).count() == 2
    # And each refund is in the ledger with its actor and amount
    events = list(payment.events.filter(kind=PaymentEventKind.REFUNDED))
    assert [(e.amount, e.actor) for e in events] == [
        (Decimal("100.00"), staff),
        (Decimal("150.00"), staff),
    ]
    assert (events[-1].old_status, events[-1].new_status) == ("approved", "refunded")


def test_full_refund_on_the_day_voids_the_charge(provider: Api, staff: Any) -> None:
    """A full refund on the day of approval voids the charge (cancelled CA-VOI01)."""
    # Given a charge approved today; when staff refund it in full
    payment = approved(provider)
    payment_refund(payment=payment, actor=staff)

    # Then it is cancelled as a void
    payment.refresh_from_db()
    assert (payment.status, payment.status_code) == (PaymentStatus.CANCELLED, "CA-VOI01")
    assert payment.refunded_amount == Decimal("250.00")


@pytest.mark.parametrize(
    "amount", [Decimal("150.01"), Decimal("0"), Decimal("-1"), Decimal("1.001"), 20.0]
)
def test_refund_never_above_what_is_left(provider: Api, staff: Any, amount: Any) -> None:
    """A refund above what is left (or zero, negative, sub-cent) never reaches the provider."""
    # Given a charge of 250.00 with 100.00 already refunded
    payment = approved(provider)
    payment_refund(payment=payment, amount=Decimal("100.00"), actor=staff)
    version = provider.payment(payment.provider_id)["version"]
    events = kinds(payment)
    refunds = probe(provider, "/refunds", "POST")

    # When staff refund a bad amount
    with pytest.raises(InvalidAmount) as caught:
        payment_refund(payment=payment, amount=amount, actor=staff)

    # Then it is refused with a readable message and nothing changed
    assert caught.value.message
    assert provider.fault_hits(refunds) == 0
    assert provider.payment(payment.provider_id)["version"] == version
    payment.refresh_from_db()
    assert (payment.refunded_amount, payment.intent) == (Decimal("100.00"), "")
    assert kinds(payment) == events
    assert Refund.objects.filter(payment=payment).count() == 1


@pytest.mark.parametrize("number", [VISA, DECLINED])
def test_refund_needs_a_charge(provider: Api, staff: Any, number: str) -> None:
    """An authorization (or a rejected payment) cannot be refunded."""
    # Given an authorized or rejected payment
    payment = provider_payment(provider, number=number, capture_method="manual")
    refunds = probe(provider, "/refunds", "POST")

    # When staff refund it; then it is refused without a provider call
    with pytest.raises(PaymentNotAllowed):
        payment_refund(payment=payment, amount=Decimal("10.00"), actor=staff)
    assert provider.fault_hits(refunds) == 0
    assert not Refund.objects.exists()


def test_fully_refunded_charge_cannot_be_refunded_again(provider: Api, staff: Any) -> None:
    """Once nothing is left to refund, a new refund is refused."""
    # Given a charge refunded in full
    payment = approved(provider)
    payment_refund(payment=payment, actor=staff)
    refunds = probe(provider, "/refunds", "POST")

    # When staff refund again; then it is refused without a provider call
    with pytest.raises(PaymentNotAllowed):
        payment_refund(payment=payment, amount=Decimal("1.00"), actor=staff)
    assert provider.fault_hits(refunds) == 0


# --- Provider failures -----------------------------------------------------------------------


def test_capture_answered_500_once_is_sent_again_with_its_key_and_made_once(
    provider: Api, staff: Any
) -> None:
    """A capture the provider makes but answers 500 AI1899 is sent again with its key: the
    provider's stored answer comes back, and the money is captured once."""
    # Given an authorization and a provider that captures but answers the next PATCH with 500
    payment = authorized(provider)
    provider.add_fault(
        path="/payments",
        method="PATCH",
        status=500,
        error_code="AI1899",
        times=1,
        after_processing=True,
    )

    # When staff capture 200.00 of it
    captured = payment_capture(payment=payment, amount=Decimal("200.00"), actor=staff)

    # Then it is captured once, here and at the provider
    remote = provider.payment(payment.provider_id)
    assert (captured.status, captured.captured_amount) == ("approved", Decimal("200.00"))
    assert (remote["status"], Decimal(str(remote["captured_amount"]))) == (
        "approved",
        Decimal("200.00"),
    )
    assert remote["version"] == 2
    assert kinds(captured) == [PaymentEventKind.CREATED, PaymentEventKind.CAPTURED]


def test_capture_always_answered_500_is_unconfirmed_never_refused(
    provider: Api, staff: Any
) -> None:
    """A capture only ever answered 500 is reported as not confirmed (the payment is read
    again), in the staff member's language; never as refused or "not made"."""
    # Given an authorization and a provider failing every PATCH
    payment = authorized(provider)
    provider.add_fault(path="/payments", method="PATCH", status=500, error_code="AI1899")

    # When staff capture it, in the Spanish admin
    with translation.override("es"), pytest.raises(ProviderDown) as caught:
        payment_capture(payment=payment, amount=None, actor=staff)

    # Then the message says it was not confirmed, in Spanish
    assert caught.value.message.startswith("El servicio de pagos no confirmó el cobro.")
    # And the payment is still authorized, free, with the unknown outcome in the ledger
    payment.refresh_from_db()
    assert (payment.status, payment.intent) == ("authorized", "")
    event = payment.events.get(kind=PaymentEventKind.OUTCOME_UNKNOWN)
    assert (event.error_code, event.actor) == ("AI1899", staff)
    assert event.message.startswith("capture:")


def test_conflict_at_the_provider_is_readable(provider: Api, staff: Any) -> None:
    """A capture the provider refuses as a conflict (CL2206) is explained, and the payment is
    brought up to date from the provider."""
    # Given an authorization cancelled at the provider behind the shop's back
    payment = authorized(provider)
    response = provider.patch(f"/payments/{payment.provider_id}", {"status": "cancelled"})
    assert response.status_code == 200, response.text

    # When staff capture it
    with pytest.raises(PaymentRefused) as caught:
        payment_capture(payment=payment, amount=None, actor=staff)

    # Then the message explains it, a FAILED entry records the code, and the payment now
    # shows what the provider holds
    assert caught.value.message == f"{REFUSALS['CL2206']} The payment was refreshed."
    payment.refresh_from_db()
    assert payment.intent == ""
    assert payment.status == PaymentStatus.CANCELLED
    assert payment.events.filter(kind=PaymentEventKind.FAILED, error_code="CL2206").count() == 1


def test_refund_always_answered_500_is_unconfirmed(provider: Api, staff: Any) -> None:
    """A refund only ever answered 500 is reported as not confirmed, not as refused; nothing
    is refunded locally (the provider made none)."""
    # Given a charge and a provider failing every refund
    payment = approved(provider)
    provider.add_fault(path="/refunds", method="POST", status=500, error_code="AI1899")

    # When staff refund it (in English)
    with translation.override("en"), pytest.raises(ProviderDown) as caught:
        payment_refund(payment=payment, amount=Decimal("50.00"), actor=staff)

    # Then the message says it was not confirmed; nothing was refunded and the payment is free
    assert caught.value.message.startswith("The payment service did not confirm the refund.")
    payment.refresh_from_db()
    assert (payment.refunded_amount, payment.intent) == (Decimal("0.00"), "")
    assert not Refund.objects.exists()
    event = payment.events.get(kind=PaymentEventKind.OUTCOME_UNKNOWN)
    assert (event.error_code, event.actor) == ("AI1899", staff)


@pytest.mark.parametrize("processed", [True, False])
def test_lost_capture_answer_raises_provider_down_and_refreshes(
    provider: Api, staff: Any, processed: bool
) -> None:
    """A capture whose answer is lost (502) raises ProviderDown and the payment is refreshed."""
    # Given an authorization and a provider whose PATCH answers are all lost
    payment = authorized(provider)
    provider.add_fault(
        path="/payments", method="PATCH", status=502, after_processing=processed, times=10
    )

    # When staff capture it
    with translation.override("en"), pytest.raises(ProviderDown) as caught:
        payment_capture(payment=payment, amount=Decimal("200.00"), actor=staff)

    # Then the message says to check the (refreshed) status
    assert "refreshed" in caught.value.message
    payment.refresh_from_db()
    assert payment.intent == ""
    remote = provider.payment(payment.provider_id)
    # And the local payment tells what the provider did: captured once, or not at all
    assert payment.status == remote["status"] == ("approved" if processed else "authorized")
    assert payment.provider_version == remote["version"]
    assert payment.captured_amount == (Decimal("200.00") if processed else Decimal("0.00"))
    expected = [PaymentEventKind.CREATED, PaymentEventKind.OUTCOME_UNKNOWN]
    if processed:
        expected.append(PaymentEventKind.SYNCED)
    assert kinds(payment) == expected
    assert payment.events.get(kind=PaymentEventKind.OUTCOME_UNKNOWN).actor == staff


def test_lost_cancel_answer_raises_provider_down_and_refreshes(provider: Api, staff: Any) -> None:
    """A cancellation whose answer is lost raises ProviderDown; the refresh shows it cancelled."""
    # Given an authorization and a provider that cancels but loses every answer
    payment = authorized(provider)
    provider.add_fault(
        path="/payments", method="PATCH", status=502, after_processing=True, times=10
    )

    # When staff cancel it; then ProviderDown, and the payment is refreshed to cancelled
    with pytest.raises(ProviderDown):
        payment_cancel(payment=payment, actor=staff)
    payment.refresh_from_db()
    assert (payment.status, payment.status_code, payment.intent) == ("cancelled", "CA-MER01", "")


# --- Subscriptions ---------------------------------------------------------------------------


def test_subscription_sync_imports_a_seeded_subscription(provider: Api) -> None:
    """A subscription is imported by its provider id with its customer and invoices."""
    # Given a subscription seeded at the provider; when it is synced
    subscription = subscription_sync(provider_id=f"  {SEED_MARIA} ")

    # Then it is stored locally as the provider holds it
    assert subscription.provider_id == SEED_MARIA
    assert subscription.status == SubscriptionStatus.ACTIVE
    assert subscription.price_id == "price_cafe_mensual"
    assert subscription.customer_email == "maria@example.com"
    assert subscription.last_synced_at is not None
    assert subscription.snapshot["id"] == SEED_MARIA

    # When it is synced again; then the same record is updated
    assert subscription_sync(provider_id=SEED_MARIA).pk == subscription.pk
    assert Subscription.objects.count() == 1


def test_subscription_cancel_sets_it_inactive(provider: Api, staff: Any) -> None:
    """Cancelling a subscription sets it inactive here and at the provider."""
    # Given an imported active subscription
    subscription = subscription_sync(provider_id=SEED_JORGE)

    # When staff cancel it
    subscription = subscription_cancel(subscription=subscription, actor=staff)

    # Then it is inactive locally and at the provider
    assert subscription.status == SubscriptionStatus.INACTIVE
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.INACTIVE
    assert provider.get(f"/subscriptions/{SEED_JORGE}").json()["status"] == "inactive"


def test_cancelling_an_inactive_subscription_is_refused(provider: Api, staff: Any) -> None:
    """An inactive subscription cannot be cancelled again; the provider is not called."""
    # Given a cancelled subscription
    subscription = subscription_cancel(
        subscription=subscription_sync(provider_id=SEED_MARIA), actor=staff
    )
    puts = probe(provider, "/subscriptions", "PUT")

    # When staff cancel it again; then it is refused without a provider call
    with pytest.raises(PaymentNotAllowed):
        subscription_cancel(subscription=subscription, actor=staff)
    assert provider.fault_hits(puts) == 0


@pytest.mark.parametrize("provider_id", ["3f2b8c1e-5d47-4a9b-9e61-0c7d2a4f8b13", "not-a-uuid"])
def test_subscription_sync_of_an_unknown_id_is_refused(provider: Api, provider_id: str) -> None:
    """Syncing an id the provider does not know gives a readable refusal and stores nothing."""
    # Given an id unknown to the provider; when it is synced; then it is refused
    with pytest.raises(PaymentRefused) as caught:
        subscription_sync(provider_id=provider_id)
    assert caught.value.message == "The provider has no subscription with this id."
    assert not Subscription.objects.exists()


def test_subscription_cancel_of_an_unknown_id_is_refused(provider: Api, staff: Any) -> None:
    """Cancelling a local subscription the provider does not know is refused; nothing changes."""
    # Given a local active subscription with an id the provider does not hold
    subscription = Subscription.objects.create(
        provider_id=str(uuid.uuid4()), price_id="price_x", status=SubscriptionStatus.ACTIVE
    )

    # When staff cancel it; then it is refused and stays active
    with pytest.raises(PaymentRefused):
        subscription_cancel(subscription=subscription, actor=staff)
    subscription.refresh_from_db()
    assert subscription.status == SubscriptionStatus.ACTIVE
