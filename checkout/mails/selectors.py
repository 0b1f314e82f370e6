"""Which mails an order's customer is due (`order_mails_due`): worked out, without writing,
from the order's state, its ledger (shipments, expiry) and its payments' ledger, each named by a
key that is the same however often it is worked out (`checkout.mails.rules` creates and queues
each once); the payments that came after the order closed (`late_payments`); the mails still
unsent (`unsent_for`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef, Q
from django.utils import timezone

from checkout.models import (
    Order,
    OrderEvent,
    OrderEventKind,
    OrderMail,
    OrderMailKind,
    OrderStatus,
)
from checkout.orders.selectors import order_payments
from payments.models import CaptureMethod, Payment, PaymentEvent, PaymentEventKind
from payments.statuses import PaymentStatus

# Only news is mailed: an event older than this (an order from before mails existed, synced
# again) is not mailed now. The sync and its sweeps run within minutes of any change.
MAIL_HORIZON = timedelta(days=3)

# A mail unsent this long after it was due had its task lost (or the broker was down, or the
# mail server has been failing): the sweep queues it again (`checkout.mails.rules`).
SWEEP_AFTER = timedelta(minutes=10)

ACCEPTED = (PaymentStatus.AUTHORIZED, PaymentStatus.APPROVED)
GIVEN_BACK = (PaymentStatus.CANCELLED, PaymentStatus.REFUNDED)


@dataclass(frozen=True)
class DueMail:
    """A mail the order's state says is due (created once as an `OrderMail`)."""

    key: str
    kind: str
    amount: Decimal | None = None
    released: Decimal | None = None


# --- Which mails are due ----------------------------------------------------------------------


def _first_acceptances(events: list[PaymentEvent]) -> dict[int, PaymentEvent]:
    """Per payment, the ledger entry where it was first authorized or approved."""
    first: dict[int, PaymentEvent] = {}
    for event in events:
        if (
            event.new_status in ACCEPTED
            and event.old_status not in ACCEPTED
            and event.payment_id not in first
        ):
            first[event.payment_id] = event
    return first


def _expired_at(order: Order, order_events: list[OrderEvent]) -> datetime | None:
    """When the order's reservation expired (its latest expiry), if it did."""
    expiries = [e.created_at for e in order_events if e.kind == OrderEventKind.EXPIRED]
    if expiries:
        return max(expiries)
    if order.status == OrderStatus.EXPIRED:
        return order.reserved_until or order.updated_at
    return None


def _closed_at(
    order: Order, order_events: list[OrderEvent], events: list[PaymentEvent]
) -> datetime | None:
    """When the shop last closed the order (it expired, or was cancelled: by staff, or by its
    payment's hold being cancelled), if it did."""
    closings = [e.created_at for e in order_events if e.kind == OrderEventKind.CANCELLED]
    if expired_at := _expired_at(order, order_events):
        closings.append(expired_at)
    if not closings and order.status == OrderStatus.CANCELLED:
        # Cancelled with no staff entry: when its first payment's hold was cancelled.
        cancellations = [
            e.created_at
            for e in events
            if e.new_status == PaymentStatus.CANCELLED and e.old_status != PaymentStatus.CANCELLED
        ]
        closings.append(min(cancellations, default=order.updated_at))
    return max(closings, default=None)


def _late_payments(
    order: Order,
    order_events: list[OrderEvent],
    events: list[PaymentEvent],
    accepted: dict[int, PaymentEvent],
) -> set[int]:
    """Payments accepted after the shop closed the order (it expired, or was cancelled), while
    its items were not held for it again: they are given back (PAYMENT_RETURNED), never mailed
    as paid, held, charged or refunded."""
    closed_at = _closed_at(order, order_events, events)
    if closed_at is None:
        return set()
    if order.status == OrderStatus.EXPIRED:
        return set(accepted)
    revived = any(
        e.kind == OrderEventKind.RESERVED and e.created_at > closed_at for e in order_events
    )
    if revived:
        return set()
    return {pk for pk, event in accepted.items() if event.created_at >= closed_at}


