"""Group commit for the receiver: notifications arriving at once in a web process are stored
together, in one INSERT and one transaction, by a writer thread of that process.

Each request hands its notification to the writer and waits until the row is committed, so a
notification is answered 200 only once it is durable, exactly as with an INSERT of its own. What
is shared is the cost: one statement and one commit for all the notifications that arrived while
the previous batch was being written. Under load that is most of the receiver's work (see
bench/); with one request at a time it is a plain INSERT.

Handing committed notifications to the queue (one Redis round trip) waits while more requests
are waiting to be stored: the next INSERT goes first, and one round trip then serves several
batches (at most `HAND_OVER_AFTER` seconds or `MAX_BATCH` notifications later). When nobody
waits, it happens at once.

The writer holds its own database connection (outside the request cycle: no per-request health
check; a connection that fails is closed and the batch tried once more on a new one) and queues
the processing of a batch after its commit, after answering (if the process dies in between, the
rows wait as received and the relay queues them).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.utils import timezone

from webhooks.models import WebhookEvent, WebhookState
from webhooks.notifications import Notification
from webhooks.queue import enqueue_many

logger = logging.getLogger(__name__)

MAX_BATCH = 200
HAND_OVER_AFTER = 0.02  # seconds a committed notification may wait for the queue under load
_COLUMNS = (
    "provider_payment_id, event_type, received_at, remote_addr, state, attempts, last_error,"
    " task_id"
)


class StoreFailed(Exception):
    """The notification could not be stored (the database is unreachable or too slow)."""


@dataclass(slots=True)
class _Job:
    notification: Notification
    remote_addr: str | None
    done: threading.Event = field(default_factory=threading.Event)
    event_id: int = 0
    error: BaseException | None = None


def insert_events(rows: list[tuple[Notification, str | None]]) -> list[int]:
    """Store notifications as received events in one INSERT; their ids, in order."""
    connection = connections[WebhookEvent.objects.db]
    received_at = connection.ops.adapt_datetimefield_value(timezone.now())
    values = ", ".join(["(%s, %s, %s, %s, %s, 0, '', '')"] * len(rows))
    params: list[object] = []
    for notification, remote_addr in rows:
        params += [
            notification.payment_id,
            notification.event_type,
            received_at,
            remote_addr,
            WebhookState.RECEIVED.value,
        ]
    # One statement: atomic on its own, and in autocommit mode no BEGIN or COMMIT round trip.
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO webhooks_webhookevent ({_COLUMNS}) VALUES {values} RETURNING id",  # noqa: S608 (placeholders only)
            params,
        )
        return [int(row[0]) for row in cursor.fetchall()]


class EventWriter:
    """One per process: `store` blocks until the notification's row is committed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def store(self, notification: Notification, remote_addr: str | None) -> int:
        job = _Job(notification, remote_addr)
        self._started().put(job)
        if not job.done.wait(settings.WEBHOOKS_STORE_TIMEOUT):
            raise StoreFailed("the notification could not be stored in time")
        if job.error is not None:
            raise StoreFailed(str(job.error)) from job.error
        return job.event_id

    def _started(self) -> queue.SimpleQueue[_Job | None]:
        thread = self._thread
        if thread is not None and thread.is_alive() and self._pid == os.getpid():
            return self._jobs
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                if self._pid != os.getpid():  # a forked child: the parent's queue is not ours
                    self._jobs = queue.SimpleQueue()
                    self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="webhook-writer", daemon=True
                )
                self._thread.start()
        return self._jobs

    def stop(self, timeout: float = 10) -> None:
        """Let the writer finish what it holds, close its connection and end (the next `store`
        starts it again)."""
        with self._lock:
            thread = self._thread
            if thread is None or not thread.is_alive() or self._pid != os.getpid():
                return
            self._jobs.put(None)
        thread.join(timeout)

    def _run(self) -> None:
        jobs_queue = self._jobs
        committed: list[str] = []  # payment ids stored, not yet handed to the queue
        since = 0.0  # when the oldest of them was committed
        try:
            while True:
                if committed:
                    try:
                        first = jobs_queue.get_nowait()
                    except queue.Empty:  # nobody waits: hand them over now
                        _hand_over(committed)
                        committed, since = [], 0.0
                        continue
                else:
                    first = jobs_queue.get()
                if first is None:
                    return
                jobs = [first]
                while len(jobs) < MAX_BATCH:
                    try:
                        job = jobs_queue.get_nowait()
                    except queue.Empty:
                        break
                    if job is None:
                        jobs_queue.put(None)  # stop once this batch is written
                        break
                    jobs.append(job)
                stored = self._write(jobs)
                if stored and not committed:
                    since = time.monotonic()
                committed += stored
                if committed and (
                    len(committed) >= MAX_BATCH or time.monotonic() - since >= HAND_OVER_AFTER
                ):
                    _hand_over(committed)
                    committed, since = [], 0.0
        finally:
            if committed:
                _hand_over(committed)
            connections.close_all()

    def _write(self, jobs: list[_Job]) -> list[str]:
        """Store the batch and answer its requests; the payment ids stored."""
        rows = [(job.notification, job.remote_addr) for job in jobs]
        try:
            try:
                ids = insert_events(rows)
            except (OperationalError, InterfaceError):  # a connection gone stale: once more
                connections[WebhookEvent.objects.db].close()
                ids = insert_events(rows)
        except Exception as exc:  # answered as unavailable: the provider sends it again
            logger.error(  # a traceback for anything but the database failing
                "%d webhook notification(s) not stored: %s",
                len(jobs),
                exc,
                exc_info=not isinstance(exc, DatabaseError),
            )
            connections[WebhookEvent.objects.db].close()
            for job in jobs:
                job.error = exc
                job.done.set()
            return []
        for job, event_id in zip(jobs, ids, strict=True):
            job.event_id = event_id
            job.done.set()
        return [job.notification.payment_id for job in jobs]


def _hand_over(payment_ids: list[str]) -> None:
    try:
        enqueue_many(payment_ids)
    except Exception:  # never lose the writer: the relay queues what was not
        logger.exception("webhook writer could not queue %d notification(s)", len(payment_ids))


writer = EventWriter()
