"""What the benchmarks share: their database and Redis database, the services they start as
shipped (the shop under gunicorn, Celery, the sandbox), wrk, and the report. See README.md."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
import requests

ROOT = Path(__file__).resolve().parent.parent
LOG_DIR = ROOT / "var" / "bench"
WEB = ["gunicorn", "-c", "config/gunicorn.py", "config.wsgi"]
SECRET = ("pk_sandbox_demo", "sk_sandbox_demo")  # the sandbox's demo keys
PROCFILE_CELERY = ("writes", "reads", "worker", "beat")  # the Procfile's Celery processes
QUEUES = ("provider_writes", "provider_reads", "shop")  # the shop's Celery queues
SHOP_TABLES = ("webhooks_webhookevent", "payments_payment", "checkout_order")  # emptied by runs


def setup_django(*tables: str) -> None:
    """Django on the benchmark's database (created if missing, migrated), with `tables` (and
    all that refers to them) and the Redis database emptied."""
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/shop_bench")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/6")
    os.environ.setdefault("LOG_FORMAT", "text")
    # As shipped: every process counts its metrics into one directory (docs/monitoring).
    metrics = LOG_DIR / "metrics"
    shutil.rmtree(metrics, ignore_errors=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))  # services stopped too
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    url, name = os.environ["DATABASE_URL"], database_name(os.environ["DATABASE_URL"])
    if "bench" not in name and "brownout" not in name:
        sys.exit("The benchmarks empty their database: its name must contain 'bench'.")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    database(url, name)
    django.setup()
    logging.getLogger().setLevel(logging.WARNING)  # this process's; the services log INFO
    call_command("migrate", verbosity=0)
    empty(*tables)


def empty(*tables: str) -> None:
    """Empty `tables` (and all that refers to them) and the Redis database (queues, cache)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")
    connection.close()
    broker().flushdb()


def broker() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"])


def database(url: str, name: str, *, fresh: bool = False) -> str:
    """The database `name` on the server of `url`, created if missing (dropped first when
    `fresh`); its URL."""
    import psycopg

    server = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(server, autocommit=True) as c:
        if fresh:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            c.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def in_threads(work: Callable[[Any], Any], items: Iterable[Any], threads: int = 8) -> list[Any]:
    """`work` on every item, `threads` at a time, each closing its database connection."""
    from django.db import connection

    def run(item: Any) -> Any:
        try:
            return work(item)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(run, items))


@contextmanager
def process(name: str, command: list[str], env: dict[str, str], ready: str) -> Iterator[Path]:
    """`command` in its own process group logging to var/bench/<name>.log (its path), once the
    URL `ready` answers 200 (else: once `ready` is in its log); stopped at the end."""
    log = LOG_DIR / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=ROOT, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not up(ready, log):
            if time.monotonic() > deadline:
                sys.exit(f"{name} did not start; see {log}")
            time.sleep(0.2)
        yield log
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if proc.poll() is None:
                os.killpg(proc.pid, sig)
                with suppress(subprocess.TimeoutExpired):
                    proc.wait(20)


def up(ready: str, log: Path) -> bool:
    if not ready.startswith("http"):
        return ready in log.read_text(errors="replace")
    with suppress(requests.RequestException):
        return requests.get(ready, timeout=2).status_code == 200
    return False


def database_name(url: str) -> str:
    return urlsplit(url).path.strip("/")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def sandbox(port: int, database_url: str, threads: int = 8) -> Iterator[str]:
    """The sandbox with the demo keys on `database_url`, serving `threads` requests at once on
    `port`; its base URL."""
    base = f"http://127.0.0.1:{port}"
    provider = {
        "SANDBOX_DATABASE_URL": database_url,
        "SANDBOX_PUBLIC_KEY": SECRET[0], "SANDBOX_SECRET_KEY": SECRET[1],
        "SANDBOX_VAR_DIR": str(LOG_DIR / "sandbox"), "SANDBOX_LOG_LEVEL": "WARNING",
    }  # fmt: skip
    command = [sys.executable, "-m", "sandbox.manage", "runsandbox", "--port", str(port)]
    with process("sandbox", [*command, "--threads", str(threads)], provider, f"{base}/healthz"):
        yield base


