"""What the benchmarks share: their environment, the processes they start (the shop under
gunicorn as `config/gunicorn.py` ships it, the Celery worker as docs/deployment.md runs it or the
Procfile's three queue workers and beat, the sandbox), wrk, and small reporting helpers.

They use a database and a Redis database of their own, emptied by the runs: by default
postgres://postgres@127.0.0.1:5432/shop_bench and redis://127.0.0.1:6379/6.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from subprocess import Popen
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
LOG_DIR = ROOT / "var" / "bench"
WEB = ["gunicorn", "-c", "config/gunicorn.py", "config.wsgi"]
WORKER = ["celery", "-A", "config", "worker", "--loglevel=INFO", "--pool=threads"]
WORKER_CONCURRENCY = "8"  # docs/deployment.md
SECRET = ("pk_sandbox_demo", "sk_sandbox_demo")  # the sandbox's demo keys
# A run empties its database: its name must say that it is a benchmark's.
SCRATCH_NAMES = ("bench", "brownout")
# The Procfile's Celery processes, in the order they are started: one worker a queue, and beat.
PROCFILE_CELERY = ("writes", "reads", "worker", "beat")


def setup_django() -> None:
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/shop_bench")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/6")
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    # Stopped with SIGTERM, a run still stops the services it started (their `finally`).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))
    os.environ.setdefault("LOG_FORMAT", "text")
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    if not any(word in database_name(os.environ["DATABASE_URL"]) for word in SCRATCH_NAMES):
        sys.exit(
            "The benchmarks empty their database's tables: its name must contain "
            + " or ".join(f"'{word}'" for word in SCRATCH_NAMES)
            + "."
        )
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    url = os.environ["DATABASE_URL"]
    database(url, database_name(url))
    django.setup()
    logging.getLogger().setLevel(logging.WARNING)  # this process's; the services log INFO
    call_command("migrate", verbosity=0)


def database_name(url: str) -> str:
    return urlsplit(url).path.strip("/")


def database(url: str, name: str, *, fresh: bool = False) -> str:
    """The database `name` on the server of `url`, created if missing (dropped first when
    `fresh`); its URL."""
    import psycopg

    with psycopg.connect(
        urlunsplit(urlsplit(url)._replace(path="/postgres")), autocommit=True
    ) as c:
        if fresh:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            c.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def purge_queue() -> None:
    from config.celery import app

    app.control.purge()


def flush_redis() -> None:
    """Empty the benchmark's Redis database: the broker's queues, the cache, the rate limits."""
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()


def queued(names: Sequence[str]) -> int:
    """How many messages wait in the broker's queues `names` (not those a worker holds)."""
    import redis

    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    return sum(int(client.llen(name)) for name in names)


# --- Processes ------------------------------------------------------------------------------


@contextmanager
def process(name: str, command: list[str], env: dict[str, str] | None = None) -> Iterator[Path]:
    """`command` in its own process group, logging to var/bench/<name>.log (its path)."""
    log = LOG_DIR / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield log
    finally:
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            if proc.poll() is None:
                os.killpg(proc.pid, sig)
                try:
                    proc.wait(wait)
                except subprocess.TimeoutExpired:
                    continue


def wait_until_up(url: str, log: Path, timeout: float = 60) -> None:
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            time.sleep(0.2)
    sys.exit(f"{url} did not come up; see {log}")


@contextmanager
def shop(port: int) -> Iterator[str]:
    """The shop under gunicorn, configured by `config/gunicorn.py` as shipped; its base URL."""
    env = {"GUNICORN_BIND": f"127.0.0.1:{port}", "DJANGO_SETTINGS_MODULE": "bench.settings"}
    with process("gunicorn", [sys.executable, "-m", *WEB], env) as log:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(f"{url}/healthz", log)
        yield url


@contextmanager
def worker() -> Iterator[Path]:
    """The Celery worker as docs/deployment.md runs it; its log."""
    command = [sys.executable, "-m", *WORKER, f"--concurrency={WORKER_CONCURRENCY}"]
    with process("worker", command) as log:
        deadline = time.monotonic() + 60
        while " ready." not in log.read_text(errors="replace"):
            if time.monotonic() > deadline:
                sys.exit(f"the worker did not start; see {log}")
            time.sleep(0.2)
        yield log


