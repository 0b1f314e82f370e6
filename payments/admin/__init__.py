"""Staff work on payments in the admin (registered on import): payments (`payment_admin`) and
subscriptions (`subscription_admin`), with what their pages share (`columns`)."""

from payments.admin import payment_admin, subscription_admin

__all__ = ["payment_admin", "subscription_admin"]
