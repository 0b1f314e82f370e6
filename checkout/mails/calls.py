"""Mails to the shopper, sent: each order mail (`OrderMail`, created and queued by
`checkout.mails.rules`) goes to the mail server once, by its task; and the list of an address's
orders ("My orders"). Every mail is HTML with a plain-text alternative, in the order's language,
and carries the order's own link. Reached from checkout's tasks only."""

from __future__ import annotations

import logging
import re
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from checkout.links import order_link
from checkout.metrics import mail_failed, mail_sent
from checkout.models import Order, OrderMail, OrderMailKind
from checkout.orders.selectors import with_installment_plan
from checkout.words import interest_free_text
from payments.models import Payment
from payments.statuses import PaymentStatus

logger = logging.getLogger(__name__)

ORDERS_LISTED = 20


# --- Rendering --------------------------------------------------------------------------------


def _subject(kind: str, reference: str) -> str:
    subjects = {
        OrderMailKind.RECEIVED: _("We received your order %(reference)s"),
        OrderMailKind.PAID: _("Payment received for your order %(reference)s"),
        OrderMailKind.HELD: _("Your order %(reference)s: amount held on your card"),
        OrderMailKind.CHARGED: _("Your order %(reference)s has shipped"),
        OrderMailKind.SHIPPED: _("Your order %(reference)s has shipped"),
        OrderMailKind.CANCELLED: _("Your order %(reference)s was cancelled"),
        OrderMailKind.REFUNDED: _("Refund for your order %(reference)s"),
        OrderMailKind.EXPIRED: _("Your order %(reference)s expired"),
        OrderMailKind.PAYMENT_RETURNED: _("Your payment for order %(reference)s was returned"),
    }
    return subjects[OrderMailKind(kind)] % {"reference": reference}


def _tidy_text(text: str) -> str:
    """The plain-text body without the blank lines and trailing spaces the template tags
    leave."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)) + "\n"


def _message_id(kind: str, pk: int, reference: str) -> str:
    """The same Message-ID however often the mail goes out (a mail server's answer lost after
    it took the mail): mail clients show it once."""
    domain = settings.DEFAULT_FROM_EMAIL.rsplit("@", 1)[-1].strip("> ") or "localhost"
    return f"<{kind}-{pk}.{reference.lower()}@{domain}>"


def _message(
    *, template: str, subject: str, to: str, context: dict[str, Any], headers: dict[str, str]
) -> EmailMultiAlternatives:
    context = {
        "subject": subject,
        "shop_name": settings.SHOP_NAME,
        "shop_url": settings.SHOP_BASE_URL.rstrip("/") + reverse("checkout:home"),
        "language": translation.get_language(),
        **context,
    }
    text = _tidy_text(render_to_string(f"checkout/mail/{template}.txt", context))
    html = render_to_string(f"checkout/mail/{template}.html", context)
    message = EmailMultiAlternatives(subject, text, None, [to], headers=headers)
    message.attach_alternative(html, "text/html")
    return message


def _returned_how(mail: OrderMail) -> str:
    """A late payment given back: its authorization 'released', or its charge 'refunded'."""
    pk = int(mail.key.rsplit(":", 1)[-1])
    payment = Payment.objects.filter(pk=pk).only("status").first()
    if payment is not None and payment.status == PaymentStatus.REFUNDED:
        return "refunded"
    return "released"


def order_mail_message(mail: OrderMail) -> EmailMultiAlternatives:
    """The mail, rendered in its order's language (HTML, and plain text); `mail` is read with
    its order and its order's plan (`with_installment_plan`)."""
    order = mail.order
    with translation.override(order.language):
        items = list(order.items.all())
        context: dict[str, Any] = {
            "order": order,
            "mail": mail,
            "kind": mail.kind,
            "items": items,
            "shipped_items": [i for i in items if i.quantity_shipped],
            "items_to_ship": [i for i in items if i.left_to_ship],
            "amount": mail.amount,
            "released": mail.released,
            "link": order_link(order.reference),
            "installments": (
                interest_free_text(mail.plan_months, mail.plan_monthly) if mail.plan_months else ""
            ),
        }
        if mail.kind == OrderMailKind.PAYMENT_RETURNED:
            context["returned_how"] = _returned_how(mail)
        return _message(
            template=mail.kind,
            subject=_subject(mail.kind, order.reference),
            to=order.email,
            context=context,
            headers={"Message-ID": _message_id("order-mail", mail.pk, order.reference)},
        )


# --- Sending ----------------------------------------------------------------------------------


def order_mail_deliver(*, mail_id: int) -> bool:
    """Send one order mail, exactly once: claimed (its row locked, skipped if another worker
    holds it) while unsent, and marked sent only once the mail server took it. If sending
    raises, nothing is marked and the error is raised (the task tries again). False when it
    was already sent, or is being sent by another worker."""
    with transaction.atomic():
        mail = with_installment_plan(
            OrderMail.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("order")
            .filter(pk=mail_id, sent_at=None),
            reference="order__reference",
        ).first()
        if mail is None:
            return False
        message = order_mail_message(mail)
        try:
            message.send()
        except Exception:
            mail_failed(mail.kind)
            logger.warning(
                "order %s: %s mail not sent; tried again later", mail.order.reference, mail.kind
            )
            raise
        # What the customer was told, for staff (blanked after SHOP_MAIL_KEEP_DAYS).
        mail.sent_at = timezone.now()
        mail.subject = message.subject[:255]
        mail.body = message.body
        mail.save(update_fields=["sent_at", "subject", "body"])
    mail_sent(mail.kind)
    logger.info("order %s: %s mail sent", mail.order.reference, mail.kind)
    return True


# --- "My orders" ------------------------------------------------------------------------------


def orders_list_send(*, email: str, language: str) -> int:
    """Mail `email` the list of its orders (the most recent ORDERS_LISTED, each with its own
    link), in `language`. An address with no orders gets nothing (the answer on the page is
    the same either way). Returns how many orders were listed."""
    orders = list(
        Order.objects.filter(email__iexact=email.strip()).order_by("-created_at")[:ORDERS_LISTED]
    )
    if not orders:
        return 0
    with translation.override(language):
        rows = [{"order": order, "link": order_link(order.reference)} for order in orders]
        message = _message(
            template="orders_list",
            subject=_("Your orders at %(shop)s") % {"shop": settings.SHOP_NAME},
            to=orders[0].email,
            context={"rows": rows, "order": None},
            headers={},
        )
    message.send()
    return len(orders)
