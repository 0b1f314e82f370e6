"""Fuzz tests can be replayed: a failure prints how to reproduce it, and CI draws the same
examples on every run."""

from __future__ import annotations

import os

from hypothesis import settings

from tests.core import fuzzing
from tests.webhooks import test_receiver_fuzz


def test_fuzz_settings_print_the_reproducing_blob_and_are_fixed_in_ci() -> None:
    """The active profile, and the settings each fuzz module builds on it, print the blob of
    a failing example; in CI they draw examples from a fixed seed."""
    in_ci = bool(os.environ.get("CI"))
    for active in (settings.default, fuzzing.FUZZ, test_receiver_fuzz.FUZZ):
        assert active.print_blob is True
        assert active.derandomize is in_ci
