"""The one way tests sign staff in to the admin: with a second factor. `sign_in_staff` gives the
account an authenticator (django-otp's TOTP device, of a secret the tests know) unless it has
one, then either signs the test client's session in as the code page does (a verified device,
the shift's start), or, given the password, goes through the password page and the code page
with the code the authenticator shows now (`current_code`); a browser of a shop's server signs
in over HTTP the same two steps."""

from __future__ import annotations

import base64
import time
from typing import Any

import pyotp
from django.urls import reverse
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.plugins.otp_totp.models import TOTPDevice

from staff_signin.session import VERIFIED_AT_KEY
from tools.admin_sign_in import admin_sign_in

# The secret of the authenticators tests give (base32).
TEST_SECRET = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
STEP = 30


def authenticator(user: Any, secret: str = TEST_SECRET) -> TOTPDevice:
    """The account's confirmed TOTP device; one of `secret` is made when it has none."""
    found = TOTPDevice.objects.filter(user=user, confirmed=True).order_by("id").first()
    if found is not None:
        return found
    key = base64.b32decode(secret).hex()
    return TOTPDevice.objects.create(user=user, name="authenticator", key=key, confirmed=True)


def secret_of(device: TOTPDevice) -> str:
    return base64.b32encode(device.bin_key).decode()


def current_code(device: TOTPDevice, *, fresh: bool = True) -> str:
    """The code the device's app shows now; with `fresh`, one of a 30 s step the device has not
    accepted yet (waiting for the next step when it has: a code signs in once)."""
    device.refresh_from_db()
    if fresh:
        while int(time.time()) // STEP <= device.last_t:
            time.sleep(0.2)
    return pyotp.TOTP(secret_of(device)).now()


def sign_in_staff(client: Any, user: Any, password: str | None = None, *, url: str = "") -> Any:
    """`client` signed in to the admin as `user` with a second factor. A `requests.Session`
    browsing a shop's server at `url` signs in as a demo account (`user` its username), over
    HTTP, with the demo authenticator's code, as the soak and the release check do."""
    if url:
        assert password is not None
        assert admin_sign_in(client, url, str(user), password), "the admin did not open"
        return client
    device = authenticator(user)
    if password is None:
        client.force_login(user)
        session = client.session
        session[DEVICE_ID_SESSION_KEY] = device.persistent_id
        session[VERIFIED_AT_KEY] = time.time()
        session.save()
        return client
    login = reverse("admin:login")
    answer = client.post(login, {"username": user.get_username(), "password": password})
    assert answer.status_code == 302, answer.status_code
    assert answer.url.startswith(reverse("admin:staff_signin_code")), answer.url
    answer = client.post(answer.url, {"code": current_code(device)})
    assert answer.status_code == 302, answer.content.decode()[:500]
    return client
