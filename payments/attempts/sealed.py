"""A create request kept, encrypted, while its outcome is unknown.

A create whose answer was lost is confirmed by sending the very same request again with the same
`Idempotency-Key`: the provider answers what it did the first time, or does it now. The request
holds the shopper's single-use card token, so it is stored only encrypted (Fernet, with a key
derived from `SECRET_KEY`) and erased as soon as the outcome is known.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import simplejson
from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.views.decorators.debug import sensitive_variables


def _fernet() -> Fernet:
    digest = hashlib.sha256(f"payments.attempts.sealed:{settings.SECRET_KEY}".encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


@sensitive_variables("body")  # the card token and the webhook address: never in error reports
def seal(body: dict[str, Any]) -> str:
    return _fernet().encrypt(simplejson.dumps(body, use_decimal=True).encode()).decode()


def unseal(sealed: str) -> dict[str, Any] | None:
    """The request, or None when there is none or it cannot be read (another SECRET_KEY)."""
    if not sealed:
        return None
    try:
        return simplejson.loads(_fernet().decrypt(sealed.encode()), use_decimal=True)
    except (InvalidToken, ValueError):
        return None
