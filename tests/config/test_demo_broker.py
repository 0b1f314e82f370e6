"""The demo's embedded broker never hands a worker a half-written message."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection
from kombu.simple import SimpleQueue

from config.celery import demo_broker


def connection(folder: Path) -> Connection:
    (folder / "processed").mkdir(exist_ok=True)
    return Connection(
        "filesystem://",
        transport="config.celery.demo_broker:Transport",
        transport_options={
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
            "store_processed": False,
        },
    )


def test_a_message_being_written_is_not_visible_to_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a message's bytes are being written, a worker polling the queue finds nothing
    (kombu's own transport hands it the empty file: JSONDecodeError, and the worker stops);
    once written, it gets the whole message."""
    seen_while_writing: list[Any] = []
    write = demo_broker.write_file

    def slow_write(path: str, data: bytes) -> None:
        Path(path).write_bytes(b"")  # created, nothing written yet
        with connection(tmp_path) as other:
            try:
                seen_while_writing.append(other.default_channel._get("celery"))
            except Exception as exc:  # Empty, or a decoding error on the empty file
                seen_while_writing.append(type(exc).__name__)
        write(path, data)

    monkeypatch.setattr(demo_broker, "write_file", slow_write)
    with connection(tmp_path) as conn:
        conn.default_channel._put("celery", {"body": "hola"})
        assert seen_while_writing == ["Empty"]
        assert conn.default_channel._get("celery") == {"body": "hola"}
        assert list(tmp_path.glob("*.msg")) == list(tmp_path.glob(".*")) == []


def _publish(folder: str, start: int, count: int) -> None:
    with connection(Path(folder)) as conn:
        queue = SimpleQueue(conn, "soak")
        for number in range(start, start + count):
            queue.put({"n": number})


def test_messages_published_by_other_processes_arrive_whole_and_once(tmp_path: Path) -> None:
    """Two processes publish 300 messages each while this one consumes: all 600 arrive, each
    once, none broken."""
    context = multiprocessing.get_context("spawn")
    publishers = [
        context.Process(target=_publish, args=(str(tmp_path), start, 300)) for start in (0, 300)
    ]
    for publisher in publishers:
        publisher.start()
    received: list[int] = []
    with connection(tmp_path) as conn:
        queue = SimpleQueue(conn, "soak")
        while len(received) < 600:
            message = queue.get(timeout=20)
            received.append(message.payload["n"])
            message.ack()
    for publisher in publishers:
        publisher.join(timeout=20)
        assert publisher.exitcode == 0
    assert sorted(received) == list(range(600))
