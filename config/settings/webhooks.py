"""The provider's notifications (WEBHOOKS_*).

The webhook receiver and the processing of what it receives (README, "Provider notifications
(webhooks)"): the relay that queues again what was lost, the retries while the provider
cannot be reached, and how long notifications are kept. `webhooks.apps` refuses to start when
two of these disagree, naming them.
"""

from __future__ import annotations

from config.settings.env import env_int

# The largest notification body accepted, in bytes (413 beyond).
WEBHOOKS_MAX_BODY_BYTES = 4096
# How long a payment's processing task waits before it starts, so that a burst of notifications
# for one payment (INSERT, UPDATEs, the provider's duplicates) is read once: the longest any
# notification is held (seconds, 0 for none).
WEBHOOKS_COALESCE_SECONDS = 1
WEBHOOKS_RELAY_EVERY = env_int(
    "WEBHOOKS_RELAY_EVERY",
    60,
    doc="Seconds between two runs of the relay by beat (a run not started before the next is "
    "due is dropped).",
)
WEBHOOKS_RELAY_AFTER = env_int(
    "WEBHOOKS_RELAY_AFTER",
    60,
    doc="A received notification still waiting after this many seconds with no task (the "
    "broker was down, a task was lost) is queued again by the relay; at least "
    "`WEBHOOKS_COALESCE_SECONDS` (1) + 10, so that a notification held for coalescing is never "
    "taken for a lost one.",
)
WEBHOOKS_CLAIM_LEASE = env_int(
    "WEBHOOKS_CLAIM_LEASE",
    60,
    doc="A processing task that has not finished this many seconds after it claimed its "
    "notifications (or after its retry was due) is taken for lost, its worker dead, and the "
    "relay queues them again. Longer than one provider read (`PAYMENTS_CONNECT_TIMEOUT` + "
    "`PAYMENTS_READ_TIMEOUT`): a lease that ends while a task still reads costs one more read, "
    "never a wrong state.",
)
# While the provider cannot be reached, a processing task retries with exponential backoff and
# full jitter (core.task_queue's PROVIDER_READ policy reads these three).
WEBHOOKS_MAX_RETRIES = env_int(
    "WEBHOOKS_MAX_RETRIES",
    8,
    doc="Retries of a notification's processing while the provider cannot be reached; then it "
    'is marked failed (docs/deployment.md, "Runbook: failed or unmatched notifications").',
)
WEBHOOKS_RETRY_BACKOFF = env_int(
    "WEBHOOKS_RETRY_BACKOFF",
    2,
    doc="Seconds before the first of those retries (doubling, with full jitter); at least 1.",
)
WEBHOOKS_RETRY_BACKOFF_MAX = env_int(
    "WEBHOOKS_RETRY_BACKOFF_MAX",
    300,
    doc="The longest wait between two of those retries (seconds); below "
    "`CELERY_VISIBILITY_TIMEOUT`, or the broker would hand a waiting retry to a second worker.",
)
WEBHOOKS_UNKNOWN_LOOKUPS_PER_MINUTE = env_int(
    "WEBHOOKS_UNKNOWN_LOOKUPS_PER_MINUTE",
    60,
    doc="Provider reads a minute for payment ids the shop does not know (a flood of invented "
    "ids must not become a flood of provider calls); the rest wait for the relay.",
)
WEBHOOKS_KEEP_DAYS = env_int(
    "WEBHOOKS_KEEP_DAYS",
    90,
    doc="Days a notification is kept after its processing finished (processed or unmatched), "
    "then deleted by beat (hourly, in batches); at least 1. Failed ones are kept until staff or "
    "the relay resolve them, then age like the others.",
)
