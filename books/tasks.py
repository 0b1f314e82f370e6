"""books' tasks: the buyer's factura mail, the credit-note check after a refund, and the
accountant's exports. Thin: an id in, one function."""

from __future__ import annotations

from books.calls import factura_mail_deliver
from books.exports import books_export_run
from books.rules import factura_refund_check
from core.task_queue import MAIL, RECORD_SYNC, shop_task


@shop_task("books.tasks.factura_mail_task", retry=MAIL.on(Exception))
def factura_mail_task(factura_id: int) -> bool:
    """Send the buyer their factura (PDF and XML), once."""
    return factura_mail_deliver(factura_id=factura_id)


@shop_task("books.tasks.factura_refund_check_task", retry=RECORD_SYNC.on(Exception))
def factura_refund_check_task(reference: str) -> bool:
    """Flag an invoiced order's factura for a credit note after a refund."""
    return factura_refund_check(reference=reference)


@shop_task("books.tasks.books_export_task", retry=RECORD_SYNC.on(Exception))
def books_export_task(export_id: int) -> bool:
    """Make the accountant's export."""
    return books_export_run(export_id=export_id)
