"""`manage.py migrate`, as Django's, applied while the previous release keeps serving
(docs/deployment.md, "Upgrading"):

- on PostgreSQL, every statement of the run waits at most MIGRATIONS_LOCK_TIMEOUT for a lock and
  runs at most MIGRATIONS_STATEMENT_TIMEOUT (django-pg-zero-downtime-migrations lifts the limit for
  the lock-free long ones, such as CREATE INDEX CONCURRENTLY);
- a migration that could not take its lock in time (the table busy with a long transaction) is
  tried again after a pause that doubles, with jitter, up to MIGRATIONS_LOCK_RETRIES times: the
  backend applies migrations idempotently, so a try picks up where the last one stopped;
- the shop's migrations after the release of 25 November (`RULE_FROM`) must keep the previous
  release working: an operation that would stop it (a NOT NULL column without a database
  default, a renamed column or table, a changed column type) is refused. The migrations before
  it, and those of Django and other libraries, are applied as they are.
"""

from __future__ import annotations

import logging
import random
import time
import warnings
from typing import Any

from django.conf import settings
from django.core.management.commands import migrate
from django.db import OperationalError, connections
from django.db.migrations import Migration
from django_zero_downtime_migrations.backends.postgres.schema import UnsafeOperationWarning

logger = logging.getLogger(__name__)

# The last migration of each of the shop's apps in the release of 25 November (7e974cc), the
# first release the rule keeps working during an upgrade: the later ones follow the rule.
RULE_FROM = {
    "checkout": "0003_reservations_and_mails",
    "payments": "0009_verbose_names",
    "webhooks": "0002_verbose_names",
    "staff_signin": "0000",  # every one of its migrations
    # Every migration of books (a new app: its first one too).
    "books": "0000",
}
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for a lock_timeout that ran out


def follows_the_rule(migration: Migration) -> bool:
    """Whether `migration` must keep the previous release working (the shop's, after RULE_FROM)."""
    last_before = RULE_FROM.get(migration.app_label)
    return last_before is not None and migration.name > last_before


def lock_not_taken(error: BaseException) -> bool:
    cause = error.__cause__
    return getattr(cause, "sqlstate", None) == LOCK_NOT_AVAILABLE


class Command(migrate.Command):
    help = (
        "Updates the database schema while the previous release serves: short lock and statement "
        "timeouts, tried again when a lock is not taken in time, unsafe operations refused."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        connection = connections[options["database"]]
        tries = 0
        while True:
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT set_config('lock_timeout', %s, false), "
                        "set_config('statement_timeout', %s, false)",
                        [
                            settings.ZERO_DOWNTIME_MIGRATIONS_LOCK_TIMEOUT,
                            settings.ZERO_DOWNTIME_MIGRATIONS_STATEMENT_TIMEOUT,
                        ],
                    )
            try:
                with warnings.catch_warnings():
                    # Only the migrations before the rule may be unsafe: they are applied as
                    # they are (those after it raise instead of warning).
                    warnings.simplefilter("ignore", UnsafeOperationWarning)
                    super().handle(*args, **options)
                return
            except OperationalError as exc:
                tries += 1
                if not lock_not_taken(exc) or tries > settings.MIGRATIONS_LOCK_RETRIES:
                    raise
                pause = min(2.0 ** (tries - 1), settings.MIGRATIONS_LOCK_RETRY_MAX_WAIT)
                pause *= random.uniform(0.5, 1.0)
                logger.warning(
                    "migrate: a lock was not taken within %s (%s); trying again in %.1f s "
                    "(%d of %d)",
                    settings.ZERO_DOWNTIME_MIGRATIONS_LOCK_TIMEOUT,
                    str(exc).strip(),
                    pause,
                    tries,
                    settings.MIGRATIONS_LOCK_RETRIES,
                )
                time.sleep(pause)
            finally:
                if connection.vendor == "postgresql" and connection.connection is not None:
                    with connection.cursor() as cursor:
                        cursor.execute("RESET lock_timeout")
                        cursor.execute("RESET statement_timeout")

    def migration_progress_callback(
        self, action: str, migration: Migration | None = None, fake: bool = False
    ) -> None:
        if action == "apply_start" and migration is not None:
            # Read by the backend's schema editor, which each migration gets anew.
            settings.ZERO_DOWNTIME_MIGRATIONS_RAISE_FOR_UNSAFE = follows_the_rule(migration)
        super().migration_progress_callback(action, migration, fake)
