"""The card payments service (PAYMENTS_*).

Where the provider is and the shop's credentials with it, the webhook token, how payments are
captured, the card form, the provider calls' timeouts, and how much the shop asks of the
provider: its read budget, its pace of writes and how often it checks and reconciles.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.settings.env import Production, basic_access_token, env_int, env_list, env_str
from core.security import content_security_policy

SANDBOX_PORT = env_int(
    "SANDBOX_PORT",
    8001,
    doc="Where the demo serves the sandbox, the provider's emulator (`make demo`); the shop "
    "finds it there unless `PAYMENTS_API_BASE_URL` says otherwise.",
)
PAYMENTS_API_BASE_URL = env_str(
    "PAYMENTS_API_BASE_URL",
    f"http://127.0.0.1:{SANDBOX_PORT}",
    doc="The card payments service's API address (the shop also loads the SDK from "
    "`{PAYMENTS_API_BASE_URL}/sdk/v1/checkout.js` unless `PAYMENTS_SDK_URL` says otherwise).",
    production=Production.MUST_SET,
)
PAYMENTS_PUBLIC_KEY = env_str(
    "PAYMENTS_PUBLIC_KEY",
    doc="The provider's public API key (browser-safe: card tokens, payment methods). The demo "
    "uses the sandbox's (`SANDBOX_PUBLIC_KEY`).",
    production=Production.MUST_SET,
)
PAYMENTS_SECRET_KEY = env_str(
    "PAYMENTS_SECRET_KEY",
    doc="The provider's secret key, used by the shop's server only (redacted from logs); the "
    "access token is base64 of `public:secret`. Production needs it or `PAYMENTS_ACCESS_TOKEN`.",
    production=Production.MUST_SET,
)
PAYMENTS_ACCESS_TOKEN = env_str(
    "PAYMENTS_ACCESS_TOKEN",
    doc="The server-side access token, if the provider issues one directly; otherwise it is "
    "derived from the two keys.",
)
if not PAYMENTS_ACCESS_TOKEN and PAYMENTS_PUBLIC_KEY and PAYMENTS_SECRET_KEY:
    PAYMENTS_ACCESS_TOKEN = basic_access_token(PAYMENTS_PUBLIC_KEY, PAYMENTS_SECRET_KEY)
PAYMENTS_AUTH_SCHEME = env_str(
    "PAYMENTS_AUTH_SCHEME",
    "Basic",
    doc="The scheme of the server-side `Authorization` header.",
)
PAYMENTS_WEBHOOK_TOKEN = env_str(
    "PAYMENTS_WEBHOOK_TOKEN",
    doc="The secret path segment of the shop's webhook address, 32+ of `A-Z a-z 0-9 - _`: "
    "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`. Unset (outside production), "
    "no webhook address is sent and the receiver answers 404.",
    production=Production.MUST_SET,
)
# How the payments app, which knows no other app, learns the webhook receiver's address (sent
# with every payment) and whether an order reference is the shop's (to adopt a payment it never
# heard of): functions of the webhooks and checkout apps, by dotted path.
PAYMENTS_WEBHOOK_URL_FUNCTION = "webhooks.addresses.payment_notification_url"
PAYMENTS_REFERENCE_OWNER_FUNCTION = "checkout.orders.selectors.order_reference_exists"
PAYMENTS_CAPTURE_METHOD = env_str(
    "PAYMENTS_CAPTURE_METHOD",
    "automatic",
    doc="`automatic`: cards are charged at checkout; `manual`: authorized at checkout and "
    "charged when staff mark the order shipped.",
)
PAYMENTS_SDK_THEME = env_str(
    "PAYMENTS_SDK_THEME", "eco", doc="The card form's theme: `eco` or `dark`."
)
PAYMENTS_CONNECT_TIMEOUT = float(
    env_str(
        "PAYMENTS_CONNECT_TIMEOUT",
        "3.05",
        doc="Seconds each provider call waits for its connection.",
    )
)
PAYMENTS_READ_TIMEOUT = float(
    env_str(
        "PAYMENTS_READ_TIMEOUT",
        "15",
        doc="Seconds each provider call waits for its answer (a write that gets none is "
        '"outcome unknown" and sent again with its key).',
    )
)

# Where the provider's SDK, card form and 3-D Secure pages come from, for the CSP (scripts,
# images, frames); empty: the origin of PAYMENTS_API_BASE_URL.
PAYMENTS_FRAME_ORIGINS = env_list(
    "PAYMENTS_FRAME_ORIGINS",
    [],
    doc="Comma-separated origins of the provider's SDK script, card iframe and 3-D Secure pages, "
    "allowed by the Content-Security-Policy; unset, the origin of `PAYMENTS_API_BASE_URL`.",
)
PAYMENTS_SDK_URL = env_str(
    "PAYMENTS_SDK_URL",
    doc="The provider's checkout SDK script; unset, `{PAYMENTS_API_BASE_URL}/sdk/v1/checkout.js`.",
)
CONTENT_SECURITY_POLICY = content_security_policy(report_uri="/csp-report/")

# --- How much the shop asks of the provider --------------------------------------------------
# A run of the reconciliation not started before the next one is due is dropped (`expires`), so a
# backlog never piles up.
PAYMENTS_RECONCILE_EVERY = env_int(
    "PAYMENTS_RECONCILE_EVERY",
    60,
    doc="Seconds between two runs of the payments' reconciliation by beat: the payments whose "
    'scheduled read is due (README, "Reading the provider again") handed to check tasks, within '
    "the read budget.",
)
# The provider read budget (payments/rereading/rules.py): reads for notifications, staff and
# shoppers' pages always go and are counted; the schedule uses what they leave. 600 a minute is
# 10 a second, well under the rate limits card providers publish; README.md says up to which
# volume it keeps the schedule.
PAYMENTS_PROVIDER_READS_PER_MINUTE = env_int(
    "PAYMENTS_PROVIDER_READS_PER_MINUTE",
    600,
    doc="The provider read budget: payment reads a minute, all of the shop's together (counted "
    "in Redis). Reads for notifications, staff and shoppers always go; the schedule uses what "
    "they leave. Keep it under the provider's rate limit for reads.",
)
# Beside the read budget, the writes' pace (payments/provider/pace.py), counted by every worker
# process together in Redis.
PAYMENTS_PROVIDER_WRITES_PER_SECOND = env_int(
    "PAYMENTS_PROVIDER_WRITES_PER_SECOND",
    20,
    doc="The shop's own pace of creates, captures, cancellations and refunds, all workers "
    "together (counted in Redis, a counter a second); a write that finds no room within 2 s is "
    "sent later by its task. Set it under the provider's rate limit for writes; 0: unpaced. A "
    "provider's 429 is never a failure: the same request is sent again with its key after "
    "`Retry-After` plus jitter.",
)
if PAYMENTS_PROVIDER_WRITES_PER_SECOND < 0:
    raise ImproperlyConfigured("PAYMENTS_PROVIDER_WRITES_PER_SECOND must be 0 or more")
# The payments a check task reads one after the other: the reconciliation hands out the due
# ones in tasks of this many, which the provider-reads workers run side by side.
PAYMENTS_CHECKS_PER_TASK = 25
if PAYMENTS_PROVIDER_READS_PER_MINUTE < 1 or PAYMENTS_RECONCILE_EVERY < 1:
    raise ImproperlyConfigured(
        "PAYMENTS_PROVIDER_READS_PER_MINUTE and PAYMENTS_RECONCILE_EVERY must be at least 1"
    )
PAYMENTS_SEND_SWEEP_EVERY = env_int(
    "PAYMENTS_SEND_SWEEP_EVERY",
    30,
    doc="Seconds between two sweeps by beat of the pay attempts whose create is waiting to be "
    "sent with no task on its way (stored while the broker was down, or their task lost): each "
    "is queued again, so it is sent within this long of the broker's coming back.",
)
# How often beat calls the provider to stamp its health for /healthz/deps, which reports it
# degraded once no successful check is newer than three intervals (seconds).
PAYMENTS_PROVIDER_CHECK_EVERY = 60
