"""The only code that speaks HTTP to the card payments service.

One `requests.Session` (keep-alive pool), explicit (connect, read) timeouts, credentials from
settings, typed results, typed errors. Retries come from urllib3's `Retry`
(`payments.provider.retries`), on connection errors, timeouts and 5xx: POST/PATCH/PUT always
carry an `Idempotency-Key`, so a write is sent again with that same key (the provider answers
what it did the first time, or does it now). A write whose answer never came, or came as a
server failure, raises `OutcomeUnknown`: a 500 is not proof that nothing was done.

A 429 (the provider limiting the shop's rate) is not retried here, holding a worker's thread:
it raises `Throttled` with the provider's `Retry-After`, and the task sends the same request
again after that wait plus jitter (`core.task_queue.ShopTask`). Writes keep under
PAYMENTS_PROVIDER_WRITES_PER_SECOND, shared by every process (`payments.provider.pace`), so a
sale day does not earn the 429s in the first place.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from decimal import Decimal
from functools import lru_cache
from typing import Any

import requests
import simplejson
from django.conf import settings
from django.views.decorators.debug import sensitive_variables
from django_guid import get_guid
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from payments.metrics import provider_call_observed
from payments.provider.errors import (
    INVALID_JSON,
    NO_ANSWER,
    NO_SUCH_RESOURCE,
    Conflict,
    InvalidRequest,
    NotFound,
    OutcomeUnknown,
    ProviderApiError,
    ProviderUnavailable,
    Throttled,
    Unauthorized,
)
from payments.provider.pace import write_slot_wait
from payments.provider.retries import WRITES, ProviderRetry, default_retry, never_sent
from payments.provider.types import (
    CardToken,
    PaymentMethodEntry,
    ProviderPayment,
    ProviderRefund,
    ProviderSubscription,
)

logger = logging.getLogger(__name__)


def new_idempotency_key() -> str:
    return uuid.uuid4().hex


class PaymentsClient:
    """Typed client of the card payments service; one method per provider operation."""

    def __init__(
        self,
        *,
        base_url: str,
        public_key: str,
        access_token: str,
        auth_scheme: str = "Basic",
        timeout: tuple[float, float] = (3.05, 15.0),
        retry: Retry | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._public_key = public_key
        self._authorization = f"{auth_scheme} {access_token}"
        self.timeout = timeout
        self.session = requests.Session()
        adapter = HTTPAdapter(
            pool_connections=4,
            pool_maxsize=16,
            max_retries=retry if retry is not None else default_retry(),
        )
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    @classmethod
    def from_settings(cls) -> PaymentsClient:
        return cls(
            base_url=settings.PAYMENTS_API_BASE_URL,
            public_key=settings.PAYMENTS_PUBLIC_KEY,
            access_token=settings.PAYMENTS_ACCESS_TOKEN,
            auth_scheme=settings.PAYMENTS_AUTH_SCHEME,
            timeout=(settings.PAYMENTS_CONNECT_TIMEOUT, settings.PAYMENTS_READ_TIMEOUT),
        )

    # --- Operations -------------------------------------------------------------------------

    @sensitive_variables("number", "cvv", "body")
    def create_card_token(
        self, *, number: str, exp_month: str, exp_year: str, cvv: str, holder_name: str
    ) -> CardToken:
        """POST /card_tokens with the public key (server-side tokenization, for tests and tools)."""
        body = {
            "card": {
                "number": number,
                "exp_month": exp_month,
                "exp_year": exp_year,
                "cvv": cvv,
                "holder_name": holder_name,
            }
        }
        data = self._call(
            "POST", "/card_tokens", body=body, public=True, idempotency_key=new_idempotency_key()
        )
        return CardToken.from_json(data)

    # Directly, not through method_decorator: its wrapper's frame would show the arguments.
    @sensitive_variables("body")
    def create_payment(self, *, body: dict[str, Any], idempotency_key: str) -> ProviderPayment:
        """POST /payments. Retried only with the same key; `OutcomeUnknown` if no answer came."""
        data = self._call("POST", "/payments", body=body, idempotency_key=idempotency_key)
        return ProviderPayment.from_json(data)

    def get_payment(self, payment_id: str) -> ProviderPayment:
        return ProviderPayment.from_json(self._call("GET", f"/payments/{_segment(payment_id)}"))

    def capture_payment(
        self, payment_id: str, *, amount: Decimal, idempotency_key: str
    ) -> ProviderPayment:
        """PATCH status `approved` with `paid_amount` (at most the authorized amount)."""
        data = self._call(
            "PATCH",
            f"/payments/{_segment(payment_id)}",
            body={"status": "approved", "paid_amount": amount},
            idempotency_key=idempotency_key,
        )
        return ProviderPayment.from_json(data)

    def cancel_payment(self, payment_id: str, *, idempotency_key: str) -> ProviderPayment:
        """PATCH status `cancelled`: release an authorization."""
        data = self._call(
            "PATCH",
            f"/payments/{_segment(payment_id)}",
            body={"status": "cancelled"},
            idempotency_key=idempotency_key,
        )
        return ProviderPayment.from_json(data)

    def refund(
        self, payment_id: str, *, amount: Decimal | None, reason: str, idempotency_key: str
    ) -> ProviderRefund:
        """POST /refunds (the refunds API); without amount, what is left is refunded."""
        body: dict[str, Any] = {"payment_id": payment_id, "reason": reason}
        if amount is not None:
            body["amount"] = amount
        data = self._call("POST", "/refunds", body=body, idempotency_key=idempotency_key)
        return ProviderRefund.from_json(data)

    def list_payment_methods(self, country: str = "MX") -> list[PaymentMethodEntry]:
        data = self._call("GET", "/payment_methods", params={"country": country})
        return [PaymentMethodEntry.from_json(entry) for entry in data]

    def get_subscription(self, subscription_id: str) -> ProviderSubscription:
        path = f"/subscriptions/{_segment(subscription_id)}"
        return ProviderSubscription.from_json(self._call("GET", path))

    def cancel_subscription(
        self, subscription_id: str, *, idempotency_key: str
    ) -> ProviderSubscription:
        """PUT /subscriptions/{id} with status `inactive` (the only change allowed)."""
        data = self._call(
            "PUT",
            f"/subscriptions/{_segment(subscription_id)}",
            body={"status": "inactive"},
            idempotency_key=idempotency_key,
        )
        return ProviderSubscription.from_json(data)

    # --- Transport --------------------------------------------------------------------------

    # Every local here and below (requests, urllib3) is hidden from error reports: the request
    # body holds card tokens and the webhook address, the headers the access token.
    @sensitive_variables()
    def _call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, str] | None = None,
        idempotency_key: str | None = None,
        public: bool = False,
    ) -> Any:
        headers = self._headers(method, idempotency_key, public)
        data = None if body is None else simplejson.dumps(body, use_decimal=True)
        if method in WRITES and not public:
            write_slot_wait()
        started = time.monotonic()
        try:
            response = self.session.request(
                method,
                f"{self.base_url}{path}",
                data=data,
                headers=headers,
                params=params,
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            self._log(method, path, None, started, "", error=type(exc).__name__)
            unknown = method in WRITES and not never_sent(exc)
            kind = OutcomeUnknown if unknown else ProviderUnavailable
            raise kind(NO_ANSWER(error=type(exc).__name__)) from exc
        request_id = response.headers.get("X-Request-Id", "")
        if not 200 <= response.status_code < 300:
            error = _error_for(method, response, request_id)
            self._log(method, path, response.status_code, started, request_id, error.error_code)
            raise error
        self._log(method, path, response.status_code, started, request_id)
        try:
            return _loads(response.text)
        except ValueError as exc:
            # A write answered 2xx was done, whatever its body says: its result is unknown.
            kind = OutcomeUnknown if method in WRITES else ProviderUnavailable
            raise kind(
                INVALID_JSON(),
                http_status=response.status_code,
                request_id=request_id,
            ) from exc

    def _headers(self, method: str, idempotency_key: str | None, public: bool) -> dict[str, Any]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {self._public_key}" if public else self._authorization,
            # The current request's or task's id (django-guid); None outside of one: not sent.
            "X-Request-ID": get_guid(),
        }
        if method in WRITES:
            headers["Idempotency-Key"] = idempotency_key or new_idempotency_key()
        return headers

    @staticmethod
    def _log(
        method: str, path: str, status: int | None, started: float, request_id: str, error: str = ""
    ) -> None:
        seconds = time.monotonic() - started
        provider_call_observed(method, path, status, seconds)
        logger.info(
            "payments-api %s %s -> %s in %.0f ms%s%s",
            method,
            path,
            status or error,
            seconds * 1000,
            f" request_id={request_id}" if request_id else "",
            f" ({error})" if error else "",
        )


def _loads(text: str) -> Any:
    return json.loads(text, parse_float=Decimal)


def _segment(value: str) -> str:
    """A path segment that cannot change the path (ids are UUIDs; anything else is refused)."""
    if not value or any(c in value for c in "/?#%\\ ") or value in (".", ".."):
        raise NotFound(NO_SUCH_RESOURCE(), http_status=404, error_code="BR1301")
    return value


def _error_for(method: str, response: requests.Response, request_id: str) -> ProviderApiError:
    try:
        body = _loads(response.text) if response.text else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    status = response.status_code
    raw_detail = body.get("detail")
    kwargs: dict[str, Any] = {
        "http_status": status,
        "error_code": str(body.get("error_code") or ""),
        "detail": [str(d) for d in raw_detail] if isinstance(raw_detail, list) else [],
        "request_id": request_id,
    }
    message = str(body.get("message") or response.reason or f"HTTP {status}")
    if status >= 500:
        # A write may have been done before the failure (or the answer was lost on the way
        # back): its outcome is unknown until the same request, sent again with its key, or a
        # read says. A read changes nothing: its failure is an outage to wait out.
        kind: type[ProviderApiError] = OutcomeUnknown if method in WRITES else ProviderUnavailable
        return kind(message, **kwargs)
    if status == 429:  # not processed: the same request, sent again later, will be
        return Throttled(message, retry_after=_retry_after(response), **kwargs)
    if status == 401:
        return Unauthorized(message, **kwargs)
    if status == 404:
        return NotFound(message, **kwargs)
    if status == 409:
        if kwargs["error_code"] == "CL2209":  # the same write is still being processed
            return OutcomeUnknown(message, **kwargs)
        return Conflict(message, **kwargs)
    return InvalidRequest(message, **kwargs)


THROTTLED_WAIT_MAX = 60.0  # seconds: a longer Retry-After is waited in several tries


def _retry_after(response: requests.Response) -> float:
    """The seconds a 429 asks to wait (its `Retry-After`, in seconds or as a date), between 1
    and THROTTLED_WAIT_MAX; 1 when it says nothing usable."""
    value = response.headers.get("Retry-After", "")
    try:
        wait = ProviderRetry().parse_retry_after(value) if value else 1.0
    except Exception:  # urllib3's InvalidHeader
        wait = 1.0
    return min(max(wait, 1.0), THROTTLED_WAIT_MAX)


@lru_cache(maxsize=4)
def _client_for(config: tuple[Any, ...]) -> PaymentsClient:
    base_url, public_key, access_token, scheme, connect, read = config
    return PaymentsClient(
        base_url=base_url,
        public_key=public_key,
        access_token=access_token,
        auth_scheme=scheme,
        timeout=(connect, read),
    )


def get_client() -> PaymentsClient:
    """The process's client for the current settings (one keep-alive pool per configuration)."""
    return _client_for(
        (
            settings.PAYMENTS_API_BASE_URL,
            settings.PAYMENTS_PUBLIC_KEY,
            settings.PAYMENTS_ACCESS_TOKEN,
            settings.PAYMENTS_AUTH_SCHEME,
            settings.PAYMENTS_CONNECT_TIMEOUT,
            settings.PAYMENTS_READ_TIMEOUT,
        )
    )
