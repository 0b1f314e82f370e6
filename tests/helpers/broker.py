"""The tasks waiting in the real broker, taken off its queues."""

from __future__ import annotations

from typing import Any


def take_queued_with_eta(app: Any) -> list[tuple[str, list[Any], str | None]]:
    """The tasks waiting in the broker's queues (each queue in turn), as (task name, args,
    eta); taken off them, so that the next call sees only what was queued since."""
    tasks: list[tuple[str, list[Any], str | None]] = []
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        for queue in app.amqp.queues:
            while (message := channel.basic_get(queue=queue, no_ack=True)) is not None:
                args, _kwargs, _options = message.decode()
                tasks.append((message.headers["task"], list(args), message.headers.get("eta")))
    return tasks


def take_queued(app: Any) -> list[tuple[str, list[Any]]]:
    """The tasks waiting in the broker's queues, as (task name, args); taken off them."""
    return [(name, args) for name, args, _eta in take_queued_with_eta(app)]
