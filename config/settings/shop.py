"""The shop's own settings: passwords, languages, static files, the JSON endpoints, where the
card payments service is, installments, abuse limits and the webhook receiver."""

from __future__ import annotations

from pathlib import Path

from config.settings.env import (
    basic_access_token,
    env_decimal,
    env_int,
    env_int_list,
    env_list,
    env_str,
)
from config.settings.queues import *
from core.security import content_security_policy

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
# The sale day's admission (checkout/admission.py): past the shop's capacity, new shoppers are
# let in at a pace, first come first in; the others wait their turn on a page that lets them in
# by itself. "auto" (the default): the shop finds the pace from what its pages take
# (checkout/admission_pace.py); a number fixes it instead; 0: no queue. An operator may set it
# while the shop runs (`manage.py admission`). Needs Redis.
SHOP_ADMISSION_PER_SECOND = (
    None
    if env_str("SHOP_ADMISSION_PER_SECOND", "auto").strip().lower() == "auto"
    else float(env_decimal("SHOP_ADMISSION_PER_SECOND", "0"))
)
# The pace the shop finds for itself stays between these (new shoppers a second)...
SHOP_ADMISSION_MIN_PER_SECOND = float(env_decimal("SHOP_ADMISSION_MIN_PER_SECOND", "2"))
SHOP_ADMISSION_MAX_PER_SECOND = float(env_decimal("SHOP_ADMISSION_MAX_PER_SECOND", "500"))
# ...and rises while the pages it serves keep their p95 at or under this (milliseconds, in the
# web process: a shopper's browser adds the network and the server's own queue), falls past it.
SHOP_ADMISSION_PAGE_P95_MS = env_int("SHOP_ADMISSION_PAGE_P95_MS", 250)
# A shopper let in is never held back for this long (its cart, its order, its payment).
SHOP_ADMISSION_STAY_MINUTES = env_int("SHOP_ADMISSION_STAY_MINUTES", 30)
# How often a waiting page asks again whether its turn came.
SHOP_ADMISSION_REFRESH_SECONDS = env_int("SHOP_ADMISSION_REFRESH_SECONDS", 2)
if (
    (SHOP_ADMISSION_PER_SECOND is not None and SHOP_ADMISSION_PER_SECOND < 0)
    or not 0 < SHOP_ADMISSION_MIN_PER_SECOND <= SHOP_ADMISSION_MAX_PER_SECOND
    or SHOP_ADMISSION_PAGE_P95_MS < 1
    or SHOP_ADMISSION_STAY_MINUTES < 1
    or SHOP_ADMISSION_REFRESH_SECONDS < 1
):
    raise ImproperlyConfigured(
        "SHOP_ADMISSION_PER_SECOND must be auto, 0 or more; SHOP_ADMISSION_MIN_PER_SECOND more "
        "than 0 and at most SHOP_ADMISSION_MAX_PER_SECOND; SHOP_ADMISSION_PAGE_P95_MS, "
        "SHOP_ADMISSION_STAY_MINUTES and SHOP_ADMISSION_REFRESH_SECONDS at least 1"
    )

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

# Staff sign in with a password and a second factor (staff_signin; docs/deployment.md).
# A verified staff session gives the admin for one shift, in hours; then it signs in again.
STAFF_SESSION_HOURS = float(env_decimal("STAFF_SESSION_HOURS", "8"))
# How long an enrolment window opened by `manage.py staff_second_factor open USER` stays open.
STAFF_ENROLMENT_WINDOW_HOURS = float(env_decimal("STAFF_ENROLMENT_WINDOW_HOURS", "24"))
# Wrong codes on the code page, per account and per client address; the next try gets the 429
# page until the period ends. Each device also waits 1, 2, 4, 8... seconds after each wrong code
# (django-otp's throttling, kept in the database).
STAFF_SIGNIN_CODES_PER_USER = env_str("STAFF_SIGNIN_CODES_PER_USER", "5/15m")
STAFF_SIGNIN_CODES_PER_ADDRESS = env_str("STAFF_SIGNIN_CODES_PER_ADDRESS", "20/15m")
# An account's wrong codes within an hour that mail the managers (SHOP_MANAGERS).
STAFF_SIGNIN_ALERT_FAILURES = env_int("STAFF_SIGNIN_ALERT_FAILURES", 10)
if STAFF_SESSION_HOURS <= 0 or STAFF_ENROLMENT_WINDOW_HOURS <= 0 or STAFF_SIGNIN_ALERT_FAILURES < 1:
    raise ImproperlyConfigured(
        "STAFF_SESSION_HOURS and STAFF_ENROLMENT_WINDOW_HOURS must be above 0, "
        "STAFF_SIGNIN_ALERT_FAILURES at least 1"
    )
# The name authenticator apps show for the shop's accounts; the delay factor after wrong codes.
OTP_TOTP_ISSUER = SHOP_NAME
OTP_TOTP_THROTTLE_FACTOR = 1
OTP_STATIC_THROTTLE_FACTOR = 1
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

# --- Facturas and the books (books/) ------------------------------------------------------------
# A buyer may ask for a factura until the end of the month of the purchase plus these days (the
# merchant's window: their PAC and SAT let them invoice a past month's sale only so long).
BOOKS_FACTURA_DAYS_AFTER_MONTH = env_int("BOOKS_FACTURA_DAYS_AFTER_MONTH", 5)
# The longest range of days one export covers.
BOOKS_EXPORT_MAX_DAYS = env_int("BOOKS_EXPORT_MAX_DAYS", 366)
# Who stamps CFDIs: nobody by default (staff register what their PAC issued); a class with
# `stamp(StampRequest) -> Stamped` for a PAC (books/stamping.py, docs/deployment.md).
BOOKS_STAMPER = env_str("BOOKS_STAMPER", "books.stamping.NoStamper")
# Exports: a cell starting with "=" is not written as a formula (django-import-export).
IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT = True
