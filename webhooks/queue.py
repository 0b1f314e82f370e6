"""Putting notifications on the Celery queue: cheaply, and never at the cost of the answer.

Bursts coalesce here. While a processing task for a payment is on its way and has not started,
a marker in Redis says so, and later notifications for that payment add no new task; the task
claims their rows when it starts. The task removes the marker before it claims, so a
notification that arrives after a refetch began always queues another one.

Floods are batched. The receiver counts arrivals per second; in calm traffic it queues the
payment's processing task itself, but while more than `WEBHOOKS_BATCH_ABOVE_PER_SECOND`
notifications a second arrive (a provider replaying a backlog, say), it only adds the payment to
a pending list in Redis: one round trip, no Celery message per notification. One dispatcher task
holds the list while the flood lasts (at most `WEBHOOKS_BATCH_MAX_HOLD` seconds), then queues
one processing task per pending payment, which then reads it once for all its notifications.

If Redis is down, nothing is raised: the row stays `received` and the relay queues it later.
Without Redis (the demo's embedded broker), every new payment's task is queued at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import redis
from celery import current_app
from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

PROCESS_TASK = "webhooks.tasks.webhook_process_task"
DISPATCH_TASK = "webhooks.tasks.webhook_dispatch_task"
QUEUED_MARKER_TTL = 600  # seconds; a lost task is replaced by the relay after this
ARRIVALS_WINDOW = 3  # seconds over which the arrival rate is measured
DISPATCH_BATCH = 500  # payments taken off the pending list at a time

# One round trip per notification: count the arrival; mark the payment as on its way unless
# it is already; then say whether the caller queues its task (calm) or the payment waits in
# the pending list (a flood), and whether that list was empty (the caller queues a dispatcher).
_ADMIT = """
local arrivals = redis.call('INCR', KEYS[3])
if arrivals == 1 then redis.call('EXPIRE', KEYS[3], 10) end
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then return 0 end
local recent = arrivals + tonumber(redis.call('GET', KEYS[4]) or '0')
    + tonumber(redis.call('GET', KEYS[5]) or '0')
if recent <= tonumber(ARGV[3]) then return 1 end
if redis.call('RPUSH', KEYS[2], ARGV[1]) == 1 then
    redis.call('SET', KEYS[6], ARGV[4])
    return 2
end
-- A list older than the longest hold has lost its dispatcher: call another (every 5 s at most).
local since = tonumber(redis.call('GET', KEYS[6]) or '0')
if tonumber(ARGV[4]) - since > tonumber(ARGV[5]) and redis.call('SET', KEYS[7], '1', 'NX', 'EX', 5)
then return 2 end
return 3
"""
# Take up to ARGV[1] pending payments; forget when the list began once it is empty.
_TAKE = """
local ids = redis.call('LPOP', KEYS[1], ARGV[1])
if redis.call('LLEN', KEYS[1]) == 0 then redis.call('DEL', KEYS[2]) end
return ids
"""


class Admission(IntEnum):
    """What `_ADMIT` decided for a notification."""

    ON_ITS_WAY = 0  # a task or the pending list already has this payment
    QUEUE_TASK = 1  # calm: queue the payment's processing task now
    QUEUE_DISPATCHER = 2  # a flood, and the pending list was empty (or stale): queue a dispatcher
    PENDING = 3  # a flood: a dispatcher will take it


@dataclass(frozen=True, slots=True)
class Dispatch:
    """What a dispatcher run did: `held` while a flood lasts, else how many it queued."""

    held: bool
    queued: int = 0


@dataclass(frozen=True, slots=True)
class _Redis:
    url: str
    client: redis.Redis
    admit: Any  # redis.commands.core.Script
    take: Any


_lock = threading.Lock()
_current: _Redis | None = None


def _redis() -> _Redis | None:
    """One client per process (thread-safe, pooled connections) with the scripts registered
    (sent by hash, loaded again if Redis forgot them), or None without Redis."""
    global _current
    url = getattr(settings, "REDIS_URL", None)
    if not url:
        return None
    current = _current
    if current is None or current.url != url:
        with _lock:
            client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
            current = _current = _Redis(
                url, client, client.register_script(_ADMIT), client.register_script(_TAKE)
            )
    return current


def _key(name: str) -> str:
    prefix = settings.CACHES["default"].get("KEY_PREFIX") or "shop"
    return f"{prefix}:webhooks:{name}"


def _marker(payment_id: str) -> str:
    return _key(f"queued:{payment_id}")


def _arrival_keys(now: int) -> list[str]:
    """The arrival counters of the last `ARRIVALS_WINDOW` seconds, newest first."""
    return [_key(f"arrivals:{now - ago}") for ago in range(ARRIVALS_WINDOW)]


def _flood_threshold() -> int:
    """More arrivals than this over the window is a flood."""
    return settings.WEBHOOKS_BATCH_ABOVE_PER_SECOND * ARRIVALS_WINDOW


PENDING = "pending"
PENDING_SINCE = "pending-since"


def is_marked(payment_id: str) -> bool:
    """Whether a task or the pending list has the payment (for tests and the admin)."""
    backend = _redis()
    if backend is None:
        return bool(cache.get(_marker(payment_id)))
    return bool(backend.client.exists(_marker(payment_id)))


def enqueue_processing(payment_id: str) -> bool:
    """Make sure the payment's notifications will be processed. False if the broker is down."""
    return enqueue_many([payment_id]) == 1


