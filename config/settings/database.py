"""The database and its migrations (DATABASE_*, MIGRATIONS_*).

SQLite for the demo when nothing is configured, PostgreSQL in production; how migrations take
their locks while the previous release still serves; what the pages answer while the database
cannot be reached.
"""

from __future__ import annotations

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.settings.env import Production, env_int, env_str
from config.settings.shop import VAR_DIR

# SQLite for the demo when nothing is configured, PostgreSQL (or any URL) when set.
_database_url = env_str(
    "DATABASE_URL",
    f"sqlite:///{VAR_DIR / 'shop.sqlite3'}",
    doc="The shop's database: `postgres://user:password@host:5432/name` (the production "
    "settings refuse anything but PostgreSQL unless `DJANGO_ALLOW_SQLITE` says otherwise).",
    production=Production.MUST_SET,
    shown_default="SQLite in `SHOP_VAR_DIR` (`var/shop.sqlite3`)",
)
DATABASES = {
    "default": dj_database_url.parse(
        _database_url,
        conn_max_age=env_int(
            "DATABASE_CONN_MAX_AGE",
            60,
            doc="Seconds a database connection is kept for the next request or task; 0 behind "
            "PgBouncer in transaction mode.",
        ),
        conn_health_checks=True,
    )
    if _database_url
    else {}
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
# PostgreSQL through django-pg-zero-downtime-migrations: the same backend for queries, and for
# migrations one that keeps the running release serving (docs/deployment.md, "Upgrading"). Every
# statement that takes a table lock waits at most MIGRATIONS_LOCK_TIMEOUT for it and runs at most
# MIGRATIONS_STATEMENT_TIMEOUT (the long, lock-free ones, such as CREATE INDEX CONCURRENTLY, have
# no limit); a migration that could not take its lock is tried again by `manage.py migrate`
# (payments/management/commands/migrate.py). An operation that would stop the previous release
# (a NOT NULL column without a database default, a renamed column or table, a changed column
# type) is refused, in tests as in production; what is applied is idempotent, so a migration
# interrupted half-way is applied again from where it stopped.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "django_zero_downtime_migrations.backends.postgres"
ZERO_DOWNTIME_MIGRATIONS_LOCK_TIMEOUT = env_str(
    "MIGRATIONS_LOCK_TIMEOUT",
    "2s",
    doc="The longest a migration's statement waits for a table lock before it gives up (the "
    "shop's requests queued behind it wait no longer); `migrate` then tries again "
    '(docs/deployment.md, "Upgrading").',
)
ZERO_DOWNTIME_MIGRATIONS_STATEMENT_TIMEOUT = env_str(
    "MIGRATIONS_STATEMENT_TIMEOUT",
    "5s",
    doc="The longest a migration's locking statement runs (lock-free long ones, such as "
    "`CREATE INDEX CONCURRENTLY`, have no limit).",
)
ZERO_DOWNTIME_MIGRATIONS_FLEXIBLE_STATEMENT_TIMEOUT = True
ZERO_DOWNTIME_MIGRATIONS_RAISE_FOR_UNSAFE = True
ZERO_DOWNTIME_MIGRATIONS_IDEMPOTENT_SQL = True
# How many times `migrate` tries again a migration that could not take its lock in time, and
# the longest pause between two tries (seconds; it doubles from 1 s, with jitter).
MIGRATIONS_LOCK_RETRIES = 10
MIGRATIONS_LOCK_RETRY_MAX_WAIT = 30
# While the database cannot be reached, the pages, the JSON endpoints and the admin answer 503
# (core/error_pages.py); a connection is tried again at each request, so they serve again as soon
# as it is back.
DATABASE_RETRY_AFTER = env_int(
    "DATABASE_RETRY_AFTER",
    5,
    doc="Seconds in the `Retry-After` of the `503` answered while the database cannot be "
    "reached (at least 1).",
)
if DATABASE_RETRY_AFTER < 1:
    raise ImproperlyConfigured("DATABASE_RETRY_AFTER must be at least 1")
