"""The shop with every part in a process of its own, as production runs it: gunicorn (as
`config/gunicorn.py` ships it), Celery workers and beat, on the test database and a Redis
behind a proxy that can take it away; the sandbox is the test session's. And a Celery worker
in a process of its own that a test can kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from django.db import connection

from tests.helpers.paths import ROOT
from tests.helpers.provider import PUBLIC_KEY, SECRET_KEY, Api
from tests.helpers.servers import TcpProxy, free_port
from tests.helpers.waiting import wait_until


@dataclass
class WorkerProcess:
    """`celery -A config worker --pool=solo` in a process of its own, as production runs it."""

    env: dict[str, str]
    log_path: Path
    name: str
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> WorkerProcess:
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            f"--hostname={self.name}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"worker {self.name} exited early:\n{self.log()}")
            if " ready." in self.log():
                return
            time.sleep(0.1)
        raise AssertionError(f"worker {self.name} did not start:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no acknowledgement, as a machine that lost power."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


# Every process's settings, made short so that the test converges in a few minutes: each is
# documented in docs/settings.md, and the same guarantee holds with the defaults, only slower.
FAST = {
    "PAYMENTS_CONNECT_TIMEOUT": "1",
    "PAYMENTS_READ_TIMEOUT": "3",
    "WEBHOOKS_CLAIM_LEASE": "6",
    "WEBHOOKS_RELAY_AFTER": "11",
    "WEBHOOKS_RELAY_EVERY": "3",
    "PAYMENTS_RECONCILE_EVERY": "5",
    "SHOP_ORDERS_SYNC_EVERY": "3",
    "WEBHOOKS_RETRY_BACKOFF": "1",
    "WEBHOOKS_RETRY_BACKOFF_MAX": "4",
    "WEBHOOKS_MAX_RETRIES": "2",
    "CELERY_VISIBILITY_TIMEOUT": "20",
    "SHOP_PAY_ATTEMPTS_PER_ADDRESS": "1000/m",
    "SHOP_PAY_ATTEMPTS_PER_SESSION": "1000/m",
    "SHOP_STATUS_CHECKS_PER_SESSION": "1000/m",
    "PAYMENTS_SEND_SWEEP_EVERY": "3",
}


@dataclass
class Processes:
    """The shop's processes; `supervise()` starts again a worker that exited, as systemd's
    `Restart=always` does in production (docs/deployment.md)."""

    env: dict[str, str]
    tmp: Path
    url: str
    redis: TcpProxy
    workers: list[WorkerProcess] = field(default_factory=list)
    others: list[subprocess.Popen[bytes]] = field(default_factory=list)
    restarts: int = 0

    def start_worker(self) -> WorkerProcess:
        name = f"worker{len(self.workers)}"
        worker = WorkerProcess(self.env, self.tmp / f"{name}.log", f"{name}-{uuid.uuid4().hex[:4]}")
        self.workers.append(worker.start())
        return worker

    def live_workers(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.process is not None and w.process.poll() is None]

    def supervise(self) -> None:
        while len(self.live_workers()) < 2:
            self.restarts += 1
            self.start_worker()

    def spawn(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        with (self.tmp / f"{name}.log").open("wb") as log:
            process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        self.others.append(process)
        return process

    def stop(self) -> None:
        for worker in self.workers:
            worker.kill()
        for process in self.others:
            process.terminate()
        for process in self.others:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        self.redis.close()


@pytest.fixture
def processes(provider: Api, tmp_path: Path) -> Iterator[Processes]:
    database = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not database.startswith(("postgres://", "postgresql://")) or not redis_url:
        pytest.skip(
            "the processes share the test database and Redis: set DATABASE_URL and REDIS_URL"
        )
    upstream = urlsplit(redis_url)
    redis = TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 6379).open()
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CELERY_BROKER")},
        **FAST,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": urlunsplit(
            urlsplit(database)._replace(path=f"/{connection.settings_dict['NAME']}")
        ),
        "REDIS_URL": urlunsplit(upstream._replace(netloc=f"127.0.0.1:{redis.port}")),
        "CACHE_KEY_PREFIX": f"converge-{uuid.uuid4().hex[:6]}",
        "SHOP_BASE_URL": f"http://127.0.0.1:{port}",
        "PAYMENTS_API_BASE_URL": provider.base_url,
        "PAYMENTS_PUBLIC_KEY": PUBLIC_KEY,
        "PAYMENTS_SECRET_KEY": SECRET_KEY,
        "PAYMENTS_ACCESS_TOKEN": "",
        "PAYMENTS_WEBHOOK_TOKEN": "converge-" + uuid.uuid4().hex,
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "2",
        "LOG_FORMAT": "text",
    }
    shop = Processes(env, tmp_path, f"http://127.0.0.1:{port}", redis)
    try:
        gunicorn = shop.spawn(
            "gunicorn",
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi"],
        )
        shop.spawn(
            "beat",
            [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO",
             "--schedule", str(tmp_path / "beat-schedule")],
        )  # fmt: skip
        for _ in range(2):
            shop.start_worker()
        for worker in shop.workers:
            worker.wait_ready()

        def up() -> bool:
            assert gunicorn.poll() is None, (tmp_path / "gunicorn.log").read_text()
            try:
                return requests.get(f"{shop.url}/healthz", timeout=5).status_code == 200
            except requests.RequestException:
                return False

        wait_until(up, timeout=60, interval=0.2)
        yield shop
    finally:
        shop.stop()
