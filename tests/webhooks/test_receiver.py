"""The webhook receiver over HTTP (Django's test client): what it stores, what it queues, and
how it answers everything that is not a valid notification, without ever calling the provider.

Queued tasks are read back from the real broker (and the queued-marker from the real cache);
no worker runs here. A task is queued only once the row is committed, so valid notifications are
posted inside `django_capture_on_commit_callbacks(execute=True)`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
import responses
from asgiref.sync import async_to_sync
from celery import Celery
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.http import HttpResponse
from django.test import Client
from django.urls import resolve, reverse

from core.task_queue import is_marked
from tests.helpers.broker import take_queued, take_queued_with_eta
from tests.helpers.servers import free_port
from webhooks.addresses import payment_notification_url as webhook_url
from webhooks.models import WebhookEvent, WebhookState
from webhooks.rules import webhook_relay
from webhooks.task_names import PROCESS_TASK, marker
from webhooks.views import payment_notification

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_broker")]

TOKEN = "whk-7Yq2pLr9sT4vW8xZ1bC3dF5gH6jK0mN"
PAYMENT_ID = "3f2b8c1e-5d4a-4b6f-9e7d-2a1c0b9e8f7d"
ORIGIN = "payments-api"

CaptureOnCommit = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


@pytest.fixture(autouse=True)
def webhook_token(settings: Any) -> str:
    """The shop's webhook secret for these tests."""
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    return TOKEN


def hook_path(token: str = TOKEN) -> str:
    return reverse("webhooks:payments", kwargs={"token": token})


def notification(
    payment_id: str = PAYMENT_ID, event_type: str = "UPDATE", **extra: Any
) -> dict[str, Any]:
    return {"id": payment_id, "origin": ORIGIN, "event_type": event_type, **extra}


def post(
    client: Client, body: bytes | dict[str, Any], *, token: str = TOKEN, **extra: Any
) -> HttpResponse:
    """POST `body` (raw bytes, or a dict sent as JSON) to the receiver."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    extra.setdefault("content_type", "application/json")
    return client.post(hook_path(token), data=data, **extra)


def assert_json_error(
    response: HttpResponse, status: int, code: str, fields: set[str] | None = None
) -> dict[str, Any]:
    """A readable JSON error: `error`, a non-empty `message`, and `fields` when they apply."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"].strip(), body
    if fields is None:
        assert set(body) == {"error", "message"}, body
    else:
        assert set(body) == {"error", "message", "fields"}, body
        assert set(body["fields"]) == fields, body
        assert all(isinstance(v, str) and v for v in body["fields"].values()), body
    return body


@contextmanager
def broker_at(app: Celery, url: str) -> Iterator[None]:
    """Point the Celery app at another broker URL (dropping its pooled connections), and back."""

    def drop_connections() -> None:
        # Only the app's references: the pools themselves are kombu's, shared and keyed by URL.
        app._pool = None
        app.amqp._producer_pool = None

    saved = app.conf.broker_url
    drop_connections()
    app.conf.broker_url = url
    try:
        yield
    finally:
        drop_connections()
        app.conf.broker_url = saved


# --- Valid notifications ------------------------------------------------------------------------


@pytest.mark.parametrize("event_type", ["INSERT", "UPDATE"])
def test_a_valid_notification_is_stored_and_queued(
    client: Client,
    celery_app: Celery,
    django_capture_on_commit_callbacks: CaptureOnCommit,
    event_type: str,
) -> None:
    """Given a valid notification with an upper-case id, when it is posted, then the answer is
    200 JSON naming the stored event, one row holds the lower-cased id, the event type and the
    sender's address (received, no attempts yet), and one processing task is queued for it."""
    with django_capture_on_commit_callbacks(execute=True):
        response = post(
            client, notification(PAYMENT_ID.upper(), event_type), REMOTE_ADDR="203.0.113.9"
        )

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    event = WebhookEvent.objects.get()
    assert response.json() == {"status": "received", "event": event.pk}
    assert event.provider_payment_id == PAYMENT_ID
    assert event.event_type == event_type
    assert event.remote_addr == "203.0.113.9"
    assert event.state == WebhookState.RECEIVED
    assert event.attempts == 0
    assert (event.payment_id, event.task_id, event.last_error) == (None, "", "")
    assert is_marked(marker(PAYMENT_ID))
    assert take_queued(celery_app) == [(PROCESS_TASK, [PAYMENT_ID])]


