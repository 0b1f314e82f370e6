"""The relay (webhook_relay and its command): rows the broker never got are queued again once,
rows claimed longer than their lease are reset, and events given up on are tried again by the
schedule with backoff."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.task_queue import is_marked
from tests.helpers.broker import take_queued
from tests.webhooks.helpers import CaptureCallbacks, events, notify
from webhooks.calls import webhook_hold
from webhooks.models import WebhookEvent, WebhookState
from webhooks.rules import webhook_relay
from webhooks.task_names import PROCESS_TASK, marker

pytestmark = pytest.mark.usefixtures("empty_redis")


@pytest.mark.django_db
def test_rows_the_broker_never_got_are_relayed_once(
    celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """Rows received long ago and never relayed are queued again, one task per payment, with
    relayed_at set; a relay right after finds nothing; recent rows are left to their task."""
    # Given three rows for two payments received 5 minutes ago, and one received just now
    now = timezone.now()
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    old = notify(first, count=2, received_at=now - timedelta(minutes=5)) + notify(
        second, received_at=now - timedelta(minutes=5)
    )
    recent = notify(str(uuid.uuid4()), received_at=now - timedelta(seconds=5))

    # When the relay runs
    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay()

    # Then the old rows are relayed and a task is queued per payment, marked as queued
    assert relayed == 3
    assert all(e.relayed_at is not None and e.state == WebhookState.RECEIVED for e in events(old))
    assert [e.relayed_at for e in events(recent)] == [None]
    queued = take_queued(celery_app)
    assert sorted(queued) == sorted([(PROCESS_TASK, [first]), (PROCESS_TASK, [second])])
    assert is_marked(marker(first))
    assert is_marked(marker(second))

    # When it runs again right after
    with django_capture_on_commit_callbacks(execute=True):
        again = webhook_relay()

    # Then nothing is relayed twice
    assert again == 0
    assert take_queued(celery_app) == []


@pytest.mark.django_db
def test_rows_claimed_longer_than_the_lease_are_reset(
    settings: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """A row claimed by a task that vanished (its worker died) more than WEBHOOKS_CLAIM_LEASE
    ago is received again and relayed; a row claimed within the lease still belongs to its
    task."""
    # Given a 60-second lease, a row claimed 61 seconds ago and one claimed 50 seconds ago
    settings.WEBHOOKS_CLAIM_LEASE = 60
    now = timezone.now()
    long_ago = now - timedelta(hours=3)
    stuck = notify(
        str(uuid.uuid4()),
        state=WebhookState.PROCESSING,
        task_id="gone",
        received_at=long_ago,
        claimed_at=now - timedelta(seconds=61),
        attempts=1,
    )
    busy = notify(
        str(uuid.uuid4()),
        state=WebhookState.PROCESSING,
        task_id="busy",
        received_at=long_ago,
        claimed_at=now - timedelta(seconds=50),
        attempts=1,
    )

    # When the relay runs
    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(now=now)

    # Then only the stuck row is released, to be claimed by its new task
    assert relayed == 1
    [event] = events(stuck)
    assert (event.state, event.task_id, event.attempts) == (WebhookState.RECEIVED, "", 1)
    assert event.relayed_at is not None
    assert [(e.state, e.task_id) for e in events(busy)] == [(WebhookState.PROCESSING, "busy")]


@pytest.mark.django_db
def test_a_task_waiting_to_retry_keeps_its_rows_until_its_lease_after_the_retry(
    settings: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """A task that will retry in five minutes holds its rows: the relay leaves them alone until
    the retry is due plus the lease, and takes them only if the retry never came."""
    settings.WEBHOOKS_CLAIM_LEASE = 60
    now = timezone.now()
    payment_id = str(uuid.uuid4())
    held = notify(
        payment_id,
        state=WebhookState.PROCESSING,
        task_id="retrying",
        received_at=now - timedelta(minutes=10),
        claimed_at=now - timedelta(minutes=2),
        attempts=2,
    )

    # When the task says it retries in 5 minutes
    assert webhook_hold(payment_id=payment_id, task_id="retrying", until=now + timedelta(minutes=5))

    # Then the relay leaves the rows to it until the retry is due plus the lease
    for later in (timedelta(0), timedelta(minutes=5), timedelta(minutes=5, seconds=59)):
        with django_capture_on_commit_callbacks(execute=True):
            assert webhook_relay(now=now + later) == 0
    assert [(e.state, e.task_id) for e in events(held)] == [(WebhookState.PROCESSING, "retrying")]

    # And takes them once that has passed with no retry
    with django_capture_on_commit_callbacks(execute=True):
        assert webhook_relay(now=now + timedelta(minutes=6, seconds=1)) == 1
    assert [(e.state, e.task_id) for e in events(held)] == [(WebhookState.RECEIVED, "")]


@pytest.mark.django_db
def test_events_given_up_on_are_tried_again_by_the_schedule_with_backoff(
    settings: Any, celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """Events a task gave up on while the provider could not be reached are queued again by the
    relay, with no staff step: after WEBHOOKS_RETRY_BACKOFF_MAX the first time, twice that after
    a second round of retries, at most ten minutes. Events that failed for another reason (a
    refusal) are left for staff."""
    settings.WEBHOOKS_MAX_RETRIES = 8  # a round of retries is 9 attempts
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 300
    now = timezone.now()
    long_ago = now - timedelta(hours=2)

    def failed(minutes_ago: float, attempts: int, error: str) -> int:
        [pk] = notify(
            str(uuid.uuid4()),
            state=WebhookState.FAILED,
            received_at=long_ago,
            processed_at=now - timedelta(minutes=minutes_ago),
            attempts=attempts,
            last_error=error,
        )
        return pk

    gave_up = "Gave up after retries: The payment service is not reachable."
    first_round_due = failed(5.5, 9, gave_up)
    first_round_waiting = failed(4, 9, gave_up)
    second_round_waiting = failed(9, 18, gave_up)  # waits 10 minutes
    second_round_due = failed(10.5, 18, gave_up)
    many_rounds_due = failed(10.5, 90, gave_up)  # at most ten minutes
    many_rounds_waiting = failed(9.5, 90, gave_up)
    refused = failed(120, 1, "The provider no longer finds payment x.")

    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(now=now)

    due = [first_round_due, second_round_due, many_rounds_due]
    assert relayed == 3
    assert {e.pk: e.state for e in events(due)} == dict.fromkeys(due, WebhookState.RECEIVED)
    assert all(e.processed_at is None and e.last_error == gave_up for e in events(due))
    waiting = [first_round_waiting, second_round_waiting, many_rounds_waiting, refused]
    assert {e.state for e in events(waiting)} == {WebhookState.FAILED}
    queued = {args[0] for _, args in take_queued(celery_app)}
    assert queued == {e.provider_payment_id for e in events(due)}


@pytest.mark.django_db
def test_events_given_up_and_still_waiting_never_crowd_out_lost_ones(
    settings: Any, celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """However many failed events are still waiting their turn (received earlier), the relay's
    batch still takes a notification left without a task."""
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 300
    now = timezone.now()
    notify(
        str(uuid.uuid4()),
        count=3,
        state=WebhookState.FAILED,
        received_at=now - timedelta(hours=2),
        processed_at=now - timedelta(minutes=7),  # a second round: waits ten minutes
        attempts=2 * (settings.WEBHOOKS_MAX_RETRIES + 1),
        last_error="Gave up after retries: The payment service is not reachable.",
    )
    [lost] = notify(str(uuid.uuid4()), received_at=now - timedelta(hours=1))

    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(limit=2, now=now)

    assert relayed == 1
    assert [e.relayed_at for e in events([lost])] == [now]
    assert {e.state for e in WebhookEvent.objects.exclude(pk=lost)} == {WebhookState.FAILED}
    take_queued(celery_app)


@pytest.mark.django_db(transaction=True)
def test_concurrent_relays_share_the_rows_without_relaying_any_twice() -> None:
    """Two relays started at the same instant (SKIP LOCKED) relay every row exactly once
    between them."""
    # Given forty rows left behind
    received_at = timezone.now() - timedelta(minutes=5)
    pks = [
        pk for _ in range(20) for pk in notify(str(uuid.uuid4()), count=2, received_at=received_at)
    ]
    barrier = threading.Barrier(2)
    results: list[int] = []
    errors: list[BaseException] = []

    def relay() -> None:
        try:
            barrier.wait(timeout=10)
            results.append(webhook_relay(limit=500))
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    # When two relays run at once
    threads = [threading.Thread(target=relay) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # Then each row was relayed by exactly one of them
    assert errors == []
    assert len(results) == 2
    assert sum(results) == len(pks) == 40
    assert not WebhookEvent.objects.filter(relayed_at__isnull=True).exists()
    assert webhook_relay() == 0


@pytest.mark.django_db
def test_the_relay_command_prints_how_many_rows_it_relayed() -> None:
    """`webhooks_relay` relays rows and says how many: one pass by default, every pass with
    --all, any age with --older-than 0."""
    # Given five rows received 5 minutes ago and two just now
    old = notify(str(uuid.uuid4()), count=5, received_at=timezone.now() - timedelta(minutes=5))
    recent = notify(str(uuid.uuid4()), count=2)

    # When it runs once with a limit of 2, then with --all
    out = StringIO()
    call_command("webhooks_relay", "--limit", "2", stdout=out)
    call_command("webhooks_relay", "--limit", "2", "--all", stdout=out)

    # Then the first pass relays two and the rest are relayed in passes of two
    assert out.getvalue().splitlines() == [
        "2 webhook event(s) relayed.",
        "3 webhook event(s) relayed.",
    ]
    assert all(e.relayed_at is not None for e in events(old))
    assert all(e.relayed_at is None for e in events(recent))

    # When it runs with --older-than 0
    out = StringIO()
    call_command("webhooks_relay", "--older-than", "0", stdout=out)

    # Then every row still received is relayed, the recent ones too
    assert out.getvalue().strip() == "7 webhook event(s) relayed."
    assert all(e.relayed_at is not None for e in events(recent))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--limit", "0"], "--limit must be at least 1"),
        (["--older-than", "-1"], "--older-than at least 0"),
        (["--limit", "many"], "invalid int value"),
    ],
)
def test_the_relay_command_refuses_bad_options(args: list[str], error: str) -> None:
    """A limit below 1, a negative age or a non-number is refused with a clear error, and
    nothing is relayed."""
    # Given a row left behind
    pks = notify(str(uuid.uuid4()), received_at=timezone.now() - timedelta(minutes=5))

    # When the command is given a bad option, then it says what is wrong
    with pytest.raises(CommandError, match=error):
        call_command("webhooks_relay", *args, stdout=StringIO())

    # And nothing was relayed
    assert [e.relayed_at for e in events(pks)] == [None]


@pytest.mark.django_db
def test_the_relay_command_with_all_and_any_age_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """`webhooks_relay --all --older-than 0` relays each waiting row once and stops, even when no
    worker has taken them yet."""
    import webhooks.management.commands.webhooks_relay as command

    # Given a row left behind, and a guard that stops a command looping for ever
    pks = notify(str(uuid.uuid4()), received_at=timezone.now() - timedelta(minutes=5))
    passes: list[int] = []
    relay = command.webhook_relay

    def guarded(**kwargs: Any) -> int:
        passes.append(relay(**kwargs))
        if len(passes) > 5:
            raise AssertionError(f"still relaying after {len(passes)} passes: {passes}")
        return passes[-1]

    monkeypatch.setattr(command, "webhook_relay", guarded)

    # When the command relays every row of any age
    out = StringIO()
    call_command("webhooks_relay", "--all", "--older-than", "0", stdout=out)

    # Then the row was relayed once and a last pass found nothing
    assert passes == [1, 0]
    assert out.getvalue().strip() == "1 webhook event(s) relayed."
    assert [e.state for e in events(pks)] == [WebhookState.RECEIVED]


def given_up(payment_id: str, minutes_ago: float, attempts: int, now: Any) -> int:
    """A notification a task gave up on `minutes_ago`, after `attempts` attempts."""
    [pk] = notify(
        payment_id,
        state=WebhookState.FAILED,
        received_at=now - timedelta(hours=2),
        processed_at=now - timedelta(minutes=minutes_ago),
        attempts=attempts,
        last_error="Gave up after retries: The payment service is not reachable.",
    )
    return pk


@pytest.mark.django_db
def test_failed_events_still_waiting_never_crowd_out_failed_ones_that_are_due(
    settings: Any, celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """The database picks only the failed events whose wait is over: older events still
    waiting (a later round of retries waits longer) take no place in the relay's batch."""
    settings.WEBHOOKS_MAX_RETRIES = 8
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 300
    now = timezone.now()
    for _ in range(3):  # failed 9 minutes ago after a second round: they wait ten minutes
        given_up(str(uuid.uuid4()), 9, 18, now)
    due = given_up(str(uuid.uuid4()), 6, 9, now)  # a first round: waits five minutes

    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(limit=1, now=now)

    assert relayed == 1
    assert [e.state for e in events([due])] == [WebhookState.RECEIVED]
    take_queued(celery_app)


