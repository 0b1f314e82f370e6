"""Project-level endpoints: health, readiness and dependency probes, and the answer to a rate
limit."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from config.api import JSONAPIView
from payments.health import provider_check_read


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


# The provider check's stamp is recent while it is newer than this many of its intervals.
PROVIDER_CHECK_RECENT = 3


def _provider() -> dict[str, object]:
    """The provider as the provider check task last found it (reachable, and our credentials
    accepted): a probe never calls the provider itself. Not ok when that check failed, or when
    none is recent (the workers or beat are not running)."""
    try:
        stamp = provider_check_read()
    except Exception as exc:  # the cache (Redis) is unreachable
        return {"ok": False, "error": type(exc).__name__}
    if stamp is None:
        return {"ok": False, "error": "NotChecked"}
    age = round(max(time.time() - stamp["checked_at"], 0.0), 1)
    report: dict[str, object] = {"ok": stamp["ok"], "ms": stamp["ms"], "age": age}
    if not stamp["ok"]:
        report["error"] = stamp.get("error", "")
    elif age > PROVIDER_CHECK_RECENT * settings.PAYMENTS_PROVIDER_CHECK_EVERY:
        report.update(ok=False, error="Stale")
    return report


CHECK = inline_serializer(
    "Check",
    fields={
        "ok": serializers.BooleanField(),
        "ms": serializers.FloatField(required=False, help_text="How long the check took."),
        "age": serializers.FloatField(
            required=False,
            help_text="The provider's only: how long ago (seconds) a worker's task checked it.",
        ),
        "error": serializers.CharField(
            required=False,
            help_text=(
                "The class of the exception that failed the check; for the provider, "
                "`NotChecked` when no check was ever stored and `Stale` when the last is older "
                "than three of its intervals."
            ),
        ),
    },
)


def _report_schema(name: str, statuses: list[str], checks: list[str]) -> object:
    return inline_serializer(
        name,
        fields={
            "status": serializers.ChoiceField(statuses),
            "checks": inline_serializer(f"{name}Checks", fields=dict.fromkeys(checks, CHECK)),
        },
    )


def _report(checks: dict[str, dict[str, object]], ok: str, not_ok: str) -> Response:
    healthy = all(check["ok"] for check in checks.values())
    return Response(
        {"status": ok if healthy else not_ok, "checks": checks}, status=200 if healthy else 503
    )


OPERATIONS = {"tags": ["operations"]}
READINESS = _report_schema("Readiness", ["ready", "not ready"], ["database", "cache"])
DEPENDENCIES = _report_schema("Dependencies", ["ok", "degraded"], ["broker", "provider"])


@method_decorator(never_cache, name="dispatch")
class HealthzView(JSONAPIView):
    """The process is up (no dependency is touched)."""

    @extend_schema(
        operation_id="healthz",
        summary="Liveness",
        responses=inline_serializer("Liveness", fields={"status": serializers.ChoiceField(["ok"])}),
        **OPERATIONS,
    )
    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


@method_decorator(never_cache, name="dispatch")
class ReadyzView(JSONAPIView):
    """Ready to take traffic: this process can serve, its database and cache (Redis) answer.
    503 with what failed otherwise (never a secret, never a stack). The broker and the provider
    are not asked: an outage of either must not take every instance out of the load balancer
    (the webhook receiver needs neither); `/healthz/deps` reports them."""

    @extend_schema(
        operation_id="readyz",
        summary="Readiness: the database and the cache answer",
        responses={200: READINESS, 503: READINESS},
        **OPERATIONS,
    )
    def get(self, request: Request) -> Response:
        checks = {"database": _check(_database), "cache": _check(_cache)}
        return _report(checks, "ready", "not ready")


@method_decorator(never_cache, name="dispatch")
class DependenciesView(JSONAPIView):
    """The services the shop depends on beyond its own process, for monitoring and alerts:
    the Celery broker (asked now) and the payment provider (reachable, and our credentials
    accepted, as a worker's check task found it within three of its intervals: the web never
    calls the provider). 503 while one is down; never used for readiness."""

    @extend_schema(
        operation_id="healthz_deps",
        summary="Dependencies: the broker and the card payments service",
        responses={200: DEPENDENCIES, 503: DEPENDENCIES},
        **OPERATIONS,
    )
    def get(self, request: Request) -> Response:
        return _report({"broker": _check(_broker), "provider": _provider()}, "ok", "degraded")


def ratelimited(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The answer to a request over its rate limit: 429 with a readable message."""
    message = _("Too many attempts. Please wait a few minutes before trying again.")
    if request.headers.get("Accept", "").startswith("application/json"):
        return JsonResponse({"error": "too_many_attempts", "message": message}, status=429)
    return render(
        request,
        "429.html",
        {"message": message, "shop_name": settings.SHOP_NAME},
        status=429,
    )


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A refusal (403), readable: in the staff admin on the admin's own page with the reason
    the refusing view gave; on the shop, the shop's page."""
    reason = str(exception) or _("You do not have the permission for this.")
    if (
        request.path.startswith("/admin/")
        and getattr(request, "user", None)
        and request.user.is_staff
    ):
        from django.contrib import admin

        context = {
            **admin.site.each_context(request),
            "title": _("You cannot do this"),
            "reason": reason,
        }
        return render(request, "admin/forbidden.html", context, status=403)
    return render(
        request, "403.html", {"reason": reason, "shop_name": settings.SHOP_NAME}, status=403
    )


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A request refused by the CSRF check (CSRF_FAILURE_VIEW), on the shop's own 403 page:
    Django's default speaks to the visitor as usted and of DEBUG. For a shopper this is almost
    always a page left open too long (its token gone with the session) or a second tab."""
    message = _(
        "This page was open for too long, or in another tab, so it could not be sent. Reload "
        "the page and try again."
    )
    return permission_denied(request, PermissionDenied(message))
