"""`Idempotency-Key` on POST, PATCH and PUT: the same key with the same request answers the
first answer again and does nothing twice; with another request, 409 CL2208; while the first
is still running, 409 CL2209. Server errors (5xx) are not kept, so a retry runs again."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sandbox.provider import jsonio
from sandbox.provider.auth import credential_scope
from sandbox.provider.errors import (
    IDEMPOTENCY_KEY_IN_PROGRESS,
    IDEMPOTENCY_KEY_REUSED,
    ApiError,
    invalid_request,
)
from sandbox.provider.models import IdempotencyRecord

Handler = Callable[..., Response]


def _fingerprint(request: Request) -> str:
    try:
        body = jsonio.dumps(request.data) if request.body else ""
    except Exception:
        body = request.body.decode("utf-8", "replace")
    raw = f"{request.method}\n{request.path}\n{body}"
    return hashlib.sha256(raw.encode()).hexdigest()


def _replay(record: IdempotencyRecord) -> Response:
    data = jsonio.loads(record.response_body) if record.response_body else None
    response = Response(data, status=record.response_status)
    response["Idempotent-Replayed"] = "true"
    return response


def idempotent(handler: Handler) -> Handler:
    @functools.wraps(handler)
    def wrapper(view: APIView, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get("Idempotency-Key")
        if key is None:
            return handler(view, request, *args, **kwargs)
        if not 1 <= len(key) <= 255 or not key.isprintable():
            raise invalid_request("Idempotency-Key: must be 1 to 255 printable characters.")
        scope = getattr(credential_scope(request), "value", "none")
        fingerprint = _fingerprint(request)
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(
                    key=key, scope=scope, fingerprint=fingerprint
                )
        except IntegrityError:
            record = IdempotencyRecord.objects.get(key=key, scope=scope)
            if record.fingerprint != fingerprint:
                raise ApiError(
                    409,
                    IDEMPOTENCY_KEY_REUSED,
                    "Idempotency-Key reused",
                    ["this Idempotency-Key was used with a different request"],
                ) from None
            if not record.completed:
                raise ApiError(
                    409,
                    IDEMPOTENCY_KEY_IN_PROGRESS,
                    "Request in progress",
                    ["a request with this Idempotency-Key is still being processed; retry later"],
                ) from None
            return _replay(record)
        try:
            response = handler(view, request, *args, **kwargs)
        except Exception as exc:
            response = view.handle_exception(exc)
        if response.status_code >= 500:
            record.delete()
        else:
            record.completed = True
            record.response_status = response.status_code
            record.response_body = "" if response.data is None else jsonio.dumps(response.data)
            record.save(update_fields=["completed", "response_status", "response_body"])
        return response

    return wrapper
