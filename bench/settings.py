"""Settings of the benchmarks: the shop's local settings, with DEBUG off (as in production:
DEBUG keeps every SQL query in memory), a bare JSON view to compare the receiver with, the
`bench` app, whose no-op task the worker knows, and mails dropped.

The middleware stack, database and cache settings are the shop's own.
"""

from __future__ import annotations

from config.env import env_bool, env_str
from config.settings.local import *  # noqa: F403
from config.settings.local import INSTALLED_APPS

DEBUG = env_bool("BENCH_DEBUG", False)
ROOT_URLCONF = "bench.urls"
INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
# Order mails are not what is measured; the console backend would print thousands of them.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.dummy.EmailBackend")
