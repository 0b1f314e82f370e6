from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CheckoutConfig(AppConfig):
    name = "checkout"
    verbose_name = _("Shop")

    def ready(self) -> None:
        from checkout import receivers  # noqa: F401  (connects the signal receivers)
        from checkout.fulfilment.calls import KINDS
        from staff_actions.kinds import register

        register(*KINDS)
