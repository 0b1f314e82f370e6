"""Sending a checkout attempt's create to the provider: the first time, and again until it is
answered.

The attempt is stored with its sealed request and its idempotency key before anything is sent
(`payments.attempts.rules.payment_attempt_store`); this is the one path that sends it, from
the create task. An answer settles the attempt (the payment it made, or a refusal: then nothing
was created by this key) and erases the request. A create that timed out, or was answered with
a server failure, may have charged the shopper: the attempt stays `unknown` with its request
kept, and the task sends the very same request again with the same `Idempotency-Key` until the
provider answers. A 429 changes nothing: the same request is sent again after the wait the
provider asked for.
"""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from payments.attempts.rules import mark_attempt
from payments.attempts.sealed import unseal
from payments.models import Payment, PaymentEventKind
from payments.provider.client import get_client
from payments.provider.errors import (
    InvalidRequest,
    OutcomeUnknown,
    PaymentOutcomeUnknown,
    ProviderApiError,
    ProviderUnavailable,
    Throttled,
)
from payments.provider.types import ProviderPayment
from payments.snapshots import apply_in_transaction
from payments.statuses import IN_FLIGHT, PaymentStatus
from payments.words import NOT_REACHED

logger = logging.getLogger(__name__)

# An attempt waiting this long (seconds) for a throttled create comes back with the least
# jitter: the shoppers held back longest are sent first (core.task_queue.asked_wait).
SENIOR_AFTER = 20.0


def payment_send_create(*, payment: Payment) -> Payment:
    """Send the attempt's create with its key and settle the attempt by the answer.
    Raises `PaymentOutcomeUnknown` while the provider gives no answer (try again later). An
    attempt already settled (an answer, or a notification, named the payment) is left as it is;
    an attempt with no request kept waits for the provider's notification."""
    payment.refresh_from_db()
    body = unseal(payment.create_request)
    if payment.status not in IN_FLIGHT or body is None:
        _forget_request(payment)
        return payment
    first = payment.status == PaymentStatus.CREATING
    remote = _answer(payment, body, first=first)
    if remote is None:
        return payment
    settled = apply_in_transaction(
        payment.pk, remote, kind=PaymentEventKind.CREATED, forget_request=True
    )
    _forget_request(settled)  # when the snapshot was not applied (an older one)
    if not first:
        logger.warning("payment %s confirmed at the provider as %s", payment.pk, remote.id)
    return settled


def _answer(payment: Payment, body: dict[str, Any], *, first: bool) -> ProviderPayment | None:
    """The provider's payment for the create, or None once the attempt is settled without one
    (refused, never reached); raises `PaymentOutcomeUnknown` while there is no answer yet."""
    try:
        return get_client().create_payment(body=body, idempotency_key=payment.idempotency_key)
    except Throttled as exc:
        # "Slow down": not processed. The same request, with its key, goes again after the
        # wait asked for (the task's retry), the shopper who clicked earliest first; the
        # shopper's page keeps saying "processing".
        waited = (timezone.now() - payment.created_at).total_seconds()
        exc.seniority = min(1.0, waited / SENIOR_AFTER)
        logger.info(
            "payment %s: create throttled, sent again in %.0f s", payment.pk, exc.retry_after
        )
        raise PaymentOutcomeUnknown("The provider has not confirmed the payment yet.") from exc
    except InvalidRequest as exc:
        # A refusal of this very request (a bad or expired card token, an amount the method
        # does not take): nothing was created with this key, nor will be.
        _settle_failed(payment, exc)
        return None
    except OutcomeUnknown as exc:
        # Sent, unanswered: from now on, the payment may exist. Unless a notification named
        # it meanwhile: then its status, from the provider, is the answer.
        if first and not mark_attempt(
            payment, PaymentStatus.UNKNOWN, PaymentEventKind.OUTCOME_UNKNOWN, exc, request=body
        ):
            _forget_request(payment)
            return None
        logger.info("payment %s: create unconfirmed (%s)", payment.pk, exc)
        raise PaymentOutcomeUnknown("The provider has not confirmed the payment yet.") from exc
    except ProviderUnavailable as exc:
        if first:  # never reached the provider: nothing was charged
            _settle_failed(payment, exc, code=NOT_REACHED)
            return None
        logger.info("payment %s: create still unconfirmed (%s)", payment.pk, exc)
        raise PaymentOutcomeUnknown("The provider has not confirmed the payment yet.") from exc
    except ProviderApiError as exc:
        if first:  # refused outright (e.g. our credentials): nothing was created
            _settle_failed(payment, exc)
            return None
        # Not this request's answer (e.g. the key is in use): ask again later.
        logger.info("payment %s: create unconfirmed (%s)", payment.pk, exc)
        raise PaymentOutcomeUnknown("The provider has not confirmed the payment yet.") from exc


def _settle_failed(payment: Payment, error: ProviderApiError, *, code: str = "") -> None:
    mark_attempt(payment, PaymentStatus.FAILED, PaymentEventKind.FAILED, error, code=code)
    logger.warning("payment %s not created: %s", payment.pk, error)
    _forget_request(payment)


def _forget_request(payment: Payment) -> None:
    if payment.create_request:
        Payment.objects.filter(pk=payment.pk).update(create_request="")
        payment.create_request = ""
