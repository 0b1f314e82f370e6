"""The test database as the tests look at it: a connection to a database that cannot be
reached, and PostgreSQL's plan of a query."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from tests.helpers.servers import free_port


def unreachable_database(alias: str) -> Any:
    """A connection like the default one, to a database that cannot be reached: a closed port
    (on SQLite, a file in a folder that does not exist)."""
    from django.db import connections

    default = connections["default"]
    if default.vendor == "sqlite":
        away = {**default.settings_dict, "NAME": "/nonexistent/folder/shop.sqlite3"}
    else:
        away = {**default.settings_dict, "HOST": "127.0.0.1", "PORT": str(free_port())}
    return type(default)(away, alias=alias)


def plan_of(sql: str) -> str:
    """PostgreSQL's plan for `sql` when it may not read a whole table (seq scans off): an
    index is named only if one can serve the query."""
    if connection.vendor != "postgresql":
        pytest.skip("the plans are PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("SET LOCAL enable_seqscan = on")
    return plan