def _accepted(payments: dict[int, Payment], events: list[PaymentEvent]) -> dict[int, PaymentEvent]:
    """Per payment taken or held, the entry of its ledger where it first was."""
    accepted = _first_acceptances(events)
    for payment in payments.values():
        if payment.pk not in accepted and payment.status in ACCEPTED:
            # Taken or held with no entry in its ledger saying so (written without the payments
            # app's rules and calls): when it was last changed stands for the moment.
            automatic = payment.capture_method == CaptureMethod.AUTOMATIC
            accepted[payment.pk] = PaymentEvent(
                payment=payment,
                kind=PaymentEventKind.SYNCED,
                new_status=PaymentStatus.APPROVED
                if payment.status == PaymentStatus.APPROVED and automatic
                else PaymentStatus.AUTHORIZED,
                created_at=payment.updated_at,
            )
    return accepted


def _ledgers(
    order: Order, attempts: list[Payment] | None = None
) -> tuple[dict[int, Payment], list[PaymentEvent], list[OrderEvent]]:
    """The order's payments (`attempts`, read here if not given), their ledger and its own,
    oldest first."""
    payments = {p.pk: p for p in (order_payments(order) if attempts is None else attempts)}
    events = list(
        PaymentEvent.objects.filter(payment__in=list(payments)).order_by("created_at", "id")
    )
    order_events = list(OrderEvent.objects.filter(order=order).order_by("created_at", "id"))
    return payments, events, order_events


def late_payments(order: Order) -> list[Payment]:
    """The order's payments that went through after the shop closed it, its items not held for
    it again: being given back (still taken or held), or given back."""
    payments, events, order_events = _ledgers(order)
    late = _late_payments(order, order_events, events, _accepted(payments, events))
    return [payments[pk] for pk in sorted(late)]


@dataclass(frozen=True)
class _State:
    """What the order's mails are worked out from."""

    order: Order
    since: datetime
    payments: dict[int, Payment]
    events: list[PaymentEvent]  # the payments' ledger, oldest first
    order_events: list[OrderEvent]  # the order's ledger, oldest first
    accepted: dict[int, PaymentEvent]
    late: set[int]

    def recent(self, when: datetime) -> bool:
        return when >= self.since

    @property
    def captures(self) -> list[PaymentEvent]:
        """Held payments captured (by a shipment), as the provider told it: in the answer to
        the capture, or in a notification that came first."""
        return [
            e
            for e in self.events
            if e.old_status == PaymentStatus.AUTHORIZED
            and e.new_status == PaymentStatus.APPROVED
            and e.payment_id not in self.late
        ]


def _received(state: _State) -> list[DueMail]:
    order = state.order
    if not state.recent(order.created_at):
        return []
    return [DueMail("received", OrderMailKind.RECEIVED, amount=order.total)]


def _paid_or_held(state: _State) -> list[DueMail]:
    """The first payment that took or held the money (a second one is given back, and mailed
    as a refund if it was charged)."""
    kept = sorted(
        (e for pk, e in state.accepted.items() if pk not in state.late),
        key=lambda e: (e.created_at, e.pk or 0),
    )
    if not kept or not state.recent(kept[0].created_at):
        return []
    payment = state.payments[kept[0].payment_id]
    if kept[0].new_status == PaymentStatus.APPROVED:
        return [DueMail("paid", OrderMailKind.PAID, amount=payment.amount)]
    return [DueMail("held", OrderMailKind.HELD, amount=payment.amount)]


def _charged(state: _State) -> list[DueMail]:
    due = []
    for event in state.captures:
        if not state.recent(event.created_at):
            continue
        payment = state.payments[event.payment_id]
        charged = event.amount if event.amount is not None else payment.captured_amount
        released = max(payment.amount - charged, Decimal("0.00"))
        due.append(
            DueMail(f"charged:{event.pk}", OrderMailKind.CHARGED, amount=charged, released=released)
        )
    return due


def _shipped(state: _State) -> list[DueMail]:
    """Shipments that moved no money: no capture since the shipment before (a capture is made
    before its shipment is recorded)."""
    due = []
    captured = [c.created_at for c in state.captures]
    previous = state.order.created_at
    for shipment in state.order_events:
        if shipment.kind != OrderEventKind.SHIPPED:
            continue
        charged_by_it = any(previous < when <= shipment.created_at for when in captured)
        if not charged_by_it and state.recent(shipment.created_at):
            due.append(DueMail(f"shipped:{shipment.pk}", OrderMailKind.SHIPPED))
        previous = shipment.created_at
    return due


