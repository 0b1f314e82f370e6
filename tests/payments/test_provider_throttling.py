"""A provider that says "slow down": a 429 is `Throttled` (not processed, not retried in the
worker's thread), its `Retry-After` read; a task waits that long plus jitter before trying
again; a staff action goes back to its queue and its task tries again with its key; and the
shop's own writes keep to PAYMENTS_PROVIDER_WRITES_PER_SECOND across threads through Redis."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import requests
from celery import current_app
from django.test import Client
from prometheus_client import REGISTRY

from core.errors import TryLater
from core.task_queue import PROVIDER_THROTTLED, asked_wait
from payments.provider.client import _retry_after, get_client
from payments.provider.errors import (
    PaymentOutcomeUnknown,
    ProviderDown,
    ProviderThrottled,
    Throttled,
)
from payments.provider.pace import write_slot_wait
from payments.statuses import PaymentStatus
from staff_actions import kinds
from staff_actions.calls import staff_action_run
from staff_actions.kinds import ActionKind, Outcome
from staff_actions.models import StaffAction, StaffActionState
from staff_actions.rules import staff_action_request
from staff_actions.tasks import staff_action_run_task
from tests.helpers.broker import take_queued_with_eta
from tests.helpers.provider import VISA, Api
from tests.helpers.staff import sign_in_staff
from tests.payments.helpers import action_url, ask, authorized, pay, payment_body, token_for


def sample(name: str, labels: dict[str, str]) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


RUN_TASK = "payments.tasks.staff_action_run_task"


# --- The client ---------------------------------------------------------------------------------


@pytest.mark.sandbox
def test_a_429_is_throttled_once_not_retried_in_the_thread(provider: Api) -> None:
    client = get_client()
    payment = pay(client)
    fault = provider.add_fault(path="/payments", method="PATCH", status=429, times=3)

    with pytest.raises(Throttled) as caught:
        client.cancel_payment(payment.id, idempotency_key="k-429")

    # One call, not processed: the payment is as it was, and the wait asked for is 1 s at least
    assert provider.fault_hits(fault) == 1
    assert caught.value.http_status == 429 and caught.value.retry_after == 1.0
    assert isinstance(caught.value, TryLater)
    assert provider.payment(payment.id)["status"] == payment.status


@pytest.mark.parametrize(
    ("header", "wait"),
    [("3", 3.0), ("0", 1.0), ("", 1.0), ("soon", 1.0), ("7200", 60.0), ("2.5", 1.0)],
)
def test_retry_after_is_read_between_one_second_and_a_minute(header: str, wait: float) -> None:
    response = requests.Response()
    response.status_code = 429
    if header:
        response.headers["Retry-After"] = header
    assert _retry_after(response) == wait


def test_a_retry_after_date_is_a_wait_from_now() -> None:
    response = requests.Response()
    later = datetime.fromtimestamp(time.time() + 5, tz=UTC)
    response.headers["Retry-After"] = later.strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert 3.0 <= _retry_after(response) <= 6.0


# --- Tasks wait as asked ------------------------------------------------------------------------


def test_the_wait_asked_for_is_found_through_the_exception_chain_with_jitter() -> None:
    try:
        try:
            raise Throttled("slow down", http_status=429, retry_after=3.0)
        except Throttled as exc:
            raise PaymentOutcomeUnknown("not confirmed") from exc
    except PaymentOutcomeUnknown as outer:
        waits = [asked_wait(outer) for _ in range(200)]
    assert all(w is not None and 3.0 <= w <= 6.0 for w in waits)
    assert max(w for w in waits if w) - min(w for w in waits if w) > 1.0  # jittered
    assert asked_wait(PaymentOutcomeUnknown("no answer")) is None
    assert asked_wait(ProviderThrottled("slow down", retry_after=2.0)) >= 2.0  # type: ignore[operator]
    assert isinstance(ProviderThrottled("x", retry_after=1), ProviderDown)


def test_a_throttled_create_task_comes_back_after_the_wait_asked_for(monkeypatch: Any) -> None:
    """The create task's retry is counted down from the provider's wait, not its backoff."""
    from payments.tasks import payment_send_create_task

    asked: dict[str, Any] = {}

    def retry(self: Any, args: Any, kwargs: Any, exc: Any, throw: Any, eta: Any, countdown: Any,
              *rest: Any, **options: Any) -> Any:  # fmt: skip
        asked.update(eta=eta, countdown=countdown)
        raise RuntimeError("retried")

    monkeypatch.setattr("celery.app.task.Task.retry", retry)
    cause = Throttled("slow down", http_status=429, retry_after=4.0)
    with pytest.raises(RuntimeError):
        try:
            raise PaymentOutcomeUnknown("not confirmed") from cause
        except PaymentOutcomeUnknown as exc:
            payment_send_create_task.retry(exc=exc, countdown=500)
    assert 4.0 <= asked["countdown"] <= 8.0 and asked["eta"] is None


# --- Staff actions --------------------------------------------------------------------------------


def capture_asked(provider: Api, client: Client, admin_user: Any) -> tuple[Any, StaffAction]:
    """A $250.00 authorization whose full capture a staff member asked in the admin."""
    payment = authorized(provider, amount="250.00")
    sign_in_staff(client, admin_user)
    ask(client, action_url("capture", payment), {"amount": "250.00"})
    return payment, StaffAction.objects.get()


@pytest.mark.django_db
@pytest.mark.usefixtures("in_english")
def test_a_throttled_capture_runs_again_with_its_key_then_captures_once(
    provider: Api, client: Client, admin_user: Any
) -> None:
    payment, action = capture_asked(provider, client, admin_user)
    take_queued_with_eta(current_app)
    fault = provider.add_fault(path="/payments", method="PATCH", status=429, times=2)

    # When its run meets the provider throttling: not done, not refused; queued again, the
    # claim kept, nothing failed in the ledger, and the error raised for the task to retry
    with pytest.raises(ProviderThrottled):
        staff_action_run(action_id=action.pk)
    action.refresh_from_db()
    assert (action.state, action.runs) == (StaffActionState.QUEUED, 1)
    payment.refresh_from_db()
    assert payment.intent and payment.status == PaymentStatus.AUTHORIZED
    assert not payment.events.filter(kind="failed").exists()

    # When its task runs (as a worker does; here its retries come at once): it tries again
    # while the provider throttles, then captures once, with the action's key
    staff_action_run_task.apply(args=[action.pk])
    action.refresh_from_db()
    assert (action.state, action.ok, action.runs) == (StaffActionState.DONE, True, 3)
    assert provider.fault_hits(fault) == 2
    remote = provider.payment(payment.provider_id)
    assert (remote["status"], remote["captured_amount"]) == ("approved", Decimal("250.00"))
    payment.refresh_from_db()
    assert (payment.status, payment.intent) == (PaymentStatus.APPROVED, "")
    assert payment.events.filter(kind="captured").count() == 1


@pytest.mark.django_db
def test_a_throttled_staff_action_task_comes_back_after_the_wait_asked_for(
    monkeypatch: Any,
) -> None:
    """The staff action's task retries by its policy when the provider says "slow down",
    counted down from the provider's wait (plus jitter), not from the policy's backoff."""

    def throttled(action: StaffAction) -> Outcome:
        raise ProviderThrottled("slow down", retry_after=30.0)

    monkeypatch.setitem(
        kinds._KINDS, "tests.throttled", ActionKind("tests.throttled", "t", throttled)
    )
    action = staff_action_request(kind="tests.throttled", actor=None)
    asked: dict[str, Any] = {}

    def retry(self: Any, args: Any, kwargs: Any, exc: Any, throw: Any, eta: Any, countdown: Any,
              *rest: Any, **options: Any) -> Any:  # fmt: skip
        asked.update(eta=eta, countdown=countdown, exc=exc)
        raise RuntimeError("retried")

    monkeypatch.setattr("celery.app.task.Task.retry", retry)
    staff_action_run_task.apply(args=[action.pk])

    assert 30.0 <= asked["countdown"] <= 60.0 and asked["eta"] is None
    assert isinstance(asked["exc"], ProviderThrottled)
    action.refresh_from_db()
    assert (action.state, action.runs) == (StaffActionState.QUEUED, 1)


@pytest.mark.django_db
@pytest.mark.usefixtures("in_english")
def test_a_capture_throttled_past_its_runs_is_said_as_not_done(
    provider: Api, client: Client, admin_user: Any
) -> None:
    payment, action = capture_asked(provider, client, admin_user)
    StaffAction.objects.filter(pk=action.pk).update(runs=PROVIDER_THROTTLED.max_retries - 1)
    provider.add_fault(path="/payments", method="PATCH", status=429)

    assert staff_action_run(action_id=action.pk) == StaffActionState.FAILED
    action.refresh_from_db()
    assert action.ok is False and "could not be completed" in action.result
    payment.refresh_from_db()
    assert (payment.status, payment.intent) == (PaymentStatus.AUTHORIZED, "")


# --- The shop's own pace ------------------------------------------------------------------------


@pytest.mark.django_db
def test_writes_keep_to_the_pace_across_threads(settings: Any) -> None:
    """Eight writes at once with a pace of 4 a second: never more than 4 in a second of the
    clock, the four that waited counted."""
    settings.PAYMENTS_PROVIDER_WRITES_PER_SECOND = 4
    before = sample("shop_provider_writes_paced_total", {"outcome": "sent"}) or 0
    sent: list[int] = []
    lock = threading.Lock()
    time.sleep(1 - time.time() % 1 + 0.02)  # at the start of a second: 2 seconds

    def write() -> None:
        write_slot_wait()
        with lock:
            sent.append(int(time.time()))

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    per_second = Counter(sent)
    assert len(sent) == 8 and max(per_second.values()) <= 4, per_second
    assert (sample("shop_provider_writes_paced_total", {"outcome": "sent"}) or 0) - before >= 4


@pytest.mark.django_db
def test_a_write_that_finds_no_room_is_throttled_before_it_is_sent(settings: Any) -> None:
    """Six writes at once with a pace of 1 a second: those that would wait past 2 s are not
    sent but throttled (their task sends them later), the others go one a second."""
    settings.PAYMENTS_PROVIDER_WRITES_PER_SECOND = 1
    outcomes: list[object] = []

    def write() -> None:
        try:
            write_slot_wait()
            outcomes.append(int(time.time()))
        except Throttled as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=write) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent = [o for o in outcomes if isinstance(o, int)]
    later = [o for o in outcomes if isinstance(o, Throttled)]
    assert 2 <= len(sent) <= 3 and len(later) == 6 - len(sent), outcomes
    assert max(Counter(sent).values()) == 1
    assert all(t.retry_after == 1.0 and t.http_status is None for t in later)


@pytest.mark.sandbox
def test_the_sandboxs_rate_limit_is_waited_as_its_retry_after_says(provider: Api) -> None:
    """Against the sandbox's own rate limit (half a create a second: a bucket of one), the
    second create is throttled with the wait the provider computed (2 s), and sent again with
    its key after that wait it is made, once."""
    client = get_client()
    limits = provider.post("/_sandbox/rate_limits", {"families": {"payments.create": 0.5}})
    assert limits.status_code == 200, limits.text
    try:
        pay(client)
        body = payment_body(token_for(client, VISA))
        with pytest.raises(Throttled) as caught:
            client.create_payment(body=body, idempotency_key="k-limited")
        assert caught.value.error_code == "CL1429" and caught.value.retry_after == 2.0
        time.sleep(caught.value.retry_after)
        made = client.create_payment(body=body, idempotency_key="k-limited")
        assert made.status == "approved"
        seen = provider.get("/_sandbox/rate_limits").json()["seen"]["payments.create"]
        assert (seen["accepted"], seen["refused"]) == (2, 1)
    finally:
        provider.request("DELETE", "/_sandbox/rate_limits")


def test_the_work_held_back_longest_comes_back_first() -> None:
    """A throttled request that has waited longest gets the least jitter: it comes back at the
    start of the wait asked for, ahead of those held back since a moment ago."""
    fresh = Throttled("slow down", http_status=429, retry_after=2.0)
    senior = Throttled("slow down", http_status=429, retry_after=2.0)
    senior.seniority = 1.0
    fresh_waits = [asked_wait(fresh) or 0 for _ in range(300)]
    senior_waits = [asked_wait(senior) or 0 for _ in range(300)]
    assert all(2.0 <= w <= 2.2 for w in senior_waits)
    assert all(2.0 <= w <= 4.0 for w in fresh_waits) and max(fresh_waits) > 3.0
