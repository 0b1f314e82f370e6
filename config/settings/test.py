"""Settings for the test suite: the local defaults, made fast and deterministic."""

from __future__ import annotations

from config.settings.local import *

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Tests make thousands of browsers within minutes: the sale day's admission would queue them.
# Its tests turn it on (tests/checkout/test_admission.py).
SHOP_ADMISSION_PER_SECOND = 0.0
