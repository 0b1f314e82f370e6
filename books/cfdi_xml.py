"""The CFDI a PAC returned, read and checked before it is kept: parsed by defusedxml (no DTD,
no entities, no external references: a hostile file is refused, never expanded), a CFDI 4.0
Comprobante of kind Ingreso, stamped (its TimbreFiscalDigital complement gives the folio
fiscal), for the buyer's RFC and for the order's total."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring
from django.utils.translation import gettext as _

from core.errors import Refusal
from core.money import pesos

CFDI_NS = "http://www.sat.gob.mx/cfd/4"
TFD_NS = "http://www.sat.gob.mx/TimbreFiscalDigital"
# A PAC's XML is a few kilobytes; anything this big is not one.
MAX_XML_BYTES = 2 * 1024 * 1024
UUID_SHAPE = re.compile(
    r"[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}", re.IGNORECASE
)


class CfdiRefused(Refusal):
    """The XML is not the CFDI the order needs (the message says why)."""


@dataclass(frozen=True)
class Cfdi:
    uuid: str
    receptor_rfc: str
    total: Decimal
    issued_on: str  # the Comprobante's Fecha, as written


def cfdi_read(content: bytes) -> Cfdi:
    """The stamped CFDI 4.0 in `content`, or `CfdiRefused`."""
    if len(content) > MAX_XML_BYTES:
        raise CfdiRefused(_("The file is too large to be a CFDI."))
    try:
        root = fromstring(content, forbid_dtd=True)
    except (ParseError, DefusedXmlException, ValueError):
        raise CfdiRefused(_("The file is not a readable XML document.")) from None
    if root.tag != f"{{{CFDI_NS}}}Comprobante":
        raise CfdiRefused(_("The XML is not a CFDI 4.0 (cfdi:Comprobante)."))
    if root.get("TipoDeComprobante") != "I":
        raise CfdiRefused(_("The CFDI is not an invoice (TipoDeComprobante must be I)."))
    receptor = root.find(f"{{{CFDI_NS}}}Receptor")
    stamp = root.find(f"{{{CFDI_NS}}}Complemento/{{{TFD_NS}}}TimbreFiscalDigital")
    if stamp is None:
        raise CfdiRefused(_("The CFDI is not stamped: it has no TimbreFiscalDigital."))
    uuid = (stamp.get("UUID") or "").strip().upper()
    if not UUID_SHAPE.fullmatch(uuid):
        raise CfdiRefused(_("The stamp's UUID is missing or malformed."))
    return Cfdi(
        uuid=uuid,
        receptor_rfc=_attribute(receptor, "Rfc").upper(),
        total=_amount(root.get("Total")),
        issued_on=root.get("Fecha") or "",
    )


def cfdi_check(cfdi: Cfdi, *, uuid: str, rfc: str, total: Decimal) -> None:
    """`CfdiRefused` unless the CFDI is the one staff typed (its UUID), for the buyer's RFC and
    for `total`."""
    if cfdi.uuid != uuid.strip().upper():
        raise CfdiRefused(
            _("The XML's folio fiscal is %(found)s, not the %(typed)s you typed.")
            % {"found": cfdi.uuid, "typed": uuid.strip().upper()}
        )
    if cfdi.receptor_rfc != rfc.upper():
        raise CfdiRefused(
            _("The XML is for RFC %(found)s, but the buyer asked with RFC %(rfc)s.")
            % {"found": cfdi.receptor_rfc or "—", "rfc": rfc.upper()}
        )
    if cfdi.total != total:
        raise CfdiRefused(
            _("The XML's total is %(found)s, but the order's charge is %(total)s.")
            % {"found": pesos(cfdi.total), "total": pesos(total)}
        )


def _attribute(element: Element | None, name: str) -> str:
    if element is None:
        raise CfdiRefused(_("The CFDI has no Receptor."))
    return (element.get(name) or "").strip()


def _amount(text: str | None) -> Decimal:
    try:
        amount = Decimal(text or "")
    except InvalidOperation:
        raise CfdiRefused(_("The CFDI's Total is not an amount.")) from None
    if not amount.is_finite():
        raise CfdiRefused(_("The CFDI's Total is not an amount."))
    return amount
