"""Database connections are kept from one unit of work to the next: the shop's Celery worker
keeps a slot's connection between tasks (as gunicorn's threads keep theirs between requests)
and the sandbox's server threads keep theirs between requests, each for CONN_MAX_AGE seconds."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery.fixups.django import DjangoWorkerFixup
from django.conf import settings
from django.db import connection, transaction

from config.celery import app
from tests.helpers.settings import settings_of
from webhooks.tasks import webhook_relay_task

SANDBOX_PROBE = """
import json, django
from django.conf import settings
django.setup()
database = settings.DATABASES["default"]
print(json.dumps({
    "engine": database["ENGINE"],
    "max_age": database["CONN_MAX_AGE"],
    "health_checks": database["CONN_HEALTH_CHECKS"],
}))
"""


def sandbox_database(tmp_path: Path, **env: str) -> dict[str, object]:
    return settings_of("sandbox.settings", tmp_path, probe=SANDBOX_PROBE, **env)


def test_the_sandbox_keeps_its_postgresql_connections(tmp_path: Path) -> None:
    url = "postgres://postgres@127.0.0.1:5432/sandbox_probe"
    assert sandbox_database(tmp_path, SANDBOX_DATABASE_URL=url) == {
        "engine": "django.db.backends.postgresql",
        "max_age": 60,
        "health_checks": True,
    }
    kept = sandbox_database(tmp_path, SANDBOX_DATABASE_URL=url, SANDBOX_DATABASE_CONN_MAX_AGE="5")
    assert kept["max_age"] == 5


def test_the_sandbox_on_sqlite_opens_a_connection_per_request(tmp_path: Path) -> None:
    database = sandbox_database(tmp_path)
    assert (database["engine"], database["max_age"]) == ("django.db.backends.sqlite3", 0)


def test_celerys_django_fixup_reuses_a_workers_connection() -> None:
    """Without CELERY_DB_REUSE_MAX, Celery's fixup closes the connection before and after
    every task; with it, the connection survives tasks."""
    fixup = DjangoWorkerFixup(app)
    assert fixup.db_reuse_max == settings.CELERY_DB_REUSE_MAX >= 100


@pytest.mark.django_db(transaction=True)
def test_the_fixups_task_signals_leave_a_fresh_connection_open() -> None:
    fixup = DjangoWorkerFixup(app)
    connection.ensure_connection()
    opened = connection.connection
    for _ in range(10):
        fixup.on_task_prerun(sender=webhook_relay_task)
        fixup.on_task_postrun(sender=webhook_relay_task)
    assert connection.connection is opened


@pytest.mark.django_db(transaction=True)
def test_a_task_run_eagerly_inside_a_transaction_leaves_the_transaction_alone() -> None:
    """A task applied in the caller's thread must not close the caller's connection, least of
    all in the middle of its transaction."""
    with transaction.atomic():
        connection.ensure_connection()
        opened = connection.connection
        webhook_relay_task.apply()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            assert cursor.fetchone() == (1,)
        assert connection.connection is opened
        assert not connection.needs_rollback
