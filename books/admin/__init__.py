"""books in the admin: "Facturas por emitir" (and registering what was issued), every factura,
and the accountant's exports."""

from books.admin import exports, facturas

__all__ = ["exports", "facturas"]
