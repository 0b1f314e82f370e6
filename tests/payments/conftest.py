"""Fixtures of the payments tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import responses
from django.contrib.auth.models import Permission


@pytest.fixture
def make_staff(django_user_model: Any) -> Callable[..., Any]:
    """A user with the given payments permissions (codenames); staff unless told otherwise."""

    def make(username: str, *codenames: str, is_staff: bool = True) -> Any:
        user = django_user_model.objects.create_user(
            username=username, password="a-long-test-password", is_staff=is_staff
        )
        permissions = Permission.objects.filter(
            content_type__app_label="payments", codename__in=codenames
        )
        assert permissions.count() == len(codenames), codenames
        user.user_permissions.set(permissions)
        return user

    return make


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    """`responses` in place of the network: the client's requests meet the answers registered."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps
