from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PaymentsConfig(AppConfig):
    name = "payments"
    verbose_name = _("Payments")

    def ready(self) -> None:
        from payments.actions.kinds import KINDS
        from staff_actions.kinds import register

        register(*KINDS)
