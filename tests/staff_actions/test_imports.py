"""No admin page of payments or orders can wait on the provider: nothing the admin modules import
(directly or not) reaches the provider's client; the calls are made by the staff actions' task,
which runs what each app registered for the kind (`staff_actions.kinds`)."""

from __future__ import annotations

import grimp
import pytest

ADMIN_MODULES = [
    "payments.admin",
    "payments.admin.payment_admin",
    "payments.admin.subscription_admin",
    "staff_actions.admin",
    "checkout.admin",
    "checkout.admin_actions",
]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(
        "payments", "checkout", "webhooks", "config", "core", "staff_actions", cache_dir=None
    )


@pytest.mark.parametrize("module", ADMIN_MODULES)
def test_the_admin_imports_nothing_that_calls_the_provider(
    graph: grimp.ImportGraph, module: str
) -> None:
    assert graph.find_shortest_chain(importer=module, imported="payments.provider.client") is None


def test_the_task_reaches_the_calls(graph: grimp.ImportGraph) -> None:
    """The check above would see a chain: the task's side does import the client."""
    assert graph.find_shortest_chain(importer="payments.tasks", imported="payments.provider.client")