def enqueue_many(payment_ids: list[str]) -> int:
    """`enqueue_processing` for several notifications in one Redis round trip (the receiver's
    group commit). Returns how many were handed over; the others wait for the relay."""
    backend = _redis()
    if backend is None:
        to_queue = [
            payment_id
            for payment_id in payment_ids
            if cache.add(_marker(payment_id), 1, timeout=QUEUED_MARKER_TTL)
        ]
        call_dispatcher = False
    else:
        admissions = _admit(backend, payment_ids)
        if admissions is None:
            return 0
        to_queue = [
            payment_id
            for payment_id, admission in zip(payment_ids, admissions, strict=True)
            if admission is Admission.QUEUE_TASK
        ]
        call_dispatcher = Admission.QUEUE_DISPATCHER in admissions
    handed = len(payment_ids) - len(to_queue) + _publish_processing(to_queue)
    if call_dispatcher:
        # If this fails, the relay empties the pending list on its next run.
        _publish(DISPATCH_TASK, [()])
    return handed


def _admit(backend: _Redis, payment_ids: list[str]) -> list[Admission] | None:
    """The admission script's answer for each notification, or None (logged) if Redis is
    down: then the relay queues them."""
    now = int(time.time())
    arrivals = _arrival_keys(now)
    limits = [_flood_threshold(), now, settings.WEBHOOKS_BATCH_MAX_HOLD + 5]
    calls = [
        (
            [
                _marker(payment_id),
                _key(PENDING),
                *arrivals,
                _key(PENDING_SINCE),
                _key("dispatcher-called"),
            ],
            [payment_id, QUEUED_MARKER_TTL, *limits],
        )
        for payment_id in payment_ids
    ]
    try:
        if len(calls) == 1:
            keys, args = calls[0]
            return [Admission(backend.admit(keys=keys, args=args))]
        return [Admission(answer) for answer in _admit_all(backend, calls)]
    except Exception as exc:
        which = (
            f"payment {payment_ids[0]}" if len(payment_ids) == 1 else f"{len(payment_ids)} payments"
        )
        logger.warning("webhook for %s not queued (%s); the relay will", which, exc)
        return None


