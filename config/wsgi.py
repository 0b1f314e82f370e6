"""The WSGI application for gunicorn: Django's, with the short path for the provider's
notifications (`webhooks.wsgi`)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
django.setup(set_prefix=False)

from webhooks.wsgi import ShopWSGIHandler  # noqa: E402 (needs the apps loaded)

application = ShopWSGIHandler()
