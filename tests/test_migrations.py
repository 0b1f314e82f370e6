"""Expand and contract: every migration of the shop after the release of 25 November keeps the
release before it working on the new schema (docs/deployment.md, "Upgrading").

- django-migration-linter reads each one's SQL as the previous release would meet it: no NOT NULL
  column without a database default, no dropped or renamed column or table, no changed column
  type, no unique constraint on existing rows, no index built in a way that locks the table;
- none changes data with RunPython or RunSQL (many rows are changed by a task or a command, in
  batches);
- the database backend refuses an unsafe operation at migrate time, and `migrate` tries again a
  migration that could not take its lock within the lock timeout.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
from django.core.management import call_command
from django.db import connection, connections, models
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations import RunPython, RunSQL
from django_migration_linter import MigrationLinter
from django_zero_downtime_migrations.backends.postgres.schema import UnsafeOperationException

from checkout.models import OrderMail
from payments.management.commands.migrate import RULE_FROM, follows_the_rule

pytestmark = pytest.mark.django_db(transaction=True)


def ruled_migrations() -> list[tuple[str, str]]:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return sorted(key for key, migration in loader.disk_migrations.items()
                  if follows_the_rule(migration))  # fmt: skip


def test_the_rule_covers_every_migration_after_the_release_of_25_november() -> None:
    found = ruled_migrations()
    assert ("checkout", "0005_order_mail_text") in found
    assert ("payments", "0011_read_schedule") in found
    assert ("webhooks", "0003_retention_indexes") in found
    assert all(name > RULE_FROM[app] for app, name in found)
    assert ("payments", "0009_verbose_names") not in found


def test_every_migration_after_the_rule_keeps_the_previous_release_working() -> None:
    ruled = ruled_migrations()
    linter = MigrationLinter(
        include_name=[name for _, name in ruled],
        include_apps=list(RULE_FROM),
        no_cache=True,
        # An index built without CONCURRENTLY on an existing table blocks its writes.
        warnings_as_errors_tests=["CREATE_INDEX", "DROP_INDEX", "REINDEX"],
        exclude_migration_tests=[
            # Reversibility is not asked of them: a release is rolled back by running the
            # previous code on the new schema (docs/deployment.md), never by unapplying.
            "RUNPYTHON_REVERSIBLE",
            "RUNSQL_REVERSIBLE",
            # The backend applies migrations outside a transaction, so no index build holds a
            # lock taken before it; the linter reads the BEGIN that sqlmigrate prints.
            "CREATE_INDEX_EXCLUSIVE",
        ],
    )
    linter.lint_all_migrations()
    assert linter.nb_total >= len(ruled)
    assert linter.nb_erroneous == 0, "a migration would stop the previous release (output above)"
    assert linter.nb_valid == len(ruled)


# Code in a migration that changes the schema only (never rows), with why it is code.
SCHEMA_ONLY_CODE = {
    # An index on Django's own admin log, which no model of the shop declares: CONCURRENTLY
    # on PostgreSQL, plainly on the demo's SQLite.
    ("payments", "0014_admin_log_index"),
}


def test_no_migration_after_the_rule_changes_data_in_bulk() -> None:
    """Rows are changed by tasks or commands in resumable batches (payments-schedule), never
    by one RunPython over a whole table in the migration."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    for key in ruled_migrations():
        operations = loader.disk_migrations[key].operations
        code = [op for op in operations if isinstance(op, RunPython | RunSQL)]
        assert not code or key in SCHEMA_ONLY_CODE, key


def test_a_not_null_column_without_a_database_default_is_refused() -> None:
    """What the previous release would meet as an INSERT that fails: refused before it runs."""
    column = models.CharField(max_length=10, default="x")
    column.set_attributes_from_name("note")
    column.model = OrderMail
    with pytest.raises(UnsafeOperationException, match="ADD COLUMN NOT NULL"):
        with connection.schema_editor() as editor:
            editor.add_field(OrderMail, column)

    safe = models.CharField(max_length=10, default="x", db_default="x")
    safe.set_attributes_from_name("note")
    safe.model = OrderMail
    with connection.schema_editor() as editor:
        editor.add_field(OrderMail, safe)
        editor.remove_field(OrderMail, safe)


def test_the_previous_release_inserts_mails_and_payments_without_the_new_columns() -> None:
    """The columns added since the release of 25 November have a database default."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name, column_default FROM information_schema.columns"
            " WHERE (table_name, column_name) IN (('checkout_ordermail', 'subject'),"
            " ('checkout_ordermail', 'body'), ('payments_payment', 'checks_done'))"
        )
        defaults = {(table, column): default for table, column, default in cursor.fetchall()}
    assert defaults[("checkout_ordermail", "subject")].startswith("''")
    assert defaults[("checkout_ordermail", "body")].startswith("''")
    assert defaults[("payments_payment", "checks_done")] == "0"


def test_migrate_tries_again_a_migration_that_could_not_take_its_lock(
    caplog: pytest.LogCaptureFixture, settings: object
) -> None:
    """A long transaction holds the mails' table for 3 s: the migration's ALTER TABLE gives up
    after the 2 s lock timeout (the shop's requests behind it are not held longer), and
    `migrate` applies it again once the table is free."""
    call_command("migrate", "checkout", "0008", verbosity=0)
    held, release = threading.Event(), threading.Event()

    def hold_the_table() -> None:
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute("LOCK TABLE checkout_ordermail IN ACCESS SHARE MODE")
                held.set()
                release.wait(3)
                cursor.execute("COMMIT")
        finally:
            other.close()

    holder = threading.Thread(target=hold_the_table)
    holder.start()
    assert held.wait(10)
    started = time.monotonic()
    try:
        with caplog.at_level(logging.WARNING, "payments.management.commands.migrate"):
            call_command("migrate", "checkout", "0009", verbosity=0)
    finally:
        release.set()
        holder.join()
    assert time.monotonic() - started >= 2
    assert "a lock was not taken within 2s" in caplog.text
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM django_migrations WHERE app = 'checkout'"
            " AND name = '0009_database_defaults'"
        )
        assert cursor.fetchone() is not None
    call_command("migrate", verbosity=0)
