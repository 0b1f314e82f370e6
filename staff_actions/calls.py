"""Running a staff action, from its task only: the run of the action's kind (`staff_actions.kinds`,
declared by the app that owns it), which makes the provider's round trip (payments' and
checkout's calls), and the rules around it.

A run starts only if the action is queued, or running with its lease expired (its worker
died): a task delivered twice, or queued again by the sweep while the first one runs, does the
work once, and a run after a lost one asks the provider the same thing again. A run the
provider asked to slow down (a `TryLater`) did nothing: the action goes back to the queue and
runs again after the wait asked for, with the same key, up to THROTTLED_RUNS runs.
"""

from __future__ import annotations

import logging

from django.db.models import F, Q
from django.utils import timezone, translation

from core.errors import Refusal, TryLater
from core.task_queue import asked_wait, send_now
from staff_actions.kinds import Outcome, kind_named
from staff_actions.models import StaffAction, StaffActionState
from staff_actions.rules import LEASE, gave_up_message, run_queue, staff_action_finish
from staff_actions.task_names import RUN_TASK

logger = logging.getLogger(__name__)

# Runs after which an action the provider kept asking to slow down is said as not done.
THROTTLED_RUNS = 20


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
            outcome = kind_named(action.kind).run(action)
        except TryLater as exc:
            if _run_later(action, exc):
                return StaffActionState.QUEUED
            outcome = Outcome(message=gave_up_message(action), ok=False)
        except Refusal as exc:
            outcome = Outcome(message=exc.message, ok=False)
        staff_action_finish(action, outcome)
    return action.state


def _run_later(action: StaffAction, asked: TryLater) -> bool:
    """Queue the action again, to run after the wait the provider asked for (False: it has run
    THROTTLED_RUNS times already). A broker that is away leaves it to the sweep."""
    if action.runs >= THROTTLED_RUNS:
        return False
    StaffAction.objects.filter(pk=action.pk).update(
        state=StaffActionState.QUEUED, queued_at=timezone.now()
    )
    wait = asked_wait(asked) or 1.0
    logger.info("staff action %s throttled by the provider: runs again in %.1f s", action.pk, wait)
    try:
        send_now(RUN_TASK, (action.pk,), countdown=wait, queue=run_queue(action))
    except Exception as exc:
        logger.warning("staff action %s not queued again (the sweep will): %s", action.pk, exc)
    return True
