"""The order confirmation mail, sent once."""

from __future__ import annotations

import logging

from django.core.mail import send_mail
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from checkout.installments import order_installments
from checkout.models import Order, OrderStatus
from checkout.selectors import order_payments

logger = logging.getLogger(__name__)


def order_send_confirmation(*, order_id: int) -> bool:
    """Email the order confirmation exactly once (compare-and-set on confirmation_sent_at)."""
    claimed = Order.objects.filter(pk=order_id, confirmation_sent_at__isnull=True).update(
        confirmation_sent_at=timezone.now()
    )
    if not claimed:
        return False
    order = Order.objects.get(pk=order_id)
    with translation.override(order.language):
        held = order.status == OrderStatus.AUTHORIZED
        subject = _("Your order %(reference)s") % {"reference": order.reference}
        body = _("Hello %(name)s, thank you for your order %(reference)s for $%(total)s MXN.") % {
            "name": order.first_name,
            "reference": order.reference,
            "total": order.total,
        }
        body += "\n\n" + (
            _("The amount is held on your card and will be charged when we ship.")
            if held
            else _("Your payment was received.")
        )
        if plan := order_installments(order_payments(order)):
            body += "\n" + _("Paid in monthly payments: %(plan)s.") % {"plan": plan}
        try:
            send_mail(subject, body, None, [order.email])
        except Exception:
            # Not sent: free the claim, and let the task try again later.
            Order.objects.filter(pk=order_id).update(confirmation_sent_at=None)
            logger.warning("order %s: confirmation not sent; tried again later", order.reference)
            raise
    return True
