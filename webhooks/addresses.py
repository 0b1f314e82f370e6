"""Where the provider sends its notifications: the payments app asks for it through the setting
PAYMENTS_WEBHOOK_URL_FUNCTION, so that only this app knows its address and secret."""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse


def payment_notification_url() -> str:
    """The receiver's absolute address, with the secret token ("" when no token is set)."""
    token = settings.PAYMENTS_WEBHOOK_TOKEN
    if not token:
        return ""
    path = reverse("webhooks:payments", kwargs={"token": token})
    return f"{settings.SHOP_BASE_URL.rstrip('/')}{path}"
