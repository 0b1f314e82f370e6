"""Production settings: nothing insecure by default, and no start without what production needs.

Every problem with the environment is reported at once, each naming its variable, before the
first request: a PostgreSQL database, Redis, a real secret key, the public hosts and address, the
provider's address and credentials, and a long webhook token. docs/settings.md lists every
variable (those marked "must set" are the ones checked here).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from config.logging import LOG_FORMATS
from config.settings import base
from config.settings.base import *
from config.settings.env import Production, env_bool, env_int, env_list, env_str

_problems: list[str] = []

DEBUG = False

# Django's deploy check asks for 50+ characters with some variety; so does the shop.
SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-"):
    _problems.append(
        "DJANGO_SECRET_KEY must be set to a random value of at least 50 characters (e.g. "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))')."
    )

# The shop locks rows (SELECT ... FOR UPDATE SKIP LOCKED) and runs several processes: PostgreSQL.
# SQLite only when explicitly allowed (a single-machine trial), never by a forgotten variable.
_engine = base.DATABASES["default"]["ENGINE"]
_sqlite_allowed = env_bool(
    "DJANGO_ALLOW_SQLITE",
    False,
    doc="`true` lets production run on SQLite (a one-machine trial only).",
)
if _engine != "django_zero_downtime_migrations.backends.postgres" and not (
    _engine == "django.db.backends.sqlite3" and _sqlite_allowed
):
    _problems.append(
        "DATABASE_URL must point at PostgreSQL (postgres://user:password@host:5432/name); "
        "SQLite only with DJANGO_ALLOW_SQLITE=true."
    )

# Redis is the broker, the cache, the rate limits' counter and the webhooks' coalescing marker.
if not base.REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    _problems.append("REDIS_URL must point at Redis (redis://host:6379/0 or rediss://...).")

# The cache is django-redis, which django-ratelimit knows to count atomically: nothing silenced.
SILENCED_SYSTEM_CHECKS: list[str] = []

# Hosts: no default that could be wrong in production.
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", [])
if not ALLOWED_HOSTS:
    _problems.append("DJANGO_ALLOWED_HOSTS must list the shop's host names (comma-separated).")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# The shop's public address: the provider sends its notifications there.
SHOP_BASE_URL = env_str("SHOP_BASE_URL").rstrip("/")
if urlsplit(SHOP_BASE_URL).scheme != "https" or not urlsplit(SHOP_BASE_URL).netloc:
    _problems.append(
        "SHOP_BASE_URL must be the shop's public https:// address (the provider's notifications "
        "are sent there)."
    )

# The provider: named explicitly (the default is the local sandbox), with its credentials
# (base.py derives the access token from the two keys).
if urlsplit(env_str("PAYMENTS_API_BASE_URL")).scheme not in ("https", "http"):
    _problems.append(
        "PAYMENTS_API_BASE_URL must be set to the card payments service's API address."
    )
if not base.PAYMENTS_PUBLIC_KEY:
    _problems.append("PAYMENTS_PUBLIC_KEY must be set (the provider's public API key).")
if not (env_str("PAYMENTS_ACCESS_TOKEN") or env_str("PAYMENTS_SECRET_KEY")):
    _problems.append(
        "PAYMENTS_SECRET_KEY (or PAYMENTS_ACCESS_TOKEN) must be set: the provider's secret "
        "credential, used by the shop's server only."
    )

# The secret part of the webhook URL: long enough not to be guessed, and a plain path segment.
if not re.fullmatch(r"[A-Za-z0-9_-]{32,}", base.PAYMENTS_WEBHOOK_TOKEN):
    _problems.append(
        "PAYMENTS_WEBHOOK_TOKEN must be at least 32 characters of letters, digits, '-' or '_' "
        "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')."
    )

# HTTPS only. Behind a proxy that terminates TLS, the header it sets says the request was https:
# DJANGO_SECURE_PROXY_SSL_HEADER is its META key, optionally with the value ("NAME=value",
# "https" by default); empty when gunicorn itself is reached over TLS.
_proxy_header = env_str(
    "DJANGO_SECURE_PROXY_SSL_HEADER",
    "HTTP_X_FORWARDED_PROTO",
    doc='The request `META` key of the header by which the TLS proxy says "https" '
    "(`NAME=value`, value `https` by default); empty if gunicorn itself receives TLS. Only "
    "trustworthy if the proxy always sets or strips it.",
)
if _proxy_header:
    _name, _, _value = _proxy_header.partition("=")
    if not re.fullmatch(r"HTTP_[A-Z0-9_]+", _name):
        _problems.append(
            "DJANGO_SECURE_PROXY_SSL_HEADER must be a request META key such as "
            "HTTP_X_FORWARDED_PROTO (optionally =value), or empty."
        )
    SECURE_PROXY_SSL_HEADER = (_name, _value or "https")
else:
    SECURE_PROXY_SSL_HEADER = None
SECURE_SSL_REDIRECT = env_bool(
    "DJANGO_SECURE_SSL_REDIRECT",
    True,
    doc="Redirect http to https (`/healthz`, `/healthz/deps`, `/readyz` and `/metrics` are "
    "exempt).",
)
# Probes reach the process directly over plain HTTP; they must not be redirected.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^healthz/deps$", r"^readyz$"]
SECURE_HSTS_SECONDS = env_int(
    "DJANGO_SECURE_HSTS_SECONDS",
    31536000,
    doc="The `Strict-Transport-Security` max-age (seconds).",
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool(
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS",
    True,
    doc="HSTS for subdomains too (turning it off makes `check --deploy` warn).",
)
SECURE_HSTS_PRELOAD = env_bool(
    "DJANGO_SECURE_HSTS_PRELOAD",
    True,
    doc="HSTS preload-list eligibility (turning it off makes `check --deploy` warn).",
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "strict-origin-when-cross-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SECURE = True
LANGUAGE_COOKIE_SECURE = True
LANGUAGE_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# Prometheus scrapes /metrics from the private network straight from the process, like the
# probes (its bearer token, METRICS_TOKEN, is its protection; docs/monitoring/README.md).
SECURE_REDIRECT_EXEMPT = [*SECURE_REDIRECT_EXEMPT, r"^metrics$"]

# Static files: collected (`manage.py collectstatic`), hashed names cached forever, compressed,
# served by whitenoise from STATIC_ROOT.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# Mail (order confirmations, managers' warnings) over SMTP once EMAIL_HOST is set; without it
# the base settings' backend applies (the console: mail is written to the standard output).
EMAIL_HOST = env_str(
    "EMAIL_HOST",
    doc="The SMTP server; once set, production sends mail over SMTP. Without it mail is "
    "written to the standard output (the console backend), customer addresses included.",
    production=Production.SHOULD_SET,
)
if EMAIL_HOST:
    EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
    EMAIL_PORT = env_int("EMAIL_PORT", 587, doc="The SMTP server's port.")
    EMAIL_HOST_USER = env_str(
        "EMAIL_HOST_USER", doc="The SMTP user.", production=Production.SHOULD_SET
    )
    EMAIL_HOST_PASSWORD = env_str(
        "EMAIL_HOST_PASSWORD",
        doc="The SMTP password (redacted from logs).",
        production=Production.SHOULD_SET,
    )
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True, doc="STARTTLS to the SMTP server.")
    EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, doc="Seconds an SMTP connection may take.")

# One JSON object a line by default, for the log collector; LOG_FORMAT=text for people.
LOG_FORMAT = env_str("LOG_FORMAT", "json")
if LOG_FORMAT not in LOG_FORMATS:
    _problems.append(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}.")
LOGGING = {
    **base.LOGGING,
    "formatters": {
        "console": {"()": "config.logging.console_formatter", "log_format": LOG_FORMAT},
    },
}

if _problems:
    raise ImproperlyConfigured("Production settings are incomplete:\n- " + "\n- ".join(_problems))
