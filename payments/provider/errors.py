"""Two kinds of errors.

- What the provider or the network said (`ProviderApiError` and its children), raised by the
  client with `http_status`, `error_code`, `message`, `detail` and the provider's request id.
- What went wrong for the shop (`PaymentError` and its children), whose message is safe to
  show a shopper or a staff member. The calls translate the first kind into the second
  (`payments.words`: `provider_errors`, `shop_throttled`).
"""

from __future__ import annotations

from django.utils.translation import gettext_noop

from core.errors import Refusal, TryLater
from core.sentences import Sentence

# What the client says when the provider gave no usable answer: the shop's own words, kept in
# the payments' ledger and read there in the staff member's language (payments.words).
NO_ANSWER = Sentence(gettext_noop("the card payments service did not answer (%(error)s)"))
INVALID_JSON = Sentence(gettext_noop("the card payments service answered with invalid JSON"))
NO_SUCH_RESOURCE = Sentence(gettext_noop("no such resource"))
CLIENT_SENTENCES = [NO_ANSWER, INVALID_JSON, NO_SUCH_RESOURCE]


class ProviderApiError(Exception):
    """An answer of the card payments service that is not a success, or no answer at all."""

    def __init__(
        self,
        message: str,
        *,
        http_status: int | None = None,
        error_code: str = "",
        detail: list[str] | None = None,
        request_id: str = "",
    ) -> None:
        super().__init__(f"{error_code or http_status or 'network'}: {message}")
        self.message = message
        self.http_status = http_status
        self.error_code = error_code
        self.detail = list(detail or [])
        self.request_id = request_id


class Unauthorized(ProviderApiError):
    """401: the credentials were refused (CL1501)."""


class NotFound(ProviderApiError):
    """404: no such payment or subscription."""


class InvalidRequest(ProviderApiError):
    """400 (and other 4xx): the provider refused the request; nothing was done."""


class Conflict(ProviderApiError):
    """409: the transition is not allowed from the payment's current status (CL2206)."""


class ProviderUnavailable(ProviderApiError):
    """No usable answer: connection error, timeout, or a server failure (5xx) answering a read."""


class Throttled(ProviderUnavailable, TryLater):
    """429: the provider is limiting the shop's rate and did not process the request. Send the
    very same request again (a write with its idempotency key) after `retry_after` seconds;
    never report it as failed."""

    def __init__(self, message: str, *, retry_after: float = 1.0, **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.retry_after = retry_after


class OutcomeUnknown(ProviderUnavailable):
    """A create, capture, cancel or refund was sent but no answer came, or a server failure
    (5xx) did: it may or may not have happened. Send it again with its key, or read; never
    report it as failed."""


class PaymentError(Refusal):
    """A payment problem with a message safe to show a shopper or a staff member."""


class PaymentNotAllowed(PaymentError):
    """The payment's state does not allow this action."""


class InvalidAmount(PaymentError):
    """The amount is not between zero and what the action allows."""


class PaymentInProgress(PaymentError):
    """Another action on this payment is already running."""


class PaymentAttemptBlocked(PaymentError):
    """An earlier attempt for the order has an unknown outcome; it must be reconciled first."""


class PaymentOutcomeUnknown(PaymentError):
    """The provider did not answer; the payment may exist. It is being reconciled."""


class PaymentRefused(PaymentError):
    """The provider refused the request (bad token, amount, card...)."""


class ProviderDown(PaymentError):
    """The provider could not be reached; nothing changed."""


class ProviderThrottled(ProviderDown, TryLater):
    """The provider asked the shop to slow down (429): nothing changed, and the same request
    is sent again after `retry_after` seconds plus jitter (its task's retry:
    `core.task_queue.ShopTask`)."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after
