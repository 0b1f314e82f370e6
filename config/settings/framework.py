"""The framework's settings: the apps, the middleware, the templates, the database and how
migrations take their locks (the first part of `config.settings.base`)."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.settings.env import (
    env_bool,
    env_int,
    env_list,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("SHOP_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = env_str("DJANGO_SECRET_KEY")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # Django's admin, whose site asks every staff member for a second factor (staff_signin).
    "staff_signin.apps.StaffAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "csp",
    "django_ratelimit",
    "django_guid",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "staff_signin",
    "staff_actions",
    "payments",
    "checkout",
    "webhooks",
    "books",
    "dashboard",
    "monitoring",
]

MIDDLEWARE = [
    # First: every response carries the request id, and every log line of the request (django-guid,
    # after the shop's check of the caller's id: "Request ids" below).
    "core.request_id.IncomingRequestIdCheck",
    "django_guid.middleware.guid_middleware",
    "django.middleware.security.SecurityMiddleware",
    "core.security.ShopCSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # request.user.is_verified(): the session was signed in with a second factor.
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_ratelimit.middleware.RatelimitMiddleware",
    # The storefront's door on a sale day: shoppers past its capacity wait their turn.
    "checkout.middleware.AdmissionMiddleware",
]

# A shopper's session in its signed cookie (no query to read or write it), a signed-in staff
# member's in the database (core/sessions.py).
SESSION_ENGINE = "core.sessions"

ROOT_URLCONF = "config.urls"
# A form refused by the CSRF check gets the shop's own page, in the visitor's language.
CSRF_FAILURE_VIEW = "core.error_pages.csrf_failure"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: SQLite for the demo when nothing is configured, PostgreSQL (or any URL) when set.
DATABASES = {
    "default": dj_database_url.config(
        env="DATABASE_URL",
        default=f"sqlite:///{VAR_DIR / 'shop.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
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
ZERO_DOWNTIME_MIGRATIONS_LOCK_TIMEOUT = env_str("MIGRATIONS_LOCK_TIMEOUT", "2s")
ZERO_DOWNTIME_MIGRATIONS_STATEMENT_TIMEOUT = env_str("MIGRATIONS_STATEMENT_TIMEOUT", "5s")
ZERO_DOWNTIME_MIGRATIONS_FLEXIBLE_STATEMENT_TIMEOUT = True
ZERO_DOWNTIME_MIGRATIONS_RAISE_FOR_UNSAFE = True
ZERO_DOWNTIME_MIGRATIONS_IDEMPOTENT_SQL = True
# How many times `migrate` tries again a migration that could not take its lock in time, and
# the longest pause between two tries (seconds; it doubles from 1 s, with jitter).
MIGRATIONS_LOCK_RETRIES = env_int("MIGRATIONS_LOCK_RETRIES", 10)
MIGRATIONS_LOCK_RETRY_MAX_WAIT = env_int("MIGRATIONS_LOCK_RETRY_MAX_WAIT", 30)
# While the database cannot be reached, the pages, the JSON endpoints and the admin answer 503
# with this Retry-After (seconds), never a server error (core/error_pages.py); a connection is
# tried again at each request, so they serve again as soon as it is back.
DATABASE_RETRY_AFTER = env_int("DATABASE_RETRY_AFTER", 5)
if DATABASE_RETRY_AFTER < 1:
    raise ImproperlyConfigured("DATABASE_RETRY_AFTER must be at least 1")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
