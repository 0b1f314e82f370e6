"""The demo's staff accounts sign in with a second factor too: each gets an authenticator of a
fixed secret, written in the README beside its password (demo only: `seed_demo`). The secrets
are read without Django set up (the release check and the soak sign in over HTTP with them)."""

from __future__ import annotations

import base64
from typing import Any

# Base32, as an authenticator app takes it (README, "Demo credentials").
DEMO_SECRETS = {
    "admin": "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
    "consulta": "KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU",
}


def demo_authenticator(user: Any, secret: str) -> bool:
    """Give the account an authenticator of `secret` (and recovery codes) unless it has one;
    whether one was made."""
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from staff_signin.devices import (
        AUTHENTICATOR_NAME,
        recovery_codes_left,
        recovery_codes_replace,
    )

    if TOTPDevice.objects.filter(user=user, confirmed=True).exists():
        return False
    key = base64.b32decode(secret).hex()
    TOTPDevice.objects.create(user=user, name=AUTHENTICATOR_NAME, key=key, confirmed=True)
    if not recovery_codes_left(user):
        recovery_codes_replace(user=user)
    return True
