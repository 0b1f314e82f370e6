"""The provider's notifications arrive here. The view is thin and fast: check the secret in
the address (in constant time), parse the body strictly, store one row, queue its processing
once it is committed, answer 200. It never calls the provider. Bad input is a 4xx naming what
is wrong; the only 5xx is a 503 with Retry-After when the database cannot store the row (the
provider sends the notification again).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.debug import sensitive_variables

from webhooks.notifications import InvalidNotification, parse_notification
from webhooks.rules import webhook_receive

logger = logging.getLogger(__name__)

RECEIVER_POLICY = "default-src 'none'; frame-ancestors 'none'"


def _answer(status: int, body: dict[str, object]) -> JsonResponse:
    response = JsonResponse(body, status=status)
    # A JSON answer for a machine: nothing in it may load or be framed (the page policy of
    # `core.security` is for the shop's pages, and leaves a header set here alone).
    response["Content-Security-Policy"] = RECEIVER_POLICY
    return response


def _error(status: int, code: str, message: str, **extra: object) -> JsonResponse:
    return _answer(status, {"error": code, "message": message, **extra})


def _client_address(request: HttpRequest) -> str | None:
    try:
        return str(ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")))
    except ValueError:
        return None


@csrf_exempt
@sensitive_variables("token", "expected")
def payment_notification(request: HttpRequest, token: str) -> JsonResponse:
    expected = settings.PAYMENTS_WEBHOOK_TOKEN
    if not expected or not hmac.compare_digest(token.encode(), expected.encode()):
        logger.warning("webhook with a wrong token from %s", _client_address(request))
        return _error(404, "not_found", "Not found.")
    if request.method != "POST":
        response = _error(405, "method_not_allowed", "Send notifications with POST.")
        response["Allow"] = "POST"
        return response
    limit = settings.WEBHOOKS_MAX_BODY_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return _error(400, "invalid_body", "The Content-Length header is not a number.")
    if declared > limit:
        return _error(413, "too_large", f"The body must be at most {limit} bytes.")
    body = request.read(limit + 1)
    if len(body) > limit:
        return _error(413, "too_large", f"The body must be at most {limit} bytes.")
    try:
        notification = parse_notification(body)
    except InvalidNotification as exc:
        return _error(400, exc.code, exc.message, **({"fields": exc.fields} if exc.fields else {}))
    try:
        event_id = webhook_receive(notification=notification, remote_addr=_client_address(request))
    except DatabaseError as exc:
        logger.error("webhook for payment %s not stored: %s", notification.payment_id, exc)
        response = _error(
            503, "unavailable", "The notification could not be stored; send it again."
        )
        response["Retry-After"] = str(settings.DATABASE_RETRY_AFTER)
        return response
    return _answer(200, {"status": "received", "event": event_id})
