"""The accountant's exports, with django-import-export (export only): orders, payments,
refunds, and the sales without a factura (the factura global's), for a range of days in the
shop's time zone. Amounts are exact decimals written as text ("1290.00"), times the shop's
local time, each row with its factura's UUID where there is one. Cells that a spreadsheet
would run as a formula are escaped: import-export's IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT
(a leading "="), and the buyer's and staff's free text prefixed with "'" when it starts with
+, -, @, a tab or a return.

An export is made by a task, a chunk of rows at a time with its progress saved, whatever its
size: no web request reads or writes a month of rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import tablib
from django.db.models import Exists, F, Model, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone
from import_export.fields import Field
from import_export.formats.base_formats import CSV, XLSX
from import_export.resources import Resource

from books.models import BooksExport, ExportKind, ExportState, FacturaRequest, FacturaState
from books.selectors import INVOICEABLE, payment_form_code, with_money
from checkout.models import Order, OrderStatus
from payments.models import Payment, Refund

CHUNK = 1000
# Orders that are sales: paid, whatever was refunded since.
SALES = (*INVOICEABLE, OrderStatus.REFUNDED)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
FORMATS = {"csv": CSV, "xlsx": XLSX}


def safe_text(value: object) -> str:
    text = "" if value is None else str(value)
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def local_time(value: datetime | None) -> str:
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S") if value else ""


def amount(value: Decimal | None) -> str:
    return f"{(value or Decimal('0')):.2f}"


def day_range(start: date, end: date) -> tuple[datetime, datetime]:
    """From the start of `start` to the start of the day after `end`, in the shop's zone."""
    first = timezone.make_aware(datetime.combine(start, time.min))
    after = timezone.make_aware(datetime.combine(end + timedelta(days=1), time.min))
    return first, after


def _factura_uuid(reference: object) -> Subquery:
    return Subquery(
        FacturaRequest.objects.filter(order__reference=reference, state=FacturaState.ISSUED).values(
            "uuid"
        )[:1]
    )


class _Row(Resource):
    """A resource of plain fields read from annotated rows (no query per row)."""

    def export_field(self, field: Field, instance: Any, **kwargs: Any) -> Any:
        return field.get_value(instance)


def _field(attribute: str, header: str) -> Field:
    return Field(attribute=attribute, column_name=header)


class OrderResource(_Row):
    reference = _field("reference", "pedido")
    placed = _field("placed", "fecha")
    status = _field("status", "estado")
    customer = _field("customer", "cliente")
    email = _field("email", "email")
    total = _field("total", "total")
    charged = _field("charged", "cobrado")
    refunded = _field("refunded", "reembolsado")
    net = _field("net", "neto")
    payment_form = _field("payment_form", "forma_pago_sat")
    factura_uuid = _field("factura_uuid", "factura_uuid")
    factura_global = _field("factura_global", "factura_global")


class PaymentResource(_Row):
    reference = _field("reference", "pedido")
    provider_id = _field("provider_id", "pago")
    created = _field("created", "fecha")
    status = _field("status", "estado")
    amount = _field("amount", "monto")
    captured = _field("captured", "cobrado")
    refunded = _field("refunded", "reembolsado")
    card = _field("card", "tarjeta")
    payment_form = _field("payment_form", "forma_pago_sat")
    installments = _field("installments", "meses")
    factura_uuid = _field("factura_uuid", "factura_uuid")


class RefundResource(_Row):
    reference = _field("reference", "pedido")
    provider_id = _field("provider_id", "reembolso")
    payment = _field("payment", "pago")
    created = _field("created", "fecha")
    amount = _field("amount", "monto")
    status = _field("status", "estado")
    reason = _field("reason", "motivo")
    factura_uuid = _field("factura_uuid", "factura_uuid")


class GlobalResource(_Row):
    reference = _field("reference", "pedido")
    placed = _field("placed", "fecha")
    total = _field("total", "total")
    charged = _field("charged", "cobrado")
    refunded = _field("refunded", "reembolsado")
    net = _field("net", "neto")
    payment_form = _field("payment_form", "forma_pago_sat")


# --- The rows ---------------------------------------------------------------------------------


def _orders(start: date, end: date) -> QuerySet[Order]:
    first, after = day_range(start, end)
    orders = Order.objects.filter(created_at__gte=first, created_at__lt=after, status__in=SALES)
    return with_money(orders, via="").annotate(factura=_factura_uuid(OuterRef("reference")))


def _order_row(order: Any) -> dict[str, Any]:
    return {
        "reference": order.reference,
        "placed": local_time(order.created_at),
        "status": order.status,
        "customer": safe_text(order.customer_name),
        "email": safe_text(order.email),
        "total": amount(order.total),
        "charged": amount(order.charged),
        "refunded": amount(order.refunded),
        "net": amount(order.charged - order.refunded),
        "payment_form": payment_form_code(order.method_type),
        "factura_uuid": order.factura or "",
        "factura_global": "" if order.factura else "X",
    }


