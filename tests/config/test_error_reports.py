"""Error reports (config/logging/error_reports.py): Sentry, when SENTRY_DSN is set, from the
web processes and the Celery workers, scrubbed as the logs are. A local HTTP server stands in for
Sentry and
keeps every envelope it is sent; errors carrying card numbers, CVVs, card tokens, the provider's
secret key and the webhook token, in a request and in a task, must arrive without any of them."""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
import requests
import sentry_sdk
from django.core.wsgi import get_wsgi_application
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from config.logging.error_reports import error_reports_start
from config.settings.env import basic_access_token
from config.urls import urlpatterns as shop_urlpatterns
from payments.provider.client import get_client
from payments.provider.errors import NotFound
from tests.config.helpers import FAILING_TASK, WORKER_TASKS
from tests.helpers.paths import ROOT
from tests.helpers.request_ids import request_id_bound
from tests.helpers.servers import JsonAnswering
from tests.helpers.settings import TOKEN, load_settings
from tests.helpers.waiting import wait_until

SECRET_KEY = "sk_live_" + "Zq8Rt5Wm2Xv7Nb4Kc9Ld3Pf6"
PUBLIC_KEY = "pk_live_" + "Hj2Gk5Lm8Np1Qr4St7Vw0Xy3"
ACCESS_TOKEN = basic_access_token(PUBLIC_KEY, SECRET_KEY)
CARD = "4242424242424242"
CARD_SPACED = "4242 4242 4242 4242"
CVV, CVC = "0739", "0482"
# The sandbox's card tokens are UUIDs (as its payment ids are): recognised by the names they
# travel under, never by their shape.
CARD_TOKENS = [str(uuid.uuid4()) for _ in range(4)]


# --- A stand-in for Sentry ------------------------------------------------------------------------


