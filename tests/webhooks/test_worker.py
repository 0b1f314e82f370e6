"""Notifications processed by a real Celery worker against the real Redis, PostgreSQL and the live
sandbox: a burst of copies applies once, shuffled and duplicated notifications end where the
provider is, nothing is lost while Redis is down, and a provider that is down is retried,
then given up on for staff to retry. (Workers in processes of their own:
test_worker_processes.py.)"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from io import StringIO
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from django.core import mail
from django.core.management import call_command
from django.db import connections
from django.db.models.signals import post_save
from django.test import override_settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from checkout.models import Order, OrderMail, OrderMailKind, OrderStatus
from checkout.orders.rules import derive_order_status
from checkout.orders.selectors import order_payments
from payments.models import Payment
from payments.statuses import PaymentStatus
from tests.factories import provider_payment
from tests.helpers.provider import DECLINED, INSUFFICIENT_FUNDS, MASTER, THREE_DS, VISA, Api
from tests.helpers.servers import TcpProxy
from tests.helpers.waiting import wait_until
from tests.webhooks.helpers import (
    FINISHED,
    Shop,
    approvals,
    capture_at_provider,
    captured_at_provider,
    count_gets,
    idempotency,
    new_order,
    order_paying,
    order_status,
)
from webhooks.models import WebhookEvent, WebhookState
from webhooks.rules import webhook_events_retry

pytestmark = [pytest.mark.sandbox, pytest.mark.django_db(transaction=True)]

CHARGED = (PaymentStatus.APPROVED, PaymentStatus.AUTHORIZED)


# --- The shop on a live server, and the provider's side -----------------------------------------


@pytest.fixture
def order_moves() -> Iterator[list[tuple[int, str]]]:
    """Every order status change saved, as (order pk, new status), from any thread."""
    moves: list[tuple[int, str]] = []
    lock = threading.Lock()

    def record(sender: type[Order], instance: Order, update_fields: Any = None, **_: Any) -> None:
        if update_fields and "status" in update_fields:
            with lock:
                moves.append((instance.pk, instance.status))

    post_save.connect(record, sender=Order, weak=False, dispatch_uid="test-worker-order-moves")
    yield moves
    post_save.disconnect(sender=Order, dispatch_uid="test-worker-order-moves")


def cancel_at_provider(api: Api, payment_id: str) -> None:
    response = api.patch(f"/payments/{payment_id}", {"status": "cancelled"}, headers=idempotency())
    assert response.status_code == 200, response.text


def refund_at_provider(api: Api, payment_id: str, amount: str | None = None) -> None:
    body: dict[str, Any] = {"payment_id": payment_id}
    if amount is not None:
        body["amount"] = Decimal(amount)
    response = api.post("/refunds", body, headers=idempotency())
    assert response.status_code == 201, response.text


def finish_challenge(api: Api, three_ds_url: str, *, passed: bool) -> None:
    code = "123456" if passed else "000000"
    response = api.session.post(three_ds_url, data={"action": "submit", "code": code}, timeout=30)
    assert response.status_code == 200, response.text


def order_confirmed(order: Order) -> bool:
    """Its payment's mail (paid, or amount held) sent (the mail task ran)."""
    sent = OrderMail.objects.filter(
        order=order, kind__in=[OrderMailKind.PAID, OrderMailKind.HELD], sent_at__isnull=False
    )
    return sent.exists() and any(order.reference in m.subject for m in mail.outbox)


def all_mails_sent(order: Order) -> bool:
    return not OrderMail.objects.filter(order=order, sent_at=None).exists()


def events_of(payment_id: str) -> Any:
    return WebhookEvent.objects.filter(provider_payment_id=payment_id)


def all_finished(payment_ids: list[str], expected: int) -> bool:
    events = WebhookEvent.objects.filter(provider_payment_id__in=payment_ids)
    return events.count() == expected and not events.exclude(state__in=FINISHED).exists()


# --- A burst of the same notification --------------------------------------------------------