def _refunded(state: _State) -> list[DueMail]:
    """One mail per refund in the payments' ledger."""
    due = []
    for event in state.events:
        if event.kind != PaymentEventKind.REFUNDED or event.payment_id in state.late:
            continue
        if not state.recent(event.created_at):
            continue
        amount = event.amount
        if amount is None:
            amount = state.payments[event.payment_id].refunded_amount
        due.append(DueMail(f"refunded:{event.pk}", OrderMailKind.REFUNDED, amount=amount))
    return due


def _cancelled(state: _State) -> list[DueMail]:
    order = state.order
    if order.status != OrderStatus.CANCELLED:
        return []
    moments = [e.created_at for e in state.order_events if e.kind == OrderEventKind.CANCELLED]
    moments += [
        e.created_at
        for e in state.events
        if e.new_status == PaymentStatus.CANCELLED and e.old_status != PaymentStatus.CANCELLED
    ]
    if not state.recent(max(moments, default=order.updated_at)):
        return []
    return [DueMail("cancelled", OrderMailKind.CANCELLED)]


def _expired(state: _State) -> list[DueMail]:
    order = state.order
    if order.status != OrderStatus.EXPIRED:
        return []
    expired_at = _expired_at(order, state.order_events)
    if expired_at is None or not state.recent(expired_at):
        return []
    return [DueMail("expired", OrderMailKind.EXPIRED, amount=order.total)]


def _payments_returned(state: _State) -> list[DueMail]:
    """Payments that came after the shop closed the order, once given back (an authorization
    cancelled, or a charge refunded)."""
    due = []
    for pk in sorted(state.late):
        payment = state.payments[pk]
        if payment.status not in GIVEN_BACK:
            continue  # being given back: mailed once it is
        moments = [e.created_at for e in state.events if e.payment_id == pk]
        if not state.recent(max(moments, default=payment.updated_at)):
            continue
        if payment.status == PaymentStatus.REFUNDED:
            amount = payment.refunded_amount or payment.captured_amount
        else:
            amount = payment.amount
        due.append(DueMail(f"payment_returned:{pk}", OrderMailKind.PAYMENT_RETURNED, amount=amount))
    return due


def order_mails_due(
    order: Order, *, new: bool = False, attempts: list[Payment] | None = None
) -> list[DueMail]:
    """Every mail the order's state calls for (sent or not), from its status, its ledger
    (shipments, expiry) and its payments' ledger. Idempotent: the same state gives the same
    keys, so duplicate notifications and retries can only find them already there. Events
    older than MAIL_HORIZON are not news: they are not mailed. `new`: an order just created,
    in this transaction: it has no payments and no ledger yet (nothing is read); `attempts`:
    its payments, when the caller has just read them."""
    payments, events, order_events = ({}, [], []) if new else _ledgers(order, attempts)
    accepted = _accepted(payments, events)
    state = _State(
        order=order,
        since=timezone.now() - MAIL_HORIZON,
        payments=payments,
        events=events,
        order_events=order_events,
        accepted=accepted,
        late=_late_payments(order, order_events, events, accepted),
    )
    rules = (
        _received,
        _paid_or_held,
        _charged,
        _shipped,
        _refunded,
        _cancelled,
        _expired,
        _payments_returned,
    )
    return [mail for rule in rules for mail in rule(state)]


def order_mail_keys() -> ArraySubquery:
    """The keys of an order's mails, as a column of the order's own query (`annotate`): the
    order and what it has been mailed, read in one statement."""
    return ArraySubquery(OrderMail.objects.filter(order=OuterRef("pk")).values("key"))


# --- Unsent ---------------------------------------------------------------------------------------


def unsent_for(older_than: timedelta = SWEEP_AFTER, *, now: datetime | None = None) -> Q:
    """Mails due for longer than `older_than` and still not sent (by default, those the sweep
    sends again: their task was lost, or the mail server has been failing). The partial index
    `order_mail_unsent` serves it."""
    return Q(sent_at=None, created_at__lt=(now or timezone.now()) - older_than)
