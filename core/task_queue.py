"""The one way the shop puts work on the Celery queue, and the retry policies its tasks use.

Queueing:
- Tasks are sent by name (`send_now`, `queue_on_commit`, `send_once`, `send_each`): a service
  never imports the tasks module that imports it, so no module loop forms, and a task keeps its
  name when its code moves (every task pins `name=`; the running release still queues by it).
- A broker that is down fails a send at once (kombu would otherwise keep reconnecting for
  seconds while a page or the provider waits). `queue_on_commit` and `send_once` log it and
  carry on: every task queued through them has a sweep that queues it again.
- `send_once` coalesces: a marker in the cache (`cache.add`, Redis' SET NX EX: one key, so it
  works on Redis Cluster) says a task is on its way until the task removes it (`unmark`) or the
  marker expires (its task was lost), and meanwhile no second one is sent.

Retries: each task names one of the policies below (`shop_task(..., retry=...)`), so how long a
kind of work keeps trying is decided in one place. Whatever the policy, a task that fails because
the other side said "slow down" (`core.errors.TryLater`, e.g. a provider's 429, anywhere in the
exception's chain) tries again after the wait it was asked for plus jitter, not after the
policy's backoff (`ShopTask.retry`); its tries still count against the policy's bound.
"""

from __future__ import annotations

import logging
import random
import sys
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from celery import Task, current_app, shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from core.errors import TryLater

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


# --- Sending ----------------------------------------------------------------------------------


def send_now(
    task: str, args: Sequence[object] = (), *, countdown: float = 0, queue: str | None = None
) -> None:
    """Send `task` by name now (to `queue`, else where the settings route it); raises at once
    when the broker is away."""
    send_each(task, [tuple(args)], countdown=countdown, queue=queue, raising=True)


def send_each(
    task: str,
    each_args: Iterable[Sequence[object]],
    *,
    countdown: float = 0,
    queue: str | None = None,
    raising: bool = False,
) -> int:
    """Send `task` once for each of `each_args` over one connection; how many were sent (a
    broker that is away is logged, or raised with `raising`)."""
    batch = [tuple(args) for args in each_args]
    options: dict[str, object] = {"queue": queue} if queue else {}
    sent = 0
    try:
        with current_app.producer_or_acquire() as producer:
            producer.connection.ensure_connection(max_retries=0)
            for args in batch:
                current_app.send_task(
                    task,
                    args=args,
                    countdown=countdown or None,
                    retry=False,
                    producer=producer,
                    **options,
                )
                sent += 1
    except Exception as exc:
        if raising:
            raise
        logger.warning("%d of %d %s not queued: %s", len(batch) - sent, len(batch), task, exc)
    return sent


def queue_on_commit(
    task: str, *args: object, countdown: float = 0, queue: str | None = None
) -> None:
    """Send `task` once the current transaction commits (at once outside one). A broker that is
    away is logged, not raised into the commit: the task's sweep queues it again."""

    def send() -> None:
        try:
            send_now(task, args, countdown=countdown, queue=queue)
        except Exception as exc:
            logger.warning("%s%r not queued: %s", task, args, exc)

    transaction.on_commit(send, robust=True)


def broker_round_trip(*, timeout: float) -> None:
    """One connection to the broker and a round trip on it, without retrying (raises when the
    broker is away or does not answer within `timeout` seconds)."""
    timeouts = {"socket_connect_timeout": timeout, "socket_timeout": timeout}
    with current_app.connection_for_write(transport_options=timeouts) as connection:
        connection.ensure_connection(max_retries=0, timeout=timeout)


# --- Sending once: a marker per piece of work -----------------------------------------------


def is_marked(key: str) -> bool:
    """Whether the task `key` stands for is on its way (False if the cache cannot say)."""
    try:
        return bool(cache.get(key))
    except Exception:
        return False


def mark(key: str, ttl: int) -> None:
    """Say for `ttl` more seconds that the task `key` stands for is on its way (best effort)."""
    with suppress(Exception):
        cache.set(key, 1, timeout=ttl)


def unmark(key: str) -> None:
    """Say that the task `key` stands for is not on its way any more (best effort)."""
    with suppress(Exception):
        cache.delete(key)


def send_once(
    task: str,
    key: str,
    args: Sequence[object],
    *,
    ttl: int,
    countdown: float = 0,
    what: str = "",
) -> bool:
    """Send `task` unless the one `key` marks is already on its way; False if the cache or the
    broker cannot be reached (the task's sweep queues it later), logged as `what` (the task and
    its arguments unless said) "not queued"."""
    what = what or f"{task}{tuple(args)!r}"
    try:
        if not cache.add(key, 1, timeout=ttl):
            return True  # coalesced into the task on its way
        send_now(task, args, countdown=countdown)
    except Exception as exc:
        logger.warning("%s not queued: %s", what, exc)
        unmark(key)
        return False
    return True


