"""What the books tests share: a paid order (its charge of a card type), the XML a PAC would
return for it, and a staff member with the books' permissions."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from books.models import FacturaRequest
from checkout.models import Order, OrderStatus
from payments.models import Payment
from tests.factories import OrderFactory, PaymentFactory

PERSON_RFC = "XOJI740919U48"  # SAT's test RFC of a person (13 characters)
COMPANY_RFC = "EKU9003173C9"  # SAT's test RFC of a company (12 characters)
UUID = "6F1B7A2C-3D4E-4F5A-8B9C-0D1E2F3A4B5C"
BUYER = {
    "rfc": PERSON_RFC,
    "name": "INGRID XODAR JIMENEZ",
    "regimen": "612",
    "use": "G03",
    "postal_code": "88965",
    "email": "ingrid@example.com",
}


def paid_order(
    total: str = "1290.00",
    *,
    method_type: str = "credit_card",
    created_at: datetime | None = None,
    status: str = OrderStatus.PAID,
    refunded: str = "0.00",
) -> Order:
    """An order paid by one card charge of `method_type`, straight in the database."""
    fields: dict[str, Any] = {"total": Decimal(total), "status": status}
    if created_at is not None:
        fields["created_at"] = created_at
    order = OrderFactory(**fields)
    PaymentFactory(
        order=order,
        charged=True,
        refunded_amount=Decimal(refunded),
        snapshot={"payment_method": {"id": "visa", "type": method_type}},
        card_brand="visa",
        card_last_digits="4242",
        **({"created_at": created_at} if created_at is not None else {}),
    )
    return order


def requested(order: Order, **fields: Any) -> FacturaRequest:
    return FacturaRequest.objects.create(order=order, **{**BUYER, **fields})


def cfdi(
    total: str = "1290.00", *, rfc: str = PERSON_RFC, uuid: str = UUID, kind: str = "I"
) -> bytes:
    """A stamped CFDI 4.0 as a PAC returns it (seals left empty: the shop does not verify
    SAT's seals, the PAC did)."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<cfdi:Comprobante xmlns:cfdi="http://www.sat.gob.mx/cfd/4"
  xmlns:tfd="http://www.sat.gob.mx/TimbreFiscalDigital" Version="4.0" Serie="A" Folio="1"
  Fecha="2026-11-05T10:00:00" FormaPago="04" NoCertificado="30001000000500003416"
  SubTotal="{(Decimal(total) / Decimal("1.16")).quantize(Decimal("0.01"))}" Moneda="MXN"
  Total="{total}" TipoDeComprobante="{kind}" Exportacion="01" MetodoPago="PUE"
  LugarExpedicion="06600" Sello="" Certificado="">
  <cfdi:Emisor Rfc="{COMPANY_RFC}" Nombre="ESCUELA KEMPER URGATE" RegimenFiscal="601"/>
  <cfdi:Receptor Rfc="{rfc}" Nombre="INGRID XODAR JIMENEZ" DomicilioFiscalReceptor="88965"
    RegimenFiscalReceptor="612" UsoCFDI="G03"/>
  <cfdi:Conceptos>
    <cfdi:Concepto ClaveProdServ="53101600" Cantidad="1" ClaveUnidad="H87"
      Descripcion="Blusa bordada" ValorUnitario="1112.07" Importe="1112.07" ObjetoImp="02"/>
  </cfdi:Conceptos>
  <cfdi:Complemento>
    <tfd:TimbreFiscalDigital Version="1.1" UUID="{uuid}" FechaTimbrado="2026-11-05T10:01:00"
      RfcProvCertif="SPR190613I52" SelloCFD="" NoCertificadoSAT="30001000000500003456"
      SelloSAT=""/>
  </cfdi:Complemento>
</cfdi:Comprobante>""".encode()


def staff(username: str, *permissions: str) -> Any:
    """A staff member with these permissions ("app.codename") and nothing else."""
    user = get_user_model().objects.create_user(username, password="clave-larga-2026")
    user.is_staff = True
    user.save()
    for name in permissions:
        app_label, codename = name.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return user


def charge_of(order: Order) -> Payment:
    return Payment.objects.get(external_reference=order.reference)
