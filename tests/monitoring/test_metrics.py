"""/metrics: refused without its token, Prometheus' text format with it; requests counted by
route name (never the raw path); the counters of every process with PROMETHEUS_MULTIPROC_DIR;
a Redis outage shown as a gauge, not a failed scrape; queue lengths and heartbeats."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from monitoring.heartbeats import HEARTBEAT_TASK
from tests.helpers.metrics import TOKEN, names, samples_of, scrape, value
from tests.helpers.paths import ROOT
from tests.helpers.servers import free_port
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def metrics_token(settings: Any, fresh_cache: None) -> str:
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


# --- Not public ---------------------------------------------------------------------------------


def test_without_a_configured_token_metrics_are_not_found(client: Client, settings: Any) -> None:
    """No METRICS_TOKEN: /metrics answers 404, whatever the request carries."""
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


def test_the_token_is_required_and_checked(client: Client, metrics_token: str) -> None:
    """No token, a wrong one, or another scheme: 401 and no metrics; the right one: 200."""
    for header in ({}, {"HTTP_AUTHORIZATION": "Bearer wrong"}, {"HTTP_AUTHORIZATION": TOKEN}):
        response = client.get("/metrics", **header)
        assert response.status_code == 401, header
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert b"shop_" not in response.content
    basic = client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}")
    assert basic.status_code == 401
    samples = scrape(client)
    assert "shop_http_requests_total" in names(samples)


# --- HTTP requests ------------------------------------------------------------------------------


def test_requests_are_counted_by_route_name_method_and_status(
    client: Client, metrics_token: str
) -> None:
    """A page and a 404 are counted under the route's name (none for no route), never under
    their path; each one's time goes to the latency histogram."""
    before = scrape(client)
    assert client.get("/healthz").status_code == 200
    assert client.get("/no-such-page-4711/").status_code == 404
    after = scrape(client)

    def delta(name: str, **labels: Any) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("shop_http_requests_total", view="healthz", method="GET", status="200") == 1
    assert delta("shop_http_requests_total", view="none", method="GET", status="404") == 1
    assert delta("shop_http_request_duration_seconds_count", view="healthz", method="GET") == 1
    assert not any("no-such-page" in str(labels) for _, labels in after)


# --- Several processes --------------------------------------------------------------------------

COUNT_IN_A_PROCESS = textwrap.dedent(
    """
    import sys
    import django
    django.setup()
    from payments.metrics import provider_call_observed
    for _ in range(int(sys.argv[1])):
        provider_call_observed("GET", "/payments/3f2b8c1e", 503, 0.2)
    """
)


