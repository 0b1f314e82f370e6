"""The year's factura requests: one paid order in twenty asked for a factura (its buyer's RFC,
régimen G03-compatible), issued if placed before the last RECENT_DAYS, waiting in "Facturas por
emitir" otherwise. Written in SQL on the server, as the rest of the year."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection

RECENT_DAYS = 10
SQL = """INSERT INTO books_facturarequest (order_id, rfc, name, regimen, use, postal_code, email,
    state, created_at, updated_at, uuid, total, refunded_at_issue, issued_at, mailed_at)
  SELECT o.id, 'XOJI740919U48', upper(o.first_name || ' ' || o.last_name), '612', 'G03',
    o.postal_code, o.email,
    CASE WHEN o.created_at < %(recent)s THEN 'issued' ELSE 'requested' END,
    o.created_at + interval '1 hour', o.created_at + interval '1 hour',
    CASE WHEN o.created_at < %(recent)s THEN upper(md5(o.reference)::uuid::text) ELSE '' END,
    CASE WHEN o.created_at < %(recent)s THEN o.total END,
    CASE WHEN o.created_at < %(recent)s THEN 0 END,
    CASE WHEN o.created_at < %(recent)s THEN o.created_at + interval '1 day' END,
    CASE WHEN o.created_at < %(recent)s THEN o.created_at + interval '1 day' END
  FROM checkout_order o
  WHERE o.status = 'paid' AND o.id %% 20 = 0
    AND NOT EXISTS (SELECT 1 FROM books_facturarequest f WHERE f.order_id = o.id)"""


def fill_facturas(*, now: datetime) -> None:
    with connection.cursor() as cursor:
        cursor.execute(SQL, {"recent": now - timedelta(days=RECENT_DAYS)})
