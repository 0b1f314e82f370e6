"""/metrics, in Prometheus' text format, and the HTTP requests' metrics (a middleware).

The endpoint is not public: it answers 404 unless METRICS_TOKEN is set, and then only to
`Authorization: Bearer <METRICS_TOKEN>` (401 otherwise). With PROMETHEUS_MULTIPROC_DIR set (the
production setup: several gunicorn workers, Celery workers), the counters and histograms are
those of every process writing into that directory, summed (prometheus-client's multiprocess
mode); without it, those of the process that answers. Gauges of the shop's state (queues,
database, heartbeats) are read at scrape time by `monitoring.gauges`.
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Callable, Iterable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from monitoring.gauges import ShopStateCollector

HTTP_REQUESTS = Counter(
    "shop_http_requests_total",
    "HTTP requests answered, by view (its route name), method and status.",
    ["view", "method", "status"],
)
HTTP_SECONDS = Histogram(
    "shop_http_request_duration_seconds",
    "How long the shop took to answer an HTTP request, by view and method.",
    ["view", "method"],
)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
NO_VIEW = "none"  # static files, and paths that match no route (404)


def view_label(request: HttpRequest) -> str:
    """The route's name (`namespace:name`), or the view's dotted path when it has none: a
    fixed set of values, never the raw path (which holds ids and tokens)."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return NO_VIEW
    return match.view_name or NO_VIEW


class RequestMetricsMiddleware:
    """Counts and times every request (early in MIDDLEWARE: the others' time included)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - started
        view = view_label(request)
        method = request.method if request.method in _METHODS else "other"
        HTTP_REQUESTS.labels(view, method, str(response.status_code)).inc()
        HTTP_SECONDS.labels(view, method).observe(seconds)
        return response


class _ThisProcess(Collector):
    """The metrics of the answering process (prometheus-client's default registry)."""

    def collect(self) -> Iterable:
        return REGISTRY.collect()


def _authorized(request: HttpRequest, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


def scrape_registry() -> CollectorRegistry:
    """What a scrape shows: the processes' counters and histograms, and the shop's state."""
    registry = CollectorRegistry(auto_describe=False)
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        MultiProcessCollector(registry, path=directory)
    else:
        registry.register(_ThisProcess())
    registry.register(ShopStateCollector())
    return registry


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    token = settings.METRICS_TOKEN
    if not token:
        raise Http404("Metrics are off: METRICS_TOKEN is not set.")
    if not _authorized(request, token):
        response = HttpResponse("Unauthorized.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    # The classic text format (names with underscores only), which every Prometheus reads.
    body = generate_latest(scrape_registry())
    return HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)
