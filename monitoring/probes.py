"""Project-level endpoints: health, readiness and dependency probes, and the answer to a rate
limit."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import JSONAPIView
from core.task_queue import broker_round_trip
from payments.health import provider_check_read


def _check(probe: object) -> dict[str, object]:
    started = time.monotonic()
    try:
        probe()  # type: ignore[operator]
    except Exception as exc:  # any failure fails the check, named by its class only
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True, "ms": round((time.monotonic() - started) * 1000, 1)}


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _cache() -> None:
    """A write and a read back (django-redis's socket timeouts, CACHES' OPTIONS, bound both)."""
    cache.set("healthz:deps", "1", timeout=5)
    if cache.get("healthz:deps") != "1":
        raise RuntimeError("cache read back nothing")


# How long the dependency checks wait on Redis: a Redis that is down, or that takes
# connections and never answers, is reported within a few seconds rather than holding the probe
# (and one of the web server's workers) for as long as a client's retries take.
DEPENDENCY_TIMEOUT = 2


def _broker() -> None:
    broker_round_trip(timeout=DEPENDENCY_TIMEOUT)


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


def _unread(cache_check: dict[str, object]) -> dict[str, object]:
    return {"ok": False, "error": cache_check["error"]}


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


class ProbeView(JSONAPIView):
    """A probe: asked by machines on their own (a load balancer, Kubernetes, a dashboard), with
    GET only. No CSRF check: it changes nothing, and any other method (`QUERY`, `PUT`...) is
    answered 405 with `Allow: GET` in the JSON error shape, as the document says, rather than
    the CSRF failure's page."""

    csrf_exempt = True


READINESS = _report_schema("Readiness", ["ready", "not ready"], ["database"])
DEPENDENCIES = _report_schema("Dependencies", ["ok", "degraded"], ["cache", "broker", "provider"])


@method_decorator(never_cache, name="dispatch")
class HealthzView(ProbeView):
    """The process is up (no dependency is touched)."""

    @extend_schema(
        operation_id="healthz",
        summary="Liveness",
        description=(
            "What a Kubernetes `livenessProbe` asks: `200` while the process answers, touching "
            "no dependency, so that an outage of the database or Redis never restarts it. For "
            "readiness use `/readyz`."
        ),
        responses=inline_serializer("Liveness", fields={"status": serializers.ChoiceField(["ok"])}),
        **OPERATIONS,
    )
    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


@method_decorator(never_cache, name="dispatch")
class ReadyzView(ProbeView):
    """Ready to take traffic: this process can serve, its database answers. 503 with what failed
    otherwise (never a secret, never a stack). Nothing else is asked: Redis (the cache and the
    broker) and the provider are shared by every instance, so their outage would take every
    instance out of the load balancer at once, while the pages, the order page and the webhook
    receiver keep working without them (a payment attempt answers 503 while the broker is
    down). `/healthz/deps` reports them."""

    @extend_schema(
        operation_id="readyz",
        summary="Readiness: the database answers",
        description=(
            "What a load balancer's health check and a Kubernetes `readinessProbe` ask: `200` "
            "while this instance's database answers `SELECT 1`, `503` (naming the failed "
            "check by its exception's class) while it does not. Redis and the card payments "
            "service are not asked: an outage of either leaves the instance ready "
            "(`/healthz/deps` reports them). For liveness use `/healthz`."
        ),
        responses={200: READINESS, 503: READINESS},
        **OPERATIONS,
    )
    def get(self, request: Request) -> Response:
        return _report({"database": _check(_database)}, "ready", "not ready")


@method_decorator(never_cache, name="dispatch")
class DependenciesView(ProbeView):
    """The services the shop depends on beyond its own process, for dashboards and alerts:
    Redis as the cache and as the Celery broker (both asked now, each within
    DEPENDENCY_TIMEOUT seconds) and the payment provider (reachable, and our credentials
    accepted, as a worker's check task found it within three of its intervals: the web never
    calls the provider). 503 while one is down; never used for readiness or liveness."""

    @extend_schema(
        operation_id="healthz_deps",
        summary="Dependencies: Redis (cache and broker) and the card payments service",
        description=(
            "For dashboards and alerts, **not** for a load balancer's or Kubernetes' probes: "
            "`503` while Redis (as the cache or as the broker) or the card payments service is "
            "down, which every instance shares. Redis is asked now, each check answering "
            "within a few seconds even when Redis takes connections and never answers; the "
            "provider as the provider check task last found it (the probe never calls it). "
            "While the cache is down the provider's stamp cannot be read, and the provider "
            "reports the cache's error."
        ),
        responses={200: DEPENDENCIES, 503: DEPENDENCIES},
        **OPERATIONS,
    )
    def get(self, request: Request) -> Response:
        cache_check = _check(_cache)
        checks = {
            "cache": cache_check,
            "broker": _check(_broker),
            # The provider's stamp is in the cache: not asked again when the cache is down.
            "provider": _provider() if cache_check["ok"] else _unread(cache_check),
        }
        return _report(checks, "ok", "degraded")
