"""A task that fails holding card data and secrets, for the error reports' test: a worker started
with `-I tests.config.error_report_tasks` runs it."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

FAILING_TASK = "tests.error_reports.failing_task"


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
