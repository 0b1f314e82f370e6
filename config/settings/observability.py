"""What the shop tells about itself (LOG_*, SENTRY_*, METRICS_*).

Request ids, logs, error reports and metrics.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django_guid.integrations import CeleryIntegration

from config.settings.env import Production, env_str

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

# --- Logs -------------------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "console": {
            "()": "config.logging.console_formatter",
            "log_format": env_str(
                "LOG_FORMAT",
                "text",
                doc="`json`: one JSON object a line with time, level, logger, message and "
                "request id, for a log collector (gunicorn's own lines too); `text`: one "
                "readable line a record.",
            ),
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
    "root": {
        "handlers": ["console"],
        "level": env_str("LOG_LEVEL", "INFO", doc="The root log level."),
    },
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
# Scrubbed as the logs are.
SENTRY_DSN = env_str(
    "SENTRY_DSN",
    doc="The Sentry project's DSN (`https://<key>@<host>/<project>`, Sentry's own service or a "
    "self-hosted one); once set, the web processes, the Celery workers and the management "
    'commands report their errors there, scrubbed as the logs are (docs/deployment.md, "Error '
    'reports"). Unset: no error reports.',
    production=Production.SHOULD_SET,
)
SENTRY_ENVIRONMENT = env_str(
    "SENTRY_ENVIRONMENT",
    doc="The environment the reports are filed under (`staging`, `production`); unset, "
    "Sentry's default, `production`.",
)
SENTRY_RELEASE = env_str(
    "SENTRY_RELEASE",
    doc="The version deployed (a tag or commit), so that a report says which release it came "
    "from; unset, the checkout's git commit if any.",
)
try:
    SENTRY_TRACES_SAMPLE_RATE = float(
        env_str(
            "SENTRY_TRACES_SAMPLE_RATE",
            "0",
            doc="From 0 to 1: the share of requests and tasks also sent as performance traces; "
            "0 sends errors only.",
        )
    )
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
METRICS_TOKEN = env_str(
    "METRICS_TOKEN",
    doc="The bearer token `/metrics` asks for (`Authorization: Bearer <token>`); unset, "
    "`/metrics` answers 404. A long random value (`python -c 'import secrets; "
    "print(secrets.token_urlsafe(32))'`), shared with Prometheus only.",
    production=Production.SHOULD_SET,
)
# prometheus-client reads it itself, and writes its files there as soon as the apps define their
# metrics: the directory must exist.
if _metrics_dir := env_str(
    "PROMETHEUS_MULTIPROC_DIR",
    doc="A directory every shop process of the machine (gunicorn, Celery workers, beat) counts "
    "into, so that `/metrics` shows their sums; created if missing. In production, the same for "
    "all of a machine's processes, on a tmpfs emptied when they all start (e.g. systemd's "
    "`RuntimeDirectory=`). Unset, `/metrics` shows only the answering process's counters.",
    production=Production.SHOULD_SET,
):
    Path(_metrics_dir).mkdir(parents=True, exist_ok=True)
# The gauges read from the database are computed at most this often (seconds), however many
# scrapers ask.
METRICS_DB_GAUGES_CACHE_SECONDS = 15
# How often beat queues the heartbeat task on each queue (monitoring.heartbeats; the
# ShopWorkerSilent alert waits 3 minutes).
METRICS_HEARTBEAT_EVERY = 30
