"""The books' rules (no network): when a buyer may ask for a factura, keeping and correcting
the request, staff starting on it and registering the CFDI their PAC issued, and the credit
note a refund after the invoice calls for. Each rule is one transaction; the order's
ledger says what happened."""

from __future__ import annotations

import calendar
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from books.cfdi_xml import CfdiRefused, cfdi_check, cfdi_read
from books.models import FacturaRequest, FacturaState
from books.selectors import INVOICEABLE, credit_note_amount, order_money
from checkout.models import Order, OrderEventKind
from checkout.records import order_event_record
from core.errors import Refusal
from core.ledger import Actor
from core.money import pesos
from core.task_queue import queue_on_commit

MAIL_TASK = "books.tasks.factura_mail_task"
FIELDS = ("rfc", "name", "regimen", "use", "postal_code", "email")


class FacturaRefused(Refusal):
    """The factura cannot be asked, changed or registered now (the message says why)."""


# --- The buyer's window -----------------------------------------------------------------------


def factura_deadline(order: Order) -> datetime:
    """The last moment a factura may be asked for the order: the end of the month it was
    placed in (the shop's time zone), plus BOOKS_FACTURA_DAYS_AFTER_MONTH days."""
    placed = timezone.localtime(order.created_at).date()
    last_day = date(placed.year, placed.month, calendar.monthrange(placed.year, placed.month)[1])
    final = last_day + timedelta(days=int(settings.BOOKS_FACTURA_DAYS_AFTER_MONTH))
    return timezone.make_aware(datetime.combine(final, time.max))


def factura_refusal(order: Order, *, now: datetime | None = None) -> str | None:
    """Why the buyer may not ask for (or correct) a factura of the order now; None if they
    may."""
    if order.status not in INVOICEABLE:
        return _("You can ask for an invoice once your order is paid. This one is: %(status)s.") % {
            "status": order.get_status_display()
        }
    deadline = factura_deadline(order)
    if (now or timezone.now()) > deadline:
        return _(
            "The time to ask for an invoice for this order ended on %(date)s. Please write to "
            "us if you still need one."
        ) % {"date": date_format(timezone.localtime(deadline), "DATE_FORMAT")}
    return None


# --- Asking and correcting ---------------------------------------------------------------------


def factura_request_save(
    *, order: Order, data: dict[str, Any], at_checkout: bool = False
) -> FacturaRequest:
    """Keep the buyer's fiscal data for the order (`data`: a valid form's), or correct it
    while staff have not started on it. At checkout the order is not paid yet: the request
    waits for the payment (the list of facturas to issue shows paid orders only)."""
    if not at_checkout:
        refusal = factura_refusal(order)
        if refusal:
            raise FacturaRefused(refusal)
    fields = {name: data[name] for name in FIELDS}
    with transaction.atomic():
        current = FacturaRequest.objects.select_for_update().filter(order=order).first()
        if current is None:
            try:
                with transaction.atomic():
                    return FacturaRequest.objects.create(order=order, **fields)
            except IntegrityError:  # asked twice at once: the other one is corrected below
                current = FacturaRequest.objects.select_for_update().get(order=order)
        if current.state != FacturaState.REQUESTED:
            raise FacturaRefused(
                _("We have already started on your invoice, so its details can no longer be "
                  "changed. Please write to us if something is wrong.")
            )  # fmt: skip
        for name, value in fields.items():
            setattr(current, name, value)
        current.save(update_fields=[*FIELDS, "updated_at"])
        return current


# --- Staff --------------------------------------------------------------------------------------


def _ledger(order: Order, kind: str, message: str, actor: Actor) -> None:
    """The order's ledger line, through checkout's one way to write it; an anonymous actor (a
    buyer on the order's link) is recorded as nobody."""
    who = actor if actor is not None and actor.is_authenticated else None
    order_event_record(order, kind, message, who)


