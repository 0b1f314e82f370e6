"""Settings for the test suite: the local defaults, made fast and deterministic."""

from __future__ import annotations

from config.settings.local import *

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