def _global(start: date, end: date) -> QuerySet[Order]:
    issued = FacturaRequest.objects.filter(order=OuterRef("pk"), state=FacturaState.ISSUED)
    return _orders(start, end).filter(status__in=INVOICEABLE).exclude(Exists(issued))


def _payments(start: date, end: date) -> QuerySet[Payment]:
    first, after = day_range(start, end)
    return (
        Payment.objects.filter(created_at__gte=first, created_at__lt=after, captured_amount__gt=0)
        .annotate(
            method_type=KeyTextTransform("type", KeyTextTransform("payment_method", "snapshot")),
            factura=_factura_uuid(OuterRef("external_reference")),
        )
        .defer("snapshot", "create_request")
    )


def _payment_row(payment: Any) -> dict[str, Any]:
    return {
        "reference": payment.external_reference,
        "provider_id": payment.provider_id or "",
        "created": local_time(payment.created_at),
        "status": payment.status,
        "amount": amount(payment.amount),
        "captured": amount(payment.captured_amount),
        "refunded": amount(payment.refunded_amount),
        "card": f"{payment.card_brand} {payment.card_last_digits}".strip(),
        "payment_form": payment_form_code(payment.method_type),
        "installments": str(payment.installments),
        "factura_uuid": payment.factura or "",
    }


def _refunds(start: date, end: date) -> QuerySet[Refund]:
    first, after = day_range(start, end)
    return Refund.objects.filter(created_at__gte=first, created_at__lt=after).annotate(
        reference=F("payment__external_reference"),
        payment_provider_id=F("payment__provider_id"),
        factura=_factura_uuid(OuterRef("payment__external_reference")),
    )


def _refund_row(refund: Any) -> dict[str, Any]:
    return {
        "reference": refund.reference,
        "provider_id": refund.provider_id,
        "payment": refund.payment_provider_id or "",
        "created": local_time(refund.created_at),
        "amount": amount(refund.amount),
        "status": refund.status,
        "reason": safe_text(refund.reason),
        "factura_uuid": refund.factura or "",
    }


KINDS: dict[str, tuple[type[Resource], Callable[[date, date], QuerySet[Any]], Callable]] = {
    ExportKind.ORDERS: (OrderResource, _orders, _order_row),
    ExportKind.PAYMENTS: (PaymentResource, _payments, _payment_row),
    ExportKind.REFUNDS: (RefundResource, _refunds, _refund_row),
    ExportKind.GLOBAL: (GlobalResource, _global, _order_row),
}


class _Plain:
    """A row as the resource reads it (its fields by attribute)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


def export_rows(kind: str, start: date, end: date) -> QuerySet[Any]:
    return KINDS[kind][1](start, end).order_by("created_at", "pk")


def export_dataset(
    kind: str, start: date, end: date, *, progress: Callable[[int], None] | None = None
) -> tablib.Dataset:
    """The export's rows as import-export's dataset, `progress(rows done)` after each chunk."""
    resource_class, _rows, row_of = KINDS[kind]
    resource = resource_class()
    dataset = tablib.Dataset(headers=resource.get_export_headers())
    done = 0
    for row in _chunked(export_rows(kind, start, end)):
        dataset.append(resource.export_resource(_Plain(row_of(row))))
        done += 1
        if progress is not None and done % CHUNK == 0:
            progress(done)
    return dataset


def _chunked(rows: QuerySet[Model]) -> Iterator[Any]:
    return rows.iterator(chunk_size=CHUNK)


def export_file(dataset: tablib.Dataset, file_format: str) -> bytes:
    """The file of the dataset (formula escaping as the settings say)."""
    data = FORMATS[file_format]().export_data(dataset)
    return data.encode("utf-8-sig") if isinstance(data, str) else bytes(data)


# --- The task's work ----------------------------------------------------------------------------


def books_export_run(*, export_id: int) -> bool:
    """Make an export asked for (idempotent: a ready one is left as it is). Whether it ran."""
    export = BooksExport.objects.filter(pk=export_id).defer("content").first()
    if export is None or export.state == ExportState.READY:
        return False
    total = export_rows(export.kind, export.start, export.end).count()
    BooksExport.objects.filter(pk=export_id).update(
        state=ExportState.RUNNING, rows_total=total, rows_done=0
    )

    def progress(done: int) -> None:
        BooksExport.objects.filter(pk=export_id).update(rows_done=done)

    try:
        dataset = export_dataset(export.kind, export.start, export.end, progress=progress)
        content = export_file(dataset, export.format)
    except Exception:
        BooksExport.objects.filter(pk=export_id).update(
            state=ExportState.FAILED, error="export failed", finished_at=timezone.now()
        )
        raise
    BooksExport.objects.filter(pk=export_id).update(
        state=ExportState.READY,
        content=content,
        rows_total=dataset.height,
        rows_done=dataset.height,
        finished_at=timezone.now(),
    )
    return True