def factura_start(*, factura_ids: list[int], actor: Actor) -> int:
    """Staff start on these requests: from now on the buyer can no longer change them. How
    many were started (those issued or started already are left as they are)."""
    started = 0
    with transaction.atomic():
        for factura in (
            FacturaRequest.objects.select_for_update()
            .filter(pk__in=factura_ids, state=FacturaState.REQUESTED)
            .select_related("order")
            .defer("xml", "pdf")
        ):
            factura.state = FacturaState.ISSUING
            factura.save(update_fields=["state", "updated_at"])
            _ledger(factura.order, OrderEventKind.INVOICING, f"RFC {factura.rfc}", actor)
            started += 1
    return started


def factura_register(
    *, factura_id: int, uuid: str, xml: bytes, pdf: bytes | None, actor: Actor
) -> FacturaRequest:
    """Register the CFDI staff's PAC issued: the XML is read and checked against the request
    (its UUID, the buyer's RFC, the order's charge net of refunds) before anything is kept;
    then it is kept with its PDF (the PAC's, else made from the XML by the mail's task), the
    order's ledger says so, and the buyer's mail is queued. `FacturaRefused` (with the XML's
    refusal, when it is the XML) changes nothing."""
    if pdf is not None and not pdf.startswith(b"%PDF-"):
        raise FacturaRefused(_("The PDF file is not a PDF document."))
    try:
        cfdi = cfdi_read(xml)
    except CfdiRefused as exc:
        raise FacturaRefused(exc.message) from None
    with transaction.atomic():
        factura = (
            FacturaRequest.objects.select_for_update()
            .select_related("order")
            .defer("xml", "pdf")
            .get(pk=factura_id)
        )
        if factura.state == FacturaState.ISSUED:
            raise FacturaRefused(
                _("This invoice was already registered (folio fiscal %(uuid)s).")
                % {"uuid": factura.uuid}
            )
        if factura.order.status not in INVOICEABLE:
            raise FacturaRefused(
                _("The order is not paid (%(status)s): it cannot be invoiced.")
                % {"status": factura.order.get_status_display()}
            )
        money = order_money(factura.order)
        try:
            cfdi_check(cfdi, uuid=uuid, rfc=factura.rfc, total=money.net)
        except CfdiRefused as exc:
            raise FacturaRefused(exc.message) from None
        if FacturaRequest.objects.filter(uuid=cfdi.uuid).exclude(pk=factura.pk).exists():
            raise FacturaRefused(
                _("The folio fiscal %(uuid)s is registered for another order.")
                % {"uuid": cfdi.uuid}
            )
        factura.state = FacturaState.ISSUED
        factura.uuid = cfdi.uuid
        factura.xml = xml
        factura.pdf = pdf
        factura.total = cfdi.total
        factura.refunded_at_issue = money.refunded
        factura.issued_at = timezone.now()
        factura.issued_by = actor if actor is not None and actor.is_authenticated else None
        factura.save()
        _ledger(
            factura.order,
            OrderEventKind.INVOICED,
            f"{cfdi.uuid} · RFC {factura.rfc} · {pesos(cfdi.total)}",
            actor,
        )
        queue_on_commit(MAIL_TASK, factura.pk)
    return factura


def factura_refund_check(*, reference: str) -> bool:
    """A refund of an invoiced order: the factura is flagged for a credit note (nota de
    crédito) and the order's ledger says how much was refunded since it was issued. Whether it
    was flagged now (idempotent: once per factura)."""
    with transaction.atomic():
        factura = (
            FacturaRequest.objects.select_for_update()
            .select_related("order")
            .defer("xml", "pdf")
            .filter(order__reference=reference, state=FacturaState.ISSUED)
            .first()
        )
        if factura is None or factura.credit_note_due_at is not None:
            return False
        since = credit_note_amount(factura, order_money(factura.order).refunded)
        if since <= Decimal("0"):
            return False
        factura.credit_note_due_at = timezone.now()
        factura.save(update_fields=["credit_note_due_at", "updated_at"])
        _ledger(
            factura.order,
            OrderEventKind.CREDIT_NOTE,
            f"{factura.uuid} · {pesos(since)}",
            None,
        )
        return True
