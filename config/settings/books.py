"""Facturas and the books (BOOKS_*).

The buyers' factura (CFDI) requests, who stamps them, and the accountant's exports (books/;
docs/deployment.md, "Facturas (CFDI)").
"""

from __future__ import annotations

from config.settings.env import env_int, env_str

# The merchant's window: their PAC and SAT let them invoice a past month's sale only so long.
BOOKS_FACTURA_DAYS_AFTER_MONTH = env_int(
    "BOOKS_FACTURA_DAYS_AFTER_MONTH",
    5,
    doc="A buyer may ask for a factura until the end of the month of the purchase (the shop's "
    "time zone) plus this many days; past it, the order's page says until when it was possible.",
)
# The longest range of days one export covers.
BOOKS_EXPORT_MAX_DAYS = 366
BOOKS_STAMPER = env_str(
    "BOOKS_STAMPER",
    "books.stamping.NoStamper",
    doc="Who stamps CFDIs: nobody by default (staff register what their PAC issued); the dotted "
    "path of a class with `stamp(StampRequest) -> Stamped` for a PAC (`books/stamping.py`; "
    'docs/deployment.md, "Facturas (CFDI)").',
)
# Exports: a cell starting with "=" is not written as a formula (django-import-export).
IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT = True