@pytest.mark.django_db
def test_the_relay_costs_the_same_queries_however_many_events_it_relays(
    settings: Any, celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """Two selects and one update, whether it relays one event or thirty (lost and failed)."""
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 300
    now = timezone.now()

    def relay_counting() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as run:
            with django_capture_on_commit_callbacks(execute=True):
                relayed = webhook_relay(now=now)
        take_queued(celery_app)
        return relayed, len(run.captured_queries)

    notify(str(uuid.uuid4()), received_at=now - timedelta(minutes=5))
    given_up(str(uuid.uuid4()), 11, 9, now)
    few = relay_counting()
    for _ in range(15):
        notify(str(uuid.uuid4()), received_at=now - timedelta(minutes=5))
        given_up(str(uuid.uuid4()), 11, 9, now)
    many = relay_counting()

    assert (few[0], many[0]) == (2, 30)
    assert few[1] == many[1]


@pytest.mark.django_db
def test_the_relay_reads_failed_events_through_the_index_of_those_given_up(
    settings: Any, celery_app: Any, django_capture_on_commit_callbacks: CaptureCallbacks
) -> None:
    """The select of failed events can be served by the partial index `webhook_given_up`, which
    holds only those given up on while the provider could not be reached: failed events left
    for staff are never read, however many there are."""
    if connection.vendor != "postgresql":
        pytest.skip("the plans are PostgreSQL's")
    now = timezone.now()
    given_up(str(uuid.uuid4()), 30, 9, now)
    with CaptureQueriesContext(connection) as run:
        with django_capture_on_commit_callbacks(execute=True):
            webhook_relay(now=now)
    take_queued(celery_app)
    [select] = [q["sql"] for q in run.captured_queries if "LIKE" in q["sql"]]

    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {select}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("SET LOCAL enable_seqscan = on")

    assert "webhook_given_up" in plan
