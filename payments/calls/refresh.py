"""Reading one payment from the provider again."""

from __future__ import annotations

from django.utils.translation import gettext as _

from payments.client import get_client
from payments.errors import PaymentNotAllowed
from payments.messages import provider_errors
from payments.models import Payment, PaymentEventKind
from payments.services.records import Actor
from payments.services.snapshots import apply_in_transaction


def payment_refresh(*, payment: Payment, actor: Actor = None) -> Payment:
    """Fetch the payment from the provider and apply it if it is not older than what we hold."""
    if not payment.provider_id:
        raise PaymentNotAllowed(
            _(
                "This payment has no provider id yet; it is reconciled when the provider "
                "notifies it."
            )
        )
    with provider_errors():
        remote = get_client().get_payment(payment.provider_id)
    return apply_in_transaction(payment.pk, remote, kind=PaymentEventKind.SYNCED, actor=actor)
