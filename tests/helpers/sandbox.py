"""The live provider sandbox in a process of its own, on a database of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

from tests.helpers.paths import ROOT
from tests.helpers.provider import PUBLIC_KEY, SECRET_KEY
from tests.helpers.servers import free_port


def sandbox_database_url(name: str) -> str | None:
    """A PostgreSQL database of its own for the sandbox when the suite runs on PostgreSQL."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    _drop_database(url, name, recreate=True)
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def drop_sandbox_database(url: str | None) -> None:
    """Remove the sandbox's database once the session is over (nothing is left behind)."""
    if url:
        _drop_database(url, urlsplit(url).path.strip("/"))


def _drop_database(url: str, name: str, *, recreate: bool = False) -> None:
    import psycopg

    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if recreate:
            conn.execute(f'CREATE DATABASE "{name}"')
            # Thrown away when the session ends: its commits need not wait for the disk.
            conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit TO off')


@dataclass
class SandboxProcess:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    database_url: str | None
    var_dir: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def run_sandbox(
    tmp_dir: Path, *, database_url: str | None = None, extra_env: dict[str, str] | None = None
) -> Iterator[SandboxProcess]:
    port = free_port()
    env = {
        **os.environ,
        "SANDBOX_PUBLIC_KEY": PUBLIC_KEY,
        "SANDBOX_SECRET_KEY": SECRET_KEY,
        "SANDBOX_VAR_DIR": str(tmp_dir),
        "SANDBOX_WEBHOOK_BACKOFF_BASE": "0.2",
        "SANDBOX_WEBHOOK_BACKOFF_MAX": "1",
        "SANDBOX_WEBHOOK_TIMEOUT": "2",
        "SANDBOX_WEBHOOK_MAX_ATTEMPTS": "4",
        **(extra_env or {}),
    }
    env.pop("SANDBOX_DATABASE_URL", None)
    if database_url:
        env["SANDBOX_DATABASE_URL"] = database_url
    log_path = tmp_dir / "sandbox.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "sandbox.manage", "runsandbox", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}"
    sandbox = SandboxProcess(base_url, process, log_path, database_url, tmp_dir)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"sandbox exited early:\n{sandbox.log()}")
            try:
                if requests.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"sandbox did not start:\n{sandbox.log()}")
            time.sleep(0.2)
        yield sandbox
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
