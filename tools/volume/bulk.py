"""A fill written as a bulk load: the secondary indexes of the tables it writes dropped before
and built again after (one sort each, not a B-tree insert for every row), and, where the role
may (a superuser's), the foreign keys' checks of every row skipped: the fill's rows name only
rows it wrote itself. All inside the fill's transaction: a fill that fails leaves the schema as
it was."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.db import connection

# Memory for building each index again (a sort of the whole table): this transaction's only.
INDEX_BUILD_MEMORY = "256MB"


@contextmanager
def bulk_load(tables: Sequence[str]) -> Iterator[None]:
    """Within a transaction: `tables`' indexes that are neither primary nor unique dropped
    for the block, and built again at its end."""
    with connection.cursor() as cursor:
        # What is pending is checked now; the block leaves nothing pending for the builds.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        superuser = bool(cursor.fetchone()[0])
        if superuser:
            cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "SELECT i.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
            "WHERE t.relname = ANY(%s) AND pg_table_is_visible(t.oid) "
            "AND NOT x.indisunique AND NOT x.indisprimary ORDER BY i.relname",
            [list(tables)],
        )
        indexes = cursor.fetchall()
        for name, _ in indexes:
            cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")
    yield
    with connection.cursor() as cursor:
        if superuser:
            cursor.execute("SET LOCAL session_replication_role = DEFAULT")
        cursor.execute(f"SET LOCAL maintenance_work_mem = '{INDEX_BUILD_MEMORY}'")
        for _, definition in indexes:
            cursor.execute(definition)
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")  # Django's foreign keys, as they were
