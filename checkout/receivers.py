"""The order follows its payments: every status change, whatever its source (the shopper's
page, a webhook, staff in the admin), lands here."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from checkout.services import order_sync_status
from payments.models import Payment
from payments.signals import payment_status_changed


@receiver(payment_status_changed, sender=Payment, dispatch_uid="checkout-order-follows-payment")
def order_follows_payment(sender: type[Payment], payment: Payment, **kwargs: Any) -> None:
    order_sync_status(reference=payment.external_reference)
