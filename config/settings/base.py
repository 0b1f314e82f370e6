"""Settings shared by every environment; everything that varies comes from the environment."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django_guid.integrations import CeleryIntegration

from config.settings.env import (
    basic_access_token,
    env_bool,
    env_decimal,
    env_int,
    env_int_list,
    env_list,
    env_str,
)
from core.security import content_security_policy

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("SHOP_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = env_str("DJANGO_SECRET_KEY")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
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
    "staff_actions",
    "payments",
    "checkout",
    "webhooks",
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
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_ratelimit.middleware.RatelimitMiddleware",
]

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

# Redis as broker and cache when REDIS_URL is set; otherwise an embedded broker
# (kombu's filesystem transport, written atomically) and a file cache, so the demo needs no server.
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        # An unacknowledged task (its worker died) is delivered again after this long; it must
        # exceed the longest retry countdown.
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
        "socket_connect_timeout": 2,
    }
    CACHES = {
        "default": {
            # django-redis keeps one Redis client per process; Django's own backend builds a
            # new one for every call, which cost the webhook receiver a third of its CPU (bench/).
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "shop"),
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 2},
        }
    }
else:
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_URL = "filesystem://"
    # kombu's filesystem transport, with messages written atomically (config/celery/demo_broker.py).
    CELERY_BROKER_TRANSPORT = "config.celery.demo_broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True  # tasks are idempotent: a lost worker's task runs again
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes a worker's database connection before and after every task unless
# this is set, so each task would open a new one (a new PostgreSQL backend each). With it, the
# fixup closes a slot's connection only every this many tasks, and `config.celery` drops it
# sooner when it is older than DATABASE_CONN_MAX_AGE or broken, as Django does around a request.
CELERY_DB_REUSE_MAX = 1000
# --- Broker resilience ----------------------------------------------------------------------------
# A worker rides out a Redis outage in its own process: it retries the connection for as long as
# Redis is away (on start and after a loss), and its channels are kombu's Redis transport with one
# guard (config/celery/redis_broker.py): with celery 5.7.0 and kombu 5.7.0, a worker holding tasks
# when Redis disappeared could exit with "Unrecoverable error: AttributeError("'NoneType' object
# has no attribute 'hostname'")" while reconnecting (the failure of kombu#582, reached through the
# second close of the lost connection). Not for rediss://: kombu takes TLS from that scheme's name.
# Workers still run under a supervisor (docs/deploy/) for whatever else may end them.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
if REDIS_URL.startswith("redis://"):
    CELERY_BROKER_TRANSPORT = "config.celery.redis_broker:Transport"
# --------------------------------------------------------------------------------------------------
# Three queues, so that a slow provider holds up only the work that waits on it: its writes
# (creates, captures, cancels, refunds: a brownout of creates), its reads (refreshes, the
# webhooks' refetch, reconciliation) and the shop's own tasks (order sync, stock, mails, relays).
# Each has workers of its own in production (docs/deployment.md); a worker started without -Q
# takes all three. Tasks not named here are the shop's own.
CELERY_QUEUE_PROVIDER_WRITES = "provider_writes"
CELERY_QUEUE_PROVIDER_READS = "provider_reads"
CELERY_QUEUE_SHOP = "shop"
CELERY_TASK_DEFAULT_QUEUE = CELERY_QUEUE_SHOP
CELERY_TASK_QUEUES = {
    name: {"exchange": name, "routing_key": name}
    for name in (CELERY_QUEUE_PROVIDER_WRITES, CELERY_QUEUE_PROVIDER_READS, CELERY_QUEUE_SHOP)
}
_PROVIDER_WRITES = (
    "payments.tasks.payment_send_create_task",
    "payments.tasks.payment_confirm_create_task",
    "payments.tasks.staff_action_run_task",
    "checkout.tasks.order_release_duplicates_task",
)
_PROVIDER_READS = (
    "payments.tasks.payment_refresh_task",
    "payments.tasks.payments_reconcile_task",
    "payments.tasks.payments_check_task",
    "payments.tasks.authorizations_watch_task",
    "payments.tasks.payment_methods_refresh_task",
    "payments.tasks.provider_check_task",
    "webhooks.tasks.webhook_process_task",
)
CELERY_TASK_ROUTES = {
    name: {"queue": queue}
    for queue, names in (
        (CELERY_QUEUE_PROVIDER_WRITES, _PROVIDER_WRITES),
        (CELERY_QUEUE_PROVIDER_READS, _PROVIDER_READS),
    )
    for name in names
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # workers log through LOGGING (and its redaction)
CELERY_TIMEZONE = "UTC"
# How often beat runs the webhook relay and the payments' reconciliation (seconds); a run not
# started before the next one is due is dropped (`expires`), so a backlog never piles up.
WEBHOOKS_RELAY_EVERY = env_int("WEBHOOKS_RELAY_EVERY", 60)
PAYMENTS_RECONCILE_EVERY = env_int("PAYMENTS_RECONCILE_EVERY", 60)
# The provider read budget (payments/rereading/rules.py): reads of payments a minute, all of the
# shop's together. Reads for notifications, staff and shoppers' pages always go and are counted;
# the schedule (payments/rereading/rules.py) uses what they leave. 600 a minute is 10 a second,
# well under the rate limits card providers publish; README.md says up to which volume it keeps
# the schedule.
PAYMENTS_PROVIDER_READS_PER_MINUTE = env_int("PAYMENTS_PROVIDER_READS_PER_MINUTE", 600)
# The payments a check task reads one after the other: the reconciliation hands out the due
# ones in tasks of this many, which the provider-reads workers run side by side.
PAYMENTS_CHECKS_PER_TASK = env_int("PAYMENTS_CHECKS_PER_TASK", 25)
if (
    PAYMENTS_CHECKS_PER_TASK < 1
    or PAYMENTS_PROVIDER_READS_PER_MINUTE < 1
    or PAYMENTS_RECONCILE_EVERY < 1
):
    raise ImproperlyConfigured(
        "PAYMENTS_CHECKS_PER_TASK, PAYMENTS_PROVIDER_READS_PER_MINUTE and "
        "PAYMENTS_RECONCILE_EVERY must be at least 1"
    )
# How often beat queues again the creates waiting to be sent with no task on its way (seconds):
# an attempt stored while the broker was down is sent within this long of its coming back.
PAYMENTS_SEND_SWEEP_EVERY = env_int("PAYMENTS_SEND_SWEEP_EVERY", 30)
SHOP_ORDERS_SYNC_EVERY = env_int("SHOP_ORDERS_SYNC_EVERY", 60)
# How often beat reads the provider's payment methods catalogue into the shop's stored copy (the
# pages read only that), and calls the provider to stamp its health for /healthz/deps, which
# reports it degraded once no successful check is newer than three intervals.
PAYMENTS_METHODS_REFRESH_EVERY = env_int("PAYMENTS_METHODS_REFRESH_EVERY", 300)
PAYMENTS_PROVIDER_CHECK_EVERY = env_int("PAYMENTS_PROVIDER_CHECK_EVERY", 60)
if PAYMENTS_METHODS_REFRESH_EVERY < 1 or PAYMENTS_PROVIDER_CHECK_EVERY < 1:
    raise ImproperlyConfigured(
        "PAYMENTS_METHODS_REFRESH_EVERY and PAYMENTS_PROVIDER_CHECK_EVERY must be at least 1"
    )
# The admin's lists count at most this many rows (beyond, they say "more than ..."): a count
# over a year of orders would cost more than the page itself.
ADMIN_LIST_COUNT_LIMIT = env_int("ADMIN_LIST_COUNT_LIMIT", 1000)
if ADMIN_LIST_COUNT_LIMIT < 1:
    raise ImproperlyConfigured("ADMIN_LIST_COUNT_LIMIT must be at least 1")
# How long an order holds its items for its payment (minutes); not paid or authorized by then, it
# expires and they go back to stock: at once when a page reads the stock, else by beat every
# SHOP_RESERVATIONS_SWEEP_EVERY seconds.
SHOP_RESERVATION_MINUTES = env_int("SHOP_RESERVATION_MINUTES", 30)
SHOP_RESERVATIONS_SWEEP_EVERY = env_int("SHOP_RESERVATIONS_SWEEP_EVERY", 60)
if SHOP_RESERVATION_MINUTES < 1 or SHOP_RESERVATIONS_SWEEP_EVERY < 1:
    raise ImproperlyConfigured(
        "SHOP_RESERVATION_MINUTES and SHOP_RESERVATIONS_SWEEP_EVERY must be at least 1"
    )
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "webhooks-relay": {
        "task": "webhooks.tasks.webhook_relay_task",
        "schedule": float(WEBHOOKS_RELAY_EVERY),
        "options": {"expires": WEBHOOKS_RELAY_EVERY * 0.9},
    },
    "payments-reconcile": {
        "task": "payments.tasks.payments_reconcile_task",
        "schedule": float(PAYMENTS_RECONCILE_EVERY),
        "options": {"expires": PAYMENTS_RECONCILE_EVERY * 0.9},
    },
    # Payments written without a read schedule (by the release before it) get theirs, in
    # batches (payments.rereading.rules.schedule_unscheduled).
    "payments-schedule": {
        "task": "payments.tasks.payments_schedule_task",
        "schedule": 300.0,
        "options": {"expires": 270.0},
    },
    "payments-send-waiting": {
        "task": "payments.tasks.payments_send_waiting_task",
        "schedule": float(PAYMENTS_SEND_SWEEP_EVERY),
        "options": {"expires": PAYMENTS_SEND_SWEEP_EVERY * 0.9},
    },
    "orders-follow-payments": {
        "task": "checkout.tasks.orders_follow_payments_task",
        "schedule": float(SHOP_ORDERS_SYNC_EVERY),
        "options": {"expires": SHOP_ORDERS_SYNC_EVERY * 0.9},
    },
    "reservations-expire": {
        "task": "checkout.tasks.reservations_expire_task",
        "schedule": float(SHOP_RESERVATIONS_SWEEP_EVERY),
        "options": {"expires": SHOP_RESERVATIONS_SWEEP_EVERY * 0.9},
    },
    "authorizations-watch": {
        "task": "payments.tasks.authorizations_watch_task",
        "schedule": 3600.0,
        "options": {"expires": 3000},
    },
    "payment-methods-refresh": {
        "task": "payments.tasks.payment_methods_refresh_task",
        "schedule": float(PAYMENTS_METHODS_REFRESH_EVERY),
        "options": {"expires": PAYMENTS_METHODS_REFRESH_EVERY * 0.9},
    },
    "provider-check": {
        "task": "payments.tasks.provider_check_task",
        "schedule": float(PAYMENTS_PROVIDER_CHECK_EVERY),
        "options": {"expires": PAYMENTS_PROVIDER_CHECK_EVERY * 0.9},
    },
    # Staff actions whose task was lost (the broker was down, a worker died) are queued again.
    "staff-actions-requeue": {
        "task": "payments.tasks.staff_actions_requeue_task",
        "schedule": 60.0,
        "options": {"expires": 54},
    },
    # Mails whose send task was lost are queued again (checkout.services.mail).
    "order-mails-sweep": {
        "task": "checkout.tasks.order_mails_sweep_task",
        "schedule": 300.0,
        "options": {"expires": 270},
    },
    # Retention (docs/deployment.md, "Retention"): what is not a financial record is pruned
    # after a set time, in small batches, each run within a budget the next run continues from.
    "webhooks-prune": {
        "task": "webhooks.tasks.webhooks_prune_task",
        "schedule": 3600.0,
        "options": {"expires": 3000},
    },
    "mails-prune": {
        "task": "checkout.tasks.mails_prune_task",
        "schedule": 3600.0,
        "options": {"expires": 3000},
    },
    "sessions-prune": {
        "task": "checkout.tasks.sessions_prune_task",
        "schedule": 86400.0,
        "options": {"expires": 82800},
    },
}
# Retention: the sent mails' text (subject and plain-text body, shown to staff on the order) is
# blanked this many days after it was sent; the mail's row (kind, event, amounts, dates) stays.
SHOP_MAIL_KEEP_DAYS = env_int("SHOP_MAIL_KEEP_DAYS", 90)
# Each pruning statement deletes or blanks at most this many rows (a short lock, a short
# transaction), and a run stops after this many rows or seconds: the next run goes on.
SHOP_RETENTION_BATCH_SIZE = env_int("SHOP_RETENTION_BATCH_SIZE", 1000)
SHOP_RETENTION_RUN_ROWS = env_int("SHOP_RETENTION_RUN_ROWS", 100_000)
SHOP_RETENTION_RUN_SECONDS = env_int("SHOP_RETENTION_RUN_SECONDS", 60)
if min(SHOP_MAIL_KEEP_DAYS, SHOP_RETENTION_BATCH_SIZE, SHOP_RETENTION_RUN_ROWS) < 1:
    raise ImproperlyConfigured(
        "SHOP_MAIL_KEEP_DAYS, SHOP_RETENTION_BATCH_SIZE and SHOP_RETENTION_RUN_ROWS must be at "
        "least 1"
    )
if SHOP_RETENTION_RUN_SECONDS < 0:
    raise ImproperlyConfigured("SHOP_RETENTION_RUN_SECONDS must be 0 or more")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "es"
LANGUAGES = [("es", "Español"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "America/Mexico_City"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(BASE_DIR / "staticfiles")))

# The shop's JSON endpoints (core.api): JSON only, one error shape, described by
# drf-spectacular at /api/schema/ (`manage.py spectacular --validate --fail-on-warn`).
REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.parsers.BoundedJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_METADATA_CLASS": None,
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "COERCE_DECIMAL_TO_STRING": True,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Tienda Tlali, JSON endpoints",
    "DESCRIPTION": (
        "The shop's JSON endpoints: the payment page's calls, the card payments service's "
        "notifications, the browsers' CSP reports and the probes. Every error answers "
        '`{"error", "message"}`, plus `fields` when a body did not validate. Messages for '
        "people are in Spanish unless the browser chose English. An order is visible only to "
        "the browser session that placed it (404 for any other). Unsafe methods need Django's "
        "CSRF cookie and header, but for the receiver and the CSP reports."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "browserSession": {"type": "apiKey", "in": "cookie", "name": "sessionid"},
            "csrfCookie": {"type": "apiKey", "in": "cookie", "name": "csrftoken"},
            "csrfHeader": {"type": "apiKey", "in": "header", "name": "X-CSRFToken"},
        }
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "webhooks.openapi.add_receiver",
        "core.openapi.document_refused_methods",
    ],
}

# The shop and where it finds the card payments service.
SHOP_PORT = env_int("SHOP_PORT", 8000)
SANDBOX_PORT = env_int("SANDBOX_PORT", 8001)
SHOP_BASE_URL = env_str("SHOP_BASE_URL", f"http://127.0.0.1:{SHOP_PORT}")
SHOP_NAME = env_str("SHOP_NAME", "Tienda Tlali")

PAYMENTS_API_BASE_URL = env_str("PAYMENTS_API_BASE_URL", f"http://127.0.0.1:{SANDBOX_PORT}")
PAYMENTS_PUBLIC_KEY = env_str("PAYMENTS_PUBLIC_KEY")
PAYMENTS_SECRET_KEY = env_str("PAYMENTS_SECRET_KEY")
PAYMENTS_ACCESS_TOKEN = env_str("PAYMENTS_ACCESS_TOKEN")
if not PAYMENTS_ACCESS_TOKEN and PAYMENTS_PUBLIC_KEY and PAYMENTS_SECRET_KEY:
    PAYMENTS_ACCESS_TOKEN = basic_access_token(PAYMENTS_PUBLIC_KEY, PAYMENTS_SECRET_KEY)
PAYMENTS_AUTH_SCHEME = env_str("PAYMENTS_AUTH_SCHEME", "Basic")
PAYMENTS_WEBHOOK_TOKEN = env_str("PAYMENTS_WEBHOOK_TOKEN")
# How the payments app, which knows no other app, learns the webhook receiver's address (sent
# with every payment) and whether an order reference is the shop's (to adopt a payment it never
# heard of): functions of the webhooks and checkout apps, by dotted path.
PAYMENTS_WEBHOOK_URL_FUNCTION = "webhooks.addresses.payment_notification_url"
PAYMENTS_REFERENCE_OWNER_FUNCTION = "checkout.selectors.order_reference_exists"
PAYMENTS_CAPTURE_METHOD = env_str("PAYMENTS_CAPTURE_METHOD", "automatic")
PAYMENTS_SDK_THEME = env_str("PAYMENTS_SDK_THEME", "eco")
PAYMENTS_CONNECT_TIMEOUT = float(env_str("PAYMENTS_CONNECT_TIMEOUT", "3.05"))
PAYMENTS_READ_TIMEOUT = float(env_str("PAYMENTS_READ_TIMEOUT", "15"))

# Where the provider's SDK, card form and 3-D Secure pages come from, for the CSP (scripts,
# images, frames); empty: the origin of PAYMENTS_API_BASE_URL.
PAYMENTS_FRAME_ORIGINS = env_list("PAYMENTS_FRAME_ORIGINS", [])
# The provider's checkout SDK script; empty: {PAYMENTS_API_BASE_URL}/sdk/v1/checkout.js.
PAYMENTS_SDK_URL = env_str("PAYMENTS_SDK_URL")
CONTENT_SECURITY_POLICY = content_security_policy(report_uri="/csp-report/")

# Interest-free monthly installments ("meses sin intereses"): offered from this order total, in
# these numbers of months (2 to 48), to cards whose BIN the catalogue's installment_pattern names.
SHOP_INSTALLMENTS_MIN_TOTAL = env_decimal("SHOP_INSTALLMENTS_MIN_TOTAL", "1500.00")
SHOP_INSTALLMENTS_PLANS = env_int_list(
    "SHOP_INSTALLMENTS_PLANS", [3, 6, 9, 12], lowest=2, highest=48
)

# Abuse limits (counted in the cache: Redis when REDIS_URL is set). Rates are "count/period",
# period s, m, h or d with an optional multiplier ("8/10m").
SHOP_PAY_ATTEMPTS_PER_SESSION = env_str("SHOP_PAY_ATTEMPTS_PER_SESSION", "8/10m")
SHOP_PAY_ATTEMPTS_PER_ADDRESS = env_str("SHOP_PAY_ATTEMPTS_PER_ADDRESS", "30/10m")
# Orders placed (each holds its items for SHOP_RESERVATION_MINUTES) by one browser session, and by
# one client address.
SHOP_ORDERS_PER_SESSION = env_str("SHOP_ORDERS_PER_SESSION", "5/h")
SHOP_ORDERS_PER_ADDRESS = env_str("SHOP_ORDERS_PER_ADDRESS", "20/h")
# Order lists asked for by email address ("Mis pedidos"), per session and per address.
SHOP_ORDER_LISTS_PER_SESSION = env_str("SHOP_ORDER_LISTS_PER_SESSION", "3/h")
SHOP_ORDER_LISTS_PER_ADDRESS = env_str("SHOP_ORDER_LISTS_PER_ADDRESS", "10/h")
# Payment status checks a browser session may make with the provider (the payment page asks every
# 3 to 4 s while a payment is pending); beyond, it is answered from the shop's own records.
SHOP_STATUS_CHECKS_PER_SESSION = env_str("SHOP_STATUS_CHECKS_PER_SESSION", "40/m")
ADMIN_LOGIN_RATE_PER_ADDRESS = env_str("ADMIN_LOGIN_RATE_PER_ADDRESS", "10/5m")
ADMIN_LOGIN_RATE_PER_USER = env_str("ADMIN_LOGIN_RATE_PER_USER", "5/5m")
RATELIMIT_VIEW = "core.error_pages.ratelimited"
# Behind a proxy, the META key of the header that carries the client's address
# (e.g. HTTP_X_REAL_IP); unset, REMOTE_ADDR.
SHOP_CLIENT_IP_HEADER = env_str("SHOP_CLIENT_IP_HEADER")
RATELIMIT_IP_META_KEY = "core.ratelimits.client_address"
if not REDIS_URL:
    # The demo's file cache counts well enough on one machine; production uses Redis.
    SILENCED_SYSTEM_CHECKS = ["django_ratelimit.E003", "django_ratelimit.W001"]

# The webhook receiver and its processing (docs/deployment.md, "Provider notifications");
# `webhooks.apps` refuses to start when two of them disagree.
# The largest notification body accepted, in bytes (413 beyond).
WEBHOOKS_MAX_BODY_BYTES = env_int("WEBHOOKS_MAX_BODY_BYTES", 4096)
# How long a payment's processing task waits before it starts, so that a burst of notifications
# for one payment is read once: the longest any notification is held (seconds, 0 for none).
WEBHOOKS_COALESCE_SECONDS = env_int("WEBHOOKS_COALESCE_SECONDS", 1)
# A received notification with no task after this many seconds (the broker was down, a task was
# lost) is queued again by the relay (beat, every minute). At least WEBHOOKS_COALESCE_SECONDS +
# 10, so that a notification held for coalescing is never taken for a lost one.
WEBHOOKS_RELAY_AFTER = env_int("WEBHOOKS_RELAY_AFTER", 60)
# A processing task that has not finished this many seconds after it claimed its notifications
# (or after its retry was due) is taken for lost, its worker dead, and the relay queues them
# again. Longer than one provider read (PAYMENTS_CONNECT_TIMEOUT + PAYMENTS_READ_TIMEOUT): a
# lease that ends while a task still reads costs one more read, never a wrong state.
WEBHOOKS_CLAIM_LEASE = env_int("WEBHOOKS_CLAIM_LEASE", 60)
# While the provider cannot be reached, a processing task retries this many times, with
# exponential backoff and full jitter from WEBHOOKS_RETRY_BACKOFF seconds, each wait at most
# WEBHOOKS_RETRY_BACKOFF_MAX seconds (below CELERY_VISIBILITY_TIMEOUT, or the broker would hand
# a waiting retry to a second worker).
WEBHOOKS_MAX_RETRIES = env_int("WEBHOOKS_MAX_RETRIES", 8)
WEBHOOKS_RETRY_BACKOFF = env_int("WEBHOOKS_RETRY_BACKOFF", 2)
WEBHOOKS_RETRY_BACKOFF_MAX = env_int("WEBHOOKS_RETRY_BACKOFF_MAX", 300)
# Provider lookups a minute for payment ids the shop does not know (a flood of invented ids must
# not become a flood of provider calls); the rest wait for the relay.
WEBHOOKS_UNKNOWN_LOOKUPS_PER_MINUTE = env_int("WEBHOOKS_UNKNOWN_LOOKUPS_PER_MINUTE", 60)
# Notifications finished (processed, or unmatched) this many days ago are deleted by beat (hourly,
# in batches); failed ones stay until staff or the relay resolve them, then age like the others.
WEBHOOKS_KEEP_DAYS = env_int("WEBHOOKS_KEEP_DAYS", 90)

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
