"""Settings for the test suite: the local defaults, made fast and deterministic."""

from __future__ import annotations

from config.settings.local import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Each test runs in a transaction that is rolled back: rows must be written on the test's own
# connection, not by the receiver's writer thread (tests/webhooks/test_writer.py turns it on).
WEBHOOKS_GROUP_COMMIT = False
