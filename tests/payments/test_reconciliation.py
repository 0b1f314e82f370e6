"""Reconciliation against the live sandbox: payment_sync by provider id (updated, unchanged, not
found, adopted, unmatched), payments_reconcile for payments whose notifications never came, and
authorizations_watch for authorizations about to expire or expired."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from checkout.models import Order, OrderStatus
from core.task_queue import is_marked, mark, unmark
from payments.actions.calls import payment_cancel
from payments.attempts.rules import payment_attempt_store
from payments.models import Payment, PaymentEvent, PaymentEventKind
from payments.provider.errors import PaymentOutcomeUnknown, PaymentRefused
from payments.rereading.calls import SyncOutcome, payment_sync
from payments.rereading.expiry_calls import authorizations_watch
from payments.statuses import PaymentStatus
from payments.task_names import MARKER_TTL, SEND_CREATE_TASK, marker
from payments.tasks import payment_send_create_task, payments_send_waiting_task
from tests.factories import (
    OrderFactory,
    PaymentFactory,
    ProductFactory,
    order_reference,
    provider_payment,
)
from tests.helpers.broker import take_queued
from tests.helpers.provider import DECLINED, THREE_DS, Api
from tests.helpers.servers import free_port
from tests.helpers.waiting import wait_until

pytestmark = [pytest.mark.sandbox, pytest.mark.django_db]

CaptureCallbacks = Callable[..., Any]


def age(payment: Payment, **fields: Any) -> Payment:
    """Move a payment's timestamps as if time had passed (the database only)."""
    Payment.objects.filter(pk=payment.pk).update(**fields)
    payment.refresh_from_db()
    return payment


def pass_challenge(api: Api, payment: Payment) -> None:
    """The shopper passes the 3-D Secure challenge at the provider; the shop is not told."""
    assert payment.three_ds_url
    response = api.session.post(
        payment.three_ds_url, data={"action": "submit", "code": "123456"}, timeout=10
    )
    assert response.status_code == 200, response.text
    assert api.payment(payment.provider_id)["status"] == "approved"


