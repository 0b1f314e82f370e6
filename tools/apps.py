"""The developer tools as a Django app, for their management commands (`manage.py fill_volume`).

Installed by the development, test and bench settings only (config.settings.local and those
built on it), never by config.settings.production: a production shop has no command that
writes made-up orders.
"""

from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    label = "tools"
    verbose_name = "Developer tools"
