"""The benchmarks' settings: the local settings with DEBUG off (it keeps every SQL query in
memory), the `bench` app and its URLs, and mails dropped (thousands of order mails)."""

from config.settings.local import *  # noqa: F403
from config.settings.local import INSTALLED_APPS

DEBUG = False
ROOT_URLCONF = "bench.urls"
INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