def test_with_a_multiprocess_directory_a_scrape_sums_every_process(
    client: Client, metrics_token: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes (as two gunicorn or Celery workers) count into PROMETHEUS_MULTIPROC_DIR;
    the process that answers the scrape shows their sum, and still does once they have
    exited."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    for count in (2, 3):
        subprocess.run(
            [sys.executable, "-c", COUNT_IN_A_PROCESS, str(count)], env=env, cwd=ROOT, check=True
        )
    assert len(list(tmp_path.glob("*.db"))) >= 2  # one file per process

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    samples = scrape(client)
    labels = {"endpoint": "/payments/{id}", "method": "GET", "outcome": "server_error"}
    assert value(samples, "shop_provider_calls_total", **labels) == 5
    assert (
        value(
            samples,
            "shop_provider_call_duration_seconds_count",
            endpoint="/payments/{id}",
            method="GET",
        )
        == 5
    )
    # The shop's state is read at scrape time, in multiprocess mode too.
    assert value(samples, "shop_db_gauges_up") == 1


# --- Redis: queues, outage, heartbeats ---------------------------------------------------------


def _redis_broker(settings: Any) -> None:
    if not str(settings.CELERY_BROKER_URL).startswith("redis"):
        pytest.skip("needs Redis as the broker (REDIS_URL)")


def test_queue_lengths_are_read_from_redis(
    client: Client, metrics_token: str, settings: Any, celery_app: Any, empty_broker: None
) -> None:
    """Tasks waiting in a queue are its length, per queue."""
    _redis_broker(settings)
    for _ in range(3):
        celery_app.send_task("checkout.tasks.reservations_expire_task", queue="shop")
    celery_app.send_task("payments.tasks.payments_reconcile_task", queue="provider_reads")
    try:
        samples = scrape(client)
        assert value(samples, "shop_redis_up") == 1
        assert value(samples, "shop_celery_queue_length", queue="shop") == 3
        assert value(samples, "shop_celery_queue_length", queue="provider_reads") == 1
        assert value(samples, "shop_celery_queue_length", queue="provider_writes") == 0
    finally:
        celery_app.control.purge()


def test_a_redis_outage_is_a_gauge_not_a_failed_scrape(
    client: Client, metrics_token: str, settings: Any
) -> None:
    """With the broker's Redis not answering (here: nothing listens on its port), the scrape
    answers 200 with shop_redis_up 0 and no queue lengths, and the database's gauges."""
    _redis_broker(settings)
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"
    samples = scrape(client)
    assert value(samples, "shop_redis_up") == 0
    assert "shop_celery_queue_length" not in names(samples)
    assert value(samples, "shop_db_gauges_up") == 1


@pytest.mark.django_db(transaction=True)
def test_workers_heartbeats_are_shown_per_queue(
    client: Client, metrics_token: str, settings: Any, celery_app: Any, worker: Any
) -> None:
    """The heartbeat task, run by a real worker from a queue, stamps that queue's heartbeat;
    a queue no worker has answered on shows 0."""
    _redis_broker(settings)
    before = scrape(client)
    assert value(before, "shop_celery_queue_heartbeat_timestamp_seconds", queue="shop") == 0
    celery_app.send_task(HEARTBEAT_TASK, queue="shop")
    samples = wait_until(
        lambda: (
            (s := scrape(client))
            and value(s, "shop_celery_queue_heartbeat_timestamp_seconds", queue="shop") > 0
            and s
        )
    )
    assert (
        time.time() - value(samples, "shop_celery_queue_heartbeat_timestamp_seconds", queue="shop")
        < 60
    )
    assert (
        value(samples, "shop_celery_queue_heartbeat_timestamp_seconds", queue="provider_writes")
        == 0
    )
    assert "shop_celery_beat_heartbeat_timestamp_seconds" in names(samples)


def test_samples_parse_as_prometheus_text(client: Client, metrics_token: str) -> None:
    """Every family the shop defines is in a scrape, with the shop_ prefix."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    samples = samples_of(response.content.decode())
    shop = {name for name in names(samples) if name.startswith("shop_")}
    assert {
        "shop_payment_attempts_in_flight",
        "shop_authorizations_held_amount",
        "shop_notifications",
        "shop_mails_unsent",
        "shop_db_gauges_up",
    } <= shop


def test_beat_stamps_its_heartbeat_when_it_queues_a_task(
    client: Client,
    metrics_token: str,
    settings: Any,
    celery_app: Any,
    empty_broker: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In beat's process (once beat has started), queueing a task stamps beat's heartbeat;
    in any other process, queueing stamps nothing."""
    from celery.signals import beat_init

    from monitoring import heartbeats

    _redis_broker(settings)
    monkeypatch.setitem(heartbeats._beat, "running", False)
    monkeypatch.setitem(heartbeats._beat, "last", 0.0)
    celery_app.send_task("checkout.tasks.reservations_expire_task", queue="shop")
    assert value(scrape(client), "shop_celery_beat_heartbeat_timestamp_seconds") == 0

    beat_init.send(sender=None)
    celery_app.send_task("checkout.tasks.reservations_expire_task", queue="shop")
    stamped = value(scrape(client), "shop_celery_beat_heartbeat_timestamp_seconds")
    assert 0 < time.time() - stamped < 60
    celery_app.control.purge()


def test_without_a_redis_broker_no_redis_or_queue_gauges_are_shown(
    client: Client, metrics_token: str, settings: Any
) -> None:
    """The demo's embedded broker: no shop_redis_up (it would claim a Redis that is not
    there), no queue lengths; the database's gauges as ever."""
    settings.CELERY_BROKER_URL = "filesystem://"
    samples = scrape(client)
    assert not {"shop_redis_up", "shop_celery_queue_length"} & names(samples)
    assert value(samples, "shop_db_gauges_up") == 1
