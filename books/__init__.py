"""The merchant's books: factura (CFDI) requests, the invoices the merchant's PAC issued, and
the accountant's exports. It reads orders (checkout) and payments; nothing reads it."""
