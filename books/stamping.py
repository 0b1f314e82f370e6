"""Where stamping through a PAC will go: the shop does not stamp CFDIs (that needs the
merchant's CSD certificate and a contract with a PAC). Staff stamp in their PAC's portal and
register the result (`books.rules.factura_register`).

To stamp from the shop, implement `Stamper` for the merchant's PAC (satcfdi ships clients for
several: `satcfdi.pacs`), name it in BOOKS_STAMPER, and call it from a task (it is a network
call: never from a web request, as the provider's client), then hand its XML to
`factura_register` exactly as staff do: the same checks apply. docs/deployment.md, "Facturas
(CFDI)", says what a merchant needs for it."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string


@dataclass(frozen=True)
class StampRequest:
    """What a PAC needs to issue the buyer's CFDI for an order."""

    reference: str
    rfc: str
    name: str
    regimen: str
    use: str
    postal_code: str
    payment_form: str  # c_FormaPago: 04 credit card, 28 debit card
    total: Decimal


@dataclass(frozen=True)
class Stamped:
    uuid: str
    xml: bytes
    pdf: bytes | None = None


class Stamper(Protocol):
    def stamp(self, request: StampRequest) -> Stamped:
        """Issue and stamp the CFDI; raise on any refusal of the PAC or the SAT."""
        ...


class NoStamper:
    """The default: the shop does not stamp (staff register what their PAC issued)."""

    def stamp(self, request: StampRequest) -> Stamped:
        raise NotImplementedError("No PAC configured (BOOKS_STAMPER): register CFDIs by hand.")


def stamper() -> Stamper:
    return import_string(settings.BOOKS_STAMPER)()  # type: ignore[no-any-return]
