"""Redis, the cache and Celery (REDIS_*, CACHE_*, CELERY_*).

Redis as the broker and the cache (an embedded broker and a file cache for the demo), the three
queues and their routes, and what beat runs and how often (one table).
"""

from __future__ import annotations

from config.settings.env import Production, env_int, env_str
from config.settings.observability import METRICS_HEARTBEAT_EVERY
from config.settings.payments import (
    PAYMENTS_PROVIDER_CHECK_EVERY,
    PAYMENTS_RECONCILE_EVERY,
    PAYMENTS_SEND_SWEEP_EVERY,
)
from config.settings.shop import SHOP_ORDERS_SYNC_EVERY, VAR_DIR
from config.settings.webhooks import WEBHOOKS_RELAY_EVERY

# Redis as broker and cache when REDIS_URL is set; otherwise an embedded broker
# (kombu's filesystem transport, written atomically) and a file cache, so the demo needs no server.
REDIS_URL = env_str(
    "REDIS_URL",
    doc="Redis (`redis://host:6379/0`, or `rediss://`): the Celery broker, the cache, the rate "
    "limits' counters, the read budget and the sale day's queue. Unset (the demo): kombu's "
    "filesystem transport (each message written whole, then renamed into the queue: "
    "`config/celery/demo_broker.py`) and a file cache in `SHOP_VAR_DIR`.",
    production=Production.MUST_SET,
)
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        # An unacknowledged task (its worker died) is delivered again after this long; it must
        # exceed the longest retry countdown.
        "visibility_timeout": env_int(
            "CELERY_VISIBILITY_TIMEOUT",
            3600,
            doc="Seconds before a task whose worker died is delivered again by Redis (docs/"
            'deployment.md, "Scaling out"); above `WEBHOOKS_RETRY_BACKOFF_MAX`.',
        ),
        "socket_connect_timeout": 2,
    }
    CACHES = {
        "default": {
            # django-redis keeps one Redis client per process; Django's own backend builds a
            # new one for every call, which cost the webhook receiver a third of its CPU (bench/).
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env_str(
                "CACHE_KEY_PREFIX",
                "shop",
                doc="The prefix of the cache's keys in Redis (two shops on one Redis database).",
            ),
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
    # The demo's file cache counts the rate limits well enough on one machine; production uses
    # Redis.
    SILENCED_SYSTEM_CHECKS = ["django_ratelimit.E003", "django_ratelimit.W001"]

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
# The heartbeat task (monitoring.heartbeats), which no app's tasks module holds.
CELERY_INCLUDE = ["monitoring.heartbeats"]

# --- What beat runs ---------------------------------------------------------------------------
# One row a schedule: its name, the task (by its pinned name), every how many seconds, and how
# long a run not yet started is still worth starting (`expires`, seconds; None: nine tenths of
# the interval), so that a backlog never piles up. The second table's tasks go to every queue,
# rather than where their route sends them.
_BEAT: tuple[tuple[str, str, float, float | None], ...] = (
    ("webhooks-relay", "webhooks.tasks.webhook_relay_task", WEBHOOKS_RELAY_EVERY, None),
    (
        "payments-reconcile",
        "payments.tasks.payments_reconcile_task",
        PAYMENTS_RECONCILE_EVERY,
        None,
    ),
    # Payments written without a read schedule (by the release before it) get theirs, in batches
    # (payments.rereading.rules.schedule_unscheduled).
    ("payments-schedule", "payments.tasks.payments_schedule_task", 300, None),
    # The creates waiting to be sent with no task on its way (stored while the broker was down):
    # each is sent within PAYMENTS_SEND_SWEEP_EVERY of the broker's coming back.
    (
        "payments-send-waiting",
        "payments.tasks.payments_send_waiting_task",
        PAYMENTS_SEND_SWEEP_EVERY,
        None,
    ),
    (
        "orders-follow-payments",
        "checkout.tasks.orders_follow_payments_task",
        SHOP_ORDERS_SYNC_EVERY,
        None,
    ),
    # Orders whose reservation is over expire and give their items back (a page that shows the
    # stock does it at once for its products).
    ("reservations-expire", "checkout.tasks.reservations_expire_task", 60, None),
    ("authorizations-watch", "payments.tasks.authorizations_watch_task", 3600, 3000),
    # The provider's payment methods catalogue read into the copy the pages show.
    ("payment-methods-refresh", "payments.tasks.payment_methods_refresh_task", 300, None),
    # One provider call, whose outcome /healthz/deps reports (degraded past three intervals).
    ("provider-check", "payments.tasks.provider_check_task", PAYMENTS_PROVIDER_CHECK_EVERY, None),
    # Staff actions whose task was lost (the broker was down, a worker died) are queued again.
    ("staff-actions-requeue", "payments.tasks.staff_actions_requeue_task", 60, None),
    # Mails whose send task was lost are queued again.
    ("order-mails-sweep", "checkout.tasks.order_mails_sweep_task", 300, None),
    # Retention (docs/deployment.md, "Retention"): what is not a financial record is pruned after
    # a set time, in small batches, each run within a budget the next run continues from.
    ("webhooks-prune", "webhooks.tasks.webhooks_prune_task", 3600, 3000),
    ("mails-prune", "checkout.tasks.mails_prune_task", 3600, 3000),
    ("sessions-prune", "checkout.tasks.sessions_prune_task", 86400, 82800),
)
# The heartbeat on each queue (monitoring.heartbeats), which the workers of that queue answer.
_BEAT_ON_EVERY_QUEUE: tuple[tuple[str, str, float, float | None], ...] = (
    ("metrics-heartbeat", "config.heartbeats.heartbeat_task", METRICS_HEARTBEAT_EVERY, 600),
)


def _beat_run(task: str, every: float, expires: float | None, queue: str = "") -> dict[str, object]:
    options: dict[str, object] = {"queue": queue} if queue else {}
    options["expires"] = every * 0.9 if expires is None else expires
    return {"task": task, "schedule": float(every), "options": options}


CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    **{name: _beat_run(task, every, expires) for name, task, every, expires in _BEAT},
    **{
        f"{name}-{queue}": _beat_run(task, every, expires, queue)
        for name, task, every, expires in _BEAT_ON_EVERY_QUEUE
        for queue in CELERY_TASK_QUEUES
    },
}
