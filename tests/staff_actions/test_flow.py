"""Staff actions that wait on the provider (staff_actions): the admin answers at once and the
page says the action is in progress, then its outcome, once, in the language it was asked in;
of two staff members pressing capture and cancel at once exactly one wins, at once; a task run
again (its worker killed) sends the same idempotency key and captures once; an action whose
message was lost is queued again by the sweep; a claim is not taken over while its action is
still open."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from django.utils import timezone, translation

from payments.actions.rules import INTENT_TIMEOUT, claim_payment
from payments.models import Payment, PaymentEventKind, PaymentIntent
from payments.provider.client import PaymentsClient
from payments.provider.errors import PaymentInProgress
from payments.statuses import PaymentStatus
from staff_actions.calls import staff_action_run
from staff_actions.models import StaffAction, StaffActionState
from staff_actions.rules import LEASE, staff_actions_requeue
from tests.helpers.broker import take_queued
from tests.helpers.provider import Api
from tests.helpers.staff import sign_in_staff
from tests.helpers.threads import run_together
from tests.payments.helpers import action_url, ask, authorized, change_url, messages_of

RUN_TASK = "payments.tasks.staff_action_run_task"


def status_of(client: Client, page: Any) -> dict[str, Any]:
    """What the page's script reads: whether its actions are still open."""
    html = page.content.decode()
    start = html.index('data-status-url="') + len('data-status-url="')
    address = html[start : html.index('"', start)].replace("&amp;", "&")
    return client.get(address).json()


