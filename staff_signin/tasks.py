"""The sign-in's mails, each a task queued once its ledger row is committed (its own retries):
never SMTP inside the sign-in's request."""

from __future__ import annotations

from core.task_queue import MAIL, shop_task
from staff_signin.calls import sign_in_mail


@shop_task("staff_signin.tasks.sign_in_mail_task", retry=MAIL.on(OSError))
def sign_in_mail_task(event_id: int) -> int:
    """Mail what the ledger row says (a recovery code used, codes being guessed)."""
    return sign_in_mail(event_id=event_id)