def _admit_all(backend: _Redis, calls: list[tuple[list[str], list[object]]]) -> list[int]:
    """The admission script for each call, in one pipeline: by hash (redis-py's own pipeline
    scripts would ask Redis first whether it knows them, a round trip more), loaded again if
    Redis has forgotten it."""
    for attempt in (1, 2):
        with backend.client.pipeline(transaction=False) as pipe:
            for keys, args in calls:
                pipe.evalsha(backend.admit.sha, len(keys), *keys, *args)
            try:
                return [int(answer) for answer in pipe.execute()]
            except redis.exceptions.NoScriptError:
                if attempt == 2:
                    raise
                backend.client.script_load(_ADMIT)
    raise AssertionError("unreachable")


def queue_now(payment_ids: Iterable[str]) -> int:
    """Queue a processing task for each payment at once, whatever is on its way (the relay,
    staff's retry): a task already queued that finds nothing left to claim costs nothing."""
    ids = list(dict.fromkeys(payment_ids))
    backend = _redis()
    for payment_id in ids:
        with suppress(Exception):
            if backend is None:
                cache.set(_marker(payment_id), 1, timeout=QUEUED_MARKER_TTL)
            else:
                backend.client.set(_marker(payment_id), 1, ex=QUEUED_MARKER_TTL)
    return _publish_processing(ids)


def _publish(task: str, calls: Sequence[tuple[str, ...]]) -> int:
    """Send `task` once for each tuple of arguments, over one producer; how many were sent."""
    sent = 0
    try:
        with current_app.producer_or_acquire() as producer:
            # A broker that is down fails here at once: left to itself, kombu would keep
            # reconnecting for seconds on every publish while the provider waits for the answer.
            producer.connection.ensure_connection(max_retries=0)
            for args in calls:
                current_app.send_task(task, args=args, retry=False, producer=producer)
                sent += 1
    except Exception as exc:
        logger.warning("%d %s message(s) not queued: %s", len(calls) - sent, task, exc)
    return sent


def _publish_processing(payment_ids: list[str]) -> int:
    """Queue a processing task for each payment. A payment whose task could not be queued
    loses its marker and waits for the relay."""
    if not payment_ids:
        return 0
    sent = _publish(PROCESS_TASK, [(payment_id,) for payment_id in payment_ids])
    for payment_id in payment_ids[sent:]:
        unmark_queued(payment_id)
    return sent


def unmark_queued(payment_id: str) -> None:
    """Say that no task for the payment is on its way any more (best effort)."""
    with suppress(Exception):
        backend = _redis()
        if backend is None:
            cache.delete(_marker(payment_id))
        else:
            backend.client.delete(_marker(payment_id))


def dispatch_pending(*, force: bool = False) -> Dispatch:
    """Queue a processing task for every pending payment, unless a flood is still on (more
    notifications than the batching rate allows in a second, counted over this second and the
    one before) and the list is younger than the maximum hold: then it is `held`, and the
    caller looks again shortly. `force` never holds."""
    backend = _redis()
    if backend is None:
        return Dispatch(held=False)
    client = backend.client
    now = int(time.time())
    if not force:
        since = client.get(_key(PENDING_SINCE))
        if since is None and not client.llen(_key(PENDING)):
            return Dispatch(held=False)
        held_for = now - int(since or 0)
        # The end of a flood is noticed on the last two seconds alone (this one and the one
        # before): the held payments should not wait out the receiver's whole window.
        recent = client.mget(_arrival_keys(now)[:2])
        arrivals = sum(int(count or 0) for count in recent)
        if (
            held_for < settings.WEBHOOKS_BATCH_MAX_HOLD
            and arrivals > settings.WEBHOOKS_BATCH_ABOVE_PER_SECOND
        ):
            return Dispatch(held=True)
    queued = 0
    while ids := backend.take(keys=[_key(PENDING), _key(PENDING_SINCE)], args=[DISPATCH_BATCH]):
        queued += _publish_processing([payment.decode() for payment in ids])
    if queued:
        logger.info("dispatched %d pending webhook payment(s)", queued)
    return Dispatch(held=False, queued=queued)