@pytest.mark.django_db
@pytest.mark.usefixtures("in_english")
def test_the_page_says_in_progress_then_the_outcome_once(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """Given a capture asked on the payment page, the answer is at once: nothing is captured
    yet and the page says the capture is in progress (its script polls a status that says
    open); once the task ran, the status says done, the page says what was captured, once."""
    payment = authorized(provider, amount="250.00")
    sign_in_staff(client, admin_user)

    response = ask(client, action_url("capture", payment), {"amount": "100.00"})

    assert response.status_code == 302 and response.url == change_url(payment)
    assert Payment.objects.get(pk=payment.pk).status == PaymentStatus.AUTHORIZED
    page = client.get(change_url(payment))
    html = page.content.decode()
    assert 'id="staff-actions"' in html and "js/admin_work_in_progress.js" in html
    assert f"{payment.external_reference}: capture in progress" in html
    assert status_of(client, page) == {"open": 1}
    assert messages_of(page) == []

    assert run_queued() == [RUN_TASK]

    assert status_of(client, page) == {"open": 0}
    done = client.get(change_url(payment))
    assert messages_of(done) == [("success", f"{payment.external_reference}: captured $100.00.")]
    assert 'id="staff-actions"' not in done.content.decode()
    assert messages_of(client.get(change_url(payment))) == []  # said once
    assert Payment.objects.get(pk=payment.pk).captured_amount == Decimal("100.00")


@pytest.mark.django_db
def test_the_outcome_is_said_in_the_language_it_was_asked_in(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """Asked in Spanish, the outcome is written in Spanish by the task (whatever language the
    worker runs in), and read so on a page opened in English."""
    payment = authorized(provider, amount="1290.00")
    sign_in_staff(client, admin_user)

    ask(client, action_url("capture", payment), {"amount": "1290.00"}, HTTP_ACCEPT_LANGUAGE="es")
    with translation.override("en"):  # the worker's own language
        run_queued()

    page = client.get(change_url(payment), HTTP_ACCEPT_LANGUAGE="en")
    assert messages_of(page) == [("success", f"{payment.external_reference}: cobrado $1,290.00.")]
    assert StaffAction.objects.get().language == "es"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_english", "empty_broker")
def test_capture_and_cancel_at_once_exactly_one_wins(
    provider: Api, admin_user: Any, celery_app: Any
) -> None:
    """Two staff members press capture and cancel on one authorization at once: one is asked
    (one task queued), the other is told at once that another action is running; nothing else
    is recorded."""
    payment = authorized(provider)  # its create sent here, no task queued
    assert take_queued(celery_app) == []
    browsers = [Client(), Client()]
    for browser in browsers:
        sign_in_staff(browser, admin_user)

    results = run_together(
        lambda: browsers[0].post(action_url("capture", payment), {"amount": "250.00"}),
        lambda: browsers[1].post(action_url("cancel", payment)),
    )

    said = [[(m.level_tag, str(m)) for m in get_messages(r.wsgi_request)] for r in results]
    errors = [text for messages in said for level, text in messages if level == "error"]
    assert len(errors) == 1, said
    assert errors[0].startswith("Another action (")
    assert "is already running on this payment" in errors[0]
    action = StaffAction.objects.get()
    assert action.state == StaffActionState.QUEUED
    assert [name for name, _args in take_queued(celery_app)] == [RUN_TASK]
    payment.refresh_from_db()
    assert payment.intent in (PaymentIntent.CAPTURE, PaymentIntent.CANCEL)
    assert payment.status == PaymentStatus.AUTHORIZED


@pytest.mark.django_db
@pytest.mark.usefixtures("in_english")
def test_a_task_run_again_after_its_worker_died_captures_once(
    provider: Api, client: Client, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker dies right after the provider captured (the answer never applied); the run
    is left open. Run again once its lease is over, it sends the same idempotency key, the
    provider answers as the first time, and the payment is captured once, recorded once."""
    payment = authorized(provider, amount="250.00")
    sign_in_staff(client, admin_user)
    ask(client, action_url("capture", payment), {"amount": "250.00"})
    action = StaffAction.objects.get()
    keys: list[str] = []
    real = PaymentsClient.capture_payment

    def capture(self: PaymentsClient, payment_id: str, **kwargs: Any) -> Any:
        keys.append(kwargs["idempotency_key"])
        answer = real(self, payment_id, **kwargs)
        if len(keys) == 1:
            raise KeyboardInterrupt("the worker was killed")
        return answer

    monkeypatch.setattr(PaymentsClient, "capture_payment", capture)

    with pytest.raises(KeyboardInterrupt):
        staff_action_run(action_id=action.pk)
    assert staff_action_run(action_id=action.pk) == "not due"  # a redelivery within the lease
    StaffAction.objects.filter(pk=action.pk).update(started_at=timezone.now() - LEASE * 2)
    assert staff_action_run(action_id=action.pk) == StaffActionState.DONE

    assert keys == [action.idempotency_key, action.idempotency_key]
    remote = provider.payment(payment.provider_id)
    assert (remote["status"], remote["captured_amount"]) == ("approved", Decimal("250.00"))
    payment.refresh_from_db()
    assert (payment.status, payment.captured_amount, payment.intent) == (
        PaymentStatus.APPROVED,
        Decimal("250.00"),
        "",
    )
    assert payment.events.filter(kind=PaymentEventKind.CAPTURED).count() == 1
    action.refresh_from_db()
    assert (action.ok, action.runs) == (True, 2)
    assert action.result == f"{payment.external_reference}: captured $250.00."


@pytest.mark.django_db
@pytest.mark.usefixtures("in_english", "empty_broker")
def test_an_action_whose_message_was_lost_is_queued_again_by_the_sweep(
    provider: Api, client: Client, admin_user: Any, celery_app: Any, run_queued: Any
) -> None:
    """The broker lost the task's message: the action stays queued. The sweep leaves it alone
    for a minute (its task may be on its way), then queues it again, and it is done."""
    payment = authorized(provider)
    sign_in_staff(client, admin_user)
    client.post(action_url("capture", payment), {"amount": "250.00"})  # never committed: lost
    assert take_queued(celery_app) == []
    action = StaffAction.objects.get()

    assert staff_actions_requeue().queued == 0  # too early to say it is lost
    StaffAction.objects.filter(pk=action.pk).update(queued_at=timezone.now() - timedelta(minutes=2))
    assert staff_actions_requeue().queued == 1

    assert run_queued() == [RUN_TASK]
    action.refresh_from_db()
    assert action.state == StaffActionState.DONE
    assert provider.payment(payment.provider_id)["status"] == "approved"
    assert staff_actions_requeue().queued == 0


@pytest.mark.django_db
def test_a_claim_is_not_taken_over_while_its_action_is_open(
    provider: Api, client: Client, admin_user: Any
) -> None:
    """A capture queued for longer than the claims' takeover time (a backlog) keeps its
    claim: a cancel is refused. Once the action is done, a stale claim may be taken over."""
    payment = authorized(provider)
    sign_in_staff(client, admin_user)
    ask(client, action_url("capture", payment), {"amount": "250.00"})
    Payment.objects.filter(pk=payment.pk).update(
        intent_started_at=timezone.now() - INTENT_TIMEOUT * 2
    )

    with pytest.raises(PaymentInProgress):
        claim_payment(payment, PaymentIntent.CANCEL, PaymentStatus.AUTHORIZED)

    StaffAction.objects.update(state=StaffActionState.FAILED)
    claim_payment(payment, PaymentIntent.CANCEL, PaymentStatus.AUTHORIZED)
    payment.refresh_from_db()
    assert payment.intent == PaymentIntent.CANCEL


@pytest.mark.django_db
def test_the_status_address_answers_only_get_for_staff(client: Client, admin_user: Any) -> None:
    """The status the pages poll is staff-only and read-only."""
    address = reverse("admin:payments_payment_staff_actions") + "?ids=1,2"
    assert client.get(address).status_code == 302  # to the login
    sign_in_staff(client, admin_user)
    assert client.get(address).json() == {"open": 0}
    assert client.post(address).status_code == 405
