"""payment_refresh and payment_apply: provider-side changes come in, state only moves forward,
illegal moves are refused and recorded, and payment_status_changed is sent once per change,
after commit."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payments.models import Payment, PaymentEvent, PaymentEventKind
from payments.provider.errors import PaymentNotAllowed, ProviderDown
from payments.provider.types import ProviderPayment
from payments.rereading.calls import payment_refresh
from payments.signals import payment_status_changed
from payments.snapshots import IllegalTransition, payment_apply
from payments.statuses import PaymentStatus
from tests.factories import PaymentFactory, provider_payment
from tests.helpers.provider import THREE_DS, Api

pytestmark = pytest.mark.django_db


def kinds(payment: Payment) -> list[str]:
    return list(payment.events.values_list("kind", flat=True))


@pytest.fixture
def status_changes() -> Iterator[list[dict[str, Any]]]:
    """Every payment_status_changed sent, with what the database held when it was sent."""
    seen: list[dict[str, Any]] = []

    def receiver(sender: Any, payment: Payment, old_status: str, new_status: str, **kw: Any):
        seen.append(
            {
                "pk": payment.pk,
                "old": old_status,
                "new": new_status,
                "stored": Payment.objects.get(pk=payment.pk).status,
                "in_atomic_block": connection.in_atomic_block,
            }
        )

    payment_status_changed.connect(receiver, weak=False)
    yield seen
    payment_status_changed.disconnect(receiver)


# --- Refresh from the provider -------------------------------------------------------------


def test_refresh_picks_up_a_partial_refund_made_elsewhere(provider: Api, admin_user) -> None:
    """A refund made at the provider shows up on refresh as a SYNCED entry with the actor."""
    # Given a charge of 250.00 refunded in part at the provider directly
    payment = provider_payment(provider)
    response = provider.post(
        "/refunds", {"payment_id": payment.provider_id, "amount": Decimal("100.00")}
    )
    assert response.status_code == 201, response.text

    # When staff refresh it
    payment = payment_refresh(payment=payment, actor=admin_user)

    # Then the refunded amount and version are updated, and the ledger says so
    assert payment.status == PaymentStatus.APPROVED
    assert payment.refunded_amount == Decimal("100.00")
    assert payment.refundable_amount == Decimal("150.00")
    assert payment.provider_version == provider.payment(payment.provider_id)["version"] == 2
    event = payment.events.last()
    assert (event.kind, event.old_status, event.new_status, event.actor) == (
        PaymentEventKind.SYNCED,
        "approved",
        "approved",
        admin_user,
    )


def test_refresh_picks_up_a_void_made_elsewhere(provider: Api) -> None:
    """A full refund made at the provider on the day of approval refreshes to cancelled."""
    # Given a charge voided at the provider directly
    payment = provider_payment(provider)
    assert provider.post("/refunds", {"payment_id": payment.provider_id}).status_code == 201

    # When it is refreshed
    payment = payment_refresh(payment=payment)

    # Then it is cancelled as a void, with a SYNCED entry
    assert (payment.status, payment.status_code) == (PaymentStatus.CANCELLED, "CA-VOI01")
    assert payment.refunded_amount == Decimal("250.00")
    assert kinds(payment) == [PaymentEventKind.CREATED, PaymentEventKind.SYNCED]


def test_refresh_after_thirty_days_shows_the_authorization_expired(provider: Api) -> None:
    """An authorization not captured in 30 days refreshes to cancelled CA-EXP01."""
    # Given an authorization and a provider clock 30 days later
    payment = provider_payment(provider, capture_method="manual")
    clock = provider.post("/_sandbox/clock", {"advance_days": 30})
    assert clock.status_code == 200, clock.text

    # When it is refreshed
    payment = payment_refresh(payment=payment)

    # Then it is cancelled as expired, and the ledger has the move
    assert (payment.status, payment.status_code) == (PaymentStatus.CANCELLED, "CA-EXP01")
    assert not payment.can_capture()
    event = payment.events.last()
    assert (event.kind, event.old_status, event.new_status) == (
        PaymentEventKind.SYNCED,
        "authorized",
        "cancelled",
    )


def test_refresh_after_three_ds_passes_is_approved(provider: Api) -> None:
    """Once the shopper passes 3-D Secure, a refresh shows the charge approved."""
    # Given a pending 3-D Secure payment whose challenge the shopper passes
    payment = provider_payment(provider, number=THREE_DS)
    response = provider.session.post(
        payment.three_ds_url, data={"action": "submit", "code": "123456"}, timeout=30
    )
    assert response.status_code == 200, response.text

    # When it is refreshed
    payment = payment_refresh(payment=payment)

    # Then it is approved and the challenge address is gone
    assert (payment.status, payment.status_code) == (PaymentStatus.APPROVED, "AP-PAI01")
    assert payment.three_ds_url == ""
    assert payment.captured_amount == Decimal("250.00")


def test_refresh_without_changes_records_nothing(provider: Api) -> None:
    """Refreshing a payment that did not change adds no ledger entry."""
    # Given an approved payment; when it is refreshed twice
    payment = provider_payment(provider)
    payment_refresh(payment=payment)
    payment = payment_refresh(payment=payment)

    # Then only the creation is in the ledger, and the sync time is kept
    assert kinds(payment) == [PaymentEventKind.CREATED]
    assert payment.last_synced_at is not None


def test_refresh_of_a_payment_without_provider_id_is_refused(provider: Api) -> None:
    """A payment the provider never confirmed cannot be refreshed by id."""
    # Given a refused attempt (no provider id)
    payment = provider_payment(provider, amount="5.00")
    assert (payment.status, payment.provider_id) == (PaymentStatus.FAILED, None)

    # When it is refreshed; then it is refused
    with pytest.raises(PaymentNotAllowed):
        payment_refresh(payment=payment)


def test_refresh_while_the_provider_is_down_changes_nothing(provider: Api) -> None:
    """When the provider is unreachable, refresh raises ProviderDown and nothing changes."""
    # Given an authorization and a provider failing every GET with 503
    payment = provider_payment(provider, capture_method="manual")
    response = provider.post(
        "/_sandbox/faults", {"path": "/payments", "method": "GET", "status": 503, "times": 10}
    )
    assert response.status_code == 201

    # When it is refreshed; then ProviderDown and the payment is as it was
    with pytest.raises(ProviderDown):
        payment_refresh(payment=payment)
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.AUTHORIZED
    assert kinds(payment) == [PaymentEventKind.CREATED]


# --- The status signal -----------------------------------------------------------------------


def test_status_signal_is_sent_once_per_change_after_commit(
    provider: Api, status_changes: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    """payment_status_changed waits for the commit and is sent once per status change."""
    # Given an authorization
    payment = provider_payment(provider, capture_method="manual")
    provider.post("/_sandbox/clock", {"advance_days": 30})

    # When it is refreshed (it expired) and refreshed again, holding the commit callbacks
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        payment_refresh(payment=payment)
        payment_refresh(payment=payment)

    # Then nothing is sent before the commit
    assert status_changes == []
    # And once committed, exactly one signal with the old and new status
    for callback in callbacks:
        callback()
    assert [(s["pk"], s["old"], s["new"]) for s in status_changes] == [
        (payment.pk, "authorized", "cancelled")
    ]


def test_a_partial_refund_signals_once_with_the_same_status(
    provider: Api, status_changes: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    """A partial refund (amounts change, status does not) signals once, so the order can show
    it as partially refunded; a refresh that changes nothing signals nothing."""
    # Given a charge refunded in part at the provider
    payment = provider_payment(provider)
    response = provider.post(
        "/refunds", {"payment_id": payment.provider_id, "amount": Decimal("10.00")}
    )
    assert response.status_code == 201, response.text

    # When it is refreshed twice
    with django_capture_on_commit_callbacks(execute=True):
        payment_refresh(payment=payment)
        payment_refresh(payment=payment)

    # Then one signal, status unchanged, the new amount stored
    assert [(c["old"], c["new"]) for c in status_changes] == [("approved", "approved")]
    payment.refresh_from_db()
    assert payment.refunded_amount == Decimal("10.00")


@pytest.mark.django_db(transaction=True)
def test_status_signal_sees_the_committed_state(
    provider: Api, status_changes: list[dict[str, Any]]
) -> None:
    """With real commits, each signal is sent outside any transaction with the new state stored."""
    # Given an authorization (creating -> authorized)
    payment = provider_payment(provider, capture_method="manual")
    provider.post("/_sandbox/clock", {"advance_days": 30})

    # When it expires and is refreshed twice
    payment_refresh(payment=payment)
    payment_refresh(payment=payment)

    # Then one signal per change, each after commit, with the database already up to date
    assert [(s["old"], s["new"]) for s in status_changes] == [
        ("creating", "authorized"),
        ("authorized", "cancelled"),
    ]
    assert all(s["stored"] == s["new"] for s in status_changes)
    assert not any(s["in_atomic_block"] for s in status_changes)


# --- Applying snapshots: monotonic state ----------------------------------------------------

AMOUNT = Decimal("200.00")
DETAIL_MESSAGES = {
    "PE-3DS01": "Waiting 3DS",
    "AU-CAP01": "Pending capture",
    "AP-PAI01": "paid",
    "CA-MER01": "Cancelled",
    "CA-EXP01": "Authorization expired",
    "CA-3DS01": "3-D Secure not completed",
    "CA-VOI01": "Voided",
    "RF-REF01": "Refunded",
    "RE-DEC01": "Declined",
    "RE-3DS01": "3-D Secure failed",
}


def snapshot(
    provider_id: str,
    version: int,
    status: str,
    code: str,
    *,
    captured: Decimal = Decimal("0.00"),
    refunded: Decimal = Decimal("0.00"),
) -> ProviderPayment:
    """A provider answer built by hand, shaped like GET /payments/{id}."""
    return ProviderPayment.from_json(
        {
            "id": provider_id,
            "amount": AMOUNT,
            "amount_refunded": refunded,
            "capture_method": "manual",
            "paid_amount": captured,
            "captured_amount": captured,
            "currency": "MXN",
            "external_reference": "ORD-HYPO",
            "payment_method": {
                "id": "visa",
                "type": "credit_card",
                "card": {"bin": "424242", "last_digits": "4242"},
            },
            "pending_action": (
                {"type": "open_modal", "url": f"https://sandbox.test/3ds/{provider_id}"}
                if status == "pending"
                else {}
            ),
            "refunds": [],
            "status": status,
            "status_detail": {"code": code, "message": DETAIL_MESSAGES[code]},
            "created_at": "2030-01-01T00:00:00.000000Z",
            "version": version,
        }
    )


def fresh_payment() -> Payment:
    """A local payment that has not heard from the provider yet."""
    return PaymentFactory(capture_method="manual", amount=AMOUNT, status=PaymentStatus.CREATING)


@st.composite
def provider_histories(draw: st.DrawFn) -> list[tuple[str, str, Decimal, Decimal]]:
    """A legal history of one payment at the provider: (status, code, captured, refunded)."""
    status, code = draw(
        st.sampled_from(
            [("pending", "PE-3DS01"), ("authorized", "AU-CAP01"), ("approved", "AP-PAI01")]
        )
    )
    captured = AMOUNT if status == "approved" else Decimal("0.00")
    refunded = Decimal("0.00")
    history = [(status, code, captured, refunded)]
    for _ in range(draw(st.integers(min_value=2, max_value=6))):
        if status == "pending":
            moves = [
                ("authorized", "AU-CAP01"),
                ("approved", "AP-PAI01"),
                ("rejected", "RE-3DS01"),
                ("cancelled", "CA-3DS01"),
            ]
        elif status == "authorized":
            moves = [("approved", "AP-PAI01"), ("cancelled", "CA-MER01"), ("cancelled", "CA-EXP01")]
        elif status == "approved":
            moves = [("refunded", "RF-REF01"), ("cancelled", "CA-VOI01")]
            if refunded + Decimal("10.00") < captured:
                moves.append(("approved", "AP-PAI01"))  # a partial refund
        else:
            break
        new_status, code = draw(st.sampled_from(moves))
        if new_status == "approved" and status == "approved":
            refunded += Decimal("10.00")
        elif new_status == "approved":
            captured = draw(st.sampled_from([AMOUNT, Decimal("150.00")]))
        elif new_status in ("refunded",) or code == "CA-VOI01":
            refunded = captured
        status = new_status
        history.append((status, code, captured, refunded))
    return history


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(history=provider_histories(), data=st.data())
def test_shuffled_duplicated_snapshots_end_on_the_newest(
    history: list[tuple[str, str, Decimal, Decimal]], data: st.DataObject
) -> None:
    """Whatever order (and however often) snapshots arrive, the payment ends on the newest."""
    # Given the snapshots of one payment's legal history, versions 1..n
    provider_id = str(uuid.uuid4())
    snapshots = [
        snapshot(provider_id, version, status, code, captured=captured, refunded=refunded)
        for version, (status, code, captured, refunded) in enumerate(history, start=1)
    ]
    extra = data.draw(st.lists(st.sampled_from(snapshots), max_size=len(snapshots) * 2))
    arrivals = data.draw(st.permutations(snapshots + extra))
    payment = fresh_payment()

    # When they are applied in that order
    for remote in arrivals:
        payment_apply(payment=payment, remote=remote)

    # Then the payment holds the newest snapshot
    payment.refresh_from_db()
    newest = snapshots[-1]
    assert payment.status == newest.status
    assert payment.status_code == newest.status_detail.code
    assert payment.provider_version == newest.version
    assert (payment.captured_amount, payment.refunded_amount) == (
        newest.captured_amount,
        newest.amount_refunded,
    )
    assert not payment.events.filter(kind=PaymentEventKind.ANOMALY).exists()


@pytest.mark.parametrize(
    "path",
    [
        # Steps skipped by a refetch that comes late, each one reachable by legal moves.
        [("authorized", "AU-CAP01"), ("refunded", "RF-REF01")],
        [("pending", "PE-3DS01"), ("refunded", "RF-REF01")],
        [("authorized", "AU-CAP01"), ("cancelled", "CA-VOI01")],
    ],
    ids=["authorized->refunded", "pending->refunded", "authorized->voided"],
)
def test_a_newer_snapshot_may_skip_intermediate_states(path: list[tuple[str, str]]) -> None:
    """A newer snapshot reachable through missed legal steps is applied, not refused."""
    # Given a payment that heard only of the first state (version 1)
    provider_id = str(uuid.uuid4())
    payment = fresh_payment()
    first_status, first_code = path[0]
    payment_apply(payment=payment, remote=snapshot(provider_id, 1, first_status, first_code))

    # When a snapshot three versions later arrives (capture and refund were missed)
    last_status, last_code = path[-1]
    payment_apply(
        payment=payment,
        remote=snapshot(provider_id, 4, last_status, last_code, captured=AMOUNT, refunded=AMOUNT),
    )

    # Then the payment holds it
    payment.refresh_from_db()
    assert (payment.status, payment.provider_version) == (last_status, 4)


def test_older_snapshot_after_a_newer_one_changes_nothing(
    status_changes: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    """A snapshot older than what is held is ignored: no change, no entry, no signal."""
    # Given a payment holding version 3 (approved)
    provider_id = str(uuid.uuid4())
    payment = fresh_payment()
    payment_apply(
        payment=payment, remote=snapshot(provider_id, 3, "approved", "AP-PAI01", captured=AMOUNT)
    )
    events = kinds(payment)

    # When versions 2 (authorized) and 1 (pending) arrive late
    with django_capture_on_commit_callbacks(execute=True):
        payment_apply(payment=payment, remote=snapshot(provider_id, 2, "authorized", "AU-CAP01"))
        payment_apply(payment=payment, remote=snapshot(provider_id, 1, "pending", "PE-3DS01"))

    # Then the payment is unchanged
    payment.refresh_from_db()
    assert (payment.status, payment.provider_version) == ("approved", 3)
    assert payment.captured_amount == AMOUNT
    assert payment.three_ds_url == ""
    assert kinds(payment) == events
    assert status_changes == []


def test_same_version_lower_status_changes_nothing() -> None:
    """Of two snapshots with the same version, the one further along the status order wins."""
    # Given a payment holding version 2 approved
    provider_id = str(uuid.uuid4())
    payment = fresh_payment()
    payment_apply(
        payment=payment, remote=snapshot(provider_id, 2, "approved", "AP-PAI01", captured=AMOUNT)
    )

    # When a version 2 authorized arrives; then it is ignored
    payment_apply(payment=payment, remote=snapshot(provider_id, 2, "authorized", "AU-CAP01"))
    payment.refresh_from_db()
    assert payment.status == "approved"


def test_illegal_move_raises_and_records_an_anomaly() -> None:
    """A newer snapshot that moves backwards (approved -> pending) raises and is recorded."""
    # Given an approved payment at version 3
    provider_id = str(uuid.uuid4())
    payment = fresh_payment()
    payment_apply(
        payment=payment, remote=snapshot(provider_id, 3, "approved", "AP-PAI01", captured=AMOUNT)
    )

    # When the provider reports it pending at version 4
    with pytest.raises(IllegalTransition):
        payment_apply(payment=payment, remote=snapshot(provider_id, 4, "pending", "PE-3DS01"))

    # Then the payment is unchanged and the ledger has an ANOMALY entry
    payment.refresh_from_db()
    assert (payment.status, payment.provider_version) == ("approved", 3)
    anomaly = payment.events.get(kind=PaymentEventKind.ANOMALY)
    assert (anomaly.old_status, anomaly.new_status) == ("approved", "pending")
    assert anomaly.message


@pytest.mark.parametrize(
    ("status", "code"),
    [("rejected", "RE-DEC01"), ("cancelled", "CA-MER01"), ("refunded", "RF-REF01")],
)
def test_final_states_never_move(status: str, code: str) -> None:
    """A payment in a final state refuses any newer different status as an anomaly."""
    # Given a payment in a final state at version 2
    provider_id = str(uuid.uuid4())
    payment = fresh_payment()
    payment_apply(payment=payment, remote=snapshot(provider_id, 2, status, code))

    # When the provider reports it approved at version 3; then it raises and records it
    with pytest.raises(IllegalTransition):
        payment_apply(
            payment=payment,
            remote=snapshot(provider_id, 3, "approved", "AP-PAI01", captured=AMOUNT),
        )
    payment.refresh_from_db()
    assert payment.status == status
    assert PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.ANOMALY).count() == 1


def test_unknown_provider_status_is_an_anomaly() -> None:
    """A status the shop does not know raises IllegalTransition and records an anomaly."""
    # Given a payment; when the provider reports a status nobody defined
    payment = fresh_payment()
    remote = ProviderPayment.from_json(
        {"id": str(uuid.uuid4()), "status": "chargeback", "amount": "200.00", "version": 1}
    )
    with pytest.raises(IllegalTransition):
        payment_apply(payment=payment, remote=remote)

    # Then the payment is unchanged and the anomaly is recorded
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.CREATING
    assert kinds(payment) == [PaymentEventKind.ANOMALY]
