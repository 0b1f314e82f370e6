"""Request ids: one per web request, on every log line it causes, wherever that line is written.

The id comes from the caller's `X-Request-ID` when it looks like one (a proxy or load balancer
in front usually sets it), or is made here; the response carries it back in `X-Request-ID`.
While the request runs, the id lives in a context variable: the logging filter puts it on every
record, the provider client sends it along, and Celery tasks queued by the request carry it in
their message headers (see `config.celery`), so a task's log lines say which request caused it.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
# The Celery message header that carries the id from the publisher to the worker.
TASK_HEADER = "shop_request_id"
NO_REQUEST_ID = "-"
# Short and plain: no spaces, quotes or control characters can reach a log line through it.
_VALID = re.compile(r"[A-Za-z0-9._-]{8,64}")

_current: ContextVar[str | None] = ContextVar("request_id", default=None)


def new_request_id() -> str:
    return uuid.uuid4().hex


def valid_request_id(value: object) -> bool:
    """Whether an id that came from outside may be used as it is."""
    return isinstance(value, str) and _VALID.fullmatch(value) is not None


def current_request_id() -> str | None:
    """The id of the request (or task) this code runs for; None outside of one."""
    return _current.get()


def request_id_set(request_id: str | None) -> Token[str | None]:
    """Make `request_id` (a new one when None) the current id; give the token to
    `request_id_reset` to restore the previous one."""
    return _current.set(request_id or new_request_id())


def request_id_reset(token: Token[str | None]) -> None:
    _current.reset(token)


@contextmanager
def request_id_bound(request_id: str | None) -> Iterator[str]:
    """Run a block under a request id (a new one when none is given), then restore the
    previous one."""
    token = request_id_set(request_id)
    try:
        yield str(_current.get())
    finally:
        request_id_reset(token)


class RequestIdMiddleware:
    """Take the caller's request id when it is valid, else make one; keep it for the request;
    answer with it. Goes first in MIDDLEWARE, so that every response and log line has it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get(HEADER, "")
        with request_id_bound(incoming if valid_request_id(incoming) else None) as request_id:
            request.request_id = request_id  # type: ignore[attr-defined]
            response = self.get_response(request)
        response[HEADER] = request_id
        return response


class RequestIdFilter(logging.Filter):
    """Give every record a `request_id` attribute: the current request's or task's id, or "-"
    outside of one (a record that already has one keeps it). Django logs a 4xx or 5xx answer
    ("Not Found: ...") after the middleware has returned, with the request in the record: the
    id is taken from that request."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = (
                _current.get()
                or getattr(getattr(record, "request", None), "request_id", None)
                or NO_REQUEST_ID
            )
        return True
