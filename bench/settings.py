"""The benchmarks' settings: the shop's production settings where they apply (DEBUG off, the same
middleware, database, cache and broker settings), plus the `bench` app and its URLs, the demo's
provider keys and plain HTTP on 127.0.0.1."""

from __future__ import annotations

from config.settings.local import *  # noqa: F403
from config.settings.local import INSTALLED_APPS

DEBUG = False  # DEBUG keeps every SQL query in memory
ROOT_URLCONF = "bench.urls"
INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"  # thousands of order mails
