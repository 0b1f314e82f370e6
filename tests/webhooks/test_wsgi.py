"""The shop's WSGI application (`config.wsgi`, what gunicorn and runserver serve): requests for
the receiver's address take the short path past Django's full middleware stack and are answered
exactly as through it; every other address takes the full stack.

The application is called as a WSGI server calls it, with the environ Django's RequestFactory
builds. It sends `request_started` and `request_finished`, which close the database connection,
so these tests commit for real (`transaction=True`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from celery import Celery
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse

from tests.webhooks.support import take_queued
from webhooks.models import WebhookEvent, WebhookState
from webhooks.queue import PROCESS_TASK
from webhooks.views import RECEIVER_POLICY
from webhooks.wsgi import ShopWSGIHandler

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_broker")]

TOKEN = "whk-Wsgi4pLr9sT4vW8xZ1bC3dF5gH6jK0mN"
PAYMENT_ID = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@pytest.fixture(autouse=True)
def webhook_token(settings: Any) -> str:
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    return TOKEN


@pytest.fixture
def app() -> ShopWSGIHandler:
    return ShopWSGIHandler()


@pytest.fixture
def full_stack(app: ShopWSGIHandler, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths that went through Django's full middleware stack."""
    seen: list[str] = []
    through_middleware = app.get_response

    def get_response(request: HttpRequest) -> HttpResponse:
        seen.append(request.path)
        return through_middleware(request)

    monkeypatch.setattr(app, "get_response", get_response)
    yield seen


def hook_path(token: str = TOKEN) -> str:
    return reverse("webhooks:payments", kwargs={"token": token})


def body_of(payment_id: str = PAYMENT_ID, **changes: Any) -> bytes:
    return json.dumps(
        {"id": payment_id, "origin": "payments-api", "event_type": "UPDATE", **changes}
    ).encode()


def call(app: ShopWSGIHandler, method: str, path: str, body: bytes = b"", **extra: Any) -> Answer:
    """Call the application as a WSGI server does, reading and closing its answer."""
    environ = (
        RequestFactory()
        .generic(method, path, data=body, content_type="application/json", **extra)
        .environ
    )
    environ.setdefault("HTTP_HOST", "127.0.0.1")
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        started.update(status=status, headers=headers)

    iterable = app(environ, start_response)
    try:
        content = b"".join(iterable)
    finally:
        iterable.close()  # type: ignore[attr-defined]
    return Answer(int(started["status"].split()[0]), dict(started["headers"]), content)


def test_a_notification_takes_the_short_path_is_stored_and_queued(
    app: ShopWSGIHandler, full_stack: list[str], celery_app: Celery
) -> None:
    """Given the shop's application, when a valid notification is posted to the receiver, then
    it is answered 200 with its event without going through the full middleware stack, the row
    is stored with the caller's address, and its processing task is queued."""
    answer = call(app, "POST", hook_path(), body_of())

    assert answer.status == 200, answer.body
    assert answer.headers["Content-Type"] == "application/json"
    event = WebhookEvent.objects.get()
    assert answer.json() == {"status": "received", "event": event.pk}
    assert (event.provider_payment_id, event.event_type, event.state) == (
        PAYMENT_ID,
        "UPDATE",
        WebhookState.RECEIVED,
    )
    assert event.remote_addr == "127.0.0.1"
    assert take_queued(celery_app) == [(PROCESS_TASK, [PAYMENT_ID])]
    assert full_stack == []


def test_the_short_path_answers_with_the_request_id_and_the_security_headers(
    app: ShopWSGIHandler, settings: Any
) -> None:
    """Given the production security settings, when notifications are posted (with a valid
    request id, an invalid one, none), then each answer carries the caller's valid id or a new
    one, a policy that lets nothing load or frame it, nosniff, DENY, the referrer policy and
    HSTS on HTTPS, and no cookie."""
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_REFERRER_POLICY = "strict-origin-when-cross-origin"
    settings.X_FRAME_OPTIONS = "DENY"
    app = ShopWSGIHandler()  # middleware reads these when it is built

    given = call(
        app, "POST", hook_path(), body_of(), HTTP_X_REQUEST_ID="prov-req-0001", secure=True
    )
    bad = call(app, "POST", hook_path(), body_of(), HTTP_X_REQUEST_ID="bad id\n")
    made = call(app, "POST", hook_path(), b"{}")

    assert given.headers["X-Request-ID"] == "prov-req-0001"
    assert bad.headers["X-Request-ID"] != "bad id\n"
    assert len({bad.headers["X-Request-ID"], made.headers["X-Request-ID"]}) == 2
    for answer in (given, bad, made):
        assert answer.headers["Content-Security-Policy"] == RECEIVER_POLICY
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert answer.headers["Referrer-Policy"] == "strict-origin-when-cross-origin"
        assert "Set-Cookie" not in answer.headers
    assert given.headers["Strict-Transport-Security"].startswith("max-age=3600")


