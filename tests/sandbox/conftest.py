from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import Api, SandboxProcess, WebhookReceiver, run_sandbox, sandbox_database_url


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxProcess]:
    """One live sandbox for the session: on PostgreSQL when the suite is, else SQLite."""
    tmp: Path = tmp_path_factory.mktemp("sandbox")
    with run_sandbox(tmp, database_url=sandbox_database_url("test_sandbox")) as process:
        yield process


@pytest.fixture
def api(sandbox: SandboxProcess) -> Iterator[Api]:
    """The API of a freshly reset sandbox."""
    client = Api(sandbox.base_url)
    response = client.post("/_sandbox/reset")
    assert response.status_code == 200, response.text
    yield client
    client.session.close()


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver().start()
    yield server
    server.stop()