# --- Retry policies ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """How long a kind of work keeps trying: exponential backoff with full jitter from `backoff`
    seconds up to `backoff_max`, at most `max_retries` times. A policy with `read_figures` asks
    that function for its three figures each time (it reads the settings, each named in full),
    so that a deployment can tune them."""

    name: str
    backoff: int = 0
    backoff_max: int = 0
    max_retries: int = 0
    read_figures: Callable[[], tuple[int, int, int]] | None = None
    retry_on: tuple[type[BaseException], ...] = field(default=())

    def figures(self) -> tuple[int, int, int]:
        """(backoff, backoff_max, max_retries)."""
        if self.read_figures is not None:
            return self.read_figures()
        return self.backoff, self.backoff_max, self.max_retries

    def on(self, *errors: type[BaseException]) -> RetryPolicy:
        """The policy, retrying automatically when the task raises one of `errors`."""
        return replace(self, retry_on=errors)

    def options(self) -> dict[str, Any]:
        """Celery's options for a task that retries automatically by this policy."""
        if not self.retry_on:
            return {}
        backoff, backoff_max, max_retries = self.figures()
        return {
            "autoretry_for": self.retry_on,
            "retry_backoff": backoff,
            "retry_backoff_max": backoff_max,
            "retry_jitter": True,
            "max_retries": max_retries,
        }

    def exhausted(self, retries: int) -> bool:
        """Whether a task that retried `retries` times has used up its tries."""
        return retries >= self.figures()[2]

    def countdown(self, retries: int) -> float:
        """Seconds before the next try after `retries` (at least one), for a task that retries
        by hand."""
        backoff, backoff_max, _ = self.figures()
        return max(
            get_exponential_backoff_interval(
                factor=backoff, retries=retries, maximum=backoff_max, full_jitter=True
            ),
            1,
        )


# The work that is done once per run, and whose sweep or next beat covers a failure.
NO_RETRY = RetryPolicy("no retry")
# A create whose outcome is unknown: sent again with its key until the provider says.
PROVIDER_UNCONFIRMED = RetryPolicy("provider unconfirmed", 5, 600, 20)


def _webhooks_retry_figures() -> tuple[int, int, int]:
    return (
        int(settings.WEBHOOKS_RETRY_BACKOFF),
        int(settings.WEBHOOKS_RETRY_BACKOFF_MAX),
        int(settings.WEBHOOKS_MAX_RETRIES),
    )


# A payment read for its notifications while the provider is unreachable (then given up).
PROVIDER_READ = RetryPolicy("provider read", read_figures=_webhooks_retry_figures)
# A second charge given back: the provider may take a while to let it be refunded.
CHARGE_RELEASE = RetryPolicy("charge release", 5, 600, 50)
# Moving the shop's own records (an order following its payments).
RECORD_SYNC = RetryPolicy("record sync", 2, 300, 20)
# A mail the mail server refused, tried again later.
MAIL = RetryPolicy("mail", 30, 1800, 20)
# A mail a shopper asked for on a page: worth little after a few minutes.
MAIL_ON_REQUEST = RetryPolicy("mail on request", 30, 600, 5)
# Work the provider asked to slow down (a 429), and nothing else: each try comes after the wait
# it asked for plus jitter (`ShopTask.retry`), never after the backoff; 20 tries at most.
PROVIDER_THROTTLED = RetryPolicy("provider throttled", 1, 60, 20)


def asked_wait(exc: BaseException | None) -> float | None:
    """The seconds to wait before trying again when `exc` (or what caused it) is a `TryLater`:
    its `retry_after` plus up to as much again of jitter, so that the work held back together
    does not come back together, the less the longer it has waited (its `seniority`: work held
    back longest comes back first); None otherwise."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, TryLater):
            spread = exc.retry_after * (1 - 0.9 * min(max(exc.seniority, 0.0), 1.0))
            return exc.retry_after + random.uniform(0, spread)
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


class ShopTask(Task):
    """The shop's tasks' base: a retry for a `TryLater` waits as asked (`asked_wait`)."""

    def retry(  # type: ignore[override]
        self,
        args: Any = None,
        kwargs: Any = None,
        exc: BaseException | None = None,
        throw: bool = True,
        eta: Any = None,
        countdown: float | None = None,
        max_retries: int | None = None,
        **options: Any,
    ) -> Any:
        wait = asked_wait(exc or sys.exc_info()[1])
        if wait is not None:
            countdown, eta = wait, None
        return super().retry(args, kwargs, exc, throw, eta, countdown, max_retries, **options)


def shop_task(
    name: str,
    *,
    retry: RetryPolicy = NO_RETRY,
    acks_late: bool = True,
    base: type[Task] = ShopTask,
    **options: Any,
) -> Callable[[F], F]:
    """A Celery task of the shop's: its `name` pinned (the running release queues by it), its
    result ignored, acknowledged once done (`acks_late`) unless told otherwise, retried by
    `retry` (and as asked by a `TryLater`: `ShopTask`)."""
    return shared_task(  # type: ignore[no-any-return]
        name=name,
        acks_late=acks_late,
        ignore_result=True,
        base=base,
        **retry.options(),
        **options,
    )