def capture_at_provider(api: Api, payment: Payment) -> None:
    response = api.patch(
        f"/payments/{payment.provider_id}",
        {"status": "approved", "paid_amount": payment.amount},
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    assert response.status_code == 200, response.text


def order_for(**fields: Any) -> Order:
    product = ProductFactory(
        slug=f"jarra-{uuid.uuid4().hex[:8]}", name="Jarra", price=Decimal("250.00"), stock=5
    )
    return OrderFactory(lines=[(product, 1)], **fields)


def attempt_in_flight(status: str, minutes_ago: int) -> Payment:
    """A local attempt whose create never answered: no provider id."""
    return PaymentFactory(
        amount=Decimal("250.00"),
        status=status,
        provider_id=None,
        created_at=timezone.now() - timedelta(minutes=minutes_ago),
    )


# --- payment_sync --------------------------------------------------------------------------


def test_sync_applies_a_change_made_at_the_provider(provider: Api) -> None:
    """A payment we hold that moved at the provider is UPDATED to match."""
    # Given an authorization captured at the provider
    payment = provider_payment(provider, capture_method="manual")
    capture_at_provider(provider, payment)

    # When it is synced by its provider id
    result = payment_sync(provider_id=payment.provider_id)

    # Then it is updated and approved
    assert result.outcome == SyncOutcome.UPDATED
    assert result.payment is not None and result.payment.pk == payment.pk
    assert (result.payment.status, result.payment.captured_amount) == (
        PaymentStatus.APPROVED,
        Decimal("250.00"),
    )


def test_sync_of_a_payment_already_up_to_date_changes_nothing(provider: Api) -> None:
    """A payment we hold that did not move is UNCHANGED, with no new ledger entry."""
    # Given a charge the shop already holds as the provider does
    payment = provider_payment(provider)
    entries = payment.events.count()

    # When it is synced
    result = payment_sync(provider_id=payment.provider_id)

    # Then nothing changed
    assert result.outcome == SyncOutcome.UNCHANGED
    assert result.payment is not None and result.payment.pk == payment.pk
    assert result.payment.status == PaymentStatus.APPROVED
    assert payment.events.count() == entries


def test_sync_of_an_id_the_provider_does_not_know_is_not_found(provider: Api) -> None:
    """An id the provider has no payment for is NOT_FOUND, with a note, and nothing is made."""
    result = payment_sync(provider_id=str(uuid.uuid4()))

    assert result.outcome == SyncOutcome.NOT_FOUND
    assert result.payment is None
    assert result.note == "the provider has no payment with this id"
    assert not Payment.objects.exists()


def test_sync_of_a_held_payment_the_provider_lost_is_refused(provider: Api) -> None:
    """A payment we hold under an id the provider no longer finds is an error staff must see,
    not a silent 'not found'."""
    # Given a local payment whose provider id the provider does not know
    payment = attempt_in_flight(PaymentStatus.UNKNOWN, minutes_ago=1)
    age(payment, provider_id=str(uuid.uuid4()), status=PaymentStatus.APPROVED)

    # When it is synced, then the error names it
    with pytest.raises(PaymentRefused, match="no longer finds payment"):
        payment_sync(provider_id=payment.provider_id)


def test_sync_adopts_a_payment_for_one_of_our_orders(
    provider: Api, django_capture_on_commit_callbacks: CaptureCallbacks, run_queued: Any
) -> None:
    """A provider payment the shop never recorded, for one of its orders, is ADOPTED: a local
    record is made and the order follows."""
    # Given an order paid at the provider with no local record
    order = order_for()
    remote = provider.create_payment(external_reference=order.reference)

    # When it is synced
    with django_capture_on_commit_callbacks(execute=True):
        result = payment_sync(provider_id=remote["id"])

    # Then a local payment holds it, approved, and the order is paid
    assert result.outcome == SyncOutcome.ADOPTED
    payment = Payment.objects.get()
    assert result.payment is not None and result.payment.pk == payment.pk
    assert (payment.provider_id, payment.status) == (remote["id"], PaymentStatus.APPROVED)
    assert payment.idempotency_key == f"adopted-{remote['id']}"
    assert run_queued()[0] == "checkout.tasks.order_sync_task"  # then its mails
    order.refresh_from_db()
    assert order.status == OrderStatus.PAID


def test_sync_of_a_payment_for_another_reference_is_unmatched(provider: Api) -> None:
    """A provider payment for a reference that is no order of ours is UNMATCHED."""
    remote = provider.create_payment(external_reference="OTRA-TIENDA-7")

    result = payment_sync(provider_id=remote["id"])

    assert result.outcome == SyncOutcome.UNMATCHED
    assert result.payment is None
    assert "'OTRA-TIENDA-7' matches no order" in result.note
    assert not Payment.objects.exists()


# --- payments_reconcile ----------------------------------------------------------------------


def later(**delta: float) -> Any:
    """The shop's clock moved forward by `delta` (and kept moving); the provider's is not."""
    return time_machine.travel(timezone.now() + timedelta(**delta), tick=True)


def test_a_pending_payment_whose_challenge_passed_is_read_ten_minutes_after(
    reconcile: Any, provider: Api, provider_gets: list[str]
) -> None:
    """A 3-D Secure payment still pending 10 minutes after its last change, whose challenge was
    passed (and whose notification never came), is read and approved; a younger one is left to
    its page."""
    # Given a challenge passed at the provider, started 11 minutes ago
    with later(minutes=-11):
        stale = provider_payment(provider, number=THREE_DS)
    # And one started 5 minutes ago, passed too
    with later(minutes=-5):
        young = provider_payment(provider, number=THREE_DS)
    assert stale.status == young.status == PaymentStatus.PENDING
    pass_challenge(provider, stale)
    pass_challenge(provider, young)

    # When reconciliation runs
    report = reconcile()

    # Then only the stale one was read, and it is approved
    assert provider_gets == [stale.provider_id]
    assert (report.checked, report.changed, report.failed, report.stopped_early) == (1, 1, 0, False)
    stale.refresh_from_db()
    young.refresh_from_db()
    assert stale.status == PaymentStatus.APPROVED
    assert stale.three_ds_url == ""
    assert young.status == PaymentStatus.PENDING


def test_a_capture_made_at_the_provider_is_found_an_hour_after_the_last_change(
    reconcile: Any, provider: Api, provider_gets: list[str]
) -> None:
    """An authorization captured at the provider without a word is read an hour after its last
    change and picks the capture up; one authorized 30 minutes ago is not read yet."""
    # Given an authorization made 61 minutes ago and one made 30 minutes ago, both captured
    with later(minutes=-61):
        stale = provider_payment(provider, capture_method="manual")
    with later(minutes=-30):
        recent = provider_payment(provider, capture_method="manual")
    capture_at_provider(provider, stale)
    capture_at_provider(provider, recent)

    # When reconciliation runs
    report = reconcile()

    # Then only the older one was read, and it is approved
    assert provider_gets == [stale.provider_id]
    assert (report.checked, report.changed) == (1, 1)
    stale.refresh_from_db()
    recent.refresh_from_db()
    assert stale.status == PaymentStatus.APPROVED
    assert recent.status == PaymentStatus.AUTHORIZED


def test_settled_payments_are_never_read(
    reconcile: Any, provider: Api, provider_gets: list[str]
) -> None:
    """Rejected and cancelled payments, however long after, and approvals past their
    schedule's last read (29 days), are not read by the schedule."""
    # Given a rejection, a cancelled authorization and an approval, made 30 days ago
    with later(days=-30):
        rejected = provider_payment(provider, number=DECLINED)
        cancelled = payment_cancel(payment=provider_payment(provider, capture_method="manual"))
        approved = provider_payment(provider)
    assert [rejected.status, cancelled.status, approved.status] == [
        PaymentStatus.REJECTED,
        PaymentStatus.CANCELLED,
        PaymentStatus.APPROVED,
    ]
    assert rejected.next_check_at is None and cancelled.next_check_at is None

    # When reconciliation runs (the approval was read at its 29-day step already)
    assert reconcile().checked == 1
    # Then the approval's schedule is over, and the next runs read nothing
    approved.refresh_from_db()
    assert approved.next_check_at is None
    provider_gets.clear()
    with later(days=60):
        report = reconcile()
    assert provider_gets == []
    assert (report.checked, report.changed, report.unresolved) == (0, 0, 0)


def test_reconciliation_stops_at_the_first_sign_the_provider_is_down(
    reconcile: Any, provider: Api, provider_gets: list[str]
) -> None:
    """With the provider answering 503, reconciliation reads one payment, stops, and leaves the
    others for the next run instead of hammering the provider."""
    # Given three authorizations due for a read and a provider failing every read
    with later(hours=-2):
        stale = [provider_payment(provider, capture_method="manual") for _ in range(3)]
    fault = provider.post(
        "/_sandbox/faults", {"path": "/payments", "method": "GET", "status": 503, "times": 50}
    )
    assert fault.status_code == 201, fault.text

    # When reconciliation runs
    report = reconcile()

    # Then it stopped after the first read (retried by the client only)
    assert report.stopped_early is True
    assert (report.checked, report.changed, report.failed) == (1, 0, 0)
    assert len(provider_gets) == 1
    [state] = provider.get("/_sandbox/faults").json()
    assert 1 <= state["hits"] <= 4
    # And the three are due again once their lease is over, ten minutes on
    later_on = timezone.now() + timedelta(minutes=10)
    assert all(
        p.status == PaymentStatus.AUTHORIZED and timezone.now() < p.next_check_at <= later_on
        for p in Payment.objects.filter(pk__in=[p.pk for p in stale])
    )


def test_attempts_with_an_unknown_outcome_and_no_provider_id_are_counted(
    reconcile: Any, provider: Api, provider_gets: list[str]
) -> None:
    """Attempts whose create never answered (no provider id) cannot be read: they are counted
    as unresolved once over 10 minutes old, and not sent to the provider."""
    # Given two such attempts 15 minutes old (unknown, and creating) and a young one
    attempt_in_flight(PaymentStatus.UNKNOWN, minutes_ago=15)
    attempt_in_flight(PaymentStatus.CREATING, minutes_ago=15)
    attempt_in_flight(PaymentStatus.UNKNOWN, minutes_ago=2)

    # When reconciliation runs
    report = reconcile()

    # Then the two old ones are reported unresolved and nothing was read
    assert report.unresolved == 2
    assert report.checked == 0
    assert provider_gets == []


# --- authorizations_watch ------------------------------------------------------------------


def test_staff_are_warned_once_about_an_authorization_about_to_expire(
    provider: Api, settings: Any
) -> None:
    """An authorization expiring within 3 days gets a warning: expiry_warned_at, one `expiring`
    ledger entry and one mail to the managers (its amount written $1,290.00); the next run warns
    nothing new."""
    # Given an authorization 28 days old and one just made
    settings.MANAGERS = [("Ops", "ops@example.com")]
    now = timezone.now()
    expiring = provider_payment(provider, capture_method="manual", amount="1290.00")
    fresh = provider_payment(provider, capture_method="manual")
    age(
        expiring,
        authorized_at=now - timedelta(days=28),
        authorization_expires_at=now + timedelta(days=2),
    )

    # When the watch runs
    report = authorizations_watch(now=now)

    # Then the expiring one is warned about, once, in the ledger and by mail
    assert (report.warned, report.refreshed) == (1, 0)
    expiring.refresh_from_db()
    fresh.refresh_from_db()
    assert expiring.expiry_warned_at == now
    assert fresh.expiry_warned_at is None
    [entry] = PaymentEvent.objects.filter(kind=PaymentEventKind.EXPIRY_WARNING)
    assert entry.payment_id == expiring.pk
    assert (entry.old_status, entry.new_status) == ("authorized", "authorized")
    assert "(in 2 d 0 h)" in entry.message
    [message] = mail.outbox
    assert message.to == ["ops@example.com"]
    assert "1 authorization(s) expire within 3 days" in message.subject
    assert f"{expiring.external_reference}: $1,290.00 · " in message.body  # money as people read it
    assert fresh.external_reference not in message.body

    # When it runs again
    again = authorizations_watch(now=now + timedelta(hours=1))

    # Then nothing new is warned or mailed
    assert again.warned == 0
    assert PaymentEvent.objects.filter(kind=PaymentEventKind.EXPIRY_WARNING).count() == 1
    assert len(mail.outbox) == 1


def test_an_expired_authorization_is_refreshed_to_cancelled_and_the_order_follows(
    provider: Api, django_capture_on_commit_callbacks: CaptureCallbacks, run_queued: Any
) -> None:
    """Past 30 days the provider releases the hold: the watch reads the authorization, which
    becomes cancelled with CA-EXP01, and its order is cancelled."""
    # Given an authorized order, 31 days later at the provider, already warned about
    order = order_for(status=OrderStatus.AUTHORIZED)
    payment = provider_payment(
        provider, capture_method="manual", external_reference=order.reference
    )
    clock = provider.post("/_sandbox/clock", {"advance_days": 31})
    assert clock.status_code == 200, clock.text
    now = timezone.now()
    age(
        payment,
        authorized_at=now - timedelta(days=31),
        authorization_expires_at=now - timedelta(days=1),
        expiry_warned_at=now - timedelta(days=4),
    )

    # When the watch runs
    with django_capture_on_commit_callbacks(execute=True):
        report = authorizations_watch(now=now)

    # Then the payment is cancelled as expired, and so is the order
    assert (report.warned, report.refreshed) == (0, 1)
    payment.refresh_from_db()
    assert (payment.status, payment.status_code) == (PaymentStatus.CANCELLED, "CA-EXP01")
    assert payment.events.last().kind == PaymentEventKind.SYNCED
    assert run_queued()[0] == "checkout.tasks.order_sync_task"
    order.refresh_from_db()
    assert order.status == OrderStatus.CANCELLED
    # The shopper is told it was cancelled; never that it was paid or charged.
    kinds = set(order.mails.exclude(sent_at=None).values_list("kind", flat=True))
    assert "cancelled" in kinds and not kinds & {"paid", "charged"}, kinds
    assert len(mail.outbox) == len(kinds)


def test_a_refund_whose_notification_was_lost_is_found_by_the_schedule(
    reconcile: Any, provider: Api, provider_gets: list[str]
) -> None:
    """An approval refunded at the provider without a word reaching the shop (its notification
    lost) is read at the next step of its schedule, and shows the refund."""
    # Given an approval made 5 hours ago, read by the schedule at its first hour
    with later(hours=-5):
        payment = provider_payment(provider, amount="300.00")
    with later(hours=-4):
        assert reconcile().checked == 1
    # And refunded in part at the provider since, behind the shop's back
    refunded = provider.post("/refunds", {"payment_id": payment.provider_id, "amount": 100})
    assert refunded.status_code in (200, 201), refunded.text
    provider_gets.clear()

    # When the schedule runs before its 6-hour step: not read
    reconcile()
    assert provider_gets == []

    # When it runs after it
    with later(hours=1, minutes=1):
        report = reconcile()

    # Then the payment was read once and shows the refund
    assert provider_gets == [payment.provider_id]
    payment.refresh_from_db()
    assert (report.checked, report.changed) == (1, 1)
    assert (payment.status, payment.refunded_amount) == ("approved", Decimal("100.00"))


def waiting_for(payment_id: int, *, seconds: int = 60) -> None:
    """Move an attempt's last change back, as if it had waited that long to be sent."""
    Payment.objects.filter(pk=payment_id).update(
        updated_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_creates_whose_task_was_lost_are_sent_again_by_the_sweep(
    reconcile: Any, provider: Api, celery_app: Any, run_queued: Any
) -> None:
    """Two creates made at the provider whose answers were all lost (500) stay unknown with
    their requests kept, and their tasks were lost. The reconciliation does not send them; the
    sweep queues a send for the one with no task on its way, not for the one whose marker
    says its task is coming; each send settles its attempt: one payment each."""
    # Given two creates made at the provider, every answer lost, and their tasks never queued
    failing = provider.post(
        "/_sandbox/faults",
        {"path": "/payments", "method": "POST", "status": 500, "after_processing": True},
    )
    assert failing.status_code == 201, failing.text
    for _ in range(2):
        with pytest.raises(PaymentOutcomeUnknown):
            provider_payment(provider)
    lost, coming = Payment.objects.order_by("pk")
    assert {lost.status, coming.status} == {PaymentStatus.UNKNOWN}
    assert lost.create_request and coming.create_request
    assert take_queued(celery_app) == []
    # And the second's task is on its way (as a task waiting for its next try says)
    mark(marker(SEND_CREATE_TASK, coming.pk), MARKER_TTL[SEND_CREATE_TASK])

    # When the provider answers again: the reconciliation leaves the creates to the sweep
    assert provider.request("DELETE", "/_sandbox/faults").status_code in (200, 204)
    assert reconcile().checked == 0
    # And the sweep, while they have waited less than a task takes to start, queues nothing
    assert payments_send_waiting_task() == 0

    # When the sweep runs once they have waited longer
    waiting_for(lost.pk)
    waiting_for(coming.pk)
    assert payments_send_waiting_task() == 1

    # Then it queued a send for the attempt whose task was lost only, and that send settles it
    assert run_queued() == [SEND_CREATE_TASK]
    lost.refresh_from_db()
    assert (lost.status, lost.create_request) == (PaymentStatus.APPROVED, "")
    assert not is_marked(marker(SEND_CREATE_TASK, lost.pk))
    coming.refresh_from_db()
    assert coming.status == PaymentStatus.UNKNOWN

    # When the other's task is lost too (its marker gone), the sweep queues it, and it settles
    unmark(marker(SEND_CREATE_TASK, coming.pk))
    assert payments_send_waiting_task() == 1
    assert run_queued() == [SEND_CREATE_TASK]

    # Then both are the provider's payments, approved, nothing was made twice, nothing is left
    held = {p.provider_id: p.status for p in Payment.objects.all()}
    assert held == {p["id"]: "approved" for p in provider.payments()}
    assert len(held) == 2
    assert not Payment.objects.exclude(create_request="").exists()
    assert payments_send_waiting_task() == 0


def attempt_of(provider: Api) -> Payment:
    """A checkout attempt stored, its create queued once stored (not sent here)."""
    return payment_attempt_store(
        external_reference=order_reference(),
        attempt_key=uuid.uuid4().hex,
        amount=Decimal("250.00"),
        currency="MXN",
        description="Taza de barro",
        card_token=provider.card_token()["id"],
        capture_method="automatic",
        customer={"email": "ana@example.com"},
        prevention_data={},
        return_url="",
        webhook_url="",
    )


@pytest.mark.django_db(transaction=True)
def test_the_sweep_skips_an_attempt_whose_task_is_on_its_way(provider: Api, worker: Any) -> None:
    """An attempt whose create task is waiting for its next try (the provider failing) keeps
    the task's marker: the sweep leaves it alone, however long it has waited. Once the provider
    answers, the task's retry settles it, once, and the marker goes."""
    # Given a provider that makes payments but loses every answer (500)
    provider.add_fault(path="/payments", method="POST", status=500, after_processing=True)

    # When an attempt is stored: its task sends the create, gets no answer, and will try again
    payment = attempt_of(provider)
    wait_until(
        lambda: Payment.objects.get(pk=payment.pk).status == PaymentStatus.UNKNOWN, timeout=30
    )

    # Then the sweep, even long after, queues nothing: its task is on its way
    waiting_for(payment.pk, seconds=600)
    assert is_marked(marker(SEND_CREATE_TASK, payment.pk))
    assert payments_send_waiting_task() == 0

    # When the provider answers again: the task's next try settles the attempt, and its
    # marker goes
    assert provider.request("DELETE", "/_sandbox/faults").status_code in (200, 204)
    wait_until(
        lambda: Payment.objects.get(pk=payment.pk).status == PaymentStatus.APPROVED, timeout=40
    )
    wait_until(lambda: not is_marked(marker(SEND_CREATE_TASK, payment.pk)), timeout=10)
    payment.refresh_from_db()
    assert [p["id"] for p in provider.payments()] == [payment.provider_id]
    assert payment.create_request == ""
    assert payments_send_waiting_task() == 0


def _use_broker(app: Any, url: str) -> None:
    """Publish through `url` from now on (the app takes new pools for that address)."""
    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("empty_broker")
def test_an_attempt_stored_while_the_broker_was_down_is_sent_by_the_sweep(
    provider: Api, celery_app: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """With the broker unreachable, an attempt is still stored, its task not queued (logged);
    once the broker is back, the sweep queues its send, which pays it once."""
    # Given a broker that cannot be reached
    broker = celery_app.conf.broker_url
    _use_broker(celery_app, f"redis://127.0.0.1:{free_port()}/0")
    try:
        # When an attempt is stored
        payment = attempt_of(provider)
    finally:
        _use_broker(celery_app, broker)

    # Then it waits to be sent with no task on its way, and the lost publish is logged
    assert (payment.status, bool(payment.create_request)) == (PaymentStatus.CREATING, True)
    assert not is_marked(marker(SEND_CREATE_TASK, payment.pk))
    assert take_queued(celery_app) == []
    not_queued = [r.getMessage() for r in caplog.records if r.name == "core.task_queue"]
    assert len(not_queued) == 1 and f"payment {payment.pk} not queued" in not_queued[0]
    assert provider.payments() == []

    # When the broker is back and the sweep runs, once the attempt has waited a while
    assert payments_send_waiting_task() == 0
    waiting_for(payment.pk)
    assert payments_send_waiting_task() == 1
    assert payments_send_waiting_task() == 0  # its send is on its way now

    # Then its send is queued, once, and sent as a worker runs it, the attempt is paid once
    assert take_queued(celery_app) == [(SEND_CREATE_TASK, [payment.pk])]
    assert payment_send_create_task.apply(args=[payment.pk]).get() == PaymentStatus.APPROVED
    payment.refresh_from_db()
    assert (payment.status, payment.create_request) == (PaymentStatus.APPROVED, "")
    assert [p["id"] for p in provider.payments()] == [payment.provider_id]
    assert not is_marked(marker(SEND_CREATE_TASK, payment.pk))
    assert payments_send_waiting_task() == 0