class _Envelopes(BaseHTTPRequestHandler):
    server: _SentryServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        encoding = self.headers.get("Content-Encoding", "")
        assert encoding in ("", "gzip"), encoding
        with self.server.lock:
            self.server.received.append(gzip.decompress(body) if encoding == "gzip" else body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _SentryServer(ThreadingHTTPServer):
    received: list[bytes]
    lock: threading.Lock

    @property
    def dsn(self) -> str:
        return f"http://public@127.0.0.1:{self.server_address[1]}/1"

    def text(self) -> str:
        with self.lock:
            return "\n".join(raw.decode("utf-8", "replace") for raw in self.received)

    def events(self) -> list[dict[str, Any]]:
        with self.lock:
            envelopes = list(self.received)
        return [
            json.loads(payload)
            for raw in envelopes
            for header, payload in _items(raw)
            if header.get("type") == "event"
        ]


def _items(raw: bytes) -> Iterator[tuple[dict[str, Any], bytes]]:
    """The items of a Sentry envelope: a header line, then per item a header line and its
    payload (of the header's `length`, else up to the end of the line)."""
    position = raw.index(b"\n") + 1
    while position < len(raw):
        end = raw.find(b"\n", position)
        end = len(raw) if end == -1 else end
        line, position = raw[position:end], end + 1
        if not line.strip():
            continue
        header = json.loads(line)
        if "length" in header:
            payload, position = (
                raw[position : position + header["length"]],
                position + header["length"] + 1,
            )
        else:
            end = raw.find(b"\n", position)
            end = len(raw) if end == -1 else end
            payload, position = raw[position:end], end + 1
        yield header, payload


@pytest.fixture
def sentry_server() -> Iterator[_SentryServer]:
    server = _SentryServer(("127.0.0.1", 0), _Envelopes)
    server.received, server.lock = [], threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _leaks(text: str) -> list[str]:
    """What of the card data and secrets appears in `text`."""
    found = [
        secret
        for secret in (
            CARD,
            CARD_SPACED,
            CARD_SPACED.replace(" ", "+"),
            CARD_SPACED.replace(" ", "%20"),
            SECRET_KEY,
            ACCESS_TOKEN,
            TOKEN,
            *CARD_TOKENS,
            *(uuid.UUID(token).hex for token in CARD_TOKENS),
        )
        if secret in text
    ]
    return found + [
        code for code in (CVV, CVC) if re.search(rf"(?<![0-9A-Za-z]){code}(?![0-9A-Za-z])", text)
    ]


# --- From a request -------------------------------------------------------------------------------


@csrf_exempt
def _failing_view(request: HttpRequest, token: str) -> HttpResponse:
    reference = request.POST.get("card_token")  # a card token under a name of no concern
    logging.getLogger("shop.reports").info("paying with card %s and key %s", CARD, SECRET_KEY)
    held = {"token": reference, "cvv": request.POST.get("cvv")}
    raise RuntimeError(
        f"request-report-marker: card {request.POST.get('card_number')} refused with key "
        f"{SECRET_KEY} at /webhooks/payments/{token}/ ({len(held)} fields)"
    )


# The shop's own addresses too: its 500 page links to them.
urlpatterns = [path("webhooks/payments/<str:token>/report/", _failing_view), *shop_urlpatterns]


@pytest.fixture
def reporting(settings: Any, sentry_server: _SentryServer) -> Iterator[_SentryServer]:
    """Error reports started in this process, as the settings start them with SENTRY_DSN set,
    the shop's secrets configured; stopped afterwards."""
    settings.PAYMENTS_SECRET_KEY = SECRET_KEY
    settings.PAYMENTS_ACCESS_TOKEN = ACCESS_TOKEN
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    error_reports_start(dsn=sentry_server.dsn, environment="test", release="shop@test")
    yield sentry_server
    sentry_sdk.get_client().close(timeout=5)
    sentry_sdk.get_global_scope().set_client(None)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def shop_server(settings: Any) -> Iterator[str]:
    """The shop's WSGI application (as gunicorn serves it) on a local port; yields its address."""
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.mark.urls(__name__)
def test_a_request_error_is_reported_without_card_data_or_secrets(
    reporting: _SentryServer, shop_server: str
) -> None:
    """Given a request carrying card data and secrets in its body, query string, headers and
    cookies, whose view fails with them in its message, then the error is reported, tagged with
    the request id, and none of them is in what was sent."""
    response = requests.post(
        f"{shop_server}/webhooks/payments/{TOKEN}/report/?card_token={CARD_TOKENS[1]}"
        f"&card={CARD_SPACED.replace(' ', '+')}&key={SECRET_KEY}&page=2",
        data={
            "card_number": CARD,
            "cvv": CVV,
            "cvc": CVC,
            "card_token": CARD_TOKENS[0],
            "note": f"card {CARD_SPACED}",
        },
        headers={
            "Authorization": f"Basic {ACCESS_TOKEN}",
            "X-Provider-Key": SECRET_KEY,
            "X-Request-ID": "report-request-0001",
        },
        cookies={"card_token": CARD_TOKENS[2]},
        timeout=30,
    )
    assert response.status_code == 500
    sentry_sdk.flush(timeout=10)

    events = [
        event
        for event in reporting.events()
        if "request-report-marker" in json.dumps(event.get("exception"))
    ]
    assert len(events) == 1, reporting.text()
    event = events[0]
    assert event["tags"]["request_id"] == "report-request-0001"
    assert event["request"]["method"] == "POST"
    assert event["request"]["data"]["note"] == "card [card …4242]"
    assert "page=2" in event["request"]["query_string"]
    assert "[card …4242]" in event["exception"]["values"][-1]["value"]
    assert "paying with card [card …4242] and key [redacted]" in json.dumps(
        event["breadcrumbs"], ensure_ascii=False
    )
    assert _leaks(reporting.text()) == []


class _Provider(JsonAnswering):
    """A provider that answers 404 to everything, and keeps the headers it was sent."""

    server: Any

    def seen(self) -> None:
        self.server.headers.append(dict(self.headers))


def test_no_tracing_headers_reach_the_provider(reporting: _SentryServer, settings: Any) -> None:
    """Given error reports on, when the shop calls the card payments service, then the call
    carries no Sentry tracing headers (sentry-trace, baggage)."""
    provider = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    provider.headers = []  # type: ignore[attr-defined]
    threading.Thread(target=provider.serve_forever, daemon=True).start()
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{provider.server_address[1]}"
    try:
        with pytest.raises(NotFound):
            get_client().get_payment(str(uuid.uuid4()))
    finally:
        provider.shutdown()
        provider.server_close()

    sent = provider.headers  # type: ignore[attr-defined]
    assert sent
    assert not [name for h in sent for name in h if name.lower() in ("sentry-trace", "baggage")]


# --- From a task, in a worker -----------------------------------------------------------------


@pytest.fixture
def reporting_worker(sentry_server: _SentryServer, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A Celery worker as the Procfile starts one (threads pool), with SENTRY_DSN and the shop's
    secrets in its environment, on a queue of its own; yields the queue's name and its log."""
    queue = f"error-reports-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "SENTRY_DSN": sentry_server.dsn,
        "SENTRY_ENVIRONMENT": "test",
        "PAYMENTS_PUBLIC_KEY": PUBLIC_KEY,
        "PAYMENTS_SECRET_KEY": SECRET_KEY,
        "PAYMENTS_WEBHOOK_TOKEN": TOKEN,
        "LOG_FORMAT": "json",
    }
    env.pop("PAYMENTS_ACCESS_TOKEN", None)  # derived from the two keys, as ACCESS_TOKEN is
    log = tmp_path / "worker.log"
    output = log.open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            *("-m", "celery", "-A", "config", "worker", "-Q", queue, "-n", f"{queue}@%h"),
            *("--pool=threads", "--concurrency=2", "--without-mingle", "--without-gossip"),
            *("-I", WORKER_TASKS, "--loglevel=INFO"),
        ],
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    yield queue, log
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    output.close()


