"""Tasks for the broker outage test only (tests/config/test_worker_broker_outage.py): a worker
started with `--include tests.broker_outage_tasks` registers them; production code carries
nothing of them."""

from __future__ import annotations

import os
import time

from celery import shared_task


@shared_task(name="tests.broker_outage_tasks.slow_record_task", acks_late=True)
def slow_record_task(number: int, path: str, seconds: float = 1.0) -> None:
    """Holds a worker thread for `seconds`, then appends `number` to the file at `path` (one
    line per run: a task delivered again is written again)."""
    time.sleep(seconds)
    with open(path, "a", encoding="utf-8") as done:
        done.write(f"{number} {os.getpid()}\n")