@pytest.mark.parametrize("change", ["captured", "challenge passed"])
def test_twenty_copies_of_one_notification_at_once_apply_once(
    shop: Shop, worker: Any, order_moves: list[tuple[int, str]], change: str
) -> None:
    """Twenty copies of the same UPDATE arriving at the same instant make one status change and
    one order change, the shopper has exactly one mail per event (the payment's sent when the
    amount was held, or by the burst once the challenge passed), all twenty end processed, and
    the provider is read at most three times."""
    # Given a payment that became approved at the provider: an authorization captured there, or
    # a 3-D Secure challenge passed after the shopper's page was gone
    if change == "captured":
        order, payment = captured_at_provider(shop.api)
        before = OrderStatus.AUTHORIZED
    else:
        order, payment = order_paying(shop.api, number=THREE_DS)
        assert payment.status == PaymentStatus.PENDING
        finish_challenge(shop.api, payment.three_ds_url, passed=True)
        before = OrderStatus.AWAITING_AUTHENTICATION
    # (the order followed its payment by its sync task, which the worker ran)
    wait_until(lambda: order_status(order) == before, timeout=30)
    if before == OrderStatus.AUTHORIZED:
        wait_until(lambda: order_confirmed(order), timeout=30)
    order_moves.clear()
    gets = count_gets(shop.api, payment.provider_id)

    # When its UPDATE arrives twenty times at once
    barrier = threading.Barrier(20)
    answers: list[int] = []

    def deliver() -> None:
        with requests.Session() as session:
            # A connection of its own already open (a GET is refused, and stores nothing), so
            # that the twenty POSTs leave together rather than queue behind TCP handshakes.
            answers.append(session.get(shop.receiver_url, timeout=30).status_code)
            barrier.wait(timeout=30)
            answers.append(shop.notify(payment.provider_id, session=session).status_code)

    threads = [threading.Thread(target=deliver) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then every copy is answered and all twenty end processed, matched to the payment
    assert sorted(answers) == [200] * 20 + [405] * 20
    events = events_of(payment.provider_id)
    wait_until(lambda: all_finished([payment.provider_id], 20), timeout=30)
    assert set(events.values_list("state", "payment_id")) == {(WebhookState.PROCESSED, payment.pk)}

    # And the payment moved once, the order once (by its sync task), and one confirmation went out
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.APPROVED
    assert approvals(payment) == 1
    wait_until(lambda: order_status(order) == OrderStatus.PAID, timeout=30)
    wait_until(lambda: order_confirmed(order), timeout=30)
    assert order_moves == [(order.pk, OrderStatus.PAID)]
    # (one mail per event, each sent once: received, then paid, or held and then charged)
    wait_until(lambda: all_mails_sent(order), timeout=30)
    kinds = sorted(OrderMail.objects.filter(order=order).values_list("kind", flat=True))
    assert kinds == (
        ["charged", "held", "received"] if change == "captured" else ["paid", "received"]
    )
    sent = [m for m in mail.outbox if order.reference in m.subject]
    assert len(sent) == len(kinds)
    assert {tuple(m.to) for m in sent} == {(order.email,)}

    # And the provider was read at most three times for them
    assert 1 <= shop.api.fault_hits(gets) <= 3


# --- Shuffled and duplicated notifications over many payments -----------------------------------


Attempt = tuple[str, str]  # (card number, capture method)


@dataclass(frozen=True)
class Scenario:
    """An order's payment attempts, made in turn through the shop's payment service, then the
    changes made at the provider (attempt index, action), and the order status they lead to.
    `adopted`: the last attempt was made at the provider only, so the shop does not know it."""

    attempts: tuple[Attempt, ...]
    actions: tuple[tuple[int, str], ...]
    order_status: str
    adopted: bool = False


CHARGE: Attempt = (VISA, "automatic")
HOLD: Attempt = (VISA, "manual")
CHALLENGE: Attempt = (THREE_DS, "automatic")
SCENARIOS = {
    "charge": Scenario((CHARGE,), (), OrderStatus.PAID),
    "charge refunded in part": Scenario(
        (CHARGE,), ((0, "refund part"),), OrderStatus.PARTIALLY_REFUNDED
    ),
    "charge voided": Scenario(((MASTER, "automatic"),), ((0, "refund all"),), OrderStatus.REFUNDED),
    "authorization": Scenario((HOLD,), (), OrderStatus.AUTHORIZED),
    "authorization captured": Scenario((HOLD,), ((0, "capture"),), OrderStatus.PAID),
    "authorization cancelled": Scenario(
        ((MASTER, "manual"),), ((0, "cancel"),), OrderStatus.CANCELLED
    ),
    "captured, then refunded in two parts": Scenario(
        (HOLD,), ((0, "capture"), (0, "refund part"), (0, "refund all")), OrderStatus.REFUNDED
    ),
    "declined": Scenario(((DECLINED, "automatic"),), (), OrderStatus.PAYMENT_FAILED),
    "insufficient funds": Scenario(
        ((INSUFFICIENT_FUNDS, "automatic"),), (), OrderStatus.PAYMENT_FAILED
    ),
    "challenge waiting": Scenario((CHALLENGE,), (), OrderStatus.AWAITING_AUTHENTICATION),
    "challenge passed": Scenario((CHALLENGE,), ((0, "challenge pass"),), OrderStatus.PAID),
    "challenge failed": Scenario(
        (CHALLENGE,), ((0, "challenge fail"),), OrderStatus.PAYMENT_FAILED
    ),
    "challenge passed, manual": Scenario(
        ((THREE_DS, "manual"),), ((0, "challenge pass"),), OrderStatus.AUTHORIZED
    ),
    "declined, then charged": Scenario(((DECLINED, "automatic"), CHARGE), (), OrderStatus.PAID),
    # The challenge passes after another card paid: the shop gives the extra charge back.
    "charged twice": Scenario((CHALLENGE, CHARGE), ((0, "challenge pass"),), OrderStatus.PAID),
    "made at the provider only": Scenario((CHARGE,), (), OrderStatus.PAID, adopted=True),
}
# The sandbox sends an UPDATE when the status changes; a partial refund keeps it.
STATUS_CHANGING = {"capture", "cancel", "refund all", "challenge pass", "challenge fail"}


def act_at_provider(api: Api, payment_id: str, action: str) -> None:
    if action == "capture":
        capture_at_provider(api, payment_id)
    elif action == "cancel":
        cancel_at_provider(api, payment_id)
    elif action == "refund part":
        refund_at_provider(api, payment_id, "100.00")
    elif action == "refund all":
        refund_at_provider(api, payment_id)
    else:
        remote = api.payment(payment_id)
        finish_challenge(api, remote["pending_action"]["url"], passed=action == "challenge pass")


def in_threads(work: Callable[[Any], Any], items: list[Any], workers: int = 6) -> list[Any]:
    """`work` over `items` in a few threads, results in order; each thread's database
    connection is closed when it is done."""

    def run(item: Any) -> Any:
        try:
            return work(item)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run, items))


