"""The production broker: kombu's Redis transport, with a worker that rides out a Redis outage.

With celery 5.7.0 and kombu 5.7.0, a worker holding unacknowledged tasks (the shop's tasks are
`acks_late`) when Redis disappears can stop for good: `CRITICAL Unrecoverable error:
AttributeError("'NoneType' object has no attribute 'hostname'")`. On the connection's loss the
consumer first `collect()`s the connection, which closes its channel (that close fails half-way,
Redis being gone) and then releases the transport; it then closes the connection once more, and
the channel, closed again, tries to put its tasks in hand back into Redis through a transport
that no longer knows its address: `_connparams` reads `None.hostname` (or `None.client`, once
the channel has let go of its transport). An AttributeError is not a
connection error, so nothing catches it and the worker exits (the same failure as kombu#582,
there on a gossip channel closed after its connection).

Here a channel whose transport was released says so with the transport's own connection error,
which kombu's close ignores as it does every other: the worker reconnects and goes on in the
same process. The tasks it had in hand were written to Redis' unacknowledged set when they were
handed out; Redis gives them again after `visibility_timeout` (CELERY_VISIBILITY_TIMEOUT), as it
does for a worker that died, and they run again (every task is idempotent).
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        transport = self.connection
        if transport is None or transport.client is None:  # released: nothing left to reach
            raise RedisConnectionError("the broker connection was closed")
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)
        return params


class Transport(redis.Transport):
    Channel = Channel
