"""Redis, Celery and beat: the broker and the cache, the three queues and their routes, what beat
runs and how often, and what the shop keeps of its own data (retention)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.settings.env import (
    env_int,
    env_str,
)
from config.settings.framework import *

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

# Fragments of pages that are the same for every shopper (the empty details form), rendered
# once a process: a new release's processes start with none.
CACHES["fragments"] = {
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
    "LOCATION": "fragments",
    "TIMEOUT": None,
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
# Beside the read budget, the writes' pace (payments/provider/pace.py): at most this many
# creates, captures, cancellations and refunds a second, counted by every worker process
# together in Redis, so that a sale day stays under the provider's own rate limit (set it below
# the provider's). 0: unpaced. A provider's 429 is still handled: the request is sent again.
PAYMENTS_PROVIDER_WRITES_PER_SECOND = env_int("PAYMENTS_PROVIDER_WRITES_PER_SECOND", 20)
if PAYMENTS_PROVIDER_WRITES_PER_SECOND < 0:
    raise ImproperlyConfigured("PAYMENTS_PROVIDER_WRITES_PER_SECOND must be 0 or more")
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
