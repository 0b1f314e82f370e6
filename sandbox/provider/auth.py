"""Credentials of the provider API.

- `Bearer <public key>`: the browser-safe key, allowed only where `PUBLIC` scope is accepted
  (POST /card_tokens and GET /payment_methods).
- `Basic base64(public key:secret key)`: the secret access token, allowed everywhere.
Anything else, or a key out of its scope: 401 CL1501.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from enum import StrEnum

from django.conf import settings
from django.http import HttpRequest

from sandbox.provider.errors import unauthorized


class Scope(StrEnum):
    PUBLIC = "public"
    SECRET = "secret"


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def credential_scope(request: HttpRequest) -> Scope | None:
    """The scope the request's Authorization header grants, or None when it grants nothing."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    value = value.strip()
    if not value:
        return None
    if scheme.lower() == "bearer":
        return Scope.PUBLIC if _same(value, settings.SANDBOX_PUBLIC_KEY) else None
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        public, sep, secret = decoded.partition(":")
        if not sep:
            return None
        public_ok = _same(public, settings.SANDBOX_PUBLIC_KEY)
        secret_ok = _same(secret, settings.SANDBOX_SECRET_KEY)
        return Scope.SECRET if public_ok and secret_ok else None
    return None


def require_scope(request: HttpRequest, *, allow_public: bool) -> Scope:
    scope = credential_scope(request)
    if scope is Scope.SECRET or (scope is Scope.PUBLIC and allow_public):
        return scope
    raise unauthorized()