def test_notifications_for_a_payment_already_queued_add_rows_but_no_task(
    client: Client,
    celery_app: Celery,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given a notification whose task still waits in the queue, when two more arrive for the
    same payment, then each is stored but the queue still holds that single task."""
    for event_type in ("INSERT", "UPDATE", "UPDATE"):
        with django_capture_on_commit_callbacks(execute=True):
            assert post(client, notification(event_type=event_type)).status_code == 200

    assert WebhookEvent.objects.filter(provider_payment_id=PAYMENT_ID).count() == 3
    assert take_queued(celery_app) == [(PROCESS_TASK, [PAYMENT_ID])]


def test_the_receiver_is_csrf_exempt(
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given a client that enforces CSRF checks and sends no CSRF token or cookie, when it posts
    a valid notification, then it is accepted (the provider has no CSRF token to send)."""
    strict = Client(enforce_csrf_checks=True)

    with django_capture_on_commit_callbacks(execute=True):
        response = post(strict, notification())

    assert response.status_code == 200, response.content
    assert WebhookEvent.objects.count() == 1


def test_the_receiver_never_calls_the_provider(
    client: Client,
    settings: Any,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given the provider's address pointing at a closed port and every HTTP call intercepted,
    when valid notifications arrive (their tasks queued), then each is answered 200 and not one
    request leaves the shop: the refetch is left to the task."""
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{free_port()}"

    with responses.RequestsMock(assert_all_requests_are_fired=False) as intercepted:
        with django_capture_on_commit_callbacks(execute=True):
            first = post(client, notification(event_type="INSERT"))
            second = post(client, notification(str(uuid.uuid4()), "UPDATE"))

        assert (first.status_code, second.status_code) == (200, 200)
        assert len(intercepted.calls) == 0
    assert WebhookEvent.objects.count() == 2


def test_unknown_extra_fields_are_ignored(
    client: Client, django_capture_on_commit_callbacks: CaptureOnCommit
) -> None:
    """Given a valid notification carrying fields the spec does not list, when it is posted,
    then it is accepted and stored like any other."""
    body = notification(status="approved", amount=250, data={"nested": [1, 2]}, extra=None)

    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, body)

    assert response.status_code == 200, response.content
    event = WebhookEvent.objects.get()
    assert (event.provider_payment_id, event.event_type) == (PAYMENT_ID, "UPDATE")


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/json; x=y"]
)
def test_the_body_is_read_whatever_the_content_type(
    client: Client, content_type: str, django_capture_on_commit_callbacks: CaptureOnCommit
) -> None:
    """Given a valid JSON body sent with another Content-Type (the spec names no headers), when
    it is posted, then it is read as JSON and stored."""
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, notification(), content_type=content_type)

    assert response.status_code == 200, response.content
    assert WebhookEvent.objects.count() == 1


@pytest.mark.parametrize(
    ("remote_addr", "stored"),
    [("2001:db8::7", "2001:db8::7"), ("", None), ("not-an-address", None)],
)
def test_the_sender_address_is_stored_only_when_it_is_an_ip(
    client: Client,
    remote_addr: str,
    stored: str | None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given a request whose REMOTE_ADDR is an IPv6 address, empty or garbage, when a valid
    notification arrives, then it is stored, with the address only when it is an IP."""
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, notification(), REMOTE_ADDR=remote_addr)

    assert response.status_code == 200, response.content
    assert WebhookEvent.objects.get().remote_addr == stored


# --- The secret in the address --------------------------------------------------------------


@pytest.fixture
def all_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every record of every logger at DEBUG, including the non-propagating ones such as
    django.server, captured before any filter could redact it."""
    caplog.set_level(logging.DEBUG)
    for name in ("django", "django.request", "django.server", "webhooks", "celery", "kombu"):
        caplog.set_level(logging.DEBUG, logger=name)
    isolated = [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger) and not logger.propagate
    ]
    for logger in isolated:
        logger.addHandler(caplog.handler)
    yield caplog
    for logger in isolated:
        logger.removeHandler(caplog.handler)


def send(client: Client, method: str, path: str, body: bytes) -> HttpResponse:
    """Call `path` with `method`, sending `body` as JSON where the method has a body."""
    if method == "get":
        return client.get(path)
    return getattr(client, method)(path, data=body, content_type="application/json")


def everything_logged(caplog: pytest.LogCaptureFixture) -> str:
    """The captured text plus every record's attributes (a request in `extra` shows its path)."""
    return caplog.text + "\n".join(repr(vars(record)) for record in caplog.records)


WRONG_TOKENS = [
    TOKEN[:-1],
    TOKEN + "x",
    TOKEN.upper(),
    TOKEN[:-1] + ("A" if TOKEN[-1] != "A" else "B"),
    "x",
    "demo-webhook-token-9c1e4d7f2a",
    "None",
    "%20" + TOKEN,
    "tókén-ñ",
]


@pytest.mark.parametrize("method", ["post", "get", "put", "delete"])
def test_a_wrong_token_is_not_found_stores_nothing_and_leaks_nothing(
    client: Client,
    celery_app: Celery,
    all_logs: pytest.LogCaptureFixture,
    method: str,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given tokens that are near misses of the real one, when valid notifications are sent to
    them, then each is answered 404 JSON, nothing is stored or queued, and neither the real
    token nor the guessed one appears in any log record (the attempt itself is logged)."""
    body = json.dumps(notification()).encode()

    with django_capture_on_commit_callbacks(execute=True):
        answers = [send(client, method, hook_path(token), body) for token in WRONG_TOKENS]

    for response in answers:
        assert_json_error(response, 404, "not_found")
    assert not WebhookEvent.objects.exists()
    assert take_queued(celery_app) == []
    logged = everything_logged(all_logs)
    assert TOKEN not in logged
    assert TOKEN.lower() not in logged.lower()
    for token in WRONG_TOKENS[:4]:
        assert token not in logged
    attempts = [r for r in all_logs.records if r.name == "webhooks.views"]
    assert len(attempts) == len(WRONG_TOKENS)
    assert all("wrong token" in r.getMessage() for r in attempts)


def test_error_answers_to_the_right_address_do_not_log_its_path(
    client: Client, settings: Any, all_logs: pytest.LogCaptureFixture
) -> None:
    """Given the real token, when the receiver answers 400, 405 and 413 (which Django's request
    logger would report with the path), then the token appears in no log record."""
    settings.WEBHOOKS_MAX_BODY_BYTES = 64

    assert post(client, b"not json").status_code == 400
    assert client.get(hook_path()).status_code == 405
    assert post(client, notification(padding="x" * 100)).status_code == 413

    assert TOKEN not in everything_logged(all_logs)
    assert not WebhookEvent.objects.exists()


@pytest.mark.parametrize("token", [TOKEN, "x", "demo-webhook-token-9c1e4d7f2a", "None", "''"])
def test_without_a_configured_token_every_address_is_not_found(
    client: Client, settings: Any, token: str
) -> None:
    """Given no webhook token configured, when a valid notification is sent to any address,
    then it is answered 404 and nothing is stored: an empty secret never matches."""
    settings.PAYMENTS_WEBHOOK_TOKEN = ""

    response = post(client, notification(), token=token)

    assert_json_error(response, 404, "not_found")
    assert not WebhookEvent.objects.exists()


# --- Methods ---------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete", "options"])
def test_other_methods_are_not_allowed(client: Client, celery_app: Celery, method: str) -> None:
    """Given the right address, when it is called with another method than POST (even with a
    valid body), then the answer is 405 JSON with `Allow: POST` and nothing is stored."""
    body = json.dumps(notification()).encode()

    response = send(client, method, hook_path(), body)

    assert_json_error(response, 405, "method_not_allowed")
    assert response["Allow"] == "POST"
    assert not WebhookEvent.objects.exists()
    assert take_queued(celery_app) == []


# --- Invalid bodies ----------------------------------------------------------------------------

NESTED_LIST = b"[" * 2000 + b"]" * 2000  # deeper than the parser's recursion limit

INVALID_JSON = {
    "not JSON": b"not json",
    "empty": b"",
    "truncated": json.dumps(notification()).encode()[:-1],
    "single quotes": b"{'id': '3f2b8c1e-5d4a-4b6f-9e7d-2a1c0b9e8f7d'}",
    "invalid UTF-8": b'{"id": "\xff\xfe", "origin": "payments-api", "event_type": "UPDATE"}',
    "Latin-1 text": '{"id": "año", "origin": "payments-api"}'.encode("latin-1"),
    "nested lists": NESTED_LIST,
}
NOT_AN_OBJECT: dict[str, Any] = {
    "array": [notification()],
    "empty array": [],
    "number": 42,
    "float": 1.5,
    "string": PAYMENT_ID,
    "null": None,
    "true": True,
}
BAD_FIELDS: dict[str, tuple[dict[str, Any], set[str]]] = {
    "id missing": ({"origin": ORIGIN, "event_type": "UPDATE"}, {"id"}),
    "id null": (notification(None), {"id"}),  # type: ignore[arg-type]
    "id empty": (notification(""), {"id"}),
    "id not a UUID": (notification("pay_123"), {"id"}),
    "id UUID without hyphens": (notification(PAYMENT_ID.replace("-", "")), {"id"}),
    "id in braces": (notification("{" + PAYMENT_ID + "}"), {"id"}),
    "id urn form": (notification("urn:uuid:" + PAYMENT_ID), {"id"}),
    "id with spaces": (notification(f" {PAYMENT_ID} "), {"id"}),
    "id with a newline": (notification(PAYMENT_ID + "\n"), {"id"}),
    "id too long": (notification(PAYMENT_ID + "0"), {"id"}),
    "id with non-ASCII digits": (notification("٣" + PAYMENT_ID[1:]), {"id"}),
    "id as number": (notification(uuid.UUID(PAYMENT_ID).int), {"id"}),  # type: ignore[arg-type]
    "id as list": (notification([PAYMENT_ID]), {"id"}),  # type: ignore[arg-type]
    "id as object": (notification({"id": PAYMENT_ID}), {"id"}),  # type: ignore[arg-type]
    "origin missing": ({"id": PAYMENT_ID, "event_type": "UPDATE"}, {"origin"}),
    "origin wrong": ({**notification(), "origin": "payments"}, {"origin"}),
    "origin other case": ({**notification(), "origin": "Payments-API"}, {"origin"}),
    "origin null": ({**notification(), "origin": None}, {"origin"}),
    "event_type lower-case": (notification(event_type="update"), {"event_type"}),
    "event_type unknown": (notification(event_type="DELETE"), {"event_type"}),
    "event_type empty": (notification(event_type=""), {"event_type"}),
    "event_type missing": ({"id": PAYMENT_ID, "origin": ORIGIN}, {"event_type"}),
    "event_type as list": (
        notification(event_type=["UPDATE"]),  # type: ignore[arg-type]
        {"event_type"},
    ),
    "empty object": ({}, {"id", "origin", "event_type"}),
    "all wrong": ({"id": 1, "origin": "x", "event_type": "x"}, {"id", "origin", "event_type"}),
}


def _bad_field_bodies() -> dict[str, tuple[bytes, set[str]]]:
    cases = {
        name: (json.dumps(body).encode(), fields) for name, (body, fields) in BAD_FIELDS.items()
    }
    cases["id nested 500 deep"] = (
        b'{"origin": "payments-api", "event_type": "UPDATE", "id": '
        + b'{"id": ' * 500
        + b"null"
        + b"}" * 501,
        {"id"},
    )
    cases["huge integer id"] = (
        b'{"id": ' + b"9" * 3900 + b', "origin": "payments-api", "event_type": "UPDATE"}',
        {"id"},
    )
    cases["id NaN"] = (b'{"id": NaN, "origin": "payments-api", "event_type": "UPDATE"}', {"id"})
    cases["event_type Infinity"] = (
        b'{"id": "' + PAYMENT_ID.encode() + b'", "origin": "payments-api", "event_type": 1e999}',
        {"event_type"},
    )
    return cases


BAD_FIELD_BODIES = _bad_field_bodies()


def assert_nothing_stored_or_queued(app: Celery) -> None:
    assert not WebhookEvent.objects.exists()
    assert take_queued(app) == []


@pytest.mark.parametrize("body", INVALID_JSON.values(), ids=INVALID_JSON.keys())
def test_a_body_that_is_not_json_is_refused(
    client: Client,
    celery_app: Celery,
    body: bytes,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given a body that is not JSON (garbage, empty, truncated, invalid UTF-8, nested deeper
    than the parser goes), when it is posted, then the answer is 400 `invalid_json` and nothing
    is stored or queued."""
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, body)

    assert_json_error(response, 400, "invalid_json")
    assert_nothing_stored_or_queued(celery_app)


@pytest.mark.parametrize("value", NOT_AN_OBJECT.values(), ids=NOT_AN_OBJECT.keys())
def test_json_that_is_not_an_object_is_refused(
    client: Client, celery_app: Celery, value: Any
) -> None:
    """Given a JSON array, number, string, boolean or null, when it is posted, then the answer
    is 400 `invalid_body` saying an object is expected, and nothing is stored or queued."""
    response = post(client, json.dumps(value).encode())

    body = assert_json_error(response, 400, "invalid_body")
    assert "object" in body["message"]
    assert_nothing_stored_or_queued(celery_app)


@pytest.mark.parametrize(("body", "fields"), BAD_FIELD_BODIES.values(), ids=BAD_FIELD_BODIES.keys())
def test_a_notification_with_bad_fields_is_refused_naming_them(
    client: Client,
    celery_app: Celery,
    body: bytes,
    fields: set[str],
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given a JSON object whose id, origin or event_type is missing, mistyped or not exactly
    as the spec says, when it is posted, then the answer is 400 `invalid_notification` whose
    `fields` name exactly the bad ones, and nothing is stored or queued."""
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, body)

    answer = assert_json_error(response, 400, "invalid_notification", fields)
    for field in fields:
        assert field in answer["message"]
    assert_nothing_stored_or_queued(celery_app)


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 200_000 + b"]" * 200_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        b'{"id": ' + b"7" * 10_000 + b', "origin": "payments-api", "event_type": "UPDATE"}',
    ],
    ids=["400k nested lists", "100k nested objects", "10k-digit integer"],
)
def test_bodies_that_break_naive_parsers_are_refused(
    client: Client, settings: Any, celery_app: Celery, body: bytes
) -> None:
    """Given a size limit raised far above them, when bodies nested far past the recursion
    limit or holding an integer too long for Python to convert are posted, then each is
    answered 400 `invalid_json` (never a 500) and nothing is stored."""
    settings.WEBHOOKS_MAX_BODY_BYTES = 1_000_000

    response = post(client, body)

    assert_json_error(response, 400, "invalid_json")
    assert_nothing_stored_or_queued(celery_app)


def test_a_content_length_that_is_not_a_number_is_refused(
    client: Client, celery_app: Celery
) -> None:
    """Given a Content-Length header that is not a number, when a notification is posted, then
    the answer is 400 `invalid_body` and nothing is stored."""
    response = post(client, notification(), CONTENT_LENGTH="ninety")

    assert_json_error(response, 400, "invalid_body")
    assert_nothing_stored_or_queued(celery_app)


# --- Size limit ----------------------------------------------------------------------------


def _padded(size: int) -> bytes:
    """A valid notification padded with an unknown field to exactly `size` bytes."""
    bare = json.dumps(notification(padding="")).encode()
    return json.dumps(notification(padding="x" * (size - len(bare)))).encode()


def test_a_body_at_the_limit_is_accepted(
    client: Client, settings: Any, django_capture_on_commit_callbacks: CaptureOnCommit
) -> None:
    """Given a valid notification exactly WEBHOOKS_MAX_BODY_BYTES long, when it is posted, then
    it is accepted: the limit is inclusive."""
    body = _padded(settings.WEBHOOKS_MAX_BODY_BYTES)
    assert len(body) == settings.WEBHOOKS_MAX_BODY_BYTES

    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, body)

    assert response.status_code == 200, response.content
    assert WebhookEvent.objects.count() == 1


def test_a_body_over_the_limit_is_refused(
    client: Client,
    settings: Any,
    celery_app: Celery,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given a valid notification one byte over WEBHOOKS_MAX_BODY_BYTES (Content-Length
    telling the truth), when it is posted, then the answer is 413 JSON and nothing is stored."""
    body = _padded(settings.WEBHOOKS_MAX_BODY_BYTES + 1)

    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, body)

    answer = assert_json_error(response, 413, "too_large")
    assert str(settings.WEBHOOKS_MAX_BODY_BYTES) in answer["message"]
    assert_nothing_stored_or_queued(celery_app)


def test_a_declared_length_over_the_limit_is_refused_unread(
    client: Client, settings: Any, celery_app: Celery
) -> None:
    """Given a small valid notification whose Content-Length header claims more than the limit,
    when it is posted, then the answer is 413 from the header alone and nothing is stored."""
    declared = str(settings.WEBHOOKS_MAX_BODY_BYTES + 1)

    response = post(client, notification(), CONTENT_LENGTH=declared)

    assert_json_error(response, 413, "too_large")
    assert_nothing_stored_or_queued(celery_app)


def _asgi_post(path: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> HttpResponse:
    """POST through the ASGI handler, the body streamed in chunks with the given headers."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"), *headers],
        "client": ("198.51.100.4", 40000),
        "server": ("testserver", 80),
    }
    incoming = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.Event().wait()  # the client stays connected until the answer is sent
        return {"type": "http.disconnect"}

    async def respond(message: dict[str, Any]) -> None:
        sent.append(message)

    # As Django's own test clients do: the request signals must not close the test's connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        async_to_sync(ASGIHandler())(scope, receive, respond)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    response = HttpResponse(body, status=start["status"])
    for name, value in start["headers"]:
        response[name.decode()] = value.decode()
    return response


@pytest.mark.parametrize(
    "headers",
    [[], [(b"content-length", b"100")]],
    ids=["chunked, no Content-Length", "Content-Length understated"],
)
def test_a_body_over_the_limit_is_refused_by_its_actual_size(
    settings: Any, celery_app: Celery, headers: list[tuple[bytes, bytes]]
) -> None:
    """Given a server (ASGI) that hands the view the whole body whatever Content-Length says,
    when a valid notification over the limit arrives in chunks with no or an understated
    Content-Length, then the answer is 413 by the bytes actually read, and nothing is stored."""
    body = _padded(settings.WEBHOOKS_MAX_BODY_BYTES + 500)
    chunks = [body[i : i + 1000] for i in range(0, len(body), 1000)]

    response = _asgi_post(hook_path(), chunks, headers)

    assert_json_error(response, 413, "too_large")
    assert_nothing_stored_or_queued(celery_app)


# --- Redis down ------------------------------------------------------------------------------


def test_a_notification_is_kept_when_redis_is_down(
    client: Client,
    settings: Any,
    celery_app: Celery,
    all_logs: pytest.LogCaptureFixture,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given the cache and the Celery broker both on a Redis that refuses connections, when a
    valid notification arrives, then it is still answered 200 and kept as received (with a
    warning that it was not queued); once Redis is back, the relay queues it."""
    unreachable = f"redis://127.0.0.1:{free_port()}/0"
    real_caches, real_redis = settings.CACHES, settings.REDIS_URL
    settings.REDIS_URL = unreachable
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": unreachable,
        },
    }

    with broker_at(celery_app, unreachable):
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            response = post(client, notification())

    assert len(callbacks) == 1
    assert response.status_code == 200, response.content
    event = WebhookEvent.objects.get()
    assert response.json() == {"status": "received", "event": event.pk}
    assert (event.state, event.attempts) == (WebhookState.RECEIVED, 0)
    assert any(
        r.name == "core.task_queue" and "not queued" in r.getMessage() for r in all_logs.records
    )

    settings.CACHES, settings.REDIS_URL = real_caches, real_redis  # Redis is back
    assert take_queued(celery_app) == []
    with django_capture_on_commit_callbacks(execute=True):
        relayed = webhook_relay(older_than=timedelta(0))
    assert relayed == 1
    assert take_queued(celery_app) == [(PROCESS_TASK, [PAYMENT_ID])]


