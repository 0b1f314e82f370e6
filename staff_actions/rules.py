"""Staff actions, the rules (no call to the provider here): recording what a staff member asks
and queueing its task, saying how a run ended, and queueing again the actions whose task was
lost. The run itself is `staff_actions.calls`, from the task only.

Asked: the action is recorded (in the language the staff member uses now) with the idempotency
key every run sends, the payment it moves claimed in the same transaction (`Asked.claim`, by the
app that declared the action), and its task queued once committed. Of two actions asked at once
on one object or one payment, exactly one is recorded: a unique constraint on the open ones, said
to the other as `ActionBusy`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction
from django.db.models import Model, Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from core.errors import Refusal
from core.task_queue import queue_on_commit, send_now
from staff_actions.kinds import Outcome, kind_named
from staff_actions.models import OPEN_ACTION_STATES, StaffAction, StaffActionState
from staff_actions.task_names import RUN_TASK

logger = logging.getLogger(__name__)

# Longer than any run takes (a provider call with its retries, a refresh after it): a run
# older than this lost its worker, and the sweep queues it again.
LEASE = timedelta(minutes=5)
# A queued action whose task has not started by then lost its message (the broker was down).
REQUEUE_AFTER = timedelta(minutes=1)
# Runs after which an action that never finished is given up (said to staff as not done).
MAX_RUNS = 5


class ActionBusy(Refusal):
    """Another action is in flight on the object or on its payment."""


@dataclass(frozen=True)
class Asked:
    """What an action asks once its form and checks passed: its parameters, the payment whose
    money it moves, and the claim on that payment to take as it is recorded (raising a
    `Refusal` if the payment is busy or has moved)."""

    params: dict[str, Any] = field(default_factory=dict)
    payment: Model | None = None
    claim: Callable[[], None] | None = None


# --- Asking -----------------------------------------------------------------------------------


def staff_action_request(
    *,
    kind: str,
    actor: AbstractBaseUser | AnonymousUser | None,
    target: Model | None = None,
    asked: Asked | None = None,
    reference: str = "",
) -> StaffAction:
    """Record what a staff member asks and queue its task once committed; `ActionBusy` (or the
    claim's refusal) if another action holds the object or its payment: nothing is recorded."""
    asked = asked or Asked()
    registered = kind_named(kind)
    target_type = ContentType.objects.get_for_model(target) if target is not None else None
    try:
        with transaction.atomic():
            if asked.claim is not None:
                asked.claim()
            action = StaffAction.objects.create(
                kind=registered.name,
                target_type=target_type,
                target_id=target.pk if target is not None else None,
                payment=asked.payment,
                reference=reference[:64],
                # Whether the payment was claimed here: the run releases the claim when done.
                params={**asked.params, "claimed": asked.claim is not None},
                idempotency_key=uuid.uuid4().hex,
                language=translation.get_language() or settings.LANGUAGE_CODE,
                actor=actor if actor is not None and actor.is_authenticated else None,
            )
            queue_on_commit(RUN_TASK, action.pk, queue=run_queue(action))
    except IntegrityError:
        raise ActionBusy(busy_message(target_type, target, asked.payment)) from None
    return action


def busy_message(
    target_type: ContentType | None, target: Model | None, payment: Model | None
) -> str:
    """Another action is in flight on the object or its payment: which one."""
    running = StaffAction.objects.filter(state__in=OPEN_ACTION_STATES)
    where = Q(pk__in=[])
    if target is not None:
        where |= Q(target_type=target_type, target_id=target.pk)
    if payment is not None:
        where |= Q(payment=payment)
    other = running.filter(where).first()
    label = str(kind_named(other.kind).label) if other is not None else "?"
    return _(
        "Another action (%(action)s) is already running on this %(object)s. Refresh the page "
        "in a moment."
    ) % {
        "action": label,
        "object": str(target._meta.verbose_name) if target is not None else _("payment"),
    }


def run_queue(action: StaffAction) -> str | None:
    """The provider's reads queue for a kind that only reads (else the settings' route: the
    writes queue)."""
    return settings.CELERY_QUEUE_PROVIDER_READS if kind_named(action.kind).reads else None


# --- Ending -----------------------------------------------------------------------------------


def staff_action_finish(action: StaffAction, outcome: Outcome) -> None:
    """Say the outcome, log it in the admin's log, and let the next action on the object in."""
    with transaction.atomic():
        action.state = StaffActionState.DONE if outcome.ok else StaffActionState.FAILED
        action.ok = outcome.ok
        action.result = outcome.message
        action.finished_at = timezone.now()
        action.save(update_fields=["state", "ok", "result", "finished_at"])
        release = kind_named(action.kind).release
        if action.payment is not None and action.params.get("claimed") and release is not None:
            release(action)
        logged = outcome.logged or _target(action)
        if outcome.ok and outcome.log and action.actor is not None and logged is not None:
            LogEntry.objects.log_actions(
                user_id=action.actor.pk,
                queryset=[logged],
                action_flag=ADDITION if outcome.added else CHANGE,
                change_message=outcome.log,
                single_object=True,
            )


def _target(action: StaffAction) -> Model | None:
    if action.target_type is None or action.target_id is None:
        return None
    model = action.target_type.model_class()
    return model._default_manager.filter(pk=action.target_id).first() if model else None


def gave_up_message(action: StaffAction) -> str:
    """What staff read of an action given up on (in the active language)."""
    return _(
        "%(reference)s: the %(action)s could not be completed. Refresh from the provider and "
        "check the status before trying again."
    ) % {"reference": action.reference, "action": kind_named(action.kind).label}


# --- Queueing again the actions whose task was lost ---------------------------------------------


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
                staff_action_finish(action, Outcome(message=gave_up_message(action), ok=False))
            given_up += 1
            continue
        try:
            send_now(RUN_TASK, (action.pk,), queue=run_queue(action))
        except Exception as exc:  # the broker is still down: the next sweep tries again
            logger.warning("staff action %s not queued again: %s", action.pk, exc)
            break
        StaffAction.objects.filter(pk=action.pk).update(queued_at=now)
        queued += 1
    return Requeued(queued=queued, given_up=given_up)
