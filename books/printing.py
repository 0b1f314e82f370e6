"""The factura's PDF (its representación impresa) when the merchant's PAC gave only the XML:
rendered from the XML by satcfdi (the layout SAT's CFDI viewers use: emisor, receptor,
conceptos, taxes, the stamp and its QR code). Slow (a second or so): made by the mail's task,
never in a web request."""

from __future__ import annotations


def factura_pdf(xml: bytes) -> bytes:
    """The PDF of a CFDI whose XML `cfdi_read` accepted already (no DTD, no entities)."""
    from satcfdi.cfdi import CFDI  # the renderer's imports are heavy: only where it is used
    from satcfdi.render import pdf_bytes

    return bytes(pdf_bytes(CFDI.from_string(xml)))
