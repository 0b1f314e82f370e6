"""The buyer's factura form: an RFC as localflavor's Mexican field validates it (12 or 13
characters, its date, its check character), the régimen and the use from SAT's catalogues,
and the uses each régimen allows; each refusal in words the buyer can act on."""

from __future__ import annotations

from typing import Any

import pytest

from books import catalogues
from books.forms import FacturaBoxForm, FacturaForm
from tests.books.helpers import BUYER, COMPANY_RFC

pytestmark = pytest.mark.usefixtures("in_english")


def errors(**changes: Any) -> dict[str, list[str]]:
    form = FacturaForm({**BUYER, **changes})
    form.is_valid()
    return form.errors


def test_a_person_and_a_company_are_accepted() -> None:
    assert errors() == {}
    assert errors(rfc=COMPANY_RFC.lower(), regimen="601", use="G01") == {}


@pytest.mark.parametrize(
    "rfc",
    ["XOJI740919U4", "XOJI741319U48", "XOJI740919U47", "ABC", "XOJI740919U481"],
    ids=["short", "bad-date", "check-character", "three", "fourteen"],
)
def test_an_invalid_rfc_is_refused(rfc: str) -> None:
    assert "rfc" in errors(rfc=rfc)


def test_the_generic_rfc_is_sent_to_the_factura_global() -> None:
    assert "global invoice" in errors(rfc="XAXX010101000")["rfc"][0]


def test_a_use_the_regimen_does_not_allow_is_refused() -> None:
    """D01 (medical fees) is a personal deduction: a 612 person may, a 626 person may not."""
    assert errors(use="D01") == {}
    refused = errors(regimen="626", use="D01")["use"][0]
    assert "D01" in refused and "626" in refused


def test_a_regimen_of_companies_is_refused_for_a_person() -> None:
    assert "regimen" in errors(regimen="601")


def test_the_catalogues_come_from_satcfdi_with_their_names() -> None:
    regimens, uses = dict(catalogues.regimens()), dict(catalogues.uses())
    assert regimens["612"] == "612 Personas Físicas con Actividades Empresariales y Profesionales"
    assert uses["G03"] == "G03 Gastos en general"
    assert "CN01" not in uses and "P01" not in uses  # nómina and the retired "por definir"


def test_the_checkout_box_asks_nothing_unless_wanted() -> None:
    unwanted = FacturaBoxForm({"factura-rfc": "nonsense"})
    assert unwanted.is_valid() and not unwanted.is_wanted
    wanted = FacturaBoxForm({"factura-wanted": "on", "factura-rfc": "nonsense"})
    assert not wanted.is_valid()
    assert {"rfc", "name", "regimen", "use", "postal_code", "email"} <= set(wanted.errors)
