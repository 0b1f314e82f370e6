"""What every change to a payment shares: who made it (`acting_user`), its line in the payment's
ledger, the status-change signal sent once the change is committed, and the amount check."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from core.ledger import Actor
from core.money import pesos
from payments.metrics import payment_transition_counted
from payments.models import Payment, PaymentEvent
from payments.provider.errors import InvalidAmount
from payments.provider.types import CENT
from payments.signals import payment_status_changed


def acting_user(actor: Actor) -> Any:
    """The signed-in user who acted, or None (the shop itself, or an anonymous request)."""
    return actor if actor is not None and getattr(actor, "is_authenticated", False) else None


def record_event(
    payment: Payment,
    kind: str,
    *,
    actor: Actor = None,
    old: str = "",
    new: str = "",
    amount: Decimal | None = None,
    message: str = "",
    error_code: str = "",
) -> None:
    """Add a line to the payment's ledger (message and error code cut to their columns)."""
    PaymentEvent.objects.create(
        payment=payment,
        kind=kind,
        old_status=old,
        new_status=new,
        amount=amount,
        message=message[:500],
        error_code=error_code[:16],
        actor=acting_user(actor),
    )


def notify_status_changed_on_commit(payment: Payment, old: str, new: str) -> None:
    """Send `payment_status_changed` once the current transaction commits (never if it rolls
    back), so that listeners only ever see a change that was saved."""

    code = payment.status_code

    def send() -> None:
        payment_transition_counted(old=old, new=new, code=code)
        payment_status_changed.send(sender=Payment, payment=payment, old_status=old, new_status=new)

    transaction.on_commit(send)


def check_amount(amount: Decimal, *, maximum: Decimal) -> Decimal:
    """0 < amount <= maximum, with at most two decimals."""
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise InvalidAmount(_("The amount must be a number."))
    if amount != amount.quantize(CENT):
        raise InvalidAmount(_("The amount can have at most two decimals."))
    if amount <= 0:
        raise InvalidAmount(_("The amount must be greater than zero."))
    if amount > maximum:
        raise InvalidAmount(
            _("The amount cannot be more than %(maximum)s.") % {"maximum": pesos(maximum)}
        )
    return amount
