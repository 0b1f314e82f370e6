"""Staff and the admin (STAFF_*, ADMIN_*).

Staff sign in with a password and a second factor (staff_signin; docs/deployment.md): how long
a signed-in shift lasts, the limits on passwords and codes, and when the managers hear of
codes being guessed; and how much the admin's lists count.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.settings.env import env_decimal, env_int, env_str
from config.settings.shop import SHOP_NAME

STAFF_SESSION_HOURS = float(
    env_decimal(
        "STAFF_SESSION_HOURS",
        "8",
        doc="How long a staff session signed in with a second factor gives the admin (hours: one "
        "shift); then the password and a code again. Shoppers' sessions are not affected.",
    )
)
STAFF_ENROLMENT_WINDOW_HOURS = float(
    env_decimal(
        "STAFF_ENROLMENT_WINDOW_HOURS",
        "24",
        doc="How long an enrolment window opened by `manage.py staff_second_factor open USER` "
        "stays open (hours).",
    )
)
# Each device also waits 1, 2, 4, 8... seconds after each wrong code (django-otp's throttling,
# kept in the database).
STAFF_SIGNIN_CODES_PER_USER = env_str(
    "STAFF_SIGNIN_CODES_PER_USER",
    "5/15m",
    doc="Wrong codes an account may try on the code page; the next try gets the 429 page until "
    "the period ends (counted in Redis; while Redis is away, each device's own growing delay, "
    "kept in the database, still holds). Never a lock-out.",
)
STAFF_SIGNIN_CODES_PER_ADDRESS = env_str(
    "STAFF_SIGNIN_CODES_PER_ADDRESS",
    "20/15m",
    doc="Wrong codes a client address may try on the code page; beyond, the 429 page until the "
    "period ends.",
)
STAFF_SIGNIN_ALERT_FAILURES = env_int(
    "STAFF_SIGNIN_ALERT_FAILURES",
    10,
    doc="An account's wrong codes within an hour that mail the managers (`SHOP_MANAGERS`), once.",
)
if STAFF_SESSION_HOURS <= 0 or STAFF_ENROLMENT_WINDOW_HOURS <= 0 or STAFF_SIGNIN_ALERT_FAILURES < 1:
    raise ImproperlyConfigured(
        "STAFF_SESSION_HOURS and STAFF_ENROLMENT_WINDOW_HOURS must be above 0, "
        "STAFF_SIGNIN_ALERT_FAILURES at least 1"
    )
# The name authenticator apps show for the shop's accounts; the delay factor after wrong codes.
OTP_TOTP_ISSUER = SHOP_NAME
OTP_TOTP_THROTTLE_FACTOR = 1
OTP_STATIC_THROTTLE_FACTOR = 1

ADMIN_LOGIN_RATE_PER_ADDRESS = env_str(
    "ADMIN_LOGIN_RATE_PER_ADDRESS",
    "10/5m",
    doc="Admin password attempts a client address may make; beyond, 429.",
)
ADMIN_LOGIN_RATE_PER_USER = env_str(
    "ADMIN_LOGIN_RATE_PER_USER",
    "5/5m",
    doc="Admin password attempts a username may get; beyond, 429.",
)
# The admin's lists count at most this many rows (beyond, they say "more than ..."): a count
# over a year of orders would cost more than the page itself.
ADMIN_LIST_COUNT_LIMIT = 1000
