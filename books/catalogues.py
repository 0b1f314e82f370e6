"""SAT's catalogues a buyer picks from: c_RegimenFiscal and c_UsoCFDI (CFDI 4.0), their codes
and descriptions read from the copy that satcfdi ships (its `catalogs.db`: the catalogues as
SAT publishes them, kept up to date with each satcfdi release), and which uses each régimen
allows.

satcfdi ships the codes and descriptions, not c_UsoCFDI's column "Régimen Fiscal Receptor"
(the régimens that may use each uso) nor c_RegimenFiscal's "Física"/"Moral" columns: those
two are SAT's own columns of the same catalogues (catCFDI_V_4), written below. A buyer's
factura is for a purchase: CN01 (nómina), CP01 (pagos) and P01 (retired in CFDI 4.0) are not
offered; nor the régimens no uso allows (609, 628, 629, 630)."""

from __future__ import annotations

import pickle
import sqlite3
from functools import cache
from importlib.resources import files

# c_UsoCFDI, "Régimen Fiscal Receptor" (SAT, catCFDI_V_4).
_GOODS = ("601", "603", "606", "612", "620", "621", "622", "623", "624", "625", "626")
_DEDUCTIONS = ("605", "606", "608", "611", "612", "614", "607", "615", "625")
_NO_EFFECT = (
    "601", "603", "605", "606", "608", "610", "611", "612", "614", "616", "620", "621", "622",
    "623", "624", "607", "615", "625", "626",
)  # fmt: skip
REGIMENS_OF_USE: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("G01", "G02", "G03"), _GOODS),
    **dict.fromkeys(("I01", "I02", "I03", "I04", "I05", "I06", "I07", "I08"), _GOODS),
    **dict.fromkeys(
        ("D01", "D02", "D03", "D04", "D05", "D06", "D07", "D08", "D09", "D10"), _DEDUCTIONS
    ),
    "S01": _NO_EFFECT,
}
# c_RegimenFiscal, "Física" and "Moral": a 13-character RFC is a person's (física), a
# 12-character one a company's (moral).
MORAL_REGIMENS = frozenset({"601", "603", "610", "620", "622", "623", "624", "626"})
FISICA_REGIMENS = frozenset(
    {"605", "606", "607", "608", "610", "611", "612", "614", "615", "616", "621", "622", "625",
     "626"}
)  # fmt: skip
# c_UsoCFDI, "Física"/"Moral": the personal deductions (D01 to D10) are a person's only.
FISICA_ONLY_USES = frozenset(code for code in REGIMENS_OF_USE if code.startswith("D"))

_DATABASE = "catalogs.db"
_REGIMEN_TABLE = "C756_c_RegimenFiscal"
_USO_TABLE = "C756_c_UsoCFDI"


@cache
def _table(name: str) -> dict[str, str]:
    path = files("satcfdi.catalogs") / _DATABASE
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = connection.execute(f"SELECT key, value FROM {name}").fetchall()  # noqa: S608
    finally:
        connection.close()
    return {pickle.loads(key): pickle.loads(value) for key, value in rows}  # noqa: S301


def regimens() -> list[tuple[str, str]]:
    """The régimens a buyer may choose: (code, "601 General de Ley Personas Morales")."""
    offered = {code for codes in REGIMENS_OF_USE.values() for code in codes}
    return [
        (code, f"{code} {text}")
        for code, text in sorted(_table(_REGIMEN_TABLE).items())
        if code in offered
    ]


def uses() -> list[tuple[str, str]]:
    """The usos de CFDI a buyer may choose: (code, "G03 Gastos en general")."""
    return [
        (code, f"{code} {text}")
        for code, text in sorted(_table(_USO_TABLE).items())
        if code in REGIMENS_OF_USE
    ]


def regimen_name(code: str) -> str:
    return dict(regimens()).get(code, code)


def use_name(code: str) -> str:
    return dict(uses()).get(code, code)


def use_allowed(use: str, regimen: str) -> bool:
    return regimen in REGIMENS_OF_USE.get(use, ())


def regimen_fits_rfc(regimen: str, rfc: str) -> bool:
    """Whether the régimen is one a holder of this RFC may have (12 characters: a company's,
    13: a person's)."""
    return regimen in (MORAL_REGIMENS if len(rfc) == 12 else FISICA_REGIMENS)
