"""A PAC's XML is read safely and checked: a stamped CFDI 4.0 Ingreso, its UUID from the
TimbreFiscalDigital; a hostile or foreign document is refused with a reason."""

from __future__ import annotations

from decimal import Decimal

import pytest

from books.cfdi_xml import CfdiRefused, cfdi_check, cfdi_read
from tests.books.helpers import PERSON_RFC, UUID, cfdi

pytestmark = pytest.mark.usefixtures("in_english")


def test_the_stamp_the_receptor_and_the_total_are_read() -> None:
    read = cfdi_read(cfdi("1290.00", uuid=UUID.lower()))
    assert (read.uuid, read.receptor_rfc, read.total) == (UUID, PERSON_RFC, Decimal("1290.00"))
    cfdi_check(read, uuid=UUID, rfc=PERSON_RFC, total=Decimal("1290.00"))


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"uuid": "00000000-0000-4000-8000-000000000000"}, "folio fiscal"),
        ({"rfc": "EKU9003173C9"}, "RFC"),
        ({"total": Decimal("1289.99")}, "total"),
    ],
    ids=["uuid", "rfc", "total"],
)
def test_a_cfdi_for_another_uuid_rfc_or_total_is_refused(changes: dict, words: str) -> None:
    expected = {"uuid": UUID, "rfc": PERSON_RFC, "total": Decimal("1290.00")} | changes
    with pytest.raises(CfdiRefused, match=words):
        cfdi_check(cfdi_read(cfdi("1290.00")), **expected)


BOMB = b"""<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">
<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><lolz>&lol2;</lolz>"""
EXTERNAL = b"""<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<r>&x;</r>"""


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (BOMB, "not a readable XML"),
        (EXTERNAL, "not a readable XML"),
        (b"not xml at all", "not a readable XML"),
        (b"<Comprobante/>", "not a CFDI 4.0"),
        (cfdi(kind="E"), "not an invoice"),
        (
            cfdi()
            .replace(b"<cfdi:Complemento>", b"<cfdi:Otro>")
            .replace(b"</cfdi:Complemento>", b"</cfdi:Otro>"),
            "not stamped",
        ),
    ],
    ids=["entity-bomb", "external-entity", "garbage", "foreign", "egreso", "unstamped"],
)
def test_what_is_not_a_stamped_invoice_is_refused(content: bytes, words: str) -> None:
    with pytest.raises(CfdiRefused, match=words):
        cfdi_read(content)
