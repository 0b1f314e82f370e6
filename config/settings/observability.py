"""What the shop tells about itself: request ids, mail to staff, logging, error reports and
metrics."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django_guid.integrations import CeleryIntegration

from config.settings.env import (
    env_int,
    env_list,
    env_str,
)
from config.settings.shop import *

# --- Request ids ------------------------------------------------------------------------------
# django-guid (core/request_id.py): the caller's X-Request-ID when core.request_id accepts it
# (8 to 64 letters, digits, '.', '_', '-'; django-guid's own check would keep UUIDs only), else a
# new one; answered in X-Request-ID; carried to the Celery tasks queued under it (and their
# retries), whose log lines and provider calls carry it; a task from beat gets a new one.
DJANGO_GUID = {
    "GUID_HEADER_NAME": "X-Request-ID",
    "VALIDATE_GUID": False,  # core.request_id.IncomingRequestIdCheck has checked it
    "RETURN_HEADER": True,
    "EXPOSE_HEADER": False,  # no cross-origin reader
    # Workers log through LOGGING (its redaction and format), as the web processes do.
    "INTEGRATIONS": [CeleryIntegration(use_django_logging=True)],
}

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "pedidos@tienda.example")
SERVER_EMAIL = env_str("SERVER_EMAIL", DEFAULT_FROM_EMAIL)
# Staff who get operational mail (authorizations about to expire), comma-separated addresses.
MANAGERS = [("", address) for address in env_list("SHOP_MANAGERS", [])]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        # LOG_FORMAT: "text", one readable line a record (the demo), or "json", one JSON object
        # a line with time, level, logger, message, request_id (the production default).
        "console": {
            "()": "config.logging.console_formatter",
            "log_format": env_str("LOG_FORMAT", "text"),
        },
    },
    "filters": {
        "request_id": {"()": "core.request_id.RequestIdFilter"},
        "redact": {"()": "config.logging.RedactSecrets"},
        "webhook_request": {"()": "config.logging.WebhookRequestRedacted"},
        "database_unavailable": {"()": "config.logging.DatabaseUnavailableWarning"},
        "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "console",
            "filters": ["request_id", "redact"],
        },
        "mail_admins": {
            "level": "ERROR",
            "class": "config.logging.RedactingAdminEmailHandler",
            "filters": ["require_debug_false", "redact"],
        },
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's own console handler writes unredacted: its records go to ours (via root).
        "django": {"handlers": ["mail_admins"], "level": "INFO", "propagate": True},
        # The development server's request lines carry paths, and the webhook path a secret.
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # django-guid says at INFO how it got each id: noise.
        "django_guid": {"level": "WARNING"},
        # "Not Found: <path>" for a wrong webhook token: redacted before any handler sees it.
        # A 503 for a database that cannot be reached: one warning line, not a traceback each.
        "django.request": {"filters": ["database_unavailable", "webhook_request", "redact"]},
    },
}
DEFAULT_EXCEPTION_REPORTER_FILTER = "config.logging.AlwaysSafeExceptionReporterFilter"

# --- Error reports ------------------------------------------------------------------------------
# Sentry (config/logging/error_reports.py) when SENTRY_DSN is set, from every process that loads
# these settings: the web processes, the Celery workers and manage.py (the sandbox has its own).
# Scrubbed as the logs are. SENTRY_ENVIRONMENT and SENTRY_RELEASE name where and which version an
# error came from (empty: Sentry's defaults, "production" and the checkout's git commit if any);
# SENTRY_TRACES_SAMPLE_RATE, from 0 (the default: errors only) to 1, is the share of requests and
# tasks also sent as performance traces.
SENTRY_DSN = env_str("SENTRY_DSN")
SENTRY_ENVIRONMENT = env_str("SENTRY_ENVIRONMENT")
SENTRY_RELEASE = env_str("SENTRY_RELEASE")
try:
    SENTRY_TRACES_SAMPLE_RATE = float(env_str("SENTRY_TRACES_SAMPLE_RATE", "0"))
except ValueError:
    SENTRY_TRACES_SAMPLE_RATE = -1.0
if not 0 <= SENTRY_TRACES_SAMPLE_RATE <= 1:
    raise ImproperlyConfigured("SENTRY_TRACES_SAMPLE_RATE must be a number from 0 to 1")
if SENTRY_DSN:
    from config.logging.error_reports import error_reports_start

    error_reports_start(
        dsn=SENTRY_DSN,
        environment=SENTRY_ENVIRONMENT,
        release=SENTRY_RELEASE,
        traces_sample_rate=SENTRY_TRACES_SAMPLE_RATE,
    )

# --- Metrics (monitoring/metrics.py; docs/monitoring/README.md) --------------------------------
# /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`; unset, it answers 404.
# PROMETHEUS_MULTIPROC_DIR (read by prometheus-client itself) makes the counters those of every
# process writing into that directory (gunicorn's and Celery's workers on the machine).
METRICS_TOKEN = env_str("METRICS_TOKEN")
# prometheus-client writes its files there as soon as the apps define their metrics.
if _metrics_dir := env_str("PROMETHEUS_MULTIPROC_DIR"):
    Path(_metrics_dir).mkdir(parents=True, exist_ok=True)
# The gauges read from the database are computed at most this often (seconds), however many
# scrapers ask.
METRICS_DB_GAUGES_CACHE_SECONDS = env_int("METRICS_DB_GAUGES_CACHE_SECONDS", 15)
# How often beat queues the heartbeat task on each queue (monitoring.heartbeats).
METRICS_HEARTBEAT_EVERY = env_int("METRICS_HEARTBEAT_EVERY", 30)
if METRICS_DB_GAUGES_CACHE_SECONDS < 0 or METRICS_HEARTBEAT_EVERY < 1:
    raise ImproperlyConfigured(
        "METRICS_DB_GAUGES_CACHE_SECONDS must be at least 0 and METRICS_HEARTBEAT_EVERY at least 1"
    )
# Every request counted and timed, the following middleware's time included (after the
# request id's, which stays first).
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.security.SecurityMiddleware"),
    "monitoring.metrics.RequestMetricsMiddleware",
)
CELERY_INCLUDE = ["monitoring.heartbeats"]
CELERY_BEAT_SCHEDULE.update(
    {
        f"metrics-heartbeat-{queue}": {
            "task": "config.heartbeats.heartbeat_task",
            "schedule": float(METRICS_HEARTBEAT_EVERY),
            "options": {"queue": queue, "expires": 600},
        }
        for queue in CELERY_TASK_QUEUES
    }
)
