"""A row's version as PostgreSQL keeps it (`xmin`: the transaction that wrote the row as it
now is), read with the row, and a condition that holds only while the row is still that
version: a write made without the row's lock then takes effect only if nobody wrote the row
since it was read (in READ COMMITTED, PostgreSQL checks an UPDATE's conditions again on the
newest version of a row another transaction changed meanwhile)."""

from __future__ import annotations

from typing import TypeVar

from django.db import connection
from django.db.models import BooleanField, Model, QuerySet
from django.db.models.expressions import RawSQL

M = TypeVar("M", bound=Model)


def with_row_version(rows: QuerySet[M]) -> QuerySet[M]:
    """The rows, each with `row_version`: its version, as text."""
    column = _xmin(rows.model)
    return rows.annotate(row_version=RawSQL(f"{column}::text", ()))  # noqa: S611 (no input)


def row_version_is(model: type[Model], version: str) -> RawSQL:
    """A filter: the row is still at `version` (`with_row_version`)."""
    condition = f"{_xmin(model)} = %s::xid"  # the version goes as a parameter
    return RawSQL(condition, (version,), output_field=BooleanField())  # noqa: S611


def _xmin(model: type[Model]) -> str:
    return f"{connection.ops.quote_name(model._meta.db_table)}.xmin"
