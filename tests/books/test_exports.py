"""The accountant's exports: a range of days in the shop's time zone, exact decimals, the
factura's UUID where there is one, the sales without one for the factura global; CSV and XLSX
by django-import-export with formulas escaped; made by the task, with its progress, in a number
of queries that does not grow with the rows; asked and downloaded with its own permission."""

from __future__ import annotations

import csv
import io
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import openpyxl
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from books.exports import CHUNK, books_export_run
from books.models import BooksExport, ExportState
from books.rules import factura_register
from tests.books.helpers import UUID, cfdi, paid_order, requested, staff
from tests.factories import RefundFactory
from tests.helpers.staff import sign_in_staff

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

MEXICO = timezone.get_fixed_timezone(-360)


def at(day: int, hour: int = 12, month: int = 10) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=MEXICO)


def made(kind: str, file_format: str = "csv", **days: Any) -> BooksExport:
    export = BooksExport.objects.create(
        kind=kind,
        format=file_format,
        start=days.get("start", date(2026, 10, 1)),
        end=days.get("end", date(2026, 10, 31)),
    )
    assert books_export_run(export_id=export.pk) is True
    export.refresh_from_db()
    return export


def csv_rows(export: BooksExport) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(bytes(export.content).decode("utf-8-sig"))))


@pytest.fixture
def october() -> dict[str, Any]:
    """Three sales in October (one at 23:30 of the 31st, Mexico City: November in UTC), one
    invoiced; one of the 1st of November at 00:30 (October in UTC); a refund of one."""
    invoiced = paid_order("1290.00", created_at=at(3))
    factura = requested(invoiced)
    factura_register(factura_id=factura.pk, uuid=UUID, xml=cfdi("1290.00"), pdf=None, actor=None)
    late = paid_order("578.00", created_at=at(31, 23), method_type="debit_card")
    refunded = paid_order("289.00", created_at=at(15), refunded="100.00")
    RefundFactory(payment=refunded_payment(refunded), amount=Decimal("100.00"),
                  created_at=at(16))  # fmt: skip
    paid_order("999.00", created_at=datetime(2026, 11, 1, 0, 30, tzinfo=MEXICO))
    return {"invoiced": invoiced, "late": late, "refunded": refunded}


def refunded_payment(order: Any) -> Any:
    from payments.models import Payment

    return Payment.objects.get(external_reference=order.reference)


def test_a_months_orders_match_the_database(october: dict[str, Any]) -> None:
    rows = csv_rows(made("orders"))
    by_reference = {row["pedido"]: row for row in rows}
    assert set(by_reference) == {o.reference for o in october.values()}
    assert sum(Decimal(r["cobrado"]) for r in rows) == Decimal("2157.00")
    assert sum(Decimal(r["reembolsado"]) for r in rows) == Decimal("100.00")
    assert sum(Decimal(r["neto"]) for r in rows) == Decimal("2057.00")
    invoiced = by_reference[october["invoiced"].reference]
    assert (invoiced["factura_uuid"], invoiced["factura_global"]) == (UUID, "")
    late = by_reference[october["late"].reference]
    assert (late["fecha"], late["forma_pago_sat"], late["factura_global"]) == (
        "2026-10-31 23:00:00", "28", "X"
    )  # fmt: skip
    assert invoiced["forma_pago_sat"] == "04" and invoiced["total"] == "1290.00"


def test_the_factura_global_lists_the_sales_without_a_factura(october: dict[str, Any]) -> None:
    rows = csv_rows(made("global"))
    assert {r["pedido"] for r in rows} == {october["late"].reference, october["refunded"].reference}


def test_payments_and_refunds_carry_the_factura(october: dict[str, Any]) -> None:
    payments = {r["pedido"]: r for r in csv_rows(made("payments"))}
    assert payments[october["invoiced"].reference]["factura_uuid"] == UUID
    assert len(payments) == 3
    [refund] = csv_rows(made("refunds"))
    assert (refund["pedido"], refund["monto"]) == (october["refunded"].reference, "100.00")


def test_the_xlsx_has_the_same_rows(october: dict[str, Any]) -> None:
    export = made("orders", "xlsx")
    sheet = openpyxl.load_workbook(io.BytesIO(bytes(export.content))).active
    header, *rows = list(sheet.values)
    charged = header.index("cobrado")
    assert len(rows) == 3
    assert sum(Decimal(row[charged]) for row in rows) == Decimal("2157.00")


def test_formulas_are_escaped() -> None:
    order = paid_order(created_at=at(5))
    order.first_name, order.last_name = '=HYPERLINK("http://x")', "@SUM(A1)"
    order.email = "+1@example.com"
    order.save()
    [row] = csv_rows(made("orders"))
    assert not row["cliente"].startswith(("=", "+", "-", "@"))
    assert not row["email"].startswith(("=", "+", "-", "@"))


def test_queries_grow_by_the_chunk_not_the_row() -> None:
    """2 rows or 30 (both within a chunk): the same queries."""
    spent = []
    for added in (2, 28):
        for _ in range(added):
            paid_order(created_at=at(7))
        export = BooksExport.objects.create(
            kind="orders", format="xlsx", start=date(2026, 10, 1), end=date(2026, 10, 31)
        )
        with CaptureQueriesContext(connection) as queries:
            books_export_run(export_id=export.pk)
        spent.append(len(queries))
    assert BooksExport.objects.latest("pk").rows_done == 30 < CHUNK
    assert spent[0] == spent[1], spent
    assert spent[0] <= 6, spent


def test_the_admin_asks_the_task_and_offers_the_file(
    client: Client, monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(
        "core.task_queue.send_now", lambda task, args=(), **kw: sent.append((task, tuple(args)))
    )
    paid_order(created_at=at(9))
    accountant = staff("contadora", "books.export_books")
    sign_in_staff(client, accountant)
    form = {"kind": "orders", "start": "2026-10-01", "end": "2026-10-31", "format": "csv"}
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(reverse("admin:books_booksexport_add"), form)
    assert answer.status_code == 302
    export = BooksExport.objects.get()
    assert sent == [("books.tasks.books_export_task", (export.pk,))]
    listing = client.get(reverse("admin:books_booksexport_changelist")).content.decode()
    assert 'id="books-exports"' in listing and "<progress" in listing
    status = client.get(reverse("admin:books_booksexport_status"), {"ids": str(export.pk)})
    assert status.json() == {"open": 1, "exports": [{"id": export.pk, "percent": 0}]}

    books_export_run(export_id=export.pk)
    listing = client.get(reverse("admin:books_booksexport_changelist")).content.decode()
    assert 'id="books-exports"' not in listing
    download = client.get(reverse("admin:books_booksexport_download", args=[export.pk]))
    assert download.status_code == 200 and b"pedido" in download.content
    assert BooksExport.objects.get().state == ExportState.READY


def test_exports_need_their_own_permission(client: Client) -> None:
    sign_in_staff(client, staff("vendedor", "checkout.view_order"))
    form = {"kind": "orders", "start": "2026-10-01", "end": "2026-10-31", "format": "csv"}
    assert client.post(reverse("admin:books_booksexport_add"), form).status_code == 403
    assert not BooksExport.objects.exists()


def test_a_range_backwards_is_refused(client: Client) -> None:
    sign_in_staff(client, staff("contador", "books.export_books"))
    form = {"kind": "orders", "start": "2026-10-31", "end": "2026-10-01", "format": "csv"}
    answer = client.post(reverse("admin:books_booksexport_add"), form)
    assert answer.status_code == 400 and "before the start date" in answer.content.decode()
    assert not BooksExport.objects.exists()
