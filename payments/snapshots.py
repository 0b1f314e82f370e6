"""Applying the provider's snapshots of a payment: a snapshot is taken only if it is not older
than what is held (the provider's `version`, then the status order), an illegal move raises
`IllegalTransition` and is recorded as an anomaly; and refreshing a payment from the provider."""

from __future__ import annotations

import json
import logging
from copy import copy
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from core.ledger import Actor
from core.row_version import row_version_is
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


# What a read that brought nothing new writes: when it was made, and the schedule's next read.
_READ_FIELDS = ("last_synced_at", *SCHEDULE_FIELDS)


def _note_read(payment: Payment, now: datetime, *, scheduled: bool) -> None:
    """A read made `now` that brought nothing new, in `_READ_FIELDS` (not saved)."""
    payment.last_synced_at = now
    if scheduled:
        read_schedule_advance(payment, now=now)
    else:
        read_schedule_restart(payment, now=now)


def _read_unchanged(payment: Payment, now: datetime, *, scheduled: bool) -> None:
    """Record a read that brought nothing new: when it was made and the schedule's next read,
    and nothing else (`updated_at` stays the time of the last change; the create request as
    the caller holds it: dropped once answered)."""
    _note_read(payment, now, scheduled=scheduled)
    payment.save(update_fields=[*_READ_FIELDS, "create_request"])


def _status_taken(payment: Payment, remote: ProviderPayment) -> str | None:
    """The status the snapshot brings (the payment's own, when it keeps it), or None when the
    snapshot is older than what is held (version, then status order). Illegal moves raise."""
    try:
        new = local_status(remote)
    except UnknownProviderStatus as exc:
        raise IllegalTransition(str(exc)) from exc
    old = payment.status
    held = (payment.provider_version, RANK[old]) if payment.provider_id else (-1, -1)
    if (remote.version, RANK[new]) < held:
        return None
    if new != old and new not in REACHABLE[old]:
        raise IllegalTransition(ILLEGAL_MOVE(new=new, old=old))
    return new


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
    old = payment.status
    new = _status_taken(payment, remote)
    if new is None:
        _read_unchanged(payment, now, scheduled=scheduled)
        return False
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
    is held; illegal moves are recorded as anomalies and raise `IllegalTransition`. A payment
    read with its row's version (`payment_held`) that the snapshot leaves as it is has the read
    recorded in one statement, without the lock (`_unchanged_read_recorded`)."""
    if _unchanged_read_recorded(payment, remote):
        return payment
    return apply_in_transaction(payment.pk, remote, kind=kind, actor=actor)


def _unchanged_read_recorded(read: Payment, remote: ProviderPayment) -> bool:
    """A snapshot that changes nothing of the payment as `read` (with its `row_version`: what
    `payment_held` reads), recorded as `_read_unchanged` records it under the lock, but in one
    UPDATE that takes effect only while the row is still the version that was read (PostgreSQL
    checks the condition again on the row it is about to write). False when the snapshot brings
    something, is not a move this payment can make, or the row moved since the read: then it is
    applied under the lock, as any other."""
    version = getattr(read, "row_version", None)
    if version is None:
        return False
    try:
        new = _status_taken(read, remote)
    except IllegalTransition:
        return False
    now = timezone.now()
    if new is not None:
        probe = copy(read)
        _copy(probe, remote, new, now)
        if _held(probe) != _held(read):
            return False
    _note_read(read, now, scheduled=False)
    written = (
        Payment.objects.filter(pk=read.pk)
        .filter(row_version_is(Payment, version))
        .update(**{field: getattr(read, field) for field in _READ_FIELDS})
    )
    return written == 1
