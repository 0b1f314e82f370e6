"""Request id, body size limit, CORS for the browser-safe endpoints, the rate limit, and
injected faults."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.http import HttpRequest, HttpResponse

from sandbox.provider.errors import (
    BODY_TOO_LARGE,
    ApiError,
    error_response,
    internal_error_code,
)
from sandbox.provider.models import Fault
from sandbox.provider.rate_limits import rate_limit_refusal

GetResponse = Callable[[HttpRequest], HttpResponse]
# Paths that are not the provider API: never faulted, never CORS-enabled.
NOT_API = ("/_sandbox", "/static/", "/3ds/", "/sdk/", "/healthz")
PUBLIC_PATHS = ("/card_tokens", "/payment_methods")


class RequestIdMiddleware:
    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        response = self.get_response(request)
        response["X-Request-Id"] = request_id
        return response


class BodySizeLimitMiddleware:
    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.SANDBOX_MAX_BODY_BYTES:
            return error_response(
                ApiError(
                    413,
                    BODY_TOO_LARGE,
                    "Request body too large",
                    [f"at most {settings.SANDBOX_MAX_BODY_BYTES} bytes"],
                )
            )
        return self.get_response(request)


class CorsMiddleware:
    """Browsers may call the public-key endpoints from any origin (no cookies involved)."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        public = request.path in PUBLIC_PATHS
        if public and request.method == "OPTIONS":
            response = HttpResponse(status=204)
        else:
            response = self.get_response(request)
        if public and "HTTP_ORIGIN" in request.META:
            response["Access-Control-Allow-Origin"] = "*"
            response["Access-Control-Allow-Headers"] = (
                "Authorization, Content-Type, Idempotency-Key"
            )
            response["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response["Access-Control-Max-Age"] = "600"
        return response


class RateLimitMiddleware:
    """Over its key's limit, a request is refused before anything else looks at it
    (`sandbox/provider/rate_limits.py`); CORS headers are still added to the refusal."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return rate_limit_refusal(request) or self.get_response(request)


def _take_fault(method: str, path: str) -> Fault | None:
    prefixes = _prefixes(path)
    if not Fault.objects.filter(path_prefix__in=prefixes).exists():
        return None  # nearly always: one statement, no transaction
    with transaction.atomic():
        for fault in Fault.objects.select_for_update().filter(path_prefix__in=prefixes):
            if fault.method and fault.method != method:
                continue
            if fault.remaining is not None:
                if fault.remaining <= 0:
                    continue
                Fault.objects.filter(pk=fault.pk).update(remaining=F("remaining") - 1)
            Fault.objects.filter(pk=fault.pk).update(hits=F("hits") + 1)
            return fault
    return None


def _prefixes(path: str) -> list[str]:
    """Every path prefix at a segment boundary: /payments/abc -> /payments/abc, /payments, /."""
    parts = path.rstrip("/").split("/")
    return ["/".join(parts[:i]) or "/" for i in range(len(parts), 0, -1)]


class FaultInjectionMiddleware:
    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(NOT_API) or request.method == "OPTIONS":
            return self.get_response(request)
        fault = _take_fault(request.method or "", request.path)
        if fault is None:
            return self.get_response(request)
        response = self.get_response(request) if fault.after_processing else None
        if fault.latency_ms:
            time.sleep(fault.latency_ms / 1000)
        if fault.status is None:
            return response if response is not None else self.get_response(request)
        code = fault.error_code or (
            internal_error_code(request.path) if fault.status >= 500 else "CL2100"
        )
        message = fault.message or ("Internal error." if fault.status >= 500 else "Injected fault")
        return error_response(
            ApiError(fault.status, code, message, ["injected by /_sandbox/faults"])
        )