# --- The address given to the provider ---------------------------------------------------------


@pytest.mark.parametrize("base", ["https://tienda.example.com", "https://tienda.example.com/"])
def test_webhook_url_is_the_receiver_address_with_the_token(settings: Any, base: str) -> None:
    """Given a shop base URL (with or without a trailing slash) and a token, then the address
    sent to the provider is `<base>/webhooks/payments/<token>/`, and it routes to the receiver."""
    settings.SHOP_BASE_URL = base

    url = webhook_url()

    assert url == f"https://tienda.example.com/webhooks/payments/{TOKEN}/"
    match = resolve(urlsplit(url).path)
    assert match.func is payment_notification
    assert match.kwargs == {"token": TOKEN}


def test_webhook_url_is_empty_without_a_token(settings: Any) -> None:
    """Given no webhook token configured, then no webhook address is sent to the provider."""
    settings.PAYMENTS_WEBHOOK_TOKEN = ""

    assert webhook_url() == ""


# --- What the answers carry, and how long a notification waits ------------------------------


def test_every_answer_carries_the_receivers_own_strict_policy(
    client: Client, django_capture_on_commit_callbacks: CaptureOnCommit
) -> None:
    """Given a stored notification, a bad body, a wrong token and a wrong method, then each JSON
    answer forbids loading or framing anything, whatever the shop's page policy says."""
    with django_capture_on_commit_callbacks(execute=True):
        answers = [
            post(client, notification()),
            post(client, b"not json"),
            post(client, notification(), token="wrong-token"),
            client.get(hook_path()),
        ]

    assert [response.status_code for response in answers] == [200, 400, 404, 405]
    for response in answers:
        assert response["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"


@pytest.mark.parametrize("coalesce", [0, 1, 3])
def test_a_queued_task_is_held_at_most_the_coalescing_time(
    client: Client,
    celery_app: Celery,
    settings: Any,
    django_capture_on_commit_callbacks: CaptureOnCommit,
    coalesce: int,
) -> None:
    """Given WEBHOOKS_COALESCE_SECONDS, when a notification is stored, then its task is queued
    to start no later than that many seconds after it arrived (at once for 0)."""
    from datetime import datetime

    from django.utils import timezone

    settings.WEBHOOKS_COALESCE_SECONDS = coalesce
    before = timezone.now()

    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, notification()).status_code == 200

    [(name, args, eta)] = take_queued_with_eta(celery_app)
    assert (name, args) == (PROCESS_TASK, [PAYMENT_ID])
    if coalesce == 0:
        assert eta is None
    else:
        held = (datetime.fromisoformat(eta) - before).total_seconds()
        assert coalesce - 1 < held <= coalesce + 1, held


def test_a_notification_after_the_task_started_queues_another(
    client: Client, celery_app: Celery, django_capture_on_commit_callbacks: CaptureOnCommit
) -> None:
    """Given a payment whose task has started (it removed its marker before claiming), when a
    new notification arrives, then a new task is queued for it: a notification is never left
    to a read that began before it."""
    from core.task_queue import unmark
    from webhooks.task_names import marker

    with django_capture_on_commit_callbacks(execute=True):
        post(client, notification())
    assert take_queued(celery_app) == [(PROCESS_TASK, [PAYMENT_ID])]
    unmark(marker(PAYMENT_ID))  # what the task does first

    with django_capture_on_commit_callbacks(execute=True):
        post(client, notification())

    assert take_queued(celery_app) == [(PROCESS_TASK, [PAYMENT_ID])]
