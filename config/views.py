"""Project-level endpoints: health and readiness probes, and the answer to a rate limit."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from payments.client import get_client


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is up (no dependency is touched)."""
    return JsonResponse({"status": "ok"})


def _check(probe: object) -> dict[str, object]:
    started = time.monotonic()
    try:
        probe()  # type: ignore[operator]
    except Exception as exc:  # any failure makes the instance not ready
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True, "ms": round((time.monotonic() - started) * 1000, 1)}


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _cache() -> None:
    cache.set("readyz", "1", timeout=5)
    if cache.get("readyz") != "1":
        raise RuntimeError("cache read back nothing")


def _broker() -> None:
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)


def _provider() -> None:
    get_client().list_payment_methods()  # reachable, and our credentials are accepted


@require_GET
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """Ready to take traffic: the database, the cache and broker (Redis) and the payment
    provider all answer. 503 with what failed otherwise (never a secret, never a stack)."""
    checks = {
        "database": _check(_database),
        "cache": _check(_cache),
        "broker": _check(_broker),
        "provider": _check(_provider),
    }
    ready = all(check["ok"] for check in checks.values())
    return JsonResponse(
        {"status": "ready" if ready else "not ready", "checks": checks},
        status=200 if ready else 503,
    )


def ratelimited(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The answer to a request over its rate limit: 429 with a readable message."""
    message = _("Too many attempts. Please wait a few minutes before trying again.")
    if request.headers.get("Accept", "").startswith("application/json"):
        return JsonResponse({"result": "error", "message": message}, status=429)
    return render(
        request,
        "429.html",
        {"message": message, "shop_name": settings.SHOP_NAME},
        status=429,
    )
