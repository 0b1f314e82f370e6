"""The pieces `make release-check` runs (tools/release_check.py): a release's source tree and
virtual environment, its processes as its Procfile names them (the web server under gunicorn as
shipped), a TCP proxy standing for the load balancer in front of the web servers, and a watch
on PostgreSQL's lock waits."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import requests

ROOT = Path(__file__).resolve().parent.parent
WEB = ["gunicorn", "-c", "config/gunicorn.py", "config.wsgi"]


def run(command: list[str], **kwargs: object) -> None:
    subprocess.run(command, check=True, **kwargs)  # noqa: S603 (our own commands)


@dataclass
class Release:
    """A release of the shop: `tree` (its source) and the virtual environment it runs in."""

    name: str
    commit: str
    tree: Path
    venv: Path

    @classmethod
    def checked_out(cls, name: str, commit: str, folder: Path) -> Release:
        """The release at `commit` in a clone of its own under `folder`, with a virtual
        environment installed from its pyproject.toml (both kept for the next check)."""
        tree, venv = folder / "tree", folder / "venv"
        if not (tree / ".git").exists():
            run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(ROOT), str(tree)])
        run(["git", "-C", str(tree), "checkout", "--quiet", "--force", commit])
        stamp = venv / ".installed"
        wanted = hashlib.sha256((tree / "pyproject.toml").read_bytes()).hexdigest()
        if not stamp.exists() or stamp.read_text() != wanted:
            print(f"  installing {name} ({commit[:10]}) into {venv}", flush=True)
            run([sys.executable, "-m", "venv", "--clear", str(venv)])
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
            with (folder / "install.log").open("wb") as log:
                run([*pip, "--upgrade", "pip"], stdout=log, stderr=subprocess.STDOUT)
                run([*pip, "--editable", f"{tree}[demo]"], cwd=tree, stdout=log,
                    stderr=subprocess.STDOUT)  # fmt: skip
            stamp.write_text(wanted)
        return cls(name, commit, tree, venv)

    @classmethod
    def this_tree(cls, name: str, commit: str) -> Release:
        return cls(name, commit, ROOT, Path(sys.executable).parent.parent)

    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def env(self, base: dict[str, str]) -> dict[str, str]:
        path = f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**base, "PATH": path, "VIRTUAL_ENV": str(self.venv)}

    def manage(self, base: dict[str, str], *args: str, log: Path) -> float:
        """`manage.py ARGS` of this release; how long it took (seconds). Raises when it fails."""
        started = time.monotonic()
        with log.open("ab") as out:
            run([self.python(), "manage.py", *args], cwd=self.tree, env=self.env(base),
                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        return time.monotonic() - started

    def celery_commands(self) -> dict[str, list[str]]:
        """The Celery processes of this release's Procfile, by name (workers, then beat), as
        they run there but without the demo's restarter: a process that dies stays dead."""
        commands: dict[str, list[str]] = {}
        for line in (self.tree / "Procfile").read_text().splitlines():
            name, _, command = line.partition(":")
            words = shlex.split(os.path.expandvars(command.replace("${SHOP_VAR_DIR:-var}", "var")))
            if "celery" not in words[:3]:
                continue
            commands[name.strip()] = [w for w in words if w != "bin/keep-running"]
        return commands


@dataclass
class Process:
    """One process of a release, in its own process group, its output in `log`."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(cls, name: str, release: Release, command: list[str], base: dict[str, str],
              log: Path) -> Process:  # fmt: skip
        with log.open("ab") as out:
            proc = subprocess.Popen(  # noqa: S603 (the release's own commands)
                command, cwd=release.tree, env=release.env(base), stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        return cls(name, proc, log)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text(errors="replace"):
            if not self.alive() or time.monotonic() > deadline:
                raise SystemExit(f"{self.name} did not start; see {self.log}")
            time.sleep(0.2)

    def stop(self, timeout: float = 90) -> float:
        """Asked to stop as a supervisor does (SIGTERM: gunicorn finishes the requests it
        holds, a Celery worker the tasks it runs); killed after `timeout`. Seconds taken."""
        started = time.monotonic()
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
            if self.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(wait)
        return time.monotonic() - started


def wait_healthy(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.RequestException):
            if requests.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.3)
    raise SystemExit(f"{url} did not answer 200 within {timeout:.0f} s")


@dataclass
class Proxy:
    """A TCP proxy on `port` standing for the load balancer: each new connection goes to the
    web server `backend` names at that moment; connections already open stay where they are."""

    port: int
    backend: int
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)

    def start(self) -> None:
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait(10)

    def switch(self, backend: int) -> None:
        self.backend = backend

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", self.port)
        )
        ready.set()
        self._loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.backend)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class LockWatch:
    """Samples PostgreSQL every 20 ms while running: the longest any statement of `database`
    has been waiting for a lock (the migration's own included), and which."""

    def __init__(self, url: str) -> None:
        self.url, self.longest, self.statement = url, 0.0, ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> LockWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _watch(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.wait(0.02):
                row = conn.execute(
                    "SELECT extract(epoch FROM clock_timestamp() - query_start), query"
                    " FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND datname = current_database() ORDER BY 1 DESC LIMIT 1"
                ).fetchone()
                if row and float(row[0]) > self.longest:
                    self.longest, self.statement = float(row[0]), " ".join(str(row[1]).split())
