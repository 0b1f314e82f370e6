"""Sessions: a shopper's in its own cookie, a signed-in staff member's in the database.

A shopper's session holds little (the cart's product ids and quantities, the references of the
orders the browser placed, its language) and is read on every page: kept in the cookie itself,
signed with SECRET_KEY (Django's signing, the `signed_cookies` engine's way), it costs no query
to read and none to write. A staff member's session (one with a signed-in user) stays a row in
`django_session`, as Django keeps it: it can be listed and ended on the server (signing out,
a lost second factor), which a cookie cannot.

One engine serves both under the one session cookie: a database key is 32 letters and digits;
a signed value always holds `:`. A session that gains a signed-in user (staff signing in) is
written to a new row; one that loses it (signing out: `flush`) is written to the cookie again.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import SESSION_KEY as USER_KEY
from django.contrib.sessions.backends import db
from django.core import signing
from django.utils.crypto import get_random_string

SALT = "core.sessions.shopper"
IDENTITY = "_id"  # a cookie session's own name: its signed value changes with every write


def in_cookie(key: str | None) -> bool:
    """Whether a session cookie's value is the session itself (signed) or a database key."""
    return bool(key) and ":" in str(key)


def session_identity(session: Any) -> str | None:
    """A name for the browser session that stays the same while it lives (what limits per
    session count by): a cookie session's own id, a database session's key; None for a browser
    without a session yet."""
    key = session.session_key
    return session.get(IDENTITY) if in_cookie(key) else key


class SessionStore(db.SessionStore):
    """Django's database sessions for signed-in users; signed cookies for everyone else."""

    def load(self) -> dict[str, Any]:
        if not in_cookie(self.session_key):
            return super().load()
        try:
            return signing.loads(
                self.session_key or "",
                salt=SALT,
                serializer=self.serializer,
                max_age=self.get_session_cookie_age(),
            )
        except (signing.BadSignature, ValueError):
            self._session_key = None  # a forged or stale cookie: a new, empty session
            return {}

    def exists(self, session_key: str | None) -> bool:
        return False if in_cookie(session_key) else super().exists(session_key)

    def save(self, must_create: bool = False) -> None:
        data = self._get_session(no_load=must_create)
        if USER_KEY in data:
            if in_cookie(self.session_key):
                self._session_key = None  # a new row, under a new key (db's create)
            super().save(must_create=must_create)
            return
        if data and IDENTITY not in data:
            data[IDENTITY] = get_random_string(20)
        self._session_key = signing.dumps(
            data, salt=SALT, serializer=self.serializer, compress=True
        )
        self.modified = True

    def create(self) -> None:
        if USER_KEY in self._get_session(no_load=True):
            super().create()
            return
        self._session_key = None
        self.modified = True  # the cookie is written when the response is

    def delete(self, session_key: str | None = None) -> None:
        key = self.session_key if session_key is None else session_key
        if not in_cookie(key):
            super().delete(session_key)
