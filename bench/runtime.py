"""What both benchmarks share: the environment, the services they start (gunicorn, the Celery
worker, the sandbox), wrk, and the broker's clean-up.

The benchmarks run against a database of their own (its name must contain `bench`: they empty
its webhook, payment and order tables) and a Redis database of their own (they purge its Celery
queue). Defaults: postgres://postgres@127.0.0.1:5432/shop_bench and redis://127.0.0.1:6379/6.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "bench"
LOG_DIR = ROOT / "var" / "bench"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/shop_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/6"
SETTINGS = "bench.settings"
TERMINAL_STATES = ("processed", "unmatched", "failed")


def configure() -> None:
    """Environment of the benchmark process and of everything it starts."""
    os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
    # BENCH_SETTINGS: another settings module (built on bench.settings) to try a change with.
    os.environ["DJANGO_SETTINGS_MODULE"] = os.environ.get("BENCH_SETTINGS") or SETTINGS
    os.environ.setdefault("LOG_LEVEL", "INFO")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    database = database_name(os.environ["DATABASE_URL"])
    if "bench" not in database and os.environ.get("BENCH_ALLOW_ANY_DATABASE") != "1":
        sys.exit(
            f"The benchmarks empty tables of their database; {database!r} does not look like a "
            "benchmark database (its name must contain 'bench'; BENCH_ALLOW_ANY_DATABASE=1 "
            "overrides this)."
        )
    if not os.environ["DATABASE_URL"].startswith(("postgres://", "postgresql://")):
        sys.exit("The benchmarks need PostgreSQL: set DATABASE_URL=postgres://...")
    if not os.environ["REDIS_URL"].startswith("redis://"):
        sys.exit("The benchmarks need Redis: set REDIS_URL=redis://...")


def setup_django() -> None:
    configure()
    import django

    django.setup()


def database_name(url: str) -> str:
    return urlsplit(url).path.strip("/")


def database_url_named(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def ensure_database(url: str, *, fresh: bool = False) -> None:
    """Create the PostgreSQL database of `url` if it is missing (dropped first if `fresh`)."""
    import psycopg

    name = database_name(url)
    admin = database_url_named(url, "postgres")
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
            if fresh:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        sys.exit(f"PostgreSQL is not reachable at {admin}: {exc}")


def check_redis() -> None:
    import redis

    try:
        redis.Redis.from_url(os.environ["REDIS_URL"], socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        sys.exit(f"Redis is not reachable at {os.environ['REDIS_URL']}: {exc}")


def wrk_binary() -> str:
    found = shutil.which("wrk")
    if not found:
        sys.exit("wrk is not installed (apt-get install -y wrk, or run `make bench`).")
    return found


# --- Processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Service:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            tail = "\n".join(self.log().splitlines()[-30:])
            raise RuntimeError(f"{self.name} exited ({self.process.returncode}):\n{tail}")


def wait_for(what: str, ready: Callable[[], bool], service: Service, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        service.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {timeout} s; see {service.log_path}")
        time.sleep(0.2)


def http_ok(url: str, *, method: str = "GET", body: bytes | None = None) -> bool:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return 200 <= response.status < 300
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def service(
    name: str, command: Sequence[str], env: dict[str, str] | None = None
) -> Iterator[Service]:
    """Start a process of ours (its output in var/bench/<name>.log); stop it on the way out."""
    log_path = LOG_DIR / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            list(command),
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    started = Service(name, process, log_path)
    try:
        yield started
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL to the process group the service was started in (its children:
    gunicorn's workers, the sandbox's threads) if it has not ended in `timeout` seconds."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # workers the master left behind, if any


@dataclass(frozen=True)
class Gunicorn:
    workers: int = 2
    worker_class: str = "gthread"
    threads: int = 4

    def describe(self) -> str:
        threads = f" --threads {self.threads}" if self.worker_class == "gthread" else ""
        return f"gunicorn config.wsgi -w {self.workers} -k {self.worker_class}{threads}"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """The options both benchmarks take: gunicorn's shape, the JSON file, --strict."""
        defaults = cls()
        parser.add_argument(
            "--workers", type=int, default=defaults.workers, help="gunicorn workers (%(default)s)"
        )
        parser.add_argument(
            "--worker-class", default=defaults.worker_class, choices=["gthread", "sync"]
        )
        parser.add_argument(
            "--threads", type=int, default=defaults.threads, help="threads per worker (%(default)s)"
        )
        parser.add_argument("--json", type=Path, help="also write the figures to this file")
        parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> Gunicorn:
        return cls(args.workers, args.worker_class, args.threads)


