"""Reading one payment from the provider again."""

from __future__ import annotations

from django.utils.translation import gettext as _

from payments import read_budget
from payments.client import get_client
from payments.errors import PaymentNotAllowed
from payments.messages import provider_errors
from payments.models import Payment, PaymentEventKind
from payments.services.records import Actor
from payments.services.snapshots import apply_in_transaction
from payments.types import ProviderPayment


def read_payment(provider_id: str, *, counted: bool = True) -> ProviderPayment:
    """One read of the payment at the provider, counted in the read budget unless it was
    reserved there already (its errors are the client's: wrap it in `provider_errors()` for the
    shop's messages)."""
    if counted:
        read_budget.spend()
    return get_client().get_payment(provider_id)


def payment_refresh(*, payment: Payment, actor: Actor = None, scheduled: bool = False) -> Payment:
    """Fetch the payment from the provider and apply it if it is not older than what we hold.
    `scheduled`: a read of its schedule (payments.read_schedule), which moves on to the next
    step when it finds nothing new (its read was counted when it was handed out); any other read
    starts the schedule again."""
    if not payment.provider_id:
        raise PaymentNotAllowed(
            _(
                "This payment has no provider id yet; it is reconciled when the provider "
                "notifies it."
            )
        )
    with provider_errors():
        remote = read_payment(payment.provider_id, counted=not scheduled)
    return apply_in_transaction(
        payment.pk, remote, kind=PaymentEventKind.SYNCED, actor=actor, scheduled=scheduled
    )
