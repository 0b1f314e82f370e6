from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _


def settings_problems() -> list[str]:
    """What is wrong with the webhook settings, each naming its variables (empty: nothing)."""
    problems = []
    coalesce, relay = settings.WEBHOOKS_COALESCE_SECONDS, settings.WEBHOOKS_RELAY_AFTER
    if coalesce < 0:
        problems.append("WEBHOOKS_COALESCE_SECONDS must be 0 or more.")
    if relay < coalesce + 10:
        problems.append(
            "WEBHOOKS_RELAY_AFTER must be at least WEBHOOKS_COALESCE_SECONDS + 10 seconds "
            f"(now {relay} and {coalesce}): the relay would take notifications held for "
            "coalescing for lost ones."
        )
    visibility = (getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}).get(
        "visibility_timeout"
    )
    if visibility is not None and settings.WEBHOOKS_RETRY_BACKOFF_MAX >= visibility:
        problems.append(
            "WEBHOOKS_RETRY_BACKOFF_MAX must be below CELERY_VISIBILITY_TIMEOUT (now "
            f"{settings.WEBHOOKS_RETRY_BACKOFF_MAX} and {visibility}): the broker would hand a "
            "retry that waits its turn to a second worker."
        )
    one_read = settings.PAYMENTS_CONNECT_TIMEOUT + settings.PAYMENTS_READ_TIMEOUT
    if settings.WEBHOOKS_CLAIM_LEASE <= one_read:
        problems.append(
            "WEBHOOKS_CLAIM_LEASE must be longer than one provider read, PAYMENTS_CONNECT_TIMEOUT"
            f" + PAYMENTS_READ_TIMEOUT (now {settings.WEBHOOKS_CLAIM_LEASE} and {one_read:g}):"
            " every task still reading would be taken for lost."
        )
    if settings.WEBHOOKS_RELAY_EVERY < 1 or settings.PAYMENTS_RECONCILE_EVERY < 1:
        problems.append("WEBHOOKS_RELAY_EVERY and PAYMENTS_RECONCILE_EVERY must be at least 1.")
    if settings.WEBHOOKS_KEEP_DAYS < 1:
        problems.append("WEBHOOKS_KEEP_DAYS must be at least 1.")
    if settings.WEBHOOKS_MAX_BODY_BYTES < 256:
        problems.append("WEBHOOKS_MAX_BODY_BYTES must be at least 256.")
    if settings.WEBHOOKS_MAX_RETRIES < 0 or settings.WEBHOOKS_RETRY_BACKOFF < 1:
        problems.append(
            "WEBHOOKS_MAX_RETRIES must be 0 or more and WEBHOOKS_RETRY_BACKOFF at least 1."
        )
    return problems


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = _("Provider notifications")

    def ready(self) -> None:
        # Every process (web, worker, beat, commands) refuses to start on settings that disagree.
        if problems := settings_problems():
            raise ImproperlyConfigured("Webhook settings:\n- " + "\n- ".join(problems))
