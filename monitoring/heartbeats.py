"""Heartbeats, so that alerts see a Celery worker or beat gone silent: beat queues the
heartbeat task on every queue every METRICS_HEARTBEAT_EVERY seconds, and the worker that runs
it records when (per queue); beat records when it last queued any task. Both are kept in the
cache (Redis) and shown by /metrics (`monitoring.gauges`)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from celery.signals import beat_init, before_task_publish
from django.core.cache import cache

from core.task_queue import shop_task

logger = logging.getLogger(__name__)

# Its name from when it lived in config: the running release queues by it.
HEARTBEAT_TASK = "config.heartbeats.heartbeat_task"
QUEUE_KEY = "metrics:heartbeat:queue:{queue}"
BEAT_KEY = "metrics:heartbeat:beat"
KEEP_FOR = 7 * 24 * 3600  # a heartbeat is kept a week: long enough to see how old it is
BEAT_EVERY_AT_MOST = 5.0  # beat writes its heartbeat at most this often (seconds)


@dataclass(frozen=True)
class Seen:
    queues: dict[str, float]  # queue -> Unix time of its last heartbeat (0.0: never)
    beat: float  # Unix time beat last queued a task (0.0: never)


def _record(key: str) -> None:
    try:
        cache.set(key, time.time(), timeout=KEEP_FOR)
    except Exception as exc:  # the cache's server is down: the heartbeat goes stale, as it should
        logger.warning("heartbeat not recorded: %s", type(exc).__name__)


@shop_task(HEARTBEAT_TASK, bind=True)
def heartbeat_task(self: Any) -> None:
    """Record that a worker took a task from this queue (the queue it was delivered on)."""
    queue = (self.request.delivery_info or {}).get("routing_key") or "unknown"
    _record(QUEUE_KEY.format(queue=queue))


_beat = {"running": False, "last": 0.0}


@beat_init.connect(weak=False)
def _beat_started(**_: object) -> None:
    _beat["running"] = True


@before_task_publish.connect(weak=False)
def _beat_published(**_: object) -> None:
    """In beat's process only: it queued a task, so it is alive."""
    now = time.monotonic()
    if _beat["running"] and now - _beat["last"] >= BEAT_EVERY_AT_MOST:
        _beat["last"] = now
        _record(BEAT_KEY)


def last_seen(queues: list[str]) -> Seen:
    """The heartbeats of `queues` and of beat (one read of the cache)."""
    keys = {queue: QUEUE_KEY.format(queue=queue) for queue in queues}
    found = cache.get_many([*keys.values(), BEAT_KEY])
    return Seen(
        queues={queue: float(found.get(key) or 0.0) for queue, key in keys.items()},
        beat=float(found.get(BEAT_KEY) or 0.0),
    )
