"""The year's factura requests: one paid order in twenty asked for a factura (its buyer's RFC,
régimen 612, uso G03). The latest TO_ISSUE of them wait in "Facturas por emitir", the same
number whatever the year's size (as the tail's work in flight); the others were issued a day
after their order. Written in SQL on the server, as the rest of the year."""

from __future__ import annotations

from django.db import connection

TO_ISSUE = 60
SQL = """INSERT INTO books_facturarequest (order_id, rfc, name, regimen, use, postal_code, email,
    state, created_at, updated_at, uuid, total, refunded_at_issue, issued_at, mailed_at)
  SELECT c.id, 'XOJI740919U48', upper(c.first_name || ' ' || c.last_name), '612', 'G03',
    c.postal_code, c.email,
    CASE WHEN c.waiting THEN 'requested' ELSE 'issued' END,
    c.created_at + interval '1 hour', c.created_at + interval '1 hour',
    CASE WHEN c.waiting THEN '' ELSE upper(md5(c.reference)::uuid::text) END,
    CASE WHEN c.waiting THEN NULL ELSE c.total END,
    CASE WHEN c.waiting THEN NULL ELSE 0 END,
    CASE WHEN c.waiting THEN NULL ELSE c.created_at + interval '1 day' END,
    CASE WHEN c.waiting THEN NULL ELSE c.created_at + interval '1 day' END
  FROM (
    SELECT o.*, row_number() OVER (ORDER BY o.created_at DESC, o.id DESC) <= %(to_issue)s
      AS waiting
    FROM checkout_order o
    WHERE o.status = 'paid' AND o.id %% 20 = 0
      AND NOT EXISTS (SELECT 1 FROM books_facturarequest f WHERE f.order_id = o.id)
  ) c"""


def fill_facturas() -> None:
    with connection.cursor() as cursor:
        cursor.execute(SQL, {"to_issue": TO_ISSUE})
