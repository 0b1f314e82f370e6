"""Celery tasks of the configuration's tests only, for the workers those tests start in processes
of their own (production code carries nothing of them): a worker started with
`--include tests.config.worker_tasks` (or `-I`) registers them. The tests send them by name
(tests/config/helpers.py) and never import this module.

- `slow_record_task`: the broker outage test's (test_worker_broker_outage.py);
- `failing_task`: the error reports' test (test_error_reports.py), a task that fails holding card
  data and secrets."""

from __future__ import annotations

import os
import time

from celery import shared_task
from django.conf import settings

from tests.config.helpers import FAILING_TASK, SLOW_RECORD_TASK


@shared_task(name=SLOW_RECORD_TASK, acks_late=True)
def slow_record_task(number: int, path: str, seconds: float = 1.0) -> None:
    """Holds a worker thread for `seconds`, then appends `number` to the file at `path` (one
    line per run: a task delivered again is written again)."""
    time.sleep(seconds)
    with open(path, "a", encoding="utf-8") as done:
        done.write(f"{number} {os.getpid()}\n")


@shared_task(name=FAILING_TASK)
def failing_task(card_token: str, card_number: str, *, cvv: str, note: str) -> None:
    # Local variables holding what must never be sent (a frame's variables are not).
    secret_key = settings.PAYMENTS_SECRET_KEY
    reference = card_token  # a card token under a name of no concern
    held = {"token": reference, "cvv": cvv, "number": card_number}
    raise ValueError(
        f"task-report-marker: card {card_number} ({note}) refused with key {secret_key} at "
        f"/webhooks/payments/{settings.PAYMENTS_WEBHOOK_TOKEN}/ ({len(held)} fields)"
    )
