"""The buyer's factura form (on the order's page, and as an optional box of the checkout),
staff's registration of the issued CFDI, and the accountant's export."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.forms.utils import ErrorDict
from django.utils.translation import gettext_lazy as _
from localflavor.mx.forms import MXRFCField, MXZipCodeField

from books import catalogues
from books.cfdi_xml import MAX_XML_BYTES, UUID_SHAPE
from books.models import ExportFormat, ExportKind

# The RFCs of "público en general" and of foreigners: sales to them go in the factura global.
GENERIC_RFCS = frozenset({"XAXX010101000", "XEXX010101000"})
MAX_PDF_BYTES = 5 * 1024 * 1024


class BuyerRFCField(MXRFCField):
    """localflavor's RFC, but the generic RFCs (whose check character localflavor refuses)
    are told for what they are."""

    def clean(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip().upper() in GENERIC_RFCS:
            raise ValidationError(
                _("This is the generic RFC of the público en general: a sale without your own "
                  "RFC goes in the shop's global invoice, and needs no request.")
            )  # fmt: skip
        return super().clean(value.strip() if isinstance(value, str) else value)


def _choices(options: list[tuple[str, str]], prompt: Any) -> list[tuple[str, Any]]:
    return [("", prompt), *options]


class FacturaForm(forms.Form):
    """The buyer's fiscal data, as on their Constancia de Situación Fiscal."""

    template_name = "books/factura_fields.html"

    rfc = BuyerRFCField(
        label=_("RFC"),
        help_text=_("12 characters for a company, 13 for a person, as on your Constancia."),
        error_messages={
            "required": _("Write your RFC."),
            "invalid": _("This is not a valid RFC: check it against your Constancia."),
            "invalid_checksum": _(
                "This RFC's last character does not match: check it against your Constancia."
            ),
            "min_length": _("An RFC has 12 characters (a company) or 13 (a person)."),
            "max_length": _("An RFC has 12 characters (a company) or 13 (a person)."),
        },
    )
    name = forms.CharField(
        label=_("Name or company name"),
        max_length=254,
        help_text=_(
            "Exactly as on your Constancia de Situación Fiscal (your tax status certificate)."
        ),
        error_messages={"required": _("Write your name or company name.")},
    )
    regimen = forms.ChoiceField(
        label=_("Tax regime"),
        choices=lambda: _choices(catalogues.regimens(), _("Choose your tax regime")),
        error_messages={
            "required": _("Choose your tax regime."),
            "invalid_choice": _("Choose a tax regime from the list."),
        },
    )
    use = forms.ChoiceField(
        label=_("CFDI use"),
        choices=lambda: _choices(catalogues.uses(), _("Choose the use of the CFDI")),
        error_messages={
            "required": _("Choose the use of the CFDI."),
            "invalid_choice": _("Choose a use of the CFDI from the list."),
        },
    )
    postal_code = MXZipCodeField(
        label=_("Tax postal code"),
        help_text=_("The postal code of your tax address, 5 digits."),
        error_messages={
            "required": _("Write the postal code of your tax address."),
            "invalid": _("Write the 5 digits of the postal code of your tax address."),
        },
    )
    email = forms.EmailField(
        label=_("Email"),
        help_text=_("Where we send you the invoice's PDF and XML."),
        error_messages={
            "required": _("Write the email where we send you the invoice."),
            "invalid": _("Write a valid email, like nombre@ejemplo.com."),
        },
    )

    def clean_rfc(self) -> str:
        return str(self.cleaned_data["rfc"]).upper()

    def clean_name(self) -> str:
        return " ".join(self.cleaned_data["name"].split()).upper()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        rfc, regimen, use = data.get("rfc"), data.get("regimen"), data.get("use")
        if rfc and regimen and not catalogues.regimen_fits_rfc(regimen, rfc):
            self.add_error(
                "regimen",
                _("The tax regime %(regimen)s is not one a %(kind)s can have.")
                % {
                    "regimen": catalogues.regimen_name(regimen),
                    "kind": _("company (12-character RFC)")
                    if len(rfc) == 12
                    else _("person (13-character RFC)"),
                },
            )
        if regimen and use and not catalogues.use_allowed(use, regimen):
            self.add_error(
                "use",
                _("SAT does not allow the use %(use)s with the tax regime %(regimen)s. Choose "
                  "another use, such as G03 Gastos en general or S01 Sin efectos fiscales.")
                % {"use": catalogues.use_name(use), "regimen": catalogues.regimen_name(regimen)},
            )  # fmt: skip
        return data


class FacturaBoxForm(FacturaForm):
    """The checkout's optional box: its fields are asked only when the buyer says they want a
    factura."""

    template_name = "books/checkout_box.html"
    prefix = "factura"

    wanted = forms.BooleanField(label=_("I want an invoice for this purchase"), required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.order_fields(["wanted", "rfc", "name", "regimen", "use", "postal_code", "email"])

    @property
    def is_wanted(self) -> bool:
        return self.is_bound and self["wanted"].data is True

    def full_clean(self) -> None:
        if self.is_bound and not self.is_wanted:
            self._errors = ErrorDict()
            self.cleaned_data = {"wanted": False}
            return
        super().full_clean()


class RegisterForm(forms.Form):
    """The CFDI staff's PAC issued: its folio fiscal, its XML and, if the PAC gave one, its
    PDF."""

    uuid = forms.CharField(
        label=_("Folio fiscal (UUID)"),
        max_length=36,
        help_text=_("The 36 characters of the stamp, e.g. 6F1B7A2C-3D4E-4F5A-8B9C-0D1E2F3A4B5C."),
    )
    xml = forms.FileField(label=_("XML from the PAC"))
    pdf = forms.FileField(
        label=_("PDF (optional)"),
        required=False,
        help_text=_("The PAC's PDF. Without one, the shop makes it from the XML."),
    )

    def clean_uuid(self) -> str:
        uuid = self.cleaned_data["uuid"].strip().upper()
        if not UUID_SHAPE.fullmatch(uuid):
            raise ValidationError(_("A folio fiscal has 36 characters: 8-4-4-4-12, hex digits."))
        return uuid

    def clean_xml(self) -> bytes:
        upload = self.cleaned_data["xml"]
        if upload.size > MAX_XML_BYTES:
            raise ValidationError(_("The file is too large to be a CFDI."))
        return bytes(upload.read())

    def clean_pdf(self) -> bytes | None:
        upload = self.cleaned_data.get("pdf")
        if not upload:
            return None
        if upload.size > MAX_PDF_BYTES:
            raise ValidationError(_("The PDF is too large (5 MB at most)."))
        return bytes(upload.read())


class ExportForm(forms.Form):
    kind = forms.ChoiceField(label=_("What"), choices=ExportKind.choices)
    start = forms.DateField(label=_("From"), widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(label=_("To (inclusive)"), widget=forms.DateInput(attrs={"type": "date"}))
    format = forms.ChoiceField(label=_("Format"), choices=ExportFormat.choices)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("start"), data.get("end")
        if start and end:
            if end < start:
                raise ValidationError(_("The end date is before the start date."))
            if end - start > timedelta(days=int(settings.BOOKS_EXPORT_MAX_DAYS)):
                raise ValidationError(
                    _("An export covers at most %(days)s days.")
                    % {"days": settings.BOOKS_EXPORT_MAX_DAYS}
                )
        return data
