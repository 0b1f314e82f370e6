"""Applying the provider's snapshots of a payment: a snapshot is taken only if it is not older
than what is held (the provider's `version`, then the status order), an illegal move raises
`IllegalTransition` and is recorded as an anomaly; and refreshing a payment from the provider."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from core.ledger import Actor
from payments.actions.rules import release_claim
from payments.models import AUTHORIZATION_VALIDITY, Payment, PaymentEventKind
from payments.provider.errors import PaymentError
from payments.provider.types import ProviderPayment
from payments.records import notify_status_changed_on_commit, record_event
from payments.rereading.rules import SCHEDULE_FIELDS, read_schedule_advance, read_schedule_restart
from payments.statuses import RANK, REACHABLE, PaymentStatus, UnknownProviderStatus, local_status
from payments.words import ILLEGAL_MOVE

logger = logging.getLogger(__name__)


class IllegalTransition(PaymentError):
    """The provider reported a status this payment cannot move to from where it is."""


def _kept(raw: dict[str, Any]) -> dict[str, Any]:
    """The provider's payment body as stored and shown to staff, without what is secret in it:
    the card token that paid (`payment_method.token`) and the webhook address, whose path is
    the shop's webhook token."""
    kept = {key: value for key, value in raw.items() if key != "webhook_url"}
    method = kept.get("payment_method")
    if isinstance(method, dict):
        kept["payment_method"] = {key: value for key, value in method.items() if key != "token"}
    return kept


def _copy(payment: Payment, remote: ProviderPayment, new: str, now: datetime) -> None:
    """Take the provider's snapshot into the payment (not saved)."""
    payment.provider_id = remote.id
    payment.status = new
    payment.status_code = remote.status_detail.code
    payment.status_message = remote.status_detail.message[:128]
    payment.captured_amount = remote.captured_amount
    payment.refunded_amount = remote.amount_refunded
    if remote.card:
        payment.card_last_digits = remote.card.last_digits[-4:]
    payment.card_brand = remote.payment_method_id or payment.card_brand
    payment.installments = remote.installments
    payment.installment_amount = remote.installment_amount if remote.installments > 1 else None
    payment.three_ds_url = remote.three_ds_url if new == PaymentStatus.PENDING else ""
    payment.provider_version = remote.version
    payment.snapshot = _kept(remote.raw)
    payment.last_synced_at = now
    payment.last_error = ""
    if new == PaymentStatus.AUTHORIZED and payment.authorized_at is None:
        payment.authorized_at = now
        payment.authorization_expires_at = now + AUTHORIZATION_VALIDITY


# What a snapshot may change (`_copy`), but for when it was read.
_COPIED = (
    "provider_id",
    "status",
    "status_code",
    "status_message",
    "captured_amount",
    "refunded_amount",
    "card_last_digits",
    "card_brand",
    "installments",
    "installment_amount",
    "three_ds_url",
    "provider_version",
    "snapshot",
    "last_error",
    "authorized_at",
    "authorization_expires_at",
)


def _held(payment: Payment) -> tuple[object, ...]:
    """What the payment says, as it is stored (the snapshot as its JSON: the provider's
    amounts arrive as Decimals and are read back as strings)."""
    values = [getattr(payment, field) for field in _COPIED]
    values[_COPIED.index("snapshot")] = json.dumps(
        payment.snapshot, cls=DjangoJSONEncoder, sort_keys=True
    )
    return tuple(values)


def _read_unchanged(payment: Payment, now: datetime, *, scheduled: bool) -> None:
    """Record a read that brought nothing new: when it was made and the schedule's next read,
    and nothing else (`updated_at` stays the time of the last change; the create request as
    the caller holds it: dropped once answered)."""
    payment.last_synced_at = now
    if scheduled:
        read_schedule_advance(payment, now=now)
    else:
        read_schedule_restart(payment, now=now)
    payment.save(update_fields=["last_synced_at", "create_request", *SCHEDULE_FIELDS])


def apply_snapshot(
    payment: Payment,
    remote: ProviderPayment,
    *,
    kind: str,
    actor: Actor = None,
    amount: Decimal | None = None,
    scheduled: bool = False,
) -> bool:
    """Apply a snapshot to a locked payment if it is not older than what is held (version,
    then status order). True when the payment changed. Illegal moves raise. `scheduled`: the
    read was one of its schedule's (payments.rereading.rules)."""
    now = timezone.now()
    try:
        new = local_status(remote)
    except UnknownProviderStatus as exc:
        raise IllegalTransition(str(exc)) from exc
    old = payment.status
    held = (payment.provider_version, RANK[old]) if payment.provider_id else (-1, -1)
    if (remote.version, RANK[new]) < held:
        _read_unchanged(payment, now, scheduled=scheduled)
        return False
    if new != old and new not in REACHABLE[old]:
        raise IllegalTransition(ILLEGAL_MOVE(new=new, old=old))
    amounts_before = (payment.captured_amount, payment.refunded_amount)
    before = _held(payment)
    _copy(payment, remote, new, now)
    if _held(payment) == before:
        _read_unchanged(payment, now, scheduled=scheduled)
        return False
    read_schedule_restart(payment, now=now)
    payment.save()
    status_changed = new != old
    changed = status_changed or (payment.captured_amount, payment.refunded_amount) != amounts_before
    if changed:
        record_event(
            payment,
            kind,
            actor=actor,
            old=old,
            new=new,
            amount=amount,
            message=f"{remote.status_detail.code} {remote.status_detail.message}".strip(),
        )
    if changed:  # a partial refund keeps the status but changes the order (partially refunded)
        notify_status_changed_on_commit(payment, old, new)
    return changed


def apply_in_transaction(
    payment_pk: int,
    remote: ProviderPayment,
    *,
    kind: str,
    actor: Actor = None,
    amount: Decimal | None = None,
    release_intent: bool = False,
    scheduled: bool = False,
    forget_request: bool = False,
) -> Payment:
    """Lock the payment and apply the snapshot in a transaction of its own; `release_intent`
    also releases a staff action's claim; `forget_request` drops the kept create request in
    the same write (the provider has answered it). An illegal move is recorded as an anomaly
    (the claim released all the same) and raises `IllegalTransition`."""
    try:
        with transaction.atomic():
            payment = Payment.objects.select_for_update().get(pk=payment_pk)
            if forget_request:
                payment.create_request = ""
            apply_snapshot(
                payment, remote, kind=kind, actor=actor, amount=amount, scheduled=scheduled
            )
            if release_intent:
                release_claim(payment)
            return payment
    except IllegalTransition as exc:
        with transaction.atomic():
            payment = Payment.objects.select_for_update().get(pk=payment_pk)
            record_event(
                payment,
                PaymentEventKind.ANOMALY,
                actor=actor,
                old=payment.status,
                new=remote.status,
                message=str(exc),
            )
            if release_intent:
                release_claim(payment)
        logger.error("payment %s: %s", payment_pk, exc)
        raise


def payment_apply(
    *,
    payment: Payment,
    remote: ProviderPayment,
    actor: Actor = None,
    kind: str = PaymentEventKind.SYNCED,
) -> Payment:
    """Apply a snapshot fetched elsewhere (e.g. by a webhook task) if it is not older than what
    is held; illegal moves are recorded as anomalies and raise `IllegalTransition`."""
    return apply_in_transaction(payment.pk, remote, kind=kind, actor=actor)
