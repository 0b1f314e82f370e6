"""Request ids: one per web request, on every log line it causes, wherever that line is written.

django-guid does the work (settings: DJANGO_GUID). Its middleware takes the caller's
`X-Request-ID` (a proxy or load balancer in front usually sets it) or makes a new id, keeps it in
a context variable while the request runs and answers with it in `X-Request-ID`; its Celery
integration carries the id in the message of every task queued meanwhile and runs the task under
it, so a task's log lines and provider calls name the request that caused them (a task from beat
runs under a new id). The provider client sends it along (`django_guid.get_guid()`).

What the shop adds: which incoming ids it keeps (django-guid keeps UUIDs only, proxies send other
shapes), and "-" on the log lines written outside of any request or task.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from django_guid.log_filters import CorrelationId

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
NO_REQUEST_ID = "-"
# Short and plain: no spaces, quotes or control characters can reach a log line through it.
_VALID = re.compile(r"[A-Za-z0-9._-]{8,64}")
_META_KEY = "HTTP_" + HEADER.upper().replace("-", "_")


def valid_request_id(value: object) -> bool:
    """Whether an id that came from outside may be used as it is."""
    return isinstance(value, str) and _VALID.fullmatch(value) is not None


class IncomingRequestIdCheck:
    """Drop the caller's `X-Request-ID` unless it is 8 to 64 letters, digits, '.', '_' or '-':
    django-guid's middleware, next in MIDDLEWARE, then makes a new one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not valid_request_id(request.META.get(_META_KEY)):
            request.META.pop(_META_KEY, None)
            request.__dict__.pop("headers", None)  # read again from META if already read
        return self.get_response(request)


class RequestIdFilter(CorrelationId):
    """django-guid's log filter, writing the id to the record's `request_id`: the current
    request's or task's id, or "-" outside of one."""

    def __init__(self) -> None:
        super().__init__(correlation_id_field="request_id")

    def filter(self, record: logging.LogRecord) -> bool:
        super().filter(record)
        record.request_id = record.request_id or NO_REQUEST_ID  # type: ignore[attr-defined]
        return True
