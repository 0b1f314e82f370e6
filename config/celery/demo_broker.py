"""The demo's embedded broker: kombu's filesystem transport, each message written atomically.

kombu writes a message straight into the queue folder, so a worker polling the folder can take
the file between its creation and its first byte, fail to decode it, and stop ("Unrecoverable
error: JSONDecodeError"). Here a message is written under a name no queue reads, then renamed
into the queue: a rename within one folder is atomic, so a reader sees all of it or nothing.
Only the demo uses it (no REDIS_URL); deployments use Redis.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps


def write_file(path: str, data: bytes) -> None:
    with open(path, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.partial")  # no queue's suffix
        try:
            write_file(partial, dumps(payload).encode())
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