@contextmanager
def gunicorn(config: Gunicorn, port: int) -> Iterator[Service]:
    """The shop under gunicorn, with the benchmark settings (the shop's, plus /bench/bare/)."""
    command = [
        sys.executable, "-m", "gunicorn", "config.wsgi",
        "--workers", str(config.workers),
        "--worker-class", config.worker_class,
        "--threads", str(config.threads),
        "--bind", f"127.0.0.1:{port}",
        "--backlog", "2048",
        "--graceful-timeout", "10",
        "--log-level", "warning",
    ]  # fmt: skip
    with service("gunicorn", command) as web:
        wait_for(
            "gunicorn",
            lambda: http_ok(f"http://127.0.0.1:{port}/bench/bare/", method="POST", body=b"{}"),
            web,
        )
        yield web


@contextmanager
def celery_worker(*, concurrency: int, pool: str = "threads") -> Iterator[Service]:
    """The shop's Celery worker (the benchmark settings add the no-op task's app)."""
    command = [
        sys.executable, "-m", "celery", "-A", "config", "worker",
        f"--pool={pool}", f"--concurrency={concurrency}", "--loglevel=INFO",
        "--without-gossip", "--without-mingle", "--without-heartbeat",
        "--hostname", f"bench-{os.getpid()}@%h",
    ]  # fmt: skip
    with service("celery-worker", command) as worker:
        wait_for("the Celery worker", lambda: " ready." in worker.log(), worker)
        yield worker


# --- wrk ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrkResult:
    requests: int
    seconds: float
    non2xx: int
    socket_errors: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def parse_wrk(output: str) -> WrkResult:
    for line in output.splitlines():
        if line.startswith("BENCH "):
            data = json.loads(line[len("BENCH ") :])
            return WrkResult(
                requests=data["requests"],
                seconds=data["duration_us"] / 1e6,
                non2xx=data["non2xx"],
                socket_errors=data["socket_errors"],
                p50_ms=data["p50_us"] / 1000,
                p90_ms=data["p90_us"] / 1000,
                p99_ms=data["p99_us"] / 1000,
                max_ms=data["max_us"] / 1000,
                mean_ms=data["mean_us"] / 1000,
            )
    raise RuntimeError(f"wrk printed no summary:\n{output}")


def wrk_command(
    url: str,
    *,
    script: Path,
    connections: int,
    threads: int,
    seconds: float,
    args: Sequence[str] = (),
) -> list[str]:
    return [
        wrk_binary(),
        f"--threads={min(threads, connections)}",
        f"--connections={connections}",
        f"--duration={max(1, round(seconds))}s",
        "--timeout=10s",
        f"--script={script}",
        url,
        "--",
        *args,
    ]


def run_wrk(
    url: str,
    *,
    script: Path,
    connections: int,
    threads: int,
    seconds: float,
    args: Sequence[str] = (),
) -> WrkResult:
    command = wrk_command(
        url, script=script, connections=connections, threads=threads, seconds=seconds, args=args
    )
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, timeout=seconds + 60
    )
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return parse_wrk(done.stdout)


# --- Broker ---------------------------------------------------------------------------------


def purge_broker() -> int:
    """Empty the Celery queue and drop the webhook pipeline's keys (coalescing markers, pending
    list, arrival counts). Returns the messages purged."""
    import redis
    from django.conf import settings

    from config.celery import app

    purged = app.control.purge() or 0
    client = redis.Redis.from_url(settings.REDIS_URL)
    for pattern in ("*webhooks:*", "*bench:*"):
        keys = list(client.scan_iter(match=pattern, count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
    return purged


def queue_length() -> int:
    import redis
    from django.conf import settings

    return int(redis.Redis.from_url(settings.REDIS_URL).llen("celery"))


# --- Reporting ------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        )

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def cpu_seconds(*, group: int | None = None, command: str | None = None) -> float:
    """CPU time (user + system) used so far by the processes of a process group (a service we
    started, with its children) or by every process whose command name is `command`, with that
    of their children that have exited (PostgreSQL's backends of closed connections, say)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            raw = stat.read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        if group is not None and int(fields[2]) != group:
            continue
        if command is not None and name != command:
            continue
        total += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
    return total / tick


def cpu_usage(services: dict[str, Service]) -> dict[str, float]:
    """CPU seconds used so far by each of our services (by name), wrk (this process's children
    that have ended), and PostgreSQL and Redis (whole machine)."""
    usage = {name: cpu_seconds(group=svc.process.pid) for name, svc in services.items()}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    usage["wrk"] = children.ru_utime + children.ru_stime
    usage["postgres (whole machine)"] = cpu_seconds(command="postgres")
    usage["redis (whole machine)"] = cpu_seconds(command="redis-server")
    return usage


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"