def procfile_command(name: str, **values: str) -> list[str]:
    """The Procfile's command `name`, without its keep-running wrapper, run by this Python, with
    `${VAR:-default}` read from `values`, else from the environment."""
    lines = (ROOT / "Procfile").read_text().splitlines()
    line = next(x for x in lines if x.startswith(f"{name}:")).split(":", 1)[1]
    line = re.sub(
        r"\$\{(\w+):-([^}]*)\}", lambda m: values.get(m[1]) or os.environ.get(m[1]) or m[2], line
    ).replace("bin/keep-running ", "")
    command = shlex.split(line)
    return [sys.executable, "-m", *command] if command[0] == "celery" else command


@contextmanager
def celery_processes(names: Sequence[str] = PROCFILE_CELERY) -> Iterator[dict[str, Path]]:
    """The Procfile's Celery workers (one a queue: provider writes, provider reads, the shop's
    own) and beat, as `make demo` and docs/deployment.md run them; their logs by name."""
    env = {"SHOP_VAR_DIR": str(LOG_DIR)}  # beat's schedule file
    for schedule in LOG_DIR.glob("celerybeat-schedule*"):
        schedule.unlink()
    with ExitStack() as stack:
        logs = {
            name: stack.enter_context(process(f"celery-{name}", procfile_command(name, **env), env))
            for name in names
        }
        deadline = time.monotonic() + 60
        for name, log in logs.items():
            ready = "beat: Starting" if name == "beat" else " ready."
            while ready not in log.read_text(errors="replace"):
                if time.monotonic() > deadline:
                    sys.exit(f"celery {name} did not start; see {log}")
                time.sleep(0.2)
        yield logs


def celery_described(names: Sequence[str] = PROCFILE_CELERY) -> str:
    """The Celery commands as run (`python -m` left out)."""
    values = {"SHOP_VAR_DIR": str(LOG_DIR.relative_to(ROOT))}
    return "; ".join(" ".join(procfile_command(name, **values)[2:]) for name in names)


@contextmanager
def sandbox(port: int, database_url: str, threads: int = 8) -> Iterator[str]:
    """The provider's sandbox on a fresh database, with the demo keys, serving `threads`
    requests at once; its base URL."""
    env = {
        "SANDBOX_DATABASE_URL": database_url,
        "SANDBOX_PUBLIC_KEY": SECRET[0],
        "SANDBOX_SECRET_KEY": SECRET[1],
        "SANDBOX_VAR_DIR": str(LOG_DIR / "sandbox"),
        "SANDBOX_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "sandbox.manage", "runsandbox", "--port", str(port)]
    command += ["--threads", str(threads)]
    with process("sandbox", command, env) as log:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(f"{url}/healthz", log, timeout=120)
        yield url


def web_described() -> str:
    from config import gunicorn

    return (
        f"web: {' '.join(WEB)} ({gunicorn.workers} workers x {gunicorn.threads} threads,"
        f" max_requests {gunicorn.max_requests})"
    )


def described() -> str:
    return f"{web_described()}; worker: {' '.join(WORKER)} --concurrency={WORKER_CONCURRENCY}"


# --- wrk --------------------------------------------------------------------------------------


def wrk_start(
    url: str,
    script: str,
    seconds: float,
    connections: int,
    *args: str,
    threads: int = 2,
    timeout: int = 10,
) -> Popen:
    """Start wrk with a script of bench/ that prints `BENCH {json}` (posting a file takes one
    thread a connection: `threads=connections`); a request not answered within `timeout`
    seconds is counted an error (a timeout), and its latency is not recorded."""
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{round(seconds)}s"]
    command += ["--timeout", f"{timeout}s", "-s", str(ROOT / "bench" / script), url, "--", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wrk_result(proc: Popen) -> dict[str, float]:
    """The `BENCH {json}` that wrk printed (after it ended, or was interrupted)."""
    output, _ = proc.communicate()
    line = next((x for x in output.splitlines() if x.startswith("BENCH ")), None)
    if line is None:
        sys.exit(f"wrk printed no result:\n{output}")
    return json.loads(line[len("BENCH ") :])


def wrk(url: str, script: str, seconds: float, connections: int, *args: str) -> dict[str, float]:
    return wrk_result(wrk_start(url, script, seconds, connections, *args))


# --- Reporting --------------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(str(cell) for cell in line) + " |" for line in lines)


def verdict(name: str, figure: float, op: str, limit: float) -> list[object]:
    """A table row: the target `figure op limit` (op `>=` or `<=`), and whether it is met."""
    ok = figure >= limit if op == ">=" else figure <= limit
    return [name, f"{op} {limit:g}", f"{figure:.2f}", "PASS" if ok else "FAIL"]
