"""Running a staff action (the service of its task) and queueing again those whose task was lost.

A run starts only if the action is queued, or if it is running and its lease has expired (its
worker died): a task delivered twice, or queued again by the sweep while the first one runs,
does the work once. A run sends the idempotency key recorded with the action, so a run after a
lost one asks the provider the same thing again, and it answers as the first time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone, translation
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from payments.errors import PaymentError
from payments.models import OPEN_ACTION_STATES, StaffAction, StaffActionState
from payments.services.claims import release_claim
from payments.staff.kinds import Outcome, kind_named
from payments.staff.requests import send

logger = logging.getLogger(__name__)

# Longer than any run takes (a provider call with its retries, a refresh after it): a run
# older than this lost its worker, and the sweep queues it again.
LEASE = timedelta(minutes=5)
# A queued action whose task has not started by then lost its message (the broker was down).
REQUEUE_AFTER = timedelta(minutes=1)
# Runs after which an action that never finished is given up (said to staff as not done).
MAX_RUNS = 5


def staff_action_run(*, action_id: int) -> str:
    """Run the action once, in the language it was asked in; its state afterwards."""
    now = timezone.now()
    started = StaffAction.objects.filter(
        Q(state=StaffActionState.QUEUED)
        | Q(state=StaffActionState.RUNNING, started_at__lt=now - LEASE),
        pk=action_id,
    ).update(state=StaffActionState.RUNNING, started_at=now, runs=F("runs") + 1)
    if not started:
        return "not due"  # done already, or running elsewhere
    action = StaffAction.objects.select_related("actor", "payment", "target_type").get(pk=action_id)
    with translation.override(action.language):
        try:
            outcome: Outcome = import_string(kind_named(action.kind).run)(action)
        except PaymentError as exc:
            outcome = Outcome(message=exc.message, ok=False)
        _finish(action, outcome)
    return action.state


def _finish(action: StaffAction, outcome: Outcome) -> None:
    """Say the outcome, log it in the admin's log, and let the next action on the object in."""
    with transaction.atomic():
        action.state = StaffActionState.DONE if outcome.ok else StaffActionState.FAILED
        action.ok = outcome.ok
        action.result = outcome.message
        action.finished_at = timezone.now()
        action.save(update_fields=["state", "ok", "result", "finished_at"])
        if action.payment is not None and action.params.get("claimed"):
            release_claim(action.payment)
        logged = outcome.logged or _target(action)
        if outcome.ok and outcome.log and action.actor is not None and logged is not None:
            LogEntry.objects.log_actions(
                user_id=action.actor.pk,
                queryset=[logged],
                action_flag=ADDITION if outcome.added else CHANGE,
                change_message=outcome.log,
                single_object=True,
            )


def _target(action: StaffAction) -> object | None:
    if action.target_type is None or action.target_id is None:
        return None
    model = action.target_type.model_class()
    return model._default_manager.filter(pk=action.target_id).first() if model else None


@dataclass(frozen=True)
class Requeued:
    queued: int  # sent again
    given_up: int  # failed after MAX_RUNS


def staff_actions_requeue() -> Requeued:
    """Queue again the actions whose task was lost: queued for longer than REQUEUE_AFTER (the
    broker lost the message, or was down when asked), or running past their LEASE (the worker
    died and no redelivery came). One that ran MAX_RUNS times is given up, said as not done."""
    now = timezone.now()
    due = StaffAction.objects.filter(
        Q(state=StaffActionState.QUEUED, queued_at__lt=now - REQUEUE_AFTER)
        | Q(state=StaffActionState.RUNNING, started_at__lt=now - LEASE),
        state__in=OPEN_ACTION_STATES,
    ).select_related("payment")[:500]
    queued = given_up = 0
    for action in due:
        if action.state == StaffActionState.RUNNING and action.runs >= MAX_RUNS:
            with translation.override(action.language):
                _finish(action, Outcome(message=_gave_up(action), ok=False))
            given_up += 1
            continue
        try:
            send(action)
        except Exception as exc:  # the broker is still down: the next sweep tries again
            logger.warning("staff action %s not queued again: %s", action.pk, exc)
            break
        StaffAction.objects.filter(pk=action.pk).update(queued_at=now)
        queued += 1
    return Requeued(queued=queued, given_up=given_up)


def _gave_up(action: StaffAction) -> str:
    return _(
        "%(reference)s: the %(action)s could not be completed. Refresh from the provider and "
        "check the status before trying again."
    ) % {"reference": action.reference, "action": kind_named(action.kind).label}
