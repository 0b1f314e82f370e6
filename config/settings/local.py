"""Settings for the demo and for development: working defaults, nothing to configure.

Without provider credentials in the environment, the shop uses the sandbox's demo keys
(`SANDBOX_PUBLIC_KEY` / `SANDBOX_SECRET_KEY` when set, so that both sides agree).
"""

from __future__ import annotations

from config.settings import base
from config.settings.base import *
from config.settings.env import basic_access_token, env_bool, env_str

DEBUG = env_bool("DJANGO_DEBUG", True)
# The developer tools' commands (`manage.py fill_volume`): here and in the test and bench
# settings, which build on these; never in production.
INSTALLED_APPS = [*base.INSTALLED_APPS, "tools"]
SECRET_KEY = base.SECRET_KEY or "local-demo-only-not-secret-3b9f0c2e7a41"

PAYMENTS_PUBLIC_KEY = base.PAYMENTS_PUBLIC_KEY or env_str(
    "SANDBOX_PUBLIC_KEY",
    "pk_sandbox_demo",
    doc="The sandbox's public key, which the demo's shop uses when `PAYMENTS_PUBLIC_KEY` is unset "
    "(the sandbox reads it too, so that both sides agree).",
)
PAYMENTS_SECRET_KEY = base.PAYMENTS_SECRET_KEY or env_str(
    "SANDBOX_SECRET_KEY",
    "sk_sandbox_demo",
    doc="The sandbox's secret key, which the demo's shop uses when `PAYMENTS_SECRET_KEY` is "
    "unset (the sandbox reads it too).",
)
PAYMENTS_ACCESS_TOKEN = base.PAYMENTS_ACCESS_TOKEN or basic_access_token(
    PAYMENTS_PUBLIC_KEY, PAYMENTS_SECRET_KEY
)
PAYMENTS_WEBHOOK_TOKEN = base.PAYMENTS_WEBHOOK_TOKEN or "demo-webhook-token-9c1e4d7f2a"

# Static files straight from the source folders, no collectstatic needed for the demo.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