BAD_BODIES = [
    b"",
    b"not json",
    b"[1, 2]",
    body_of("not-a-uuid"),
    body_of(origin="elsewhere"),
    body_of(event_type="DELETE"),
    b'{"id": "' + b"7" * 5000 + b'"}',
    b"\xff\xfe",
]


@pytest.mark.parametrize("body", BAD_BODIES, ids=range(len(BAD_BODIES)))
def test_bad_bodies_are_answered_as_through_the_full_stack_and_store_nothing(
    app: ShopWSGIHandler, full_stack: list[str], celery_app: Celery, body: bytes
) -> None:
    """Given a body that is not a valid notification, when it is posted through the shop's
    application and through Django's test client (the full stack), then both answers have the
    same status and JSON, a 4xx, and nothing is stored or queued."""
    short = call(app, "POST", hook_path(), body)
    full = Client().post(hook_path(), data=body, content_type="application/json")

    assert 400 <= short.status < 500
    assert (short.status, short.json()) == (full.status_code, full.json())
    assert short.json()["message"]
    assert not WebhookEvent.objects.exists()
    assert take_queued(celery_app) == []
    assert full_stack == []


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_other_methods_are_not_allowed(app: ShopWSGIHandler, method: str) -> None:
    answer = call(app, method, hook_path(), body_of())

    assert answer.status == 405
    assert answer.headers["Allow"] == "POST"
    assert answer.json()["error"] == "method_not_allowed"
    assert not WebhookEvent.objects.exists()


def test_a_wrong_token_is_not_found_and_never_logged(
    app: ShopWSGIHandler, caplog: pytest.LogCaptureFixture
) -> None:
    """Given near misses of the token, when notifications are posted to them, then each is a
    404 JSON answer, nothing is stored, and neither token appears in the log."""
    caplog.set_level(logging.DEBUG)
    wrong = [TOKEN[:-1], TOKEN + "x", TOKEN.upper(), "x"]

    answers = [call(app, "POST", hook_path(token), body_of()) for token in wrong]

    assert [a.status for a in answers] == [404] * len(wrong)
    assert {a.json()["error"] for a in answers} == {"not_found"}
    assert not WebhookEvent.objects.exists()
    assert "webhook with a wrong token" in caplog.text
    assert TOKEN not in caplog.text
    assert not any(token in caplog.text for token in wrong[:3])


def test_a_host_the_shop_does_not_serve_is_refused(app: ShopWSGIHandler, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["shop.example"]

    answer = call(app, "POST", hook_path(), body_of(), HTTP_HOST="evil.example")
    served = call(app, "POST", hook_path(), body_of(), HTTP_HOST="shop.example")

    assert answer.status == 400
    assert served.status == 200
    assert WebhookEvent.objects.count() == 1


def test_an_unexpected_error_is_a_500_that_does_not_log_the_token(
    app: ShopWSGIHandler, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Given a fault the receiver does not expect, when a notification arrives, then the
    answer is a 500 (the provider sends it again), logged without the token in the address."""

    def broken(**_: Any) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("webhooks.views.webhook_receive", broken)
    caplog.set_level(logging.ERROR)

    answer = call(app, "POST", hook_path(), body_of())

    assert answer.status == 500
    assert "X-Request-ID" in answer.headers
    assert "disk on fire" in caplog.text
    assert TOKEN not in caplog.text


@pytest.mark.parametrize(
    "path",
    [
        "/healthz",
        "/",
        f"/webhooks/payments/{TOKEN}/more/",
        f"/webhooks/payments/{TOKEN}",
        f"/shop/webhooks/payments/{TOKEN}/",
    ],
)
def test_every_other_address_takes_the_full_stack(
    app: ShopWSGIHandler, full_stack: list[str], path: str
) -> None:
    """Given addresses that are not exactly the receiver's, when they are called, then they go
    through Django's full middleware stack (the shop's page policy, with its nonce)."""
    answer = call(app, "GET", path)

    assert full_stack == [path]
    assert "X-Request-ID" in answer.headers
    assert "script-src" in answer.headers["Content-Security-Policy"]
    assert not WebhookEvent.objects.exists()
