"""The shop's own settings (SHOP_*).

Its name and address, its working files, who gets operational mail, the sale day's admission,
installments, the abuse limits, how long an order holds its items, and what the shop keeps of
its own data (retention).
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.settings.env import Production, env_decimal, env_int, env_int_list, env_list, env_str
from config.settings.framework import BASE_DIR

VAR_DIR = Path(
    env_str(
        "SHOP_VAR_DIR",
        str(BASE_DIR / "var"),
        doc="Working files: the demo's SQLite database, broker folders and caches, beat's "
        "schedule. Must be writable; production uses it for little else.",
        shown_default="`var/` in the checkout",
    )
)
VAR_DIR.mkdir(parents=True, exist_ok=True)

SHOP_PORT = env_int(
    "SHOP_PORT", 8000, doc="Where the demo serves the shop (`make demo`); production ignores it."
)
SHOP_BASE_URL = env_str(
    "SHOP_BASE_URL",
    f"http://127.0.0.1:{SHOP_PORT}",
    doc="The shop's public address, `https://` in production: the links in mails, and the "
    "provider's notifications go to `{SHOP_BASE_URL}/webhooks/payments/{PAYMENTS_WEBHOOK_TOKEN}/`.",
    production=Production.MUST_SET,
)
SHOP_NAME = env_str(
    "SHOP_NAME",
    "Tienda Tlali",
    doc="The shop's name, shown to shoppers, in mails, in payment descriptions, in the admin and "
    "in staff's authenticator apps.",
    production=Production.SHOULD_SET,
)
MANAGERS = [
    ("", address)
    for address in env_list(
        "SHOP_MANAGERS",
        [],
        doc="Comma-separated addresses that get operational mail: authorizations about to "
        "expire, a staff member signed in with a recovery code, codes being guessed.",
        production=Production.SHOULD_SET,
    )
]

# --- The sale day's admission (checkout/admission/) ------------------------------------------
# Past the shop's capacity, new shoppers are let in at a pace, first come first in; the others
# wait their turn on a page that lets them in by itself. Needs Redis.
_admission_pace = env_str(
    "SHOP_ADMISSION_PER_SECOND",
    "auto",
    doc="The sale day's queue: past the pace, new shoppers wait their turn on a page that "
    "lets them in by itself, first come first in, and says about how long it will be. "
    "`auto`: the shop finds the pace itself from what its pages take "
    "(`checkout/admission/pace.py`: the ceiling until the pages slow; past "
    "`SHOP_ADMISSION_PAGE_P95_MS`, or past half of it and three times the p95 the pages take "
    "at ease, a tenth less while shoppers wait, else nine tenths of what came in over the last "
    "second; then up a tenth while the pages keep to it and someone waits; a move at most "
    "every four seconds), so the "
    "same release serves two cores and sixteen; a number fixes it; 0: no queue. Needs Redis. "
    "`manage.py admission --per-second N` sets it for every process while the shop runs "
    "(`--default`: back to this variable).",
)
SHOP_ADMISSION_PER_SECOND = (
    None
    if _admission_pace.strip().lower() == "auto"
    else float(env_decimal("SHOP_ADMISSION_PER_SECOND", "0"))
)
SHOP_ADMISSION_MIN_PER_SECOND = float(
    env_decimal(
        "SHOP_ADMISSION_MIN_PER_SECOND",
        "2",
        doc="The floor of the pace the shop finds (new shoppers a second).",
    )
)
SHOP_ADMISSION_MAX_PER_SECOND = float(
    env_decimal(
        "SHOP_ADMISSION_MAX_PER_SECOND",
        "500",
        doc="The ceiling of the pace the shop finds (new shoppers a second).",
    )
)
# Milliseconds in the web process, and the wait for a thread before it (gunicorn's worker notes
# it: config/gunicorn_worker.py); a shopper's browser adds the network.
SHOP_ADMISSION_PAGE_P95_MS = env_int(
    "SHOP_ADMISSION_PAGE_P95_MS",
    250,
    doc="The p95 of the shop's pages (milliseconds, timed in the web process from when the "
    "request waited for a thread) that the pace keeps to; past half of it, pages three times "
    "as slow as at ease count as slow too.",
)
# A shopper let in is never held back for this long (its cart, its order, its payment).
SHOP_ADMISSION_STAY_MINUTES = 30
# How often a waiting page asks again whether its turn came (seconds): this often near its turn,
# and at half its expected wait, at most SHOP_ADMISSION_REFRESH_MAX_SECONDS, further back (a long
# queue asking every two seconds would spend the shop's CPU on waiting pages).
SHOP_ADMISSION_REFRESH_SECONDS = 2
SHOP_ADMISSION_REFRESH_MAX_SECONDS = 15
if (
    (SHOP_ADMISSION_PER_SECOND is not None and SHOP_ADMISSION_PER_SECOND < 0)
    or not 0 < SHOP_ADMISSION_MIN_PER_SECOND <= SHOP_ADMISSION_MAX_PER_SECOND
    or SHOP_ADMISSION_PAGE_P95_MS < 1
):
    raise ImproperlyConfigured(
        "SHOP_ADMISSION_PER_SECOND must be auto, 0 or more; SHOP_ADMISSION_MIN_PER_SECOND more "
        "than 0 and at most SHOP_ADMISSION_MAX_PER_SECOND; SHOP_ADMISSION_PAGE_P95_MS at least 1"
    )

# --- Installments ---------------------------------------------------------------------------------
# Interest-free monthly installments ("meses sin intereses") for cards whose BIN the catalogue's
# installment_pattern names.
SHOP_INSTALLMENTS_MIN_TOTAL = env_decimal(
    "SHOP_INSTALLMENTS_MIN_TOTAL",
    "1500.00",
    doc="The order total from which interest-free monthly installments (meses sin intereses) "
    "are offered.",
)
SHOP_INSTALLMENTS_PLANS = env_int_list(
    "SHOP_INSTALLMENTS_PLANS",
    [3, 6, 9, 12],
    lowest=2,
    highest=48,
    doc="The numbers of monthly installments offered (each from 2 to 48), comma-separated, to "
    "cards whose BIN the catalogue's `installment_pattern` names.",
)

# --- Abuse limits -----------------------------------------------------------------------------
# Counted in the cache (Redis when REDIS_URL is set). Rates are "count/period", period s, m, h or
# d with an optional multiplier ("8/10m").
SHOP_PAY_ATTEMPTS_PER_SESSION = env_str(
    "SHOP_PAY_ATTEMPTS_PER_SESSION",
    "8/10m",
    doc="Payment attempts a browser session may make (card testing); beyond, 429.",
)
SHOP_PAY_ATTEMPTS_PER_ADDRESS = env_str(
    "SHOP_PAY_ATTEMPTS_PER_ADDRESS",
    "30/10m",
    doc="Payment attempts a client address may make (card testing); beyond, 429.",
)
# Each order holds its items for SHOP_RESERVATION_MINUTES.
SHOP_ORDERS_PER_SESSION = env_str(
    "SHOP_ORDERS_PER_SESSION",
    "5/h",
    doc="Orders a browser session may place; beyond, 429 on the details form. Not counted "
    "while Redis is down (the reservation's expiry bounds what unpaid orders hold).",
)
SHOP_ORDERS_PER_ADDRESS = env_str(
    "SHOP_ORDERS_PER_ADDRESS",
    "20/h",
    doc="Orders a client address may place; beyond, 429 on the details form.",
)
SHOP_ORDER_LISTS_PER_SESSION = env_str(
    "SHOP_ORDER_LISTS_PER_SESSION",
    "3/h",
    doc='"Mis pedidos" requests (a mail with the links of an address\'s orders) a browser '
    "session may make; beyond, or while Redis is down, 429.",
)
SHOP_ORDER_LISTS_PER_ADDRESS = env_str(
    "SHOP_ORDER_LISTS_PER_ADDRESS",
    "10/h",
    doc='"Mis pedidos" requests a client address may make; beyond, or while Redis is down, 429.',
)
# The payment page asks every 3 to 4 s while a payment is pending.
SHOP_STATUS_CHECKS_PER_SESSION = env_str(
    "SHOP_STATUS_CHECKS_PER_SESSION",
    "40/m",
    doc="Payment status checks with the provider a browser session may make; beyond, it is "
    "answered from the shop's own records.",
)
RATELIMIT_VIEW = "core.error_pages.ratelimited"
SHOP_CLIENT_IP_HEADER = env_str(
    "SHOP_CLIENT_IP_HEADER",
    doc="Behind a proxy, the request `META` key of the header that carries the client's address "
    "(`HTTP_X_REAL_IP`), for the rate limits and the stored webhook addresses; unset, "
    "`REMOTE_ADDR`.",
    production=Production.SHOULD_SET,
)
RATELIMIT_IP_META_KEY = "core.ratelimits.client_address"

# --- Orders and their items ---------------------------------------------------------------------
SHOP_RESERVATION_MINUTES = env_int(
    "SHOP_RESERVATION_MINUTES",
    30,
    doc="How long a new order holds its items for its payment (minutes, at least 1); not paid or "
    "authorized by then, it expires and its items go back to stock, at once when a page shows "
    "stock and otherwise by beat. A payment confirmed later takes them back if they are still "
    "there, else it is cancelled or refunded automatically and the shopper told (page and mail).",
)
if SHOP_RESERVATION_MINUTES < 1:
    raise ImproperlyConfigured("SHOP_RESERVATION_MINUTES must be at least 1")
SHOP_ORDERS_SYNC_EVERY = env_int(
    "SHOP_ORDERS_SYNC_EVERY",
    60,
    doc="Seconds between two sweeps by beat of the orders whose payments changed since the "
    "previous sweep (at most 6 hours back) but whose status does not say so yet (their sync "
    "task could not be queued, e.g. while Redis was down).",
)

# --- Retention (docs/deployment.md, "Retention") -------------------------------------------------
# The sent mails' text (subject and plain-text body, shown to staff on the order) is blanked this
# many days after it was sent; the mail's row (kind, event, amounts, dates) stays.
SHOP_MAIL_KEEP_DAYS = env_int(
    "SHOP_MAIL_KEEP_DAYS",
    90,
    doc="Days a sent mail keeps its text (subject and plain-text body, shown to staff on the "
    "order); then the text is blanked and the mail's row stays. At least 1.",
)
if SHOP_MAIL_KEEP_DAYS < 1:
    raise ImproperlyConfigured("SHOP_MAIL_KEEP_DAYS must be at least 1")
# Each pruning statement deletes or blanks at most this many rows (a short lock, a short
# transaction), and a run stops after this many rows or seconds: the next run goes on.
SHOP_RETENTION_BATCH_SIZE = 1000
SHOP_RETENTION_RUN_ROWS = 100_000
SHOP_RETENTION_RUN_SECONDS = 60
