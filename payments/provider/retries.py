"""How the provider's client tries a request again within its worker's thread (urllib3's `Retry`,
mounted on the client's session): connection errors, timeouts and server failures (5xx) a few
times with a short backoff, a write always with its `Idempotency-Key`; never a 429 (the task
waits for that: `payments.provider.client`). And, once the tries ran out, whether any of them
reached the provider (a write none reached was never made)."""

from __future__ import annotations

from typing import Any

import requests
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import RequestHistory, Retry

WRITES = frozenset({"POST", "PATCH", "PUT"})


class ProviderRetry(Retry):
    """A provider's Retry-After never stretches a wait beyond `backoff_max`, and when retries
    run out the error keeps every attempt, so a write is called "never sent" only if none was.
    A 429 is not retried in the thread: `Throttled` goes up to the task, which waits
    (`payments.provider.client`)."""

    RETRY_AFTER_STATUS_CODES = frozenset({503})

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        wait = super().get_retry_after(response)
        return None if wait is None else min(wait, self.backoff_max)

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Retry:
        try:
            return super().increment(method, url, response, error, _pool, _stacktrace)
        except MaxRetryError as exc:
            status = response.status if response is not None else None
            exc.attempts = (*self.history, RequestHistory(method, url, error, status, None))  # type: ignore[attr-defined]
            raise


def default_retry(attempts: int = 3) -> Retry:
    return ProviderRetry(
        total=attempts,
        connect=attempts,
        read=attempts,
        status=attempts,
        other=0,
        status_forcelist=(500, 502, 503, 504),
        allowed_methods=frozenset({"GET", *WRITES}),
        backoff_factor=0.2,
        backoff_jitter=0.3,
        backoff_max=3.0,
        raise_on_status=False,
        respect_retry_after_header=True,
    )


def never_sent(exc: requests.RequestException) -> bool:
    """True only when no attempt of the request ever reached the server (every attempt
    failed while connecting)."""
    retry_error = next((a for a in exc.args if isinstance(a, MaxRetryError)), None)
    attempts = getattr(retry_error, "attempts", None)
    if attempts:
        return all(isinstance(a.error, ConnectTimeoutError) for a in attempts)
    if isinstance(exc, requests.ConnectTimeout):
        return True
    text = repr(exc)
    return isinstance(exc, requests.ConnectionError) and (
        "NewConnectionError" in text or "Connection refused" in text
    )
