"""Notifications processed by Celery workers in processes of their own, as production
runs them, against the real Redis, PostgreSQL and the live sandbox: a worker killed
mid-task is replaced and the notification applies once; a worker keeps its database
connection from task to task, and closes it after each task when told to
(DATABASE_CONN_MAX_AGE=0)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from django.db import connection
from django.utils import timezone

from checkout.models import OrderStatus
from tests.helpers.processes import WorkerProcess
from tests.helpers.waiting import wait_until
from tests.webhooks.helpers import (
    FINISHED,
    Shop,
    approvals,
    captured_at_provider,
    count_gets,
    order_status,
)
from webhooks.models import WebhookEvent, WebhookState

pytestmark = [pytest.mark.sandbox, pytest.mark.django_db(transaction=True)]


VISIBILITY_TIMEOUT = 3  # seconds, for the worker processes


@pytest.fixture
def worker_processes(
    tmp_path: Path, shop: Shop, empty_broker: None
) -> Iterator[Callable[..., WorkerProcess]]:
    """Start Celery workers in processes of their own on the test database; all are killed
    when the test ends."""
    from django.conf import settings

    database = os.environ.get("DATABASE_URL", "")
    if not database.startswith(("postgres://", "postgresql://")):
        pytest.skip("worker processes share the test database: it needs PostgreSQL")
    if not os.environ.get("REDIS_URL", "").startswith("redis://"):
        pytest.skip("worker processes need a real broker: set REDIS_URL")
    parts = urlsplit(database)
    test_database = urlunsplit(parts._replace(path=f"/{connection.settings_dict['NAME']}"))
    env = {
        **os.environ,
        "DATABASE_URL": test_database,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "WEBHOOKS_RETRY_BACKOFF_MAX": str(VISIBILITY_TIMEOUT - 1),
        "PAYMENTS_API_BASE_URL": settings.PAYMENTS_API_BASE_URL,
        "PAYMENTS_PUBLIC_KEY": settings.PAYMENTS_PUBLIC_KEY,
        "PAYMENTS_ACCESS_TOKEN": settings.PAYMENTS_ACCESS_TOKEN,
        "PAYMENTS_AUTH_SCHEME": settings.PAYMENTS_AUTH_SCHEME,
        "PAYMENTS_WEBHOOK_TOKEN": settings.PAYMENTS_WEBHOOK_TOKEN,
    }
    for name in ("CELERY_BROKER_URL", "CELERY_BROKER_READ_URL", "CELERY_BROKER_WRITE_URL"):
        env.pop(name, None)
    started: list[WorkerProcess] = []

    def start(name: str, **extra_env: str) -> WorkerProcess:
        process = WorkerProcess(
            {**env, **extra_env}, tmp_path / f"{name}.log", f"{name}-{uuid.uuid4().hex[:6]}"
        )
        started.append(process.start())
        return process

    yield start
    for process in started:
        process.kill()


def test_a_worker_killed_mid_task_is_replaced_and_the_notification_applies_once(
    shop: Shop, worker_processes: Callable[[str], WorkerProcess]
) -> None:
    """A worker killed while it waits for the provider never acknowledged its task: after the
    visibility timeout another worker gets the same task again, which takes over the events
    the dead one had claimed and applies the payment once."""
    broker = redis.Redis.from_url(os.environ["REDIS_URL"])
    # Given an authorization captured at the provider, whose next read hangs for 8 s
    order, payment = captured_at_provider(shop.api)
    hang = shop.api.add_fault(
        path=f"/payments/{payment.provider_id}",
        method="GET",
        latency_ms=8000,
        times=1,
    )
    gets = count_gets(shop.api, payment.provider_id)
    first = worker_processes("first")
    first.wait_ready()

    # When the UPDATE arrives and the worker is killed while its task waits for the provider
    response = shop.notify(payment.provider_id)
    assert response.status_code == 200, response.text
    event = WebhookEvent.objects.get(pk=response.json()["event"])
    wait_until(lambda: shop.api.fault_hits(hang) == 1, timeout=30)
    event.refresh_from_db()
    assert event.state == WebhookState.PROCESSING
    claimed_by = event.task_id
    first.kill()

    # Then its task was never acknowledged
    assert broker.hlen("unacked") == 1

    # When another worker starts once the visibility timeout has passed
    def unacked_long_enough() -> bool:
        delivered = broker.zrange("unacked_index", 0, -1, withscores=True)
        return bool(delivered) and all(
            at + VISIBILITY_TIMEOUT + 0.5 < time.time() for _, at in delivered
        )

    wait_until(unacked_long_enough, timeout=30)
    second = worker_processes("second")

    # Then the same task runs again, takes over the claimed event and applies the payment once
    wait_until(lambda: WebhookEvent.objects.get(pk=event.pk).state in FINISHED, timeout=60)
    event.refresh_from_db()
    assert (event.state, event.task_id, event.attempts, event.payment_id) == (
        WebhookState.PROCESSED,
        claimed_by,
        2,
        payment.pk,
    ), second.log()
    assert claimed_by in first.log()
    assert claimed_by in second.log()
    assert shop.api.fault_hits(gets) == 1
    assert approvals(payment) == 1
    # (the order follows by its sync task, queued once the payment changed)
    wait_until(lambda: order_status(order) == OrderStatus.PAID, timeout=30)
    # And this time the task is acknowledged
    wait_until(lambda: broker.hlen("unacked") == 0, timeout=15)


def worker_backends(application_name: str) -> list[int]:
    """The PostgreSQL backends a worker started with PGAPPNAME=application_name holds."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s ORDER BY pid",
            [application_name],
        )
        return [pid for (pid,) in cursor.fetchall()]


def run_relay_tasks(process: WorkerProcess, count: int) -> None:
    from webhooks.tasks import webhook_relay_task

    done = process.log().count("succeeded in")
    for _ in range(count):
        webhook_relay_task.delay()
    wait_until(lambda: process.log().count("succeeded in") >= done + count, timeout=30)


def test_a_worker_keeps_its_database_connection_from_task_to_task(
    worker_processes: Callable[..., WorkerProcess],
) -> None:
    """Each task does not open a connection of its own (a new PostgreSQL backend each): the
    worker keeps one, as long as DATABASE_CONN_MAX_AGE allows."""
    name = f"shop-worker-{uuid.uuid4().hex[:8]}"
    worker = worker_processes("keeps", PGAPPNAME=name)
    worker.wait_ready()
    run_relay_tasks(worker, 1)
    [backend] = worker_backends(name)
    run_relay_tasks(worker, 5)
    assert worker_backends(name) == [backend], worker.log()


def test_with_no_connection_age_a_worker_closes_its_connection_after_each_task(
    worker_processes: Callable[..., WorkerProcess],
) -> None:
    """DATABASE_CONN_MAX_AGE=0 (behind PgBouncer in transaction mode) is honoured by workers:
    their tasks did use the database (an old notification was relayed by one of them), and no
    connection is left open afterwards."""
    name = f"shop-worker-{uuid.uuid4().hex[:8]}"
    left_behind = WebhookEvent.objects.create(
        provider_payment_id=str(uuid.uuid4()),
        event_type="UPDATE",
        received_at=timezone.now() - timedelta(minutes=10),
    )
    worker = worker_processes("closes", PGAPPNAME=name, DATABASE_CONN_MAX_AGE="0")
    worker.wait_ready()
    run_relay_tasks(worker, 3)
    left_behind.refresh_from_db()
    assert left_behind.relayed_at is not None  # the worker reached the database
    wait_until(lambda: worker_backends(name) == [], timeout=10)
