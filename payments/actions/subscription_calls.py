"""Subscriptions, kept as the provider has them: imported (or updated) by id, and cancelled."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from core.ledger import Actor
from payments.models import Subscription, SubscriptionStatus
from payments.provider.client import get_client, new_idempotency_key
from payments.provider.errors import PaymentNotAllowed
from payments.provider.types import ProviderSubscription
from payments.records import acting_user
from payments.words import provider_errors

logger = logging.getLogger(__name__)


def _store_subscription(remote: ProviderSubscription) -> Subscription:
    subscription, _ = Subscription.objects.update_or_create(
        provider_id=remote.id,
        defaults={
            "price_id": remote.price_id,
            "customer": remote.customer,
            "customer_email": str(remote.customer.get("email") or "")[:254],
            "status": remote.status if remote.status in SubscriptionStatus.values else "inactive",
            "invoices": list(remote.invoices),
            "snapshot": remote.raw,
            "last_synced_at": timezone.now(),
        },
    )
    return subscription


def subscription_sync(*, provider_id: str) -> Subscription:
    """Import (or update) a subscription from the provider by its id."""
    with provider_errors(not_found="The provider has no subscription with this id."):
        remote = get_client().get_subscription(provider_id.strip())
    with transaction.atomic():
        return _store_subscription(remote)


def subscription_cancel(
    *, subscription: Subscription, actor: Actor = None, idempotency_key: str = ""
) -> Subscription:
    """Set a subscription inactive at the provider (it cannot be activated again); a staff
    action passes its own idempotency key, sent again by a re-run of its task."""
    if subscription.status == SubscriptionStatus.INACTIVE:
        raise PaymentNotAllowed("This subscription is already inactive.")
    with provider_errors(unreachable="The payment service is not reachable; nothing changed."):
        remote = get_client().cancel_subscription(
            subscription.provider_id, idempotency_key=idempotency_key or new_idempotency_key()
        )
    logger.info(
        "subscription %s cancelled by %s", subscription.provider_id, acting_user(actor) or "system"
    )
    with transaction.atomic():
        return _store_subscription(remote)
