from django.apps import AppConfig


class ProviderConfig(AppConfig):
    name = "sandbox.provider"
    label = "provider"
    verbose_name = "Card payments service (sandbox)"
