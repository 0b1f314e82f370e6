"""A buyer's factura request for an order, the CFDI the merchant's PAC issued for it (kept in
the database: the XML and its PDF are never files a web server could serve), and the
accountant's exports (made by a task, kept until downloaded a few days later)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class FacturaState(models.TextChoices):
    REQUESTED = "requested", _("Requested")
    ISSUING = "issuing", _("Being issued")
    ISSUED = "issued", _("Issued")


class FacturaRequest(models.Model):
    """What a buyer asked to be invoiced with, one per order: their fiscal data (as on their
    Constancia de Situación Fiscal) and, once staff register it, the CFDI issued."""

    order = models.OneToOneField(
        "checkout.Order",
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("order"),
    )
    rfc = models.CharField(_("RFC"), max_length=13)
    name = models.CharField(_("name or company name"), max_length=254)
    regimen = models.CharField(_("tax regime"), max_length=3)
    use = models.CharField(_("CFDI use"), max_length=4)
    postal_code = models.CharField(_("tax postal code"), max_length=5)
    email = models.EmailField(_("email"))
    state = models.CharField(
        _("state"), max_length=16, choices=FacturaState.choices, default=FacturaState.REQUESTED
    )
    created_at = models.DateTimeField(_("requested"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)
    # The CFDI, once registered: its folio fiscal, the PAC's XML as received, its PDF (the
    # PAC's, or made from the XML), and what had been refunded when it was issued.
    uuid = models.CharField(_("folio fiscal (UUID)"), max_length=36, blank=True)
    xml = models.BinaryField(_("XML"), null=True, blank=True, editable=False)
    pdf = models.BinaryField(_("PDF"), null=True, blank=True, editable=False)
    total = models.DecimalField(
        _("invoiced total"), max_digits=12, decimal_places=2, null=True, blank=True
    )
    refunded_at_issue = models.DecimalField(
        _("refunded when issued"), max_digits=12, decimal_places=2, null=True, blank=True
    )
    issued_at = models.DateTimeField(_("issued"), null=True, blank=True)
    issued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("registered by"),
    )
    mailed_at = models.DateTimeField(_("mailed to the buyer"), null=True, blank=True)
    # A refund after the invoice: the merchant owes the buyer a credit note (nota de crédito).
    credit_note_due_at = models.DateTimeField(_("credit note due since"), null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = _("invoice")
        verbose_name_plural = _("invoices")
        indexes = [
            # The list of facturas to issue, oldest first.
            models.Index(
                fields=["created_at", "id"],
                name="factura_to_issue",
                condition=~models.Q(state="issued"),
            ),
            models.Index(
                fields=["credit_note_due_at"],
                name="factura_credit_note_due",
                condition=models.Q(credit_note_due_at__isnull=False),
            ),
            models.Index(fields=["issued_at"], name="factura_issued"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["uuid"], condition=~models.Q(uuid=""), name="factura_uuid_once"
            )
        ]
        permissions = [
            ("issue_factura", _("Can register issued invoices")),
        ]

    def __str__(self) -> str:
        return f"{self.rfc} · {self.order_id}"

    @property
    def is_issued(self) -> bool:
        return self.state == FacturaState.ISSUED


class FacturaToIssue(FacturaRequest):
    """The admin's list "Facturas por emitir": the requests of paid orders not issued yet."""

    class Meta:
        proxy = True
        verbose_name = _("invoice to issue")
        verbose_name_plural = _("invoices to issue")


class ExportKind(models.TextChoices):
    ORDERS = "orders", _("Orders")
    PAYMENTS = "payments", _("Payments")
    REFUNDS = "refunds", _("Refunds")
    GLOBAL = "global", _("Sales without an invoice (global invoice)")


class ExportFormat(models.TextChoices):
    CSV = "csv", "CSV"
    XLSX = "xlsx", "XLSX"


class ExportState(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("In progress")
    READY = "ready", _("Ready")
    FAILED = "failed", _("Failed")


class BooksExport(models.Model):
    """One export the accountant asked for: made by a task, with its progress, then kept for
    download (BOOKS_EXPORT_KEEP_DAYS)."""

    kind = models.CharField(_("what"), max_length=16, choices=ExportKind.choices)
    format = models.CharField(_("format"), max_length=8, choices=ExportFormat.choices)
    start = models.DateField(_("from"))
    end = models.DateField(_("to (inclusive)"))
    state = models.CharField(
        _("state"), max_length=16, choices=ExportState.choices, default=ExportState.QUEUED
    )
    rows_total = models.PositiveIntegerField(_("rows"), null=True, blank=True)
    rows_done = models.PositiveIntegerField(_("rows done"), default=0)
    content = models.BinaryField(_("file"), null=True, blank=True, editable=False)
    error = models.CharField(_("error"), max_length=255, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("asked by"),
    )
    created_at = models.DateTimeField(_("asked"), default=timezone.now)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("books export")
        verbose_name_plural = _("books exports")
        indexes = [models.Index(fields=["created_at", "id"], name="books_export_created")]
        permissions = [("export_books", _("Can export the books"))]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.start} – {self.end}"

    @property
    def percent(self) -> int:
        if self.state == ExportState.READY:
            return 100
        if not self.rows_total:
            return 0
        return min(99, self.rows_done * 100 // self.rows_total)

    @property
    def filename(self) -> str:
        return f"{self.kind}_{self.start:%Y-%m-%d}_{self.end:%Y-%m-%d}.{self.format}"