@contextmanager
def services(sandbox_threads: int = 8, **env: str) -> Iterator[tuple[str, str]]:
    """A sandbox (`sandbox`) on a fresh database `<name>_sandbox`, and the shop under gunicorn
    as `config/gunicorn.py` ships it, with `env`; their base URLs."""
    from django.conf import settings

    url = os.environ["DATABASE_URL"]
    provider = database(url, f"{database_name(url)}_sandbox", fresh=True)
    with sandbox(free_port(), provider, sandbox_threads) as provider_base:
        shop = f"http://127.0.0.1:{free_port()}"
        os.environ.update(PAYMENTS_API_BASE_URL=provider_base, SHOP_BASE_URL=shop, **env)
        settings.PAYMENTS_API_BASE_URL = provider_base
        web = [sys.executable, "-m", *WEB]
        with process("gunicorn", web, {"GUNICORN_BIND": shop[7:]}, f"{shop}/healthz"):
            yield provider_base, shop


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
def celery() -> Iterator[None]:
    """The Procfile's Celery workers (one a queue) and beat, as `make demo` and
    docs/deployment.md run them."""
    env = {"SHOP_VAR_DIR": str(LOG_DIR)}  # beat's schedule file
    for schedule in LOG_DIR.glob("celerybeat-schedule*"):
        schedule.unlink()
    with ExitStack() as stack:
        for name in PROCFILE_CELERY:
            ready = "beat: Starting" if name == "beat" else " ready."
            stack.enter_context(
                process(f"celery-{name}", procfile_command(name, **env), env, ready)
            )
        yield


def settle(timeout: float = 180) -> None:
    """Wait until the workers are idle: every queue empty and no message delivered but not yet
    acknowledged (kombu's `unacked` hash: tasks running or held for their countdown)."""
    started, client = time.monotonic(), broker()
    while time.monotonic() - started < timeout:
        if not sum(client.llen(q) for q in QUEUES) and not client.hlen("unacked"):
            break
        time.sleep(0.5)
    time.sleep(2)


def described(*, celery: bool = False) -> str:
    """The shop's server (and the Procfile's Celery processes) as run."""
    from config import gunicorn

    web = f"web: {' '.join(WEB)} ({gunicorn.workers} workers x {gunicorn.threads} threads,"
    web += f" max_requests {gunicorn.max_requests})"
    if not celery:
        return web
    values = {"SHOP_VAR_DIR": str(LOG_DIR.relative_to(ROOT))}
    return "; ".join([web, *(" ".join(procfile_command(n, **values)[2:]) for n in PROCFILE_CELERY)])


def sandbox_faults(sandbox: str, *faults: dict[str, Any]) -> None:
    """Replace the sandbox's faults by `faults` (none: the sandbox at its normal speed)."""
    requests.delete(f"{sandbox}/_sandbox/faults", auth=SECRET, timeout=30)
    for fault in faults:
        requests.post(f"{sandbox}/_sandbox/faults", json=fault, auth=SECRET, timeout=30)


def wrk_start(
    url: str, seconds: float, connections: int, *args: str, threads: int = 2, timeout: int = 10
) -> subprocess.Popen:
    """Start wrk with bench/wrk.lua and its `args` (posting a file takes one thread a
    connection); a request unanswered after `timeout` seconds is an error (a timeout)."""
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{round(seconds)}s"]
    command += ["--timeout", f"{timeout}s", "-s", str(ROOT / "bench" / "wrk.lua"), url, "--", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wrk_result(proc: subprocess.Popen) -> dict[str, float]:
    """The `BENCH {json}` that wrk printed (after it ended, or was interrupted), and req/s."""
    output, _ = proc.communicate()
    line = next((x for x in output.splitlines() if x.startswith("BENCH ")), None)
    if line is None:
        sys.exit(f"wrk printed no result:\n{output}")
    result = json.loads(line.removeprefix("BENCH "))
    return {**result, "rps": result["requests"] / result["seconds"]}


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(str(cell) for cell in line) + " |" for line in lines)


def verdict(name: str, figure: float, op: str = "", limit: float = 0) -> list[object]:
    """A row of the targets' table: `figure op limit` (op `>=` or `<=`) and whether it is met;
    without `op`, a figure shown beside the targets that has none."""
    if not op:
        return [name, "no target", f"{figure:.2f}", ""]
    ok = figure >= limit if op == ">=" else figure <= limit
    return [name, f"{op} {limit:g}", f"{figure:.2f}", "PASS" if ok else "FAIL"]


def main(doc: str, run: Callable, report: Callable, argv: list[str] | None, **options: dict) -> int:
    """A benchmark's command line (`options`, `--strict`, `--json`): run it, print its figures
    and its targets' table; 1 under `--strict` when a target is missed."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--json", type=Path, help="write every figure there")
    for name, option in options.items():
        parser.add_argument(f"--{name.replace('_', '-')}", **option)
    args = parser.parse_args(argv)
    figures = run(args)
    text, checks = report(figures)
    print(f"{text}\n\n{table(['target', 'wanted', 'figure', 'result'], checks)}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    return 1 if args.strict and any(check[-1] == "FAIL" for check in checks) else 0
