from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.servers import WebhookReceiver


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver().start()
    yield server
    server.stop()
