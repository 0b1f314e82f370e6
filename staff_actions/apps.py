from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class StaffActionsConfig(AppConfig):
    name = "staff_actions"
    verbose_name = _("Staff actions")
    default_auto_field = "django.db.models.BigAutoField"
