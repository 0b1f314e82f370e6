"""The shop's WSGI application: Django's, with a short path for the provider's notifications.

The receiver is the shop's busiest route when the provider replays a backlog, and its answer is
a few bytes of JSON to a machine: no session, user, messages, language, CSRF token or page
policy applies to it. Django's full middleware stack (see `config.settings.base.MIDDLEWARE`)
costs about as much CPU as the receiver's own work, so requests for the receiver's address go
through the middleware that does apply to them (`RECEIVER_MIDDLEWARE`: the request id, the
host check, the security headers), then to the same view the URLconf routes to. Every other
request, and every request in tests made with Django's test client, takes the full stack.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from django.core.handlers.exception import convert_exception_to_response
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest, get_path_info, get_script_name
from django.core.signals import request_started
from django.http import HttpRequest, HttpResponse
from django.urls import reverse, set_script_prefix
from django.utils.module_loading import import_string

from webhooks.views import payment_notification

RECEIVER_MIDDLEWARE = (
    "config.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",  # rejects a Host not in ALLOWED_HOSTS
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
)
_TOKEN = "TOKEN"

StartResponse = Callable[..., Any]


def _receiver_path() -> re.Pattern[str]:
    """The receiver's address as the URLconf has it, with the token as a group."""
    address = reverse("webhooks:payments", kwargs={"token": _TOKEN})
    before, after = address.split(_TOKEN)
    return re.compile(f"{re.escape(before)}(?P<token>[^/]+){re.escape(after)}")


def _call_view(request: HttpRequest) -> HttpResponse:
    return payment_notification(request, token=request.receiver_token)  # type: ignore[attr-defined]


def receiver_handler() -> Callable[[HttpRequest], HttpResponse]:
    """The view behind `RECEIVER_MIDDLEWARE`, each layer turning exceptions into answers as
    Django's own chain does."""
    handler = convert_exception_to_response(_call_view)
    for path in reversed(RECEIVER_MIDDLEWARE):
        handler = convert_exception_to_response(import_string(path)(handler))
    return handler


class ShopWSGIHandler(WSGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self._receiver = receiver_handler()
        self._receiver_path = _receiver_path()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        match = self._receiver_path.fullmatch(get_path_info(environ))
        if match is None:
            return super().__call__(environ, start_response)
        # What Django's handler does around its middleware, for this one route.
        set_script_prefix(get_script_name(environ))
        request_started.send(sender=self.__class__, environ=environ)
        request = WSGIRequest(environ)
        request.receiver_token = match["token"]  # type: ignore[attr-defined]
        response = self._receiver(request)
        response._resource_closers.append(request.close)  # request_finished on close
        headers = [*response.items()]
        headers += [("Set-Cookie", c.output(header="")) for c in response.cookies.values()]
        start_response(f"{response.status_code} {response.reason_phrase}", headers)
        return response