def play(api: Api, scenario: Scenario) -> tuple[Order, list[tuple[str, str]]]:
    """Make the scenario's payments and changes; the notifications the provider would send."""
    order = new_order()
    payment_ids: list[str] = []
    for index, (number, capture_method) in enumerate(scenario.attempts):
        if scenario.adopted and index == len(scenario.attempts) - 1:
            remote = api.create_payment(
                number,
                capture_method=capture_method,
                external_reference=order.reference,
                customer={"first_name": "Ana", "last_name": "Pérez", "email": "ana@example.com"},
            )
            payment_ids.append(remote["id"])
        else:
            payment = provider_payment(
                api,
                number=number,
                capture_method=capture_method,
                external_reference=order.reference,
            )
            payment_ids.append(payment.provider_id)
    notifications = [(payment_id, "INSERT") for payment_id in payment_ids]
    for index, action in scenario.actions:
        act_at_provider(api, payment_ids[index], action)
        if action in STATUS_CHANGING:
            notifications.append((payment_ids[index], "UPDATE"))
    return order, notifications


@hypothesis_settings(
    max_examples=5,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_shuffled_and_duplicated_notifications_end_where_the_provider_is(
    shop: Shop, worker: Any, settings: Any, data: st.DataObject
) -> None:
    """Whatever the order and however often the notifications of many payments arrive, once the
    worker has drained them every payment holds the provider's final status and amounts, and
    every order the status checkout derives from its payments."""
    settings.WEBHOOKS_RETRY_BACKOFF = 1
    settings.WEBHOOKS_UNKNOWN_LOOKUPS_PER_MINUTE = 10_000
    # Given 5 to 8 orders paid in various ways, then changed at the provider
    names = data.draw(
        st.lists(st.sampled_from(sorted(SCENARIOS)), min_size=5, max_size=8), label="scenarios"
    )

    def play_one(name: str) -> tuple[Scenario, Order, list[tuple[str, str]]]:
        api = Api(shop.api.base_url)  # a session per thread
        try:
            return (SCENARIOS[name], *play(api, SCENARIOS[name]))
        finally:
            api.session.close()

    played = in_threads(play_one, names)
    notifications = [n for _, _, sent in played for n in sent]

    # When their notifications arrive shuffled, some of them more than once
    copies = data.draw(
        st.lists(st.integers(1, 3), min_size=len(notifications), max_size=len(notifications)),
        label="copies",
    )
    arriving = [n for n, times in zip(notifications, copies, strict=True) for _ in range(times)]
    arriving = data.draw(st.permutations(arriving), label="arrival order")
    answers = in_threads(lambda notification: shop.notify(*notification).status_code, arriving)
    assert answers == [200] * len(arriving)

    # Then the worker processes every one of them
    payment_ids = sorted({payment_id for payment_id, _ in notifications})
    wait_until(lambda: all_finished(payment_ids, len(arriving)), timeout=60)
    events = WebhookEvent.objects.filter(provider_payment_id__in=payment_ids)
    assert set(events.values_list("state", flat=True)) == {WebhookState.PROCESSED}

    # And every payment is what the provider says, and every order what its payments say (once
    # the orders' own tasks ran: their sync, and the release of a second charge, which changes
    # that payment at the provider and then here)
    def mine_and_theirs(payment_id: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        remote = shop.api.payment(payment_id)
        local = Payment.objects.get(provider_id=payment_id)
        return (
            (local.status, local.provider_version, local.captured_amount, local.refunded_amount),
            (
                remote["status"],
                remote["version"],
                remote["captured_amount"],
                remote["amount_refunded"],
            ),
        )

    def orders_settled() -> bool:  # each order follows its payments by a task of its own
        for scenario, order, _ in played:
            order.refresh_from_db()
            held = [p for p in order_payments(order) if p.status in CHARGED]
            if order.status != scenario.order_status or len(held) > 1:
                return False
        return True

    def payments_settled() -> bool:
        return all(mine == theirs for mine, theirs in map(mine_and_theirs, payment_ids))

    try:
        wait_until(lambda: orders_settled() and payments_settled(), timeout=30)
    except AssertionError:
        pass  # the assertions below say which payment or order is wrong
    for payment_id in payment_ids:
        mine, theirs = mine_and_theirs(payment_id)
        assert mine == theirs, payment_id

    for scenario, order, _ in played:
        order.refresh_from_db()
        assert order.status == derive_order_status(order_payments(order)), order.reference
        assert order.status == scenario.order_status, order.reference
        # and no order keeps two charges: the shop gives the extra one back
        held = [p for p in order_payments(order) if p.status in CHARGED]
        assert len(held) <= 1, order.reference


# --- A burst, coalesced --------------------------------------------------------------------------


def test_a_burst_of_notifications_is_read_about_once_per_payment(shop: Shop, worker: Any) -> None:
    """Notifications arriving together for the same payments are coalesced: each payment's
    first notification queues a task held for WEBHOOKS_COALESCE_SECONDS, the others join it;
    every notification ends processed and every payment where the provider has it, with about
    one provider read per payment."""
    # Given six authorizations, three captured and three cancelled at the provider
    held = [order_paying(shop.api, capture_method="manual")[1] for _ in range(6)]
    for index, payment in enumerate(held):
        if index % 2:
            cancel_at_provider(shop.api, payment.provider_id)
        else:
            capture_at_provider(shop.api, payment.provider_id)
    gets = {payment.provider_id: count_gets(shop.api, payment.provider_id) for payment in held}

    # When four copies of each payment's UPDATE arrive at once, shuffled
    arriving = [payment.provider_id for payment in held for _ in range(4)]
    random.Random(7).shuffle(arriving)
    answers = in_threads(lambda payment_id: shop.notify(payment_id).status_code, arriving)
    assert answers == [200] * 24

    # Then all are processed
    ids = [payment.provider_id for payment in held]
    wait_until(lambda: all_finished(ids, 24), timeout=60)
    assert set(WebhookEvent.objects.values_list("state", flat=True)) == {WebhookState.PROCESSED}

    # And the provider was read about once per payment (a copy that arrives after its
    # payment's read began causes one more read, never a lost update)
    reads = [shop.api.fault_hits(fault) for fault in gets.values()]
    assert min(reads) >= 1
    assert sum(reads) <= len(held) + 3, reads

    # And each payment is where the provider is
    for payment in held:
        payment.refresh_from_db()
        assert payment.status == shop.api.payment(payment.provider_id)["status"]


# --- Redis unreachable when a notification arrives ---------------------------------------------


def _use_broker(app: Any, url: str) -> None:
    """Publish through `url` from now on: the app takes its pools for that address (kombu keeps
    one pool per address, so those of the other address stay usable)."""
    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def redis_behind_proxy(worker: Any, celery_app: Any) -> Iterator[TcpProxy]:
    """The cache (in every thread) and Celery's publishing reach Redis through a proxy that the
    test can close. The worker keeps consuming on the connection it opened before, straight to
    Redis: only the receiving side loses Redis."""
    from django.conf import settings

    url = os.environ.get("REDIS_URL", "")
    if not url.startswith("redis://"):
        pytest.skip("needs REDIS_URL (a real Redis) to take it away")
    parts = urlsplit(url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 6379).open()
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{proxy.port}" if credentials else f"127.0.0.1:{proxy.port}"
    proxied = urlunsplit(parts._replace(netloc=netloc))
    original = celery_app.conf.broker_url
    caches = {**settings.CACHES, "default": {**settings.CACHES["default"], "LOCATION": proxied}}
    try:
        with override_settings(CACHES=caches, REDIS_URL=proxied):
            _use_broker(celery_app, proxied)
            try:
                yield proxy
            finally:
                _use_broker(celery_app, original)
    finally:
        proxy.close()


def test_a_notification_received_while_redis_is_down_is_relayed_and_processed_once(
    shop: Shop, redis_behind_proxy: TcpProxy, caplog: pytest.LogCaptureFixture
) -> None:
    """With Redis unreachable, a notification is still answered 200 and kept as received, with
    no task queued; once Redis is back, the relay queues it and the worker processes it
    exactly once."""
    # Given an authorization captured at the provider
    order, payment = captured_at_provider(shop.api)
    gets = count_gets(shop.api, payment.provider_id)

    # When Redis goes away and the UPDATE arrives
    redis_behind_proxy.close()
    response = shop.notify(payment.provider_id)

    # Then it is answered and stored, waiting for a task that could not be queued
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "received"
    event = WebhookEvent.objects.get(pk=response.json()["event"])
    assert (event.state, event.attempts, event.task_id) == (WebhookState.RECEIVED, 0, "")
    # (the order's own follow-up tasks, still running in the worker, may also fail to queue:
    # only the notification's is this test's)
    not_queued = [
        r.getMessage()
        for r in caplog.records
        if r.name == "core.task_queue" and "webhook" in r.getMessage()
    ]
    assert len(not_queued) == 1, not_queued
    assert f"webhook for payment {payment.provider_id} not queued" in not_queued[0]
    assert shop.api.fault_hits(gets) == 0

    # When Redis is back and the relay runs
    redis_behind_proxy.open()
    out = StringIO()
    call_command("webhooks_relay", "--older-than", "0", stdout=out)

    # Then the event was still waiting (nothing had queued it), and is processed exactly once
    assert "1 webhook event(s) relayed." in out.getvalue()
    wait_until(lambda: WebhookEvent.objects.get(pk=event.pk).state in FINISHED, timeout=30)
    event.refresh_from_db()
    assert (event.state, event.attempts, event.payment_id) == (
        WebhookState.PROCESSED,
        1,
        payment.pk,
    )
    assert event.relayed_at is not None
    assert shop.api.fault_hits(gets) == 1
    assert approvals(payment) == 1
    wait_until(lambda: order_status(order) == OrderStatus.PAID, timeout=30)  # by its task


# --- A worker process killed in the middle of a task ----------------------------------------------


# --- A worker process's database connection ------------------------------------------------------


# --- The provider down while notifications are processed ---------------------------------------


@pytest.fixture
def quick_retries(settings: Any) -> Any:
    settings.WEBHOOKS_RETRY_BACKOFF = 1
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 2
    return settings


def test_processing_retries_while_the_provider_is_down_and_loses_nothing(
    shop: Shop, worker: Any, quick_retries: Any
) -> None:
    """While the provider answers 503 the task retries with backoff, keeping its events; a
    notification arriving meanwhile is not lost; once the provider answers, every event is
    processed and the payment applied once."""
    # Given an authorization captured at the provider, which then answers 503 to four reads
    # (one task attempt: the client's own three retries included)
    order, payment = captured_at_provider(shop.api)
    down = shop.api.add_fault(
        path=f"/payments/{payment.provider_id}", method="GET", status=503, times=4
    )

    # When the UPDATE arrives
    first = shop.notify(payment.provider_id)
    assert first.status_code == 200, first.text

    # Then the first attempt fails and the event waits for the retry, with the reason
    def failed_once() -> WebhookEvent | None:
        event = WebhookEvent.objects.get(pk=first.json()["event"])
        return event if event.last_error else None

    event = wait_until(failed_once, timeout=30)
    assert (event.state, event.attempts) == (WebhookState.PROCESSING, 1)
    assert "not reachable" in event.last_error

    # When another notification arrives meanwhile
    second = shop.notify(payment.provider_id, "INSERT")
    assert second.status_code == 200, second.text

    # Then both end processed, the first after more than one attempt
    wait_until(lambda: all_finished([payment.provider_id], 2), timeout=30)
    events = {e.pk: e for e in events_of(payment.provider_id)}
    assert {e.state for e in events.values()} == {WebhookState.PROCESSED}
    assert events[event.pk].attempts > 1
    assert events[event.pk].last_error == ""
    assert shop.api.fault_hits(down) == 4

    # And the payment was applied once
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.APPROVED
    assert approvals(payment) == 1
    wait_until(lambda: order_status(order) == OrderStatus.PAID, timeout=30)  # by its task


def test_retries_run_out_then_staff_retry_processes_the_events(
    shop: Shop, worker: Any, quick_retries: Any
) -> None:
    """With the provider down for good, the task gives up after WEBHOOKS_MAX_RETRIES and marks
    its events failed with the reason; once the provider is back, staff's retry processes
    them."""
    quick_retries.WEBHOOKS_MAX_RETRIES = 2
    # Given an authorization captured at the provider, which then answers only 503
    order, payment = captured_at_provider(shop.api)
    shop.api.add_fault(path=f"/payments/{payment.provider_id}", method="GET", status=503)

    # When the UPDATE arrives
    response = shop.notify(payment.provider_id)
    assert response.status_code == 200, response.text

    # Then after the first attempt and two retries the event is failed, with the reason
    event = WebhookEvent.objects.get(pk=response.json()["event"])
    wait_until(lambda: WebhookEvent.objects.get(pk=event.pk).state in FINISHED, timeout=60)
    event.refresh_from_db()
    assert (event.state, event.attempts) == (WebhookState.FAILED, 3)
    assert event.last_error.startswith("Gave up after retries:")
    assert event.processed_at is not None
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.AUTHORIZED

    # When the provider is back and staff retry the event
    assert shop.api.request("DELETE", "/_sandbox/faults").status_code == 200
    gets = count_gets(shop.api, payment.provider_id)
    assert webhook_events_retry(events=events_of(payment.provider_id)) == 1

    # Then it is processed and the payment applied once
    wait_until(lambda: WebhookEvent.objects.get(pk=event.pk).state in FINISHED, timeout=30)
    event.refresh_from_db()
    assert (event.state, event.last_error, event.payment_id) == (
        WebhookState.PROCESSED,
        "",
        payment.pk,
    )
    assert shop.api.fault_hits(gets) == 1
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.APPROVED
    assert approvals(payment) == 1
    wait_until(lambda: order_status(order) == OrderStatus.PAID, timeout=30)  # by its task
