"""Request ids (django-guid, core/request_id.py): one per web request, kept from a valid
X-Request-ID or made here, on every log line the request causes, and carried from the web request
to the Celery task, its retries and the provider."""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django_guid import get_guid

from payments.provider.client import get_client
from payments.provider.errors import ProviderUnavailable
from tests.helpers.request_ids import request_id_bound
from tests.helpers.servers import JsonAnswering
from tests.helpers.settings import TOKEN
from tests.helpers.waiting import wait_until
from webhooks.models import WebhookEvent, WebhookState

GENERATED_ID = re.compile(r"[0-9a-f]{32}")


# --- In and out -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "incoming",
    [
        "abcdefgh",
        "req-2026.11.22_0001",
        "6a0e3c52-8f1d-4b7a-a2c9-51d4e7b0f386",
        "A" * 64,
        "9c4e1f7a2b3d4e5f8a6b0c1d2e3f4a5b",
    ],
)
def test_a_valid_incoming_request_id_is_kept_and_answered(client: Client, incoming: str) -> None:
    """Given a request with a valid X-Request-ID (8 to 64 of letters, digits, '.', '_', '-'),
    then the response carries the same id."""
    response = client.get("/healthz", headers={"X-Request-ID": incoming})

    assert response.status_code == 200
    assert response["X-Request-ID"] == incoming


@pytest.mark.parametrize(
    "incoming",
    [
        "",
        "short",
        "x" * 65,
        "has spaces in it",
        "line\nbreak-12345",
        'quote"12345678',
        "tóken-ñandú-2026",
        "<script>alert(1)</script>",
        "id=1; other=2",
    ],
)
def test_an_invalid_incoming_request_id_is_replaced(client: Client, incoming: str) -> None:
    """Given a request whose X-Request-ID is empty, too short or long, or has other characters,
    then the response carries a new id of the shop's own instead."""
    response = client.get("/healthz", headers={"X-Request-ID": incoming})

    assert response.status_code == 200
    assert GENERATED_ID.fullmatch(response["X-Request-ID"])
    assert response["X-Request-ID"] != incoming


def test_each_request_gets_its_own_id_and_leaves_none_behind(client: Client) -> None:
    """Given requests without an id, then each gets a different one, and none stays current
    once its request is over."""
    first = client.get("/healthz")["X-Request-ID"]
    second = client.get("/healthz")["X-Request-ID"]

    assert GENERATED_ID.fullmatch(first) and GENERATED_ID.fullmatch(second)
    assert first != second
    assert get_guid() is None


@pytest.mark.django_db
def test_the_log_lines_of_a_request_carry_its_id(
    client: Client, json_log: Callable[[], list[dict[str, Any]]]
) -> None:
    """Given requests with an id, then a line logged by a view and the "Not Found" line that
    Django writes after the middleware has answered both carry that request's id."""
    report = {"csp-report": {"violated-directive": "script-src", "blocked-uri": "inline"}}
    client.post(
        reverse("csp_report"),
        data=json.dumps(report),
        content_type="application/csp-report",
        headers={"X-Request-ID": "csp-report-0001"},
    )
    missing = client.get("/no-such-page/", headers={"X-Request-ID": "not-found-0002"})

    assert missing.status_code == 404
    by_logger = {line["logger"]: line for line in json_log()}
    assert by_logger["csp"]["request_id"] == "csp-report-0001"
    assert by_logger["django.request"]["message"] == "Not Found: /no-such-page/"
    assert by_logger["django.request"]["request_id"] == "not-found-0002"


# --- From the web request to the Celery task and the provider -------------------------------------


class _ProviderDown(JsonAnswering):
    """A provider in maintenance: every call is answered 503, and its X-Request-ID recorded."""

    server: _RecordingServer
    status, message = 503, "maintenance"

    def seen(self) -> None:
        self.server.seen.append((self.path, self.headers.get("X-Request-ID")))


class _RecordingServer(ThreadingHTTPServer):
    seen: list[tuple[str, str | None]]


