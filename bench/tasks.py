"""The baseline of the storm benchmark: a task that does (almost) nothing.

It counts itself in Redis (one INCR through the shop's cache), so that the benchmark knows when
the worker has drained all of them.
"""

from __future__ import annotations

from celery import shared_task
from django.core.cache import cache

NOOP_TASK = "bench.tasks.noop_task"
NOOP_COUNTER = "bench:noop-done"


@shared_task(name=NOOP_TASK, acks_late=True, ignore_result=True)
def noop_task(index: int) -> None:
    cache.incr(NOOP_COUNTER)
