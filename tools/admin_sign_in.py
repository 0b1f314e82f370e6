"""How the tools that drive the admin over HTTP (the soak, the release check's traffic) sign in:
the password page, then the code page with the code the demo account's authenticator shows
(its secret is the demo's, README "Demo credentials"). A code signs in once: when the current
one was just used, the next 30 s step's is sent. Against a release without a second factor,
the password alone signs in, as it did there."""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct
import time

import requests

from staff_signin.demo import DEMO_SECRETS

STEP = 30


def totp(secret: str, at: float | None = None) -> str:
    """RFC 6238's code (SHA-1, 6 digits, 30 s steps) of a base32 secret at `at` (now)."""
    counter = int((time.time() if at is None else at) // STEP)
    digest = hmac.new(base64.b32decode(secret), struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    number = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    return f"{number % 1_000_000:06d}"


def _csrf(http: requests.Session) -> str:
    return http.cookies.get("csrftoken", "")


def _in_admin(answer: requests.Response) -> bool:
    return answer.status_code == 200 and answer.url.rstrip("/").endswith("/admin")


def admin_sign_in(http: requests.Session, shop: str, username: str, password: str) -> bool:
    """Sign `http` in to the shop's admin as a demo account; whether the admin opened."""
    login = f"{shop}/admin/login/"
    http.get(login, timeout=30)
    answer = http.post(login, {"username": username, "password": password, "next": "/admin/",
                               "csrfmiddlewaretoken": _csrf(http)}, timeout=30)  # fmt: skip
    code_page = answer.url
    if "/admin/sign-in/code/" not in code_page:
        return _in_admin(answer)
    for _ in range(2):
        answer = http.post(code_page, {"code": totp(DEMO_SECRETS[username]), "next": "/admin/",
                                       "csrfmiddlewaretoken": _csrf(http)}, timeout=30)  # fmt: skip
        if _in_admin(answer) or answer.status_code != 200:
            break
        time.sleep(STEP - time.time() % STEP + 0.5)  # this step's code was used: the next one
    return _in_admin(answer)
