"""Fixtures of the payments tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
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


@dataclass
class Reconciled:
    """A reconciliation run and the check tasks it handed the due payments to, run here."""

    queued: int
    unresolved: int
    left_for_later: bool
    tasks: int = 0
    checked: int = 0
    changed: int = 0
    failed: int = 0
    stopped_early: bool = False


@pytest.fixture
def reconcile(celery_app: Any, empty_broker: None) -> Callable[[], Reconciled]:
    """Run the reconciliation, then the check tasks it queued, as a worker would."""
    from payments.rereading.calls import payments_check, payments_reconcile
    from payments.task_names import CHECK_TASK
    from tests.helpers.broker import take_queued

    def run() -> Reconciled:
        handed = payments_reconcile()
        done = Reconciled(handed.queued, handed.unresolved, handed.left_for_later)
        for name, args in take_queued(celery_app):
            assert name == CHECK_TASK, name
            report = payments_check(*args)
            done.tasks += 1
            done.checked += report.checked
            done.changed += report.changed
            done.failed += report.failed
            done.stopped_early |= report.stopped_early
        return done

    return run
