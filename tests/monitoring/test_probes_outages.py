"""The probes when a dependency is away (monitoring/probes.py): /readyz follows this instance's
database only, so a Redis outage, which every instance shares, never takes them all out of the
load balancer; /healthz/deps reports Redis (as the cache and as the broker) within a few
seconds, also when Redis takes connections and never answers; and the shop's pages and the
webhook receiver keep working while Redis is away."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery
from django.test import Client
from django.urls import reverse

import monitoring.probes
from tests.factories import OrderFactory, ProductFactory
from tests.helpers.database import unreachable_database
from tests.helpers.servers import free_port
from tests.helpers.shop import own, shopper

pytestmark = pytest.mark.django_db


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that takes connections (the kernel completes them) and never answers: Redis
    stopped with SIGSTOP, or a network that drops the replies."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


@pytest.fixture(params=["refusing", "silent"])
def redis_away(request: Any, settings: Any, celery_app: Celery) -> Iterator[str]:
    """The cache and the Celery broker on a Redis that refuses connections, or on one that takes
    them and never answers; the kind, for the test's assertions."""
    port = free_port() if request.param == "refusing" else request.getfixturevalue("silent_port")
    url = f"redis://127.0.0.1:{port}/0"
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": url,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 2},
        },
    }
    saved = celery_app.conf.broker_url
    celery_app.conf.broker_url = url
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    try:
        yield request.param
    finally:
        celery_app.conf.broker_url = saved
        celery_app._pool = None
        celery_app.amqp._producer_pool = None


# The bound is a guard against a probe that hangs (no client timeout), not a speed target.
@pytest.mark.timeout(60)
def test_with_redis_away_the_instance_stays_ready_and_deps_names_redis(redis_away: str) -> None:
    """Given Redis away (refusing connections, or taking them and never answering), then
    /readyz answers 200 ready, its only check the database; /healthz/deps answers 503 degraded
    with the cache and the broker not ok, each named by its exception's class, and the provider
    not ok with the cache's error (its stamp is in the cache): the probe does answer, as every
    Redis client it uses has its timeouts."""
    ready = Client().get("/readyz")
    deps = Client().get("/healthz/deps")

    assert ready.status_code == 200, ready.content
    assert ready.json()["status"] == "ready"
    assert list(ready.json()["checks"]) == ["database"]
    assert ready.json()["checks"]["database"]["ok"] is True
    assert deps.status_code == 503
    body = deps.json()
    assert body["status"] == "degraded"
    checks = body["checks"]
    assert list(checks) == ["cache", "broker", "provider"]
    assert not any(check["ok"] for check in checks.values())
    assert checks["provider"] == {"ok": False, "error": checks["cache"]["error"]}
    for check in checks.values():
        assert check["error"].isidentifier()  # a class name only: no message, no address
    if redis_away == "silent":
        assert checks["cache"]["error"] == "TimeoutError"


def test_with_redis_up_deps_is_ok_for_the_cache_and_the_broker() -> None:
    """With Redis answering, /healthz/deps finds the cache (a write read back) and the broker
    ok, each with the time it took."""
    deps = Client().get("/healthz/deps")

    checks = deps.json()["checks"]
    for name in ("cache", "broker"):
        assert checks[name]["ok"] is True, checks
        assert checks[name]["ms"] >= 0


@pytest.fixture
def database_away(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The probe's database connection pointed at a database that cannot be reached (a closed
    port; a file in a folder that does not exist on SQLite); the tests' own is untouched."""
    unreachable = unreachable_database("unreachable")
    monkeypatch.setattr(monitoring.probes, "connection", unreachable)
    yield
    unreachable.close()


@pytest.mark.usefixtures("database_away")
def test_without_its_database_the_instance_is_not_ready() -> None:
    """With this instance's database unreachable, /readyz answers 503 not ready, naming the
    database's error by its class only, while /healthz (liveness) still answers 200: the
    process is fine, it cannot serve."""
    ready = Client().get("/readyz")
    alive = Client().get("/healthz")

    assert ready.status_code == 503
    assert ready.json() == {
        "status": "not ready",
        "checks": {"database": {"ok": False, "error": "OperationalError"}},
    }
    assert alive.status_code == 200


def test_with_redis_away_the_pages_and_the_order_page_are_served(redis_away: str) -> None:
    """Given Redis away, then a shopper still gets the home page, a product's page, the cart and
    the page of an order they placed (the payment page, the status checks and the webhook
    receiver have their own tests with Redis down: tests/checkout/test_rate_limits.py,
    tests/webhooks/test_receiver.py)."""
    product = ProductFactory(slug="taza-talavera", name="Taza de Talavera", stock=5, active=True)
    order = OrderFactory(lines=[(product, 1)])
    browser = own(shopper(), order)

    pages = {
        "home": browser.get(reverse("checkout:home")),
        "product": browser.get(reverse("checkout:product", args=[product.slug])),
        "cart": browser.get(reverse("checkout:cart")),
        "order": browser.get(reverse("checkout:order", args=[order.reference])),
    }

    assert {name: page.status_code for name, page in pages.items()} == dict.fromkeys(pages, 200)
    assert "Taza de Talavera" in pages["home"].content.decode()
    assert order.reference in pages["order"].content.decode()