@pytest.fixture
def provider_down(settings: Any) -> Iterator[_RecordingServer]:
    """The shop pointed at a provider that answers 503 and records the ids it is sent."""
    server = _RecordingServer(("127.0.0.1", 0), _ProviderDown)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    settings.PAYMENTS_ACCESS_TOKEN = "dGVzdDp0ZXN0"
    yield server
    server.shutdown()
    server.server_close()


def test_the_client_sends_the_current_request_id_to_the_provider(
    provider_down: _RecordingServer,
) -> None:
    """Given a provider call made under a request id, then the provider gets it as
    X-Request-ID; made outside of any request or task, no X-Request-ID is sent."""
    with request_id_bound("call-under-0001"), pytest.raises(ProviderUnavailable):
        get_client().get_payment(str(uuid.uuid4()))
    with pytest.raises(ProviderUnavailable):
        get_client().get_payment(str(uuid.uuid4()))

    ids = [request_id for _, request_id in provider_down.seen]
    assert ids[0] == "call-under-0001"
    assert set(ids) == {"call-under-0001", None}
    assert ids.index(None) > 0 and set(ids[ids.index(None) :]) == {None}


@pytest.mark.django_db(transaction=True)
def test_the_request_id_reaches_the_task_its_retries_and_the_provider(
    worker: Any,
    json_log: Callable[[], list[dict[str, Any]]],
    client: Client,
    settings: Any,
    provider_down: _RecordingServer,
) -> None:
    """Given a real worker and a provider that is down, when a notification arrives with an
    X-Request-ID, then the task queued by the receiver, and its retry, run under that id: their
    log lines carry it, and every provider call they make sends it as X-Request-ID."""
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    settings.WEBHOOKS_MAX_RETRIES = 1
    settings.WEBHOOKS_RETRY_BACKOFF = 1
    settings.WEBHOOKS_RETRY_BACKOFF_MAX = 1
    request_id = "hook-" + uuid.uuid4().hex[:20]
    payment_id = str(uuid.uuid4())

    response = client.post(
        reverse("webhooks:payments", kwargs={"token": TOKEN}),
        data=json.dumps({"id": payment_id, "origin": "payments-api", "event_type": "INSERT"}),
        content_type="application/json",
        headers={"X-Request-ID": request_id},
    )

    assert response.status_code == 200, response.content
    assert response["X-Request-ID"] == request_id
    event = WebhookEvent.objects.get()
    wait_until(
        lambda: WebhookEvent.objects.filter(pk=event.pk, state=WebhookState.FAILED).exists(),
        timeout=60,
    )
    lines = json_log()
    calls = [line for line in lines if line["logger"] == "payments.provider.client"]
    assert len(calls) == 2, calls  # the task's first run and its one retry
    assert all(payment_id in line["message"] for line in calls)
    retried = [line for line in lines if " retry: " in line["message"]]
    gave_up = [line for line in lines if "failed after retries" in line["message"]]
    assert len(retried) == 1 and len(gave_up) == 1, lines
    assert {line["request_id"] for line in [*calls, *retried, *gave_up]} == {request_id}
    assert len(provider_down.seen) >= 2
    assert {seen_id for _, seen_id in provider_down.seen} == {request_id}


@pytest.mark.django_db
def test_a_task_without_a_request_runs_under_an_id_of_its_own(
    json_log: Callable[[], list[dict[str, Any]]],
) -> None:
    """Given tasks run outside of any request (as beat's are), then each runs under a new id of
    its own, and none stays current after it."""
    from celery.signals import task_prerun

    from webhooks.tasks import webhook_relay_task

    def log_inside(**_: Any) -> None:  # connected after the shop's: the id is bound by then
        logging.getLogger("tests.production").info("inside the task")

    task_prerun.connect(log_inside, weak=False)
    try:
        webhook_relay_task.apply()
        webhook_relay_task.apply()
    finally:
        task_prerun.disconnect(log_inside)

    inside = [line["request_id"] for line in json_log() if line["message"] == "inside the task"]
    assert len(inside) == 2
    assert all(GENERATED_ID.fullmatch(request_id) for request_id in inside)
    assert inside[0] != inside[1]
    assert get_guid() is None
