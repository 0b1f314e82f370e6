from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BooksConfig(AppConfig):
    name = "books"
    verbose_name = _("Invoices and books")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The checkout box and the order page's factura section, offered to checkout through
        # its extension points (checkout never imports books); refunds after an invoice.
        from books import receivers, storefront

        storefront.register()
        receivers.connect()
