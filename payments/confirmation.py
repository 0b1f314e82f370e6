"""Confirming a create whose answer was lost.

A create that timed out, or was answered with a server failure, may have charged the shopper. Its
attempt stays `unknown` and its request is kept sealed (payments/sealed.py); this service sends
the very same request again with the same `Idempotency-Key` until the provider says what
happened: the payment it made (then or now), or a refusal (then nothing was created by this key).
Only then is the attempt settled and the sealed request erased.
"""

from __future__ import annotations

import logging

from payments.client import get_client
from payments.errors import InvalidRequest, PaymentOutcomeUnknown, ProviderApiError
from payments.models import IN_FLIGHT, Payment, PaymentEventKind, PaymentStatus
from payments.sealed import unseal
from payments.services.attempts import mark_attempt
from payments.services.snapshots import apply_in_transaction

logger = logging.getLogger(__name__)


def payment_confirm_create(*, payment: Payment) -> Payment:
    """Send an unknown attempt's create again with its key and settle it by the answer.
    Raises `PaymentOutcomeUnknown` while the provider still gives no answer (try again later).
    An attempt already settled (its answer, or a notification, named the payment) is left as
    it is; an attempt with no request kept waits for the provider's notification."""
    payment.refresh_from_db()
    body = unseal(payment.create_request)
    if payment.status not in IN_FLIGHT or body is None:
        _forget_request(payment)
        return payment
    try:
        remote = get_client().create_payment(body=body, idempotency_key=payment.idempotency_key)
    except InvalidRequest as exc:
        # A refusal of this very request (e.g. its card token has expired since): nothing was
        # created with this key, and nothing ever will be.
        mark_attempt(payment, PaymentStatus.FAILED, PaymentEventKind.FAILED, exc)
        logger.warning("payment %s not created: %s", payment.pk, exc)
        _forget_request(payment)
        return payment
    except ProviderApiError as exc:  # no answer, a server failure, or not this request's
        logger.info("payment %s: create still unconfirmed (%s)", payment.pk, exc)
        raise PaymentOutcomeUnknown("The provider has not confirmed the payment yet.") from exc
    confirmed = apply_in_transaction(payment.pk, remote, kind=PaymentEventKind.CREATED)
    _forget_request(confirmed)
    logger.warning("payment %s confirmed at the provider as %s", payment.pk, remote.id)
    return confirmed


def _forget_request(payment: Payment) -> None:
    if payment.create_request:
        Payment.objects.filter(pk=payment.pk).update(create_request="")
        payment.create_request = ""
