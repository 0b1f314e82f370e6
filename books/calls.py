"""What books sends to the mail server: the buyer's mail with their factura, its PDF and XML
attached, in the order's language, with the order's link (where they are kept too). Sent once,
by its task (reached from `books.tasks` only)."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from books.models import FacturaRequest, FacturaState
from books.printing import factura_pdf
from checkout.links import order_link


def factura_mail_deliver(*, factura_id: int) -> bool:
    """Send the factura to the buyer, once (its row locked; `mailed_at` set when the mail
    server took it); the PDF made from the XML first when the PAC gave none. Whether it was
    sent now."""
    with transaction.atomic():
        factura = (
            FacturaRequest.objects.select_for_update(of=("self",))
            .select_related("order")
            .filter(pk=factura_id, state=FacturaState.ISSUED, mailed_at__isnull=True)
            .first()
        )
        if factura is None:
            return False
        if not factura.pdf:
            factura.pdf = factura_pdf(bytes(factura.xml))
            factura.save(update_fields=["pdf", "updated_at"])
        order = factura.order
        with translation.override(order.language):
            subject = _("Your invoice for order %(reference)s") % {"reference": order.reference}
            body = _(
                "Hi %(name)s,\n\nattached is the invoice of your order %(reference)s (folio "
                "fiscal %(uuid)s), in PDF and XML. You can also download it from your order's "
                "page:\n%(link)s\n\n%(shop)s"
            ) % {
                "name": order.first_name,
                "reference": order.reference,
                "uuid": factura.uuid,
                "link": order_link(order.reference),
                "shop": settings.SHOP_NAME,
            }
        message = EmailMessage(subject, body, None, [factura.email])
        message.attach(f"{factura.uuid}.pdf", bytes(factura.pdf), "application/pdf")
        message.attach(f"{factura.uuid}.xml", bytes(factura.xml), "application/xml")
        message.send()
        factura.mailed_at = timezone.now()
        factura.save(update_fields=["mailed_at", "updated_at"])
        return True
