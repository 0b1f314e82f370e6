from django.apps import AppConfig


class CheckoutConfig(AppConfig):
    name = "checkout"
    verbose_name = "Checkout"

    def ready(self) -> None:
        from checkout import receivers  # noqa: F401  (connects the signal receivers)
