"""Running a staff action, from its task only: the run of the action's kind (`staff_actions.kinds`,
declared by the app that owns it), which makes the provider's round trip (payments' and
checkout's calls), and the rules around it.

A run starts only if the action is queued, or running with its lease expired (its worker
died): a task delivered twice, or queued again by the sweep while the first one runs, does the
work once, and a run after a lost one asks the provider the same thing again. A run the
provider asked to slow down (a `TryLater`) did nothing: the action goes back to the queue and
its task tries again after the wait asked for, as every task does (its retry policy,
`PROVIDER_THROTTLED`), with the same key; once it has run as often as that policy tries, it is
said as not done.
"""

from __future__ import annotations

import logging

from django.db.models import F, Q
from django.utils import timezone, translation

from core.errors import Refusal, TryLater
from core.task_queue import PROVIDER_THROTTLED
from staff_actions.kinds import Outcome, kind_named
from staff_actions.models import StaffAction, StaffActionState
from staff_actions.rules import LEASE, gave_up_message, staff_action_finish

logger = logging.getLogger(__name__)


def staff_action_run(*, action_id: int) -> str:
    """Run the action once, in the language it was asked in; its state afterwards. Raises the
    `TryLater` of a provider that asked to slow down, the action queued again: its task tries
    again after the wait asked for."""
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
        except TryLater:
            if not PROVIDER_THROTTLED.exhausted(action.runs):
                _queued_again(action)
                raise
            outcome = Outcome(message=gave_up_message(action), ok=False)
        except Refusal as exc:
            outcome = Outcome(message=exc.message, ok=False)
        staff_action_finish(action, outcome)
    return action.state


def _queued_again(action: StaffAction) -> None:
    """The provider asked to slow down: the action waits for its task's next try, queued (the
    claim it took when asked stays); if that try is lost, the sweep queues it again."""
    StaffAction.objects.filter(pk=action.pk).update(
        state=StaffActionState.QUEUED, queued_at=timezone.now()
    )
    logger.info("staff action %s throttled by the provider: its task tries again", action.pk)
