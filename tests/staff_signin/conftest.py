"""The sign-in's tests: an empty cache (no guessing counted from another test) and a staff
account with an authenticator of a known secret."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.cache import clear_cache
from tests.helpers.staff import authenticator

PASSWORD = "una-clave-larga-2026"


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def member(django_user_model: Any) -> Any:
    """A staff member with every permission and an authenticator."""
    user = django_user_model.objects.create_superuser("marta", "marta@tienda.example", PASSWORD)
    authenticator(user)
    return user
