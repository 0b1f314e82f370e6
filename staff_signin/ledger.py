"""Writing the sign-in ledger: one append-only row a step, with what the request says of who
asked (the name as typed, the client's address, its browser, the request id), counted on
/metrics; a recovery code used, and an account's tenth refused code within the hour, are mailed
(by a task, after commit)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from django_guid import get_guid

from core.ratelimits import client_address
from core.task_queue import queue_on_commit
from staff_signin.metrics import sign_in_counted
from staff_signin.models import SignInEvent, SignInEventKind

MAIL_TASK = "staff_signin.tasks.sign_in_mail_task"


def _request_fields(request: HttpRequest | None) -> dict[str, str]:
    if request is None:
        return {}
    return {
        "address": client_address(request)[:64],
        "user_agent": request.headers.get("User-Agent", "")[:300],
        "request_id": (get_guid() or "")[:64],
    }


def sign_in_record(
    *,
    kind: str,
    request: HttpRequest | None = None,
    user: Any = None,
    username: str = "",
    message: str = "",
    actor: Any = None,
) -> SignInEvent:
    """Append one step to the sign-in ledger (the account's own name when none was typed)."""
    if not username and user is not None:
        username = user.get_username()
    event = SignInEvent.objects.create(
        kind=kind,
        user=user,
        username=username[:150],
        message=message[:500],
        actor=actor,
        **_request_fields(request),
    )
    sign_in_counted(kind)
    if kind == SignInEventKind.RECOVERY_CODE_USED:
        queue_on_commit(MAIL_TASK, event.pk)
    elif kind == SignInEventKind.CODE_REFUSED and user is not None and _guessing(user):
        queue_on_commit(MAIL_TASK, event.pk)
    return event


def _guessing(user: Any) -> bool:
    """Whether this refused code is the account's Nth within the hour (N:
    STAFF_SIGNIN_ALERT_FAILURES): said once, when it is reached."""
    since = timezone.now() - timedelta(hours=1)
    refused = SignInEvent.objects.filter(
        user=user, kind=SignInEventKind.CODE_REFUSED, created_at__gte=since
    ).count()
    return refused == settings.STAFF_SIGNIN_ALERT_FAILURES