def test_a_task_error_in_a_worker_is_reported_without_card_data_or_secrets(
    sentry_server: _SentryServer, reporting_worker: tuple[str, Path], celery_app: Any
) -> None:
    """Given a task queued under a request id with a card token, a card number and a CVV in its
    arguments, which fails holding the provider's secret key in a local variable and card data
    and secrets in its message, then a worker started with SENTRY_DSN reports it, tagged with the
    request id, and none of them is in what was sent."""
    queue, log = reporting_worker
    with request_id_bound("report-task-0002"):
        celery_app.send_task(
            FAILING_TASK,
            args=[CARD_TOKENS[3], CARD],
            kwargs={"cvv": CVV, "note": f"card {CARD_SPACED}"},
            queue=queue,
        )

    def reported() -> list[dict[str, Any]]:
        return [
            event
            for event in sentry_server.events()
            if "task-report-marker" in json.dumps(event.get("exception"))
        ]

    try:
        events = wait_until(reported, timeout=60)
    except AssertionError:
        pytest.fail(f"Nothing reported. The worker wrote:\n{log.read_text()}")
    event = events[0]
    assert event["tags"]["request_id"] == "report-task-0002"
    assert event["extra"]["celery-job"]["task_name"] == FAILING_TASK
    assert "[card …4242]" in event["exception"]["values"][-1]["value"]
    assert _leaks(sentry_server.text()) == []


# --- Only when asked for ----------------------------------------------------------------------

PROBE = """
import json, django
django.setup()
import sentry_sdk
client = sentry_sdk.get_client()
print(json.dumps({
    "active": client.is_active(),
    "integrations": sorted(client.integrations),
    "local_variables": client.options.get("include_local_variables"),
    "send_default_pii": client.options.get("send_default_pii"),
}))
"""


def test_error_reports_start_only_with_a_dsn(tmp_path: Any) -> None:
    """Given no SENTRY_DSN, then nothing of Sentry starts; given one, the shop's settings start
    it with the Django and Celery integrations, without frame variables or personal data; the
    sandbox never starts it."""

    def probe(module: str, **env: str) -> dict[str, Any]:
        done = load_settings(module, tmp_path, probe=PROBE, **env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    dsn = "http://public@127.0.0.1:9/1"
    assert probe("config.settings.local", SENTRY_DSN="")["active"] is False
    started = probe("config.settings.local", SENTRY_DSN=dsn)
    assert started["active"] is True
    assert {"django", "celery"} <= set(started["integrations"])
    assert started["local_variables"] is False
    assert not started["send_default_pii"]
    assert probe("sandbox.settings", SENTRY_DSN=dsn)["active"] is False
    refused = load_settings(
        "config.settings.local",
        tmp_path,
        probe=PROBE,
        SENTRY_DSN=dsn,
        SENTRY_TRACES_SAMPLE_RATE="2",
    )
    assert refused.returncode != 0 and "SENTRY_TRACES_SAMPLE_RATE" in refused.stderr
