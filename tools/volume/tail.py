"""The last hours: a fixed set of work in flight, the same whatever the size of the year, so
that each beat schedule finds the same things to do on a small fill as on a large one (the
shop's traffic is the same; only its history differs). Few rows: written with the ORM.

- orders awaiting payment, held until later (6), and past their hold (4: to expire);
- attempts stored and not sent yet (4) and whose answer was lost (3: to send again);
- payments waiting for 3-D Secure for over 10 minutes (4: to reconcile);
- orders whose payment was approved a moment ago but that do not say so yet (4: to sync),
  their notifications received and not processed (to relay), two of them claimed by a task
  that died;
- mails due for over 10 minutes and not sent (to send again);
- authorizations 27 days old (2: to warn about) and one past its 30 days (to refresh);
- staff actions whose task was lost (2: to queue again);
- notifications given up on over the last weeks and not resolved yet (120: more than a page
  of the admin's failed notifications).
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings

from checkout.models import (
    REFERENCE_ALPHABET,
    Order,
    OrderItem,
    OrderMail,
    OrderMailKind,
    OrderStatus,
    Product,
)
from payments.attempts.sealed import seal
from payments.models import (
    AUTHORIZATION_VALIDITY,
    CaptureMethod,
    Payment,
    PaymentEvent,
    PaymentEventKind,
)
from payments.rereading.rules import SCHEDULE_FIELDS, read_schedule_restart
from payments.statuses import PaymentStatus
from staff_actions.models import StaffAction
from webhooks.models import EventType, WebhookEvent, WebhookState

# (what, how many): see the module's docstring.
GROUPS = [
    ("held", 6), ("hold_over", 4), ("creating", 4), ("unknown", 3), ("pending", 4),
    ("out_of_step", 4), ("to_warn", 2), ("expired_hold", 1),
]  # fmt: skip
ORDERS = sum(count for _, count in GROUPS)
FAILED_NOTIFICATIONS = 120
CODES = {
    PaymentStatus.PENDING: ("PE-3DS01", "Waiting 3DS"),
    PaymentStatus.APPROVED: ("AP-PAI01", "paid"),
    PaymentStatus.AUTHORIZED: ("AU-CAP01", "Pending capture"),
}


def _reference(rng: random.Random) -> str:
    while True:
        reference = "ORD-" + "".join(rng.choice(REFERENCE_ALPHABET) for _ in range(5))
        if not Order.objects.filter(reference=reference).exists():
            return reference


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _placed(group: str, rng: random.Random, now: datetime) -> datetime:
    minutes = {
        "held": (2, 25),
        "hold_over": (35, 80),
        "creating": (3, 20),
        "unknown": (13, 27),
        "pending": (12, 25),
        "out_of_step": (3, 8),
        "to_warn": (27 * 1440 + 300, 27 * 1440 + 400),
        "expired_hold": (30 * 1440 + 20, 30 * 1440 + 50),
    }[group]
    return now - timedelta(minutes=rng.uniform(*minutes))


def fill_tail(*, seed: int, now: datetime, actor: Any) -> None:
    """Write the work in flight at `now` (see the module's docstring)."""
    rng = random.Random(f"tail:{seed}:{Order.objects.count()}")
    products = list(Product.objects.filter(active=True).order_by("pk"))
    minutes = settings.SHOP_RESERVATION_MINUTES
    request = seal({"note": "a create request of the fill, kept while its answer is awaited"})
    admin_id = actor.actor or None
    for group, count in GROUPS:
        for _ in range(count):
            placed = _placed(group, rng, now)
            product = rng.choice(products)
            first = rng.choice(["Ana", "Luis", "Sofía", "Diego", "Renata", "Jorge"])
            last = rng.choice(["Pérez", "Ruiz", "Flores", "Ortiz", "Chávez", "Reyes"])
            email = f"{first.lower().replace('í', 'i')}.{last.lower()}@example.com".replace(
                "é", "e"
            ).replace("á", "a")
            status = {
                "pending": OrderStatus.AWAITING_AUTHENTICATION,
                "to_warn": OrderStatus.AUTHORIZED,
                "expired_hold": OrderStatus.AUTHORIZED,
            }.get(group, OrderStatus.AWAITING_PAYMENT)
            order = Order.objects.create(
                reference=_reference(rng), status=status, first_name=first, last_name=last,
                email=email, phone="5512345678", street="Avenida Juárez", number="12",
                colony="Centro", city="Puebla", state="Puebla", postal_code="72000",
                total=product.price, reserved_until=placed + timedelta(minutes=minutes),
                created_at=placed,
            )  # fmt: skip
            OrderItem.objects.create(
                order=order, product=product, name=product.name, name_en=product.name_en,
                unit_price=product.price, quantity=1,
            )  # fmt: skip
            # Due for over 10 minutes and not sent (a lost task): the mails' sweep sends it.
            unsent = group in ("hold_over", "unknown", "pending")
            mail = OrderMail.objects.create(
                order=order, kind=OrderMailKind.RECEIVED, key="received", amount=order.total,
                created_at=placed + timedelta(seconds=1),
                sent_at=None if unsent else placed + timedelta(seconds=4),
            )  # fmt: skip
            OrderMail.objects.filter(pk=mail.pk).update(created_at=placed + timedelta(seconds=1))
            _payment(group, order, placed, now, rng, request, admin_id)
            Order.objects.filter(pk=order.pk).update(updated_at=placed + timedelta(seconds=2))
    _failed_notifications(rng, now)


def _failed_notifications(rng: random.Random, now: datetime) -> None:
    """Notifications of payments the provider no longer finds, given up on (kept until staff
    resolve them)."""
    events = []
    for _ in range(FAILED_NOTIFICATIONS):
        provider_id, arrived = _uuid(rng), now - timedelta(minutes=rng.randint(60, 60 * 24 * 60))
        event = WebhookEvent(
            provider_payment_id=provider_id, event_type=EventType.UPDATE, received_at=arrived,
            remote_addr="203.0.113.9", state=WebhookState.FAILED, attempts=5,
            task_id=_uuid(rng), claimed_at=arrived, processed_at=arrived + timedelta(minutes=30),
            last_error=f"The provider no longer finds payment {provider_id}.",
        )  # fmt: skip
        events.append(event)
    WebhookEvent.objects.bulk_create(events)


def _payment(
    group: str,
    order: Order,
    placed: datetime,
    now: datetime,
    rng: random.Random,
    request: str,
    admin_id: int | None,
) -> None:
    """The order's payment as `group` leaves it, its ledger entry, notifications and staff
    action (none for the orders awaiting payment)."""
    if group in ("held", "hold_over"):
        return
    status = {
        "creating": PaymentStatus.CREATING,
        "unknown": PaymentStatus.UNKNOWN,
        "pending": PaymentStatus.PENDING,
        "out_of_step": PaymentStatus.APPROVED,
    }.get(group, PaymentStatus.AUTHORIZED)
    created = placed + timedelta(seconds=rng.uniform(40, 120))
    payment = _create_payment(order, status, created, rng, request)
    # Its reads scheduled from its last change, as the shop does: the pending ones are due.
    read_schedule_restart(payment, now=created + timedelta(seconds=2))
    Payment.objects.filter(pk=payment.pk).update(
        updated_at=created + timedelta(seconds=2),
        **{field: getattr(payment, field) for field in SCHEDULE_FIELDS},
    )
    if status != PaymentStatus.CREATING:
        _created_event(payment, status, created)
    if payment.provider_id is None:
        return
    _notifications(group, payment, created, now, rng)
    if group == "to_warn":
        # A staff member asked to read it again; the task was lost.
        StaffAction.objects.create(
            kind="payments.refresh",
            payment=payment,
            reference=order.reference,
            params={"claimed": False},
            idempotency_key=uuid.UUID(int=rng.getrandbits(128)).hex,
            language="es",
            actor_id=admin_id,
            created_at=now - timedelta(minutes=5),
            queued_at=now - timedelta(minutes=5),
        )


def _create_payment(
    order: Order, status: str, created: datetime, rng: random.Random, request: str
) -> Payment:
    """The order's payment in `status`, made at `created`: not sent to the provider yet, or
    its answer lost (no provider id, its create request kept), or known to the provider."""
    in_flight = status in (PaymentStatus.CREATING, PaymentStatus.UNKNOWN)
    provider_id = None if in_flight else _uuid(rng)
    code, message = CODES.get(status, ("", ""))
    manual = status == PaymentStatus.AUTHORIZED
    return Payment.objects.create(
        provider_id=provider_id,
        external_reference=order.reference,
        idempotency_key=f"{order.reference}-{rng.getrandbits(128):032x}",
        capture_method=CaptureMethod.MANUAL if manual else CaptureMethod.AUTOMATIC,
        status=status,
        status_code=code,
        status_message=message,
        amount=order.total,
        captured_amount=order.total if status == PaymentStatus.APPROVED else Decimal("0"),
        description=f"Pedido {order.reference} en {settings.SHOP_NAME}",
        customer_email=order.email,
        card_brand="" if in_flight else "visa",
        card_last_digits="" if in_flight else f"{rng.randrange(10000):04d}",
        three_ds_url=f"https://sandbox.example/3ds/{rng.getrandbits(64):x}"
        if status == PaymentStatus.PENDING
        else "",
        provider_version=0 if in_flight else 1,
        snapshot={}
        if in_flight
        else {"id": provider_id, "status": status, "status_detail": {"code": code}},
        create_request=request if in_flight else "",
        last_error="The payment service did not answer in time."
        if status == PaymentStatus.UNKNOWN
        else "",
        authorized_at=created if manual else None,
        authorization_expires_at=created + AUTHORIZATION_VALIDITY if manual else None,
        last_synced_at=None if in_flight else created,
        created_at=created,
    )


def _created_event(payment: Payment, status: str, created: datetime) -> None:
    """The ledger entry of the payment's create: its outcome, or the answer lost."""
    in_flight = status in (PaymentStatus.CREATING, PaymentStatus.UNKNOWN)
    code, message = CODES.get(status, ("", ""))
    PaymentEvent.objects.create(
        payment=payment,
        kind=PaymentEventKind.OUTCOME_UNKNOWN if in_flight else PaymentEventKind.CREATED,
        old_status=PaymentStatus.CREATING,
        new_status=status,
        message="The payment service did not answer in time." if in_flight else f"{code} {message}",
        created_at=created + timedelta(seconds=1),
    )


def _notifications(
    group: str, payment: Payment, created: datetime, now: datetime, rng: random.Random
) -> None:
    """The provider's notification of the payment: processed, or (`out_of_step`) received and
    never queued; for half the `pending` ones, another claimed by a worker that died."""
    provider_id = payment.provider_id
    arrived = created + timedelta(seconds=3)
    stuck = group == "out_of_step"
    WebhookEvent.objects.create(
        provider_payment_id=provider_id,
        event_type=EventType.INSERT,
        received_at=arrived,
        remote_addr="203.0.113.9",
        # Received a few minutes ago and never queued (the broker was down): to relay.
        state=WebhookState.RECEIVED if stuck else WebhookState.PROCESSED,
        attempts=0 if stuck else 1,
        payment=None if stuck else payment,
        processed_at=None if stuck else arrived + timedelta(seconds=1),
    )
    if group == "pending" and rng.random() < 0.5:
        # Claimed by a worker that died: its lease is over.
        WebhookEvent.objects.create(
            provider_payment_id=provider_id,
            event_type=EventType.UPDATE,
            received_at=now - timedelta(minutes=4),
            state=WebhookState.PROCESSING,
            attempts=1,
            task_id=_uuid(rng),
            claimed_at=now - timedelta(minutes=4),
        )
