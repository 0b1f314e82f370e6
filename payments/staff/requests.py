"""Recording a staff action and queueing its task (by name, once committed)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction
from django.db.models import Model, Q
from django.utils import translation
from django.utils.translation import gettext as _

from payments.errors import PaymentInProgress
from payments.models import OPEN_ACTION_STATES, Payment, StaffAction
from payments.queue import send_at_once
from payments.services.claims import claim_payment
from payments.services.records import Actor, acting_user
from payments.staff.kinds import kind_named

logger = logging.getLogger(__name__)

RUN_TASK = "payments.tasks.staff_action_run_task"


def staff_action_request(
    *,
    kind: str,
    actor: Actor,
    target: Model | None = None,
    payment: Payment | None = None,
    claim: tuple[str, str] | None = None,
    reference: str = "",
    params: dict[str, Any] | None = None,
) -> StaffAction:
    """Record what a staff member asks (in the language they use now) and queue its task once
    committed. The payment it moves is claimed here (`claim`: its intent and the status it
    must have): of two actions asked at once on one object or one payment, exactly one is
    recorded; the other raises `PaymentInProgress` (or `PaymentNotAllowed`, the payment having
    moved) and changes nothing."""
    registered = kind_named(kind)
    target_type = ContentType.objects.get_for_model(target) if target is not None else None
    try:
        with transaction.atomic():
            if payment is not None and claim is not None:
                claim_payment(payment, *claim)
            action = StaffAction.objects.create(
                kind=registered.name,
                target_type=target_type,
                target_id=target.pk if target is not None else None,
                payment=payment,
                reference=reference[:64],
                # Whether the payment was claimed here: the run releases the claim when done.
                params={**(params or {}), "claimed": claim is not None},
                idempotency_key=uuid.uuid4().hex,
                language=translation.get_language() or settings.LANGUAGE_CODE,
                actor=acting_user(actor),
            )
            queue_on_commit(action)
    except IntegrityError:
        raise PaymentInProgress(busy_message(target_type, target, payment)) from None
    return action


def busy_message(
    target_type: ContentType | None, target: Model | None, payment: Payment | None
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


def queue_on_commit(action: StaffAction) -> None:
    """Queue the action's task once the transaction commits. A broker that is down is logged,
    not raised: the sweep (`staff_actions_requeue`) queues the action again."""
    transaction.on_commit(lambda: send(action), robust=True)


def send(action: StaffAction) -> None:
    """Queue the action's task now, on the provider's reads queue for a kind that only reads
    (the writes queue otherwise, by the settings' routes)."""
    reads = kind_named(action.kind).reads
    send_at_once(
        RUN_TASK, (action.pk,), queue=settings.CELERY_QUEUE_PROVIDER_READS if reads else None
    )
