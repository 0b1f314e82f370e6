"""How long notifications are kept: finished ones (processed, unmatched) are deleted
WEBHOOKS_KEEP_DAYS after they finished, by beat, in small batches through an index; failed,
received and processing ones are kept; the payments they concern are never touched."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from payments.models import Payment
from tests.factories import PaymentFactory
from tests.helpers.database import plan_of
from tests.webhooks.helpers import notify
from webhooks.models import WebhookEvent, WebhookState
from webhooks.rules import webhooks_prune
from webhooks.tasks import webhooks_prune_task

pytestmark = pytest.mark.django_db

GAVE_UP = "Gave up after retries: The payment service is not reachable."


def finished(state: str, when: datetime, **fields: Any) -> int:
    """A notification whose processing ended (`state`) at `when`, received a minute before."""
    [pk] = notify(
        str(uuid.uuid4()),
        state=state,
        received_at=when - timedelta(minutes=1),
        processed_at=when,
        attempts=1,
        **fields,
    )
    return pk


def left() -> set[int]:
    return set(WebhookEvent.objects.values_list("pk", flat=True))


@pytest.fixture
def statements() -> Iterator[list[tuple[str, int]]]:
    """Every DELETE sent to the database, with how many rows it deleted."""
    seen: list[tuple[str, int]] = []

    def record(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        if sql.startswith("DELETE"):
            seen.append((sql, context["cursor"].rowcount))
        return result

    with connection.execute_wrapper(record):
        yield seen


def test_finished_notifications_are_deleted_after_the_keep_days_and_the_rest_are_kept(
    settings: Any,
) -> None:
    """Processed and unmatched notifications that finished over WEBHOOKS_KEEP_DAYS ago are
    deleted; younger ones, failed ones (however old: staff or the relay resolve them),
    received and processing ones are kept, and so are the payments they concern."""
    # Given 90 keep days and notifications of every state, a year old and a day old
    settings.WEBHOOKS_KEEP_DAYS = 90
    now = timezone.now()
    payment = PaymentFactory()
    year_ago, day_ago = now - timedelta(days=365), now - timedelta(days=1)
    old = {
        finished(WebhookState.PROCESSED, year_ago, payment=payment),
        finished(WebhookState.UNMATCHED, year_ago, last_error="Unmatched: not ours."),
        finished(WebhookState.PROCESSED, now - timedelta(days=90, minutes=1)),
    }
    kept = {
        finished(WebhookState.PROCESSED, day_ago, payment=payment),
        finished(WebhookState.UNMATCHED, day_ago),
        finished(WebhookState.PROCESSED, now - timedelta(days=89, hours=23)),
        finished(WebhookState.FAILED, year_ago, last_error=GAVE_UP),
        finished(WebhookState.FAILED, year_ago, last_error="The provider no longer finds it."),
        *notify(str(uuid.uuid4()), received_at=year_ago),
        *notify(
            str(uuid.uuid4()),
            state=WebhookState.PROCESSING,
            received_at=year_ago,
            claimed_at=year_ago,
            task_id="a-task",
        ),
    }

    # When the beat task runs
    deleted = webhooks_prune_task.apply().get()

    # Then only the old finished ones are gone, and the payment is still there
    assert deleted == len(old) == 3
    assert left() == kept
    assert Payment.objects.filter(pk=payment.pk).exists()


def test_a_failed_notification_retried_ages_from_when_it_was_processed(settings: Any) -> None:
    """A notification that failed long ago and is then processed (a retry) is kept for the keep
    days from then, and deleted once they are over."""
    settings.WEBHOOKS_KEEP_DAYS = 90
    start = timezone.now()
    pk = finished(WebhookState.FAILED, start - timedelta(days=200), last_error=GAVE_UP)

    # When a retry processes it today
    WebhookEvent.objects.filter(pk=pk).update(
        state=WebhookState.PROCESSED, last_error="", processed_at=start
    )

    # Then it is kept 90 days from now, and deleted after
    with time_machine.travel(start + timedelta(days=89), tick=False):
        assert webhooks_prune() == 0
    with time_machine.travel(start + timedelta(days=90, minutes=1), tick=False):
        assert webhooks_prune() == 1
    assert left() == set()


def test_deletion_goes_in_bounded_batches_and_a_run_within_its_budget(
    settings: Any, statements: list[tuple[str, int]]
) -> None:
    """With batches of 2 and a run budget of 5 rows, each DELETE removes at most 2 rows, one
    run stops at 5, and the next runs finish the rest; each batch is the same two queries
    (an indexed LIMITed select from where the last batch stopped, a delete by keys), whatever
    the number of rows."""
    settings.WEBHOOKS_KEEP_DAYS = 90
    settings.SHOP_RETENTION_BATCH_SIZE = 2
    settings.SHOP_RETENTION_RUN_ROWS = 5
    old = timezone.now() - timedelta(days=100)
    for minutes in range(7):
        finished(WebhookState.PROCESSED, old + timedelta(minutes=minutes))
    young = finished(WebhookState.PROCESSED, timezone.now())

    with CaptureQueriesContext(connection) as first:
        assert webhooks_prune() == 5
    assert webhooks_prune() == 2
    assert webhooks_prune() == 0

    assert left() == {young}
    assert [count for _, count in statements] == [2, 2, 1, 2]
    assert all('"id" IN (' in sql for sql, _ in statements)
    selects = [q["sql"] for q in first.captured_queries if q["sql"].startswith("SELECT")]
    assert [sql.rsplit("LIMIT", 1)[-1].strip() for sql in selects] == ["2", "2", "1"]
    # each select after the first starts where the one before stopped, not over the rows the
    # batches deleted (their index entries stay until vacuum)
    assert ['"processed_at" >=' in sql for sql in selects] == [False, True, True]
    assert len(first.captured_queries) == 6  # 3 batches of a select and a delete


def test_a_run_stops_when_its_time_is_spent_and_the_next_goes_on(settings: Any) -> None:
    """A run with no time left stops after one batch; the next run goes on from there."""
    settings.SHOP_RETENTION_BATCH_SIZE = 2
    settings.SHOP_RETENTION_RUN_SECONDS = 0
    old = timezone.now() - timedelta(days=100)
    for minutes in range(3):
        finished(WebhookState.PROCESSED, old + timedelta(minutes=minutes))

    assert [webhooks_prune(), webhooks_prune(), webhooks_prune()] == [2, 1, 0]


def test_the_selects_go_through_the_index_of_finished_notifications() -> None:
    """The select that picks a batch can be served by the partial index `webhook_finished`
    (its conditions are the index's): it never reads the whole table."""
    finished(WebhookState.PROCESSED, timezone.now() - timedelta(days=100))
    with CaptureQueriesContext(connection) as run:
        webhooks_prune()
    [select, *_] = [q["sql"] for q in run.captured_queries if q["sql"].startswith("SELECT")]

    assert "webhook_finished" in plan_of(select)


def test_prune_is_in_the_beat_schedule_on_the_shop_queue(settings: Any, celery_app: Any) -> None:
    """Beat runs the deletion hourly, on the shop's own queue (it never calls the provider)."""
    [entry] = [
        e
        for e in settings.CELERY_BEAT_SCHEDULE.values()
        if e["task"] == "webhooks.tasks.webhooks_prune_task"
    ]
    assert entry["schedule"] == 3600.0
    route = celery_app.amqp.router.route({}, "webhooks.tasks.webhooks_prune_task")
    assert route["queue"].name == settings.CELERY_QUEUE_SHOP
