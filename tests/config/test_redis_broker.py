"""The production broker's transport (config/celery/redis_broker.py): kombu's Redis transport, whose
channels say that their connection was released with a connection error, which kombu ignores
while closing, rather than with an AttributeError, which ended the worker."""

from __future__ import annotations

import os

import pytest
from kombu import Connection
from kombu.common import ignore_errors
from redis.exceptions import ConnectionError as RedisConnectionError

from config.celery.redis_broker import Transport

REDIS_URL = os.environ.get("REDIS_URL", "")
pytestmark = pytest.mark.skipif(
    not REDIS_URL.startswith("redis://"), reason="needs Redis: set REDIS_URL"
)


def test_a_channel_of_a_released_connection_says_so_with_a_connection_error() -> None:
    """Given a channel whose connection the consumer collected on a connection's loss (its
    transport released), when it is closed again and tries to put its tasks in hand back
    (what a worker does while reconnecting), then it fails with Redis' ConnectionError, one of
    the connection's errors that the close ignores, and not with kombu's AttributeError
    ("'NoneType' object has no attribute 'hostname'"), which nothing caught."""
    connection = Connection(REDIS_URL, transport=Transport)
    channel = connection.default_channel
    channel._disconnect_pools()  # as the first close of the lost connection left it
    connection.collect()

    with pytest.raises(RedisConnectionError):
        channel._connparams()
    ignore_errors(connection, channel.qos.restore_unacked)  # raises nothing
    ignore_errors(connection, connection.close)


def test_the_shop_uses_it_for_a_redis_broker() -> None:
    from django.conf import settings

    from config.celery import app

    assert settings.CELERY_BROKER_TRANSPORT == "config.celery.redis_broker:Transport"
    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, Transport)
