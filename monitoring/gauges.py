"""The gauges computed when /metrics is scraped: the Celery queues' lengths (Redis LLEN, with a
short timeout, so that a Redis outage shows as `shop_redis_up 0` rather than a failed scrape),
the apps' gauges read from the database (cached briefly, so that several scrapers do not
multiply the load), and the workers' and beat's heartbeats (monitoring.heartbeats)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from decimal import Decimal
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from checkout import metrics as checkout_metrics
from checkout.admission.rules import admission_figures, pace_kind, page_p95
from core.cache_redis import cache_is_redis
from monitoring import heartbeats
from payments import metrics as payments_metrics
from webhooks import metrics as webhooks_metrics

logger = logging.getLogger(__name__)

DB_GAUGES_KEY = "metrics:db-gauges"
REDIS_TIMEOUT = 0.5  # seconds, to connect and to answer
# kombu's Redis transport keeps a queue's messages of priority p > 0 in a list of its own.
PRIORITY_SEPARATOR = "\x06\x16"
PRIORITY_STEPS = (3, 6, 9)
_APPS = (payments_metrics, webhooks_metrics, checkout_metrics)


def celery_queues() -> list[str]:
    return sorted(settings.CELERY_TASK_QUEUES)


@lru_cache(maxsize=2)
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT
    )


def broker_is_redis() -> bool:
    return str(settings.CELERY_BROKER_URL).startswith(("redis://", "rediss://", "unix://"))


def queue_lengths() -> dict[str, int] | None:
    """Messages waiting in each Celery queue; None when Redis does not answer. Empty when the
    broker is not Redis (the demo's embedded broker)."""
    url = str(settings.CELERY_BROKER_URL)
    if not broker_is_redis():
        return {}
    queues = celery_queues()
    try:
        pipe = _redis(url).pipeline(transaction=False)
        for queue in queues:
            pipe.llen(queue)
            for step in PRIORITY_STEPS:
                pipe.llen(f"{queue}{PRIORITY_SEPARATOR}{step}")
        lengths = pipe.execute()
    except redis.RedisError as exc:
        logger.warning("metrics: Redis did not answer: %s", type(exc).__name__)
        return None
    per_queue = 1 + len(PRIORITY_STEPS)
    return {
        queue: sum(lengths[i * per_queue : (i + 1) * per_queue]) for i, queue in enumerate(queues)
    }


def db_gauge_values(*, use_cache: bool = True) -> dict[str, Any] | None:
    """The apps' gauges from the database, as computed at most METRICS_DB_GAUGES_CACHE_SECONDS
    ago; None when the database cannot answer."""
    if use_cache:
        try:
            cached = cache.get(DB_GAUGES_KEY)
        except Exception:  # the cache's server is down: read the database
            cached, use_cache = None, False
        if cached is not None:
            return cached
    now = timezone.now()
    values: dict[str, Any] = {}
    try:
        for app in _APPS:
            values.update(app.db_gauge_values(now=now))
    except DatabaseError as exc:
        logger.warning("metrics: the database did not answer: %s", type(exc).__name__)
        return None
    if use_cache:
        try:
            cache.set(DB_GAUGES_KEY, values, timeout=settings.METRICS_DB_GAUGES_CACHE_SECONDS)
        except Exception as exc:  # computed again at the next scrape
            logger.warning("metrics: gauges not cached: %s", type(exc).__name__)
    return values


def _number(value: Decimal | float | int) -> float:
    return float(value)  # Decimal money becomes a float here only, for the text format


class ShopStateCollector(Collector):
    """The gauges of one scrape (registered in the scrape's own registry only)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        lengths = queue_lengths()
        redis_down = lengths is None
        if broker_is_redis():
            up = GaugeMetricFamily("shop_redis_up", "1 when the broker's Redis answered.")
            up.add_metric([], 0.0 if redis_down else 1.0)
            yield up
        if lengths:
            family = GaugeMetricFamily(
                "shop_celery_queue_length", "Tasks waiting in each Celery queue.", labels=["queue"]
            )
            for queue, length in lengths.items():
                family.add_metric([queue], float(length))
            yield family
        # With Redis down, the cache (Redis too) is not tried: each try would wait its timeout.
        yield from self._db_gauges(use_cache=not (redis_down and _cache_is_redis()))
        if not (redis_down and _cache_is_redis()):
            yield from self._heartbeats()
            yield from self._admission()

    def _db_gauges(self, *, use_cache: bool) -> Iterator[GaugeMetricFamily]:
        values = db_gauge_values(use_cache=use_cache)
        up = GaugeMetricFamily(
            "shop_db_gauges_up", "1 when the database answered the gauges' queries."
        )
        up.add_metric([], 0.0 if values is None else 1.0)
        yield up
        if values is None:
            return
        helps = {name: text for app in _APPS for name, text in app.DB_GAUGES.items()}
        for name, samples in values.items():
            labels = sorted({key for sample_labels, _ in samples for key in sample_labels})
            family = GaugeMetricFamily(name, helps.get(name, name), labels=labels)
            for sample_labels, value in samples:
                family.add_metric([sample_labels[key] for key in labels], _number(value))
            yield family

    def _heartbeats(self) -> Iterator[GaugeMetricFamily]:
        try:
            seen = heartbeats.last_seen(celery_queues())
        except Exception as exc:  # the cache's server is down
            logger.warning("metrics: heartbeats not read: %s", type(exc).__name__)
            return
        queues = GaugeMetricFamily(
            "shop_celery_queue_heartbeat_timestamp_seconds",
            "When a worker last ran the heartbeat task beat queues on each queue (Unix time; 0: "
            "not seen yet).",
            labels=["queue"],
        )
        for queue, when in seen.queues.items():
            queues.add_metric([queue], when)
        yield queues
        beat = GaugeMetricFamily(
            "shop_celery_beat_heartbeat_timestamp_seconds",
            "When beat last queued a task (Unix time; 0: not seen yet).",
        )
        beat.add_metric([], seen.beat)
        yield beat

    def _admission(self) -> Iterator[GaugeMetricFamily]:
        if not cache_is_redis():
            return
        try:
            per_second, waiting = admission_figures()
            p95, kind = page_p95(), pace_kind()
        except Exception as exc:  # the cache's server is down
            logger.warning("metrics: admission not read: %s", type(exc).__name__)
            return
        pace = GaugeMetricFamily(
            "shop_admission_pace",
            "New shoppers the sale day's admission lets in a second (0: no queue); `set_by`: "
            "measured (the shop's own), setting or operator.",
            labels=["set_by"],
        )
        pace.add_metric([kind], per_second)
        yield pace
        served = GaugeMetricFamily(
            "shop_admission_page_p95_seconds",
            "p95 of the shop's pages served over the last seconds, as the pace reads it "
            "(-1: too few pages).",
        )
        served.add_metric([], -1.0 if p95 is None else p95)
        yield served
        queue = GaugeMetricFamily(
            "shop_admission_waiting", "Shoppers waiting their turn to come into the shop."
        )
        queue.add_metric([], float(waiting))
        yield queue


def _cache_is_redis() -> bool:
    return "redis" in str(settings.CACHES["default"]["BACKEND"]).lower()
